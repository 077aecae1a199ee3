"""The report's evictions subsection: every eviction, and the evictions per zone."""

from __future__ import annotations

from testbed.chaos_check import COLUMNS, check_rows, check_run, notice_line
from testbed.lifetimes import NODE_CLASSES
from testbed.report.document import Block, Heading, Paragraph, Table, number, seconds, size
from testbed.report.rundir import RunData
from testbed.scenario_yaml import ScenarioError
from testbed.zones import per_zone


def evictions_section(run: RunData) -> list[Block]:
    blocks: list[Block] = [Heading("Evictions", 3)]
    if not run.evictions:
        return [*blocks, Paragraph("No evictions.")]
    launched = {n.node_id: n.launched_s for n in run.nodes}
    classes = {c: (getattr(run.cluster, c).zones, getattr(run.cluster, c).count) for c in NODE_CLASSES}
    zones = per_zone(classes, [e.node_id for e in run.evictions])
    if zones:
        blocks.append(
            Paragraph("Evictions per zone: " + ", ".join(f"{z} {n}" for z, n in sorted(zones.items())))
        )
    blocks.extend(_realism(run))
    return [
        *blocks,
        Paragraph(
            "Lived = eviction - launch, emulated seconds; lifetime drawn = what the lifetime model "
            f"gave the node, in trace seconds (emulated seconds x time scale {run.time_scale:g})."
        ),
        Table(
            [
                *("t (s, emulated)", "node", "class", "reason", "lived (s, emulated)"),
                *("lifetime drawn (s, trace)", "tasks running", "bytes lost"),
            ],
            [
                [
                    seconds(e.t_s),
                    e.node_id,
                    e.node_class,
                    e.reason or "-",
                    seconds(e.t_s - launched[e.node_id] if e.node_id in launched else None),
                    seconds(e.lifetime_s),
                    number(e.tasks_running),
                    size(e.bytes_lost),
                ]
                for e in run.evictions
            ],
        ),
    ]


def _realism(run: RunData) -> list[Block]:
    """``testbed chaos check``'s table, for a run that journaled its drawn lifetimes."""
    if not any(e.get("event") == "lifetime_drawn" for e in run.events):
        return []
    try:
        check = check_run(run.path)
    except (ValueError, ScenarioError):
        return []
    return [
        Paragraph(
            "Realism check (`testbed chaos check`, docs/chaos.md): the lifetimes and notices the run "
            "had against its chaos model. " + notice_line(check.notices) + "."
        ),
        Table(list(COLUMNS), [list(row) for row in check_rows(check)]),
    ]
