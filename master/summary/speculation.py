"""summary.json's speculation and preemption figures: copies launched, copies that won, attempts
preempted, slot-seconds wasted."""

from __future__ import annotations

from typing import Any

from testbed.journal.tables import SPECULATION_COUNTERS


def speculation_summary(jobs: list[dict[str, str]]) -> dict[str, Any]:
    """The run's totals of jobs.csv's speculation and preemption columns; nothing when the run
    had neither (the columns are empty). ``wasted_slot_s`` is a duration (``_s``): emulated
    seconds of attempts killed, as speculation's losers or preempted."""
    speculated = any(j.get("speculative_attempts") for j in jobs)
    preempted = sum(int(j.get("preempted_attempts") or 0) for j in jobs)
    if not speculated and not preempted:
        return {}
    totals: dict[str, Any] = {}
    if speculated:
        attempts, wins = (sum(int(j.get(key) or 0) for j in jobs) for key in SPECULATION_COUNTERS[:2])
        totals = {"speculative_attempts": attempts, "speculative_wins": wins}
    if preempted:
        totals["preempted_attempts"] = preempted
    wasted = sum(float(j.get("wasted_slot_s") or 0) for j in jobs)
    return {**totals, "wasted_slot_s": round(wasted, 4)}
