"""summary.json's speculation figures: copies launched, copies that won, slot-seconds wasted."""

from __future__ import annotations

from typing import Any

from testbed.journal.tables import SPECULATION_COUNTERS


def speculation_summary(jobs: list[dict[str, str]]) -> dict[str, Any]:
    """The run's totals of jobs.csv's speculation columns; nothing when the run had no speculation
    (the columns are empty). ``wasted_slot_s`` is a duration (``_s``): emulated seconds."""
    if not any(j.get("speculative_attempts") for j in jobs):
        return {}
    attempts, wins = (sum(int(j.get(key) or 0) for j in jobs) for key in SPECULATION_COUNTERS[:2])
    wasted = sum(float(j.get("wasted_slot_s") or 0) for j in jobs)
    return {"speculative_attempts": attempts, "speculative_wins": wins, "wasted_slot_s": round(wasted, 4)}
