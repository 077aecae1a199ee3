"""The report's evictions subsection: capacity outages, every eviction, and the evictions per zone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testbed.app.chaos_check import COLUMNS, check_rows, check_run, notice_line
from testbed.app.report.document import Block, Heading, Paragraph, Table, number, seconds, size
from testbed.app.report.rundir import RunData
from testbed.chaosmodels.zones import per_zone
from testbed.scenario.loading import ScenarioError


def evictions_section(run: RunData) -> list[Block]:
    blocks: list[Block] = [Heading("Evictions", 3), *_capacity(run)]
    if not run.evictions:
        return [*blocks, Paragraph("No evictions.")]
    launched = {n.node_id: n.launched_s for n in run.nodes}
    classes = {c: (spec.zones, spec.count) for c, (_, spec) in run.node_classes.items()}
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
                    seconds(e.lifetime_trace_s),
                    number(e.tasks_running),
                    size(e.bytes_lost),
                ]
                for e in run.evictions
            ],
        ),
    ]


@dataclass
class ClassCapacity:
    """What a class's capacity model did to a run (from its ``capacity_*``/``launch_*`` events)."""

    outages: int = 0
    unavailable_s: float = 0.0
    """Time without capacity within the run, emulated seconds."""
    waits: int = 0
    refused: int = 0


def capacity_outcomes(events: list[dict[str, Any]], end_s: float) -> dict[str, ClassCapacity]:
    """Per class: outages, the time without capacity (an outage still on at the end counts up
    to ``end_s``), launches that waited and launches refused."""
    outcomes: dict[str, ClassCapacity] = {}
    out_since: dict[str, float] = {}
    for event in events:
        kind, node_class = event.get("event"), str(event.get("class"))
        if kind not in CAPACITY_EVENTS:
            continue
        outcome = outcomes.setdefault(node_class, ClassCapacity())
        if kind == "capacity_unavailable":
            outcome.outages += 1
            out_since.setdefault(node_class, float(event["t"]))
        elif kind == "capacity_available" and node_class in out_since:
            outcome.unavailable_s += float(event["t"]) - out_since.pop(node_class)
        elif kind == "launch_waiting":
            outcome.waits += 1
        elif kind == "launch_refused":
            outcome.refused += 1
    for node_class, since in out_since.items():
        outcomes[node_class].unavailable_s += max(0.0, end_s - since)
    return outcomes


CAPACITY_EVENTS = frozenset(
    {"capacity_unavailable", "capacity_available", "launch_waiting", "launch_refused"}
)


def _capacity(run: RunData) -> list[Block]:
    outcomes = capacity_outcomes(run.events, run.end_s)
    if not outcomes:
        return []
    return [
        Paragraph(
            'Capacity (docs/chaos.md, "Capacity"): when the cloud had no capacity for a class, '
            "its launches (replacements, the autoscaler's) waited for it or were refused."
        ),
        Table(
            [
                "class",
                "outages",
                "time without capacity (s, emulated)",
                "launches waited",
                "launches refused",
            ],
            [
                [c, str(o.outages), seconds(o.unavailable_s), str(o.waits), str(o.refused)]
                for c, o in sorted(outcomes.items())
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
