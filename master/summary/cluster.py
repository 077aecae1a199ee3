"""Whether a run got the cluster it asked for: summary.json's ``cluster`` and its shortfall.

A run may start with fewer nodes than its scenario asks for (a node that did
not come up in time is given up on), and may lose nodes that nobody evicted
(silent, crashed) without a replacement. Either changes what its numbers mean,
so the summary says so, and ``testbed run`` prints it at the end.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from testbed.journal.schema import NodeLost, NodeStartFailed, NodeUp, events_of, read_events
from testbed.scenario.schema import Scenario

UNPLANNED_LOSSES = ("heartbeat_timeout", "crashed")
"""Node losses that no eviction (chaos, autoscaler) caused."""


def run_events(run_dir: Path) -> list[dict[str, Any]]:
    """The run's journal events (none before its journal exists)."""
    path = run_dir / "events.jsonl"
    return read_events(path).events if path.exists() else []


def cluster_summary(events: list[dict[str, Any]], scenario: Scenario) -> dict[str, Any]:
    """Nodes asked for, nodes up when the run started, failed starts and unplanned losses, per
    node class (by name)."""
    asked = {name: named.spec.count for name, named in scenario.node_classes.items()}
    begun = next((i for i, e in enumerate(events) if e["event"] in ("run_started", "run_resumed")), None)
    started = Counter(e["class"] for e in events_of(events[:begun], NodeUp))
    failed = sum(1 for _ in events_of(events, NodeStartFailed))
    lost = Counter(e["reason"] for e in events_of(events, NodeLost) if e["reason"] in UNPLANNED_LOSSES)
    cluster = {
        "asked": asked,
        "started": {c: started[c] for c in asked},
        "start_failures": failed,
        "unplanned_losses": dict(sorted(lost.items())),
    }
    return {"cluster": cluster, "cluster_shortfall": shortfall(cluster)}


def shortfall(cluster: dict[str, Any]) -> str | None:
    """One sentence when the run did not have the cluster it asked for, else None."""
    asked, started = cluster["asked"], cluster["started"]
    problems = []
    if started != asked:
        problems.append(
            f"started with {' + '.join(f'{started[c]} {c}' for c in asked)} nodes "
            f"of {' + '.join(str(n) for n in asked.values())} asked"
            + (f" ({cluster['start_failures']} did not come up)" if cluster["start_failures"] else "")
        )
    losses = cluster["unplanned_losses"]
    if losses:
        problems.append(
            "lost "
            + ", ".join(f"{count} node(s) to {reason.replace('_', ' ')}" for reason, count in losses.items())
            + " that no eviction caused"
        )
    return "; ".join(problems) or None
