"""How long spark-checkpoint's copies took: summary.json's ``checkpoint_delay_p50_s`` and
``checkpoint_delay_p95_s``.

A copy's delay runs from its task's successful end (``task_finished``) to the master's commit
of its copy (``checkpointed``): the upload over both nodes' links, the receiver's staging, CRC
check, fsync and commit, and the reports to the master. Times in the journal's seconds, so a
real run's summary gives them in emulated seconds like every other time (``emulated``) and a
simulated run's in its own: the two compare as they are (``testbed crosscheck``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from master.summary.coaster import percentile, round4


def checkpoint_summary(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The median and 95th percentile delay of the run's checkpoint copies (absent without
    copies). A copy is timed from the last successful end of its task before the commit."""
    ended: dict[str, float] = {}
    delays: list[float] = []
    for event in events:
        if event["event"] == "task_finished" and event.get("status") == "succeeded":
            ended[event["task"]] = event["t"]
        elif event["event"] == "checkpointed" and event["task"] in ended:
            delays.append(event["t"] - ended[event["task"]])
    if not delays:
        return {}
    return {
        "checkpoint_copies": len(delays),
        "checkpoint_delay_p50_s": round4(percentile(delays, 50)),
        "checkpoint_delay_p95_s": round4(percentile(delays, 95)),
    }
