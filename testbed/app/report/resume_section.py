"""The report's mark of a resumed run (``testbed run --resume``): where each resume picked the
run up, and what covers the whole run or only its last segment."""

from __future__ import annotations

from testbed.app.report.document import Block, Callout, seconds
from testbed.app.report.rundir import RunData


def resume_notice(run: RunData) -> list[Block]:
    """One callout naming each resume point (its ``run_resumed``, at the crash's time: the clock
    goes on from there); none if never resumed."""
    resumes = [e for e in run.events if e.get("event") == "run_resumed"]
    if not resumes:
        return []
    points = "; ".join(
        f"at {seconds(float(e['t']))} s ({e.get('finished_jobs', 0)} jobs finished before it, "
        f"{e.get('restored_jobs', 0)} restored, {e.get('lost_attempts', 0)} attempts cut short)"
        for e in resumes
    )
    return [
        Callout(
            f"Resumed after a master crash ({len(resumes)} time{'s' if len(resumes) > 1 else ''}): "
            f"{points}. The clock goes on from the crash (the downtime is not counted). Jobs, tasks, "
            "nodes and input reads below cover the whole run, each job once; summary.json's "
            "placement latency and solver times cover only the last segment (its last_segment_only)."
        )
    ]
