"""The shipped eviction-storm demo and what a run of it shows: which nodes the storm evicted and
which tasks were relaunched for it."""

from __future__ import annotations

import json
from pathlib import Path

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "eviction-storm.yaml"


def storm_recovery(run_dir: Path) -> tuple[set[str], list[str]]:
    """(the storm's victims, the tasks relaunched whose earlier attempt ran on one of them)."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    victims = {e["node"] for e in events if e["event"] == "eviction" and e["reason"] == "storm"}
    ran_on: dict[str, set[str]] = {}
    relaunched = []
    for e in events:
        if e["event"] != "task_started":
            continue
        if e["attempt"] > 0 and ran_on.get(e["task"], set()) & victims:
            relaunched.append(e["task"])
        ran_on.setdefault(e["task"], set()).add(e["node"])
    return victims, relaunched
