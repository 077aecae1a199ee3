"""The report's fidelity section: what the fidelity monitor saw (summary.json ``fidelity``)."""

from __future__ import annotations

from typing import Any

from testbed.app.report.document import Block, Callout, Heading, Paragraph, Table, number, percent
from testbed.app.report.metrics import RunMetrics
from testbed.app.report.rundir import RunData

ROWS = (
    ("host_cores", "host cores", number),
    ("host_busy_mean", "host busy (mean share of all cores)", percent),
    ("host_saturated_share", "host saturated (share of the run, cores >= 95% busy)", percent),
    ("host_steal_share", "host CPU time lost to steal", percent),
    ("task_time_s", "task time (s, wall)", number),
    ("task_time_saturated_share", "task time on a saturated host", percent),
    ("task_cpu_s", "task CPU time (CPU s)", number),
    ("task_cpu_per_quota", "task CPU used / slot quota (faithful runs)", percent),
    ("slowed_task_cpu_share", "slowed nodes' task CPU / their class's full-speed quota", percent),
    ("slowed_task_allowed_share", "... allowed by their chaos.slowdown factors (1/f)", percent),
    ("nodes_throttled_share", "node CPU periods throttled by their quota", percent),
    ("nodes_throttled_s", "node time throttled (s, wall)", number),
    ("slots_throttled_share", "task slot CPU periods throttled by their own quota", percent),
    ("slots_throttled_s", "task slot time throttled (s, wall)", number),
    ("master_loop_lag_p95_s", "master event-loop lag, p95 (s, wall)", number),
    ("master_loop_lag_max_s", "master event-loop lag, max (s, wall)", number),
    ("launch_ack_mean_s", "launch -> running acknowledgement, mean (s, wall)", number),
    ("launch_ack_p95_s", "launch -> running acknowledgement, p95 (s, wall)", number),
    ("control_plane_cores", "master + broker CPU (cores)", number),
)


def fidelity_section(run: RunData, metrics: RunMetrics) -> list[Block]:
    del metrics
    block = (run.summary or {}).get("fidelity")
    if not isinstance(block, dict):
        return []
    blocks: list[Block] = [Heading("Fidelity")]
    problems = block.get("problems") or []
    if problems:
        blocks.append(Callout("Distorted run: " + "; ".join(str(p) for p in problems) + "."))
    else:
        blocks.append(Paragraph("The run got what the scale model promised (no distortion detected)."))
    rows = [[label, _cell(show, block.get(key))] for key, label, show in ROWS if key in block]
    blocks.append(Table(["measure", "value"], rows))
    blocks.append(Paragraph("Measured by the fidelity monitor, in wall seconds (docs/fidelity.md)."))
    return blocks


def _cell(show: Any, value: Any) -> str:
    return show(value) if isinstance(value, int | float) else "-"
