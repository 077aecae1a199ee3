"""summary.json's record of a resumed run: where each resume picked it up (``resumes``), and
which of its figures cover only the last segment (``last_segment_only``).

Everything else the summary gives is the whole run's: the tables and events.jsonl span every
segment (a job finished before a crash has its one row, a restored job its one row when it
ends; its JCT runs from its first submission, without the downtime), and the input reads the
workers reported are counted again from the journal on resume (``InputReplication.resumed``).
The placement latencies and the rounds' times are the master's own samples, which the journal
does not keep: a resumed master has only its own segment's, and says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from testbed.journal.schema import RunResumed, events_of

SEGMENT_PREFIXES = ("placement_latency_", "solver_time_p")
"""The summary's keys from the master's in-memory samples (``RoundTimes.summary``)."""


def resume_summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    """``resumes``: each ``run_resumed``'s crash time and counts, in order; none if never resumed."""
    resumes = [
        {key: event[key] for key in ("crashed_at", "finished_jobs", "restored_jobs", "lost_attempts")}
        for event in events_of(events, RunResumed)
    ]
    return {"resumes": resumes} if resumes else {}


def last_segment_only(keys: Iterable[str]) -> dict[str, Any]:
    """``last_segment_only``: those of ``keys`` that only the last segment's samples make."""
    return {"last_segment_only": sorted(key for key in keys if key.startswith(SEGMENT_PREFIXES))}
