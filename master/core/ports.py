"""The core as its parts see it: the Protocols the recovery strategy's decisions, the run's records,
the full-disk handling, the node watch, the launcher and the scheduling round are handed.

``MasterCore`` implements them all; each part imports only these Protocols, never
``master.core.machine``, so the core has no import cycle (``lint-imports``), and a
test can hand a part a stand-in of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from master.core.commands import Command, LogLevel
from master.core.exposure import StageDurations
from master.core.input_replicas import InputReplication
from master.core.jobs import JobRuntime, LiveJobs, TaskKey
from master.core.nodes import NodeRecord
from master.core.senders import SenderCheck
from master.core.task_records import Copy
from master.core.timers import TimerHeap
from testbed.api.policy import ClusterSnapshot, NodeView, RunningTask
from testbed.api.strategy import Ready, StrategyEvent, TaskLaunch
from testbed.settings.run_settings import RunSettings, TimeBase
from testbed.wire.protocol import Heartbeat, Message, TaskUpdate


class JournalPort(Protocol):
    """The journal's writing API (``master.core.outbox.CoreJournal``,
    ``master.shell.journal_file.Journal``)."""

    def now(self) -> float: ...

    def event(self, name: str, /, **fields: Any) -> None: ...

    def say(self, level: LogLevel, message: str) -> None: ...


class ClusterPort(Protocol):
    """The node registry, the jobs, the journal, and the commands every part may give."""

    settings: RunSettings
    """The scenario compiled (its cluster, chaos, jobs, seed): the core reads no scenario."""
    time: TimeBase
    """The run's time base (``RunSettings.time``): trace time to run time, the heartbeats."""
    journal: JournalPort
    nodes: dict[str, NodeRecord]
    jobs: dict[str, JobRuntime]
    live_jobs: LiveJobs
    """The jobs of ``jobs`` not ended, in the same order."""
    inputs: InputReplication
    """Where the replicated input splits live (``jobs[].input_replication``)."""
    durations: StageDurations
    """Each stage's mean successful attempt so far (``master.core.exposure``)."""

    def send(self, node_id: str, message: Message) -> None: ...

    def kick(self) -> None:
        """Ask for a scheduling round."""

    def drain(self, node: NodeRecord, reason: str) -> None: ...


class StrategyPort(ClusterPort, Protocol):
    """What applying a recovery strategy's decisions uses (``master.core.recovery``)."""

    def run_file(self, name: str, text: str) -> None:
        """Write a text file under the run directory (``RunFile``)."""


class RecoveryPort(Protocol):
    """The run's recovery strategy as the core's parts use it (``master.core.recovery.Recovery``)."""

    def plan(self, job: JobRuntime) -> Iterable[Ready]: ...

    def launch(self, job: JobRuntime, key: TaskKey) -> TaskLaunch: ...

    def react(self, event: StrategyEvent) -> None: ...

    def succeeded(
        self, job: JobRuntime, key: TaskKey, node: NodeRecord, update: TaskUpdate, now: float
    ) -> None: ...


class JobEnding(Protocol):
    """How a job, or the whole run, is ended (``master.core.records.RunRecords``)."""

    def finish_job(self, job: JobRuntime) -> None: ...

    def reserve(self, node: NodeRecord, job_id: str | None) -> None:
        """Reserve the node for the job (None: lift its reservation); the job's end lifts it."""

    def fail_unfinished(self, reason: str) -> None:
        """Fail every job not finished yet (and those not submitted yet): the run ends."""

    def task_finished(
        self,
        job: JobRuntime,
        key: TaskKey,
        node: NodeRecord,
        status: str,
        failure: str,
        update: TaskUpdate | None = None,
        cause: str | None = None,
        copy: Copy | None = None,
    ) -> None: ...

    def node_ended(self, node: NodeRecord, kind: str, **fields: Any) -> None: ...


