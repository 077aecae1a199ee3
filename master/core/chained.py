"""Chained jobs (``jobs[].after``): a job whose input is another job's committed output.

The core holds such a job (it stays in the run's unsubmitted jobs) until its parent ends.
A parent that succeeds: the core asks the shell where the parent's committed output is
(``LocateOutput``), and the shell answers (``OutputLocated``) with the input the child is
planned from (the real shells: the glob of ``outputs/<parent>/part-*``); the core reads no
file. A parent that fails fails its held children, and theirs, with the reason.
"""

from __future__ import annotations

from typing import Any, Protocol

from master.core.commands import Command, LocateOutput
from master.core.events import OutputLocated
from master.core.jobs import JobRuntime


class ChainRecords(Protocol):
    unsubmitted: dict[int, Any]

    def fail_unplanned(self, ordinal: int, spec: Any, error: str) -> None: ...


class ChainingCore(Protocol):
    """What the chains use of the core (``MasterCore``)."""

    @property
    def records(self) -> ChainRecords: ...

    def put(self, command: Command) -> None: ...

    def submit_job(self, spec: Any, ordinal: int) -> None: ...

    def restore_job(self, spec: Any, ordinal: int) -> None: ...


class Chains:
    """The chained jobs held, by the name of the parent they wait for."""

    def __init__(self, core: ChainingCore) -> None:
        self.core = core
        self.held: dict[str, list[tuple[Any, int]]] = {}
        self.restoring: set[int] = set()
        """Held jobs that were running when the master crashed: restored, not submitted anew."""

    def hold(self, spec: Any, ordinal: int, restore: bool = False) -> None:
        """``spec`` (its ``after`` names its parent) waits for its parent to end."""
        self.core.records.unsubmitted[ordinal] = spec
        self.held.setdefault(spec.after, []).append((spec, ordinal))
        if restore:
            self.restoring.add(ordinal)

    def parent_ended(self, job: JobRuntime) -> None:
        """``job`` ended: its held children are located (it succeeded) or failed."""
        if job.status == "succeeded":
            self.parent_succeeded(job.name, job.job_id)
        else:
            self.parent_failed(job.name, f"its parent job {job.name!r} ({job.job_id}) failed: {job.error}")

    def parent_succeeded(self, name: str, job_id: str) -> None:
        for _spec, ordinal in self.held.pop(name, ()):
            self.core.put(LocateOutput(job_id, ordinal))

    def parent_failed(self, name: str, reason: str) -> None:
        for spec, ordinal in self.held.pop(name, ()):
            if self.core.records.unsubmitted.pop(ordinal, None) is None:
                continue  # the run ended first: already failed
            self.restoring.discard(ordinal)
            self.core.records.fail_unplanned(ordinal, spec, reason)
            self.parent_failed(spec.name, f"its parent job {spec.name!r} (j{ordinal:03d}) failed: {reason}")

    def located(self, event: OutputLocated) -> None:
        """The shell says where the parent's output is: the child is planned from it."""
        spec = self.core.records.unsubmitted.get(event.ordinal)
        if spec is None:
            return  # the run ended before the answer
        spec = spec.model_copy(update={"input": event.input})
        if event.ordinal in self.restoring:
            self.restoring.discard(event.ordinal)
            self.core.records.unsubmitted.pop(event.ordinal)
            self.core.restore_job(spec, event.ordinal)
        else:
            self.core.submit_job(spec, event.ordinal)

    def planning_failed(self, spec: Any, ordinal: int, error: str) -> None:
        """A job could not be planned: the jobs chained after it fail too."""
        if spec.name is not None:
            self.parent_failed(spec.name, f"its parent job {spec.name!r} (j{ordinal:03d}) failed: {error}")