class SpeculationPort(Protocol):
    """The speculative copies (``master.core.copies.Copies``)."""

    enabled: bool
    preempted: dict[str, int]
    """Per job: attempts a scheduler preempted (``master.core.preemption``)."""

    def heartbeat(self, node: NodeRecord, beat: Heartbeat) -> None: ...

    def score(self, node: NodeRecord, task_id: str, attempt: int, started: float) -> tuple[float, float]:
        """(score, rate) of the attempt on the node."""

    def copy_update(self, node: NodeRecord, update: TaskUpdate, job: JobRuntime, key: TaskKey) -> bool: ...

    def succeeded(self, job: JobRuntime, key: TaskKey, now: float) -> None: ...

    def takes_over(self, job: JobRuntime, key: TaskKey, failure: str | None) -> bool: ...

    def vanished(self, node: NodeRecord, task_id: str, job: JobRuntime, key: TaskKey, cause: str) -> bool: ...

    def kill(
        self,
        job: JobRuntime,
        key: TaskKey,
        node: NodeRecord,
        attempt: tuple[int, float | None],
        copy: Copy | None,
        failure: str,
        cause: str,
    ) -> None: ...

    def role(self, job: JobRuntime, key: TaskKey, attempt: int) -> dict[str, str]: ...

    def job_counts(self, job: JobRuntime) -> dict[str, Any]: ...


class ChainsPort(Protocol):
    """The chained jobs held (``master.core.chained.Chains``)."""

    def parent_ended(self, job: JobRuntime) -> None: ...


class RecordsPort(ClusterPort, Protocol):
    """What the run's records use."""

    expected_jobs: int
    copies: SpeculationPort
    chains: ChainsPort

    def run_over(self) -> None:
        """Every expected job has ended."""


class CorePort(ClusterPort, Protocol):
    """What the core's own parts (watch, launcher, round, task updates, full disks) use."""

    attach: bool
    link_up: bool
    records: JobEnding
    recovery: RecoveryPort
    senders: SenderCheck
    copies: SpeculationPort

    def undrain(self, node: NodeRecord, reason: str) -> None: ...

    def node_lost(self, node: NodeRecord, reason: str) -> None: ...

    def kill(self, node_id: str) -> None:
        """Kill the node for real (``KillNode``)."""

    def running_views(self, node: NodeRecord) -> tuple[RunningTask, ...]: ...

    def snapshot(self) -> tuple[ClusterSnapshot, dict[str, tuple[JobRuntime, TaskKey]]]: ...

    def probe(self, node: NodeRecord, purpose: str, session: int = 0) -> None:
        """Ask the node's agent whether it lives (``Probe``)."""

    def resource_fault(self, node: NodeRecord, job: JobRuntime, key: TaskKey, failure: str) -> None: ...

    def commit_output(self, job_id: str, index: int, attempt: int) -> bool:
        """Commit the attempt's staged output if it was staged (``CommitOutput``)."""


class ChaosCore(ClusterPort, Protocol):
    """What the chaos world uses (``master.core.chaos``)."""

    run_id: str
    timers: TimerHeap
    settings: RunSettings
    """The run's settings: the chaos rules take each node class's chaos from it."""

    def running_views(self, node: NodeRecord) -> tuple[RunningTask, ...]: ...

    def stored_bytes(self) -> dict[str, int]: ...

    def record_eviction(
        self, node: NodeRecord, reason: str, lifetime_s: float | None, tasks_running: int, bytes_lost: int
    ) -> None: ...

    def kill(self, node_id: str) -> None:
        """Kill the node for real (``KillNode``)."""

    def put(self, command: Command) -> None:
        """Hand the shell a command (``SlowNode``)."""

    def launch_node(self, node_class: str) -> NodeRecord: ...


class ChaosRulesPort(Protocol):
    """What the autoscaler asks of the chaos world (``master.core.chaos.ChaosWorld``)."""

    @property
    def doomed(self) -> set[str]: ...

    def stop_replacing(self, kind: str) -> None: ...

    def launch_when_available(
        self, node_class: str, launch: Callable[[], None], refused: Callable[[], None]
    ) -> None: ...

    def node_launched(self, node: NodeRecord) -> None: ...


class ScalingCore(ClusterPort, Protocol):
    """What the autoscaler part uses (``master.core.scaling``)."""

    timers: TimerHeap
    chaos: ChaosRulesPort

    def snapshot(self) -> tuple[ClusterSnapshot, dict[str, tuple[JobRuntime, TaskKey]]]: ...

    def node_views(self) -> tuple[NodeView, ...]:
        """The nodes up or draining as a snapshot now shows them (no walk over the jobs)."""

    def undrain(self, node: NodeRecord, reason: str) -> None: ...

    def release_node(self, node: NodeRecord, reason: str) -> None: ...

    def launch_node(self, node_class: str) -> NodeRecord: ...
