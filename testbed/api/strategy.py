"""The recovery-strategy part of the plugin API; plugins import it from ``testbed.api``.

A recovery strategy (``policy.strategy``: ``spark``, ``spark-checkpoint``, ``pado``, or a
plugin) decides, for the master's core, which tasks may run where and what their launches
carry, and reacts to events with decisions; the core applies them
(``master.core.recovery``). It never changes the core's state, sends, journals or writes
itself. It answers two queries:

- ``plan(view, job)``: the job's tasks that may be scheduled now, in the order the
  scheduler should see them, each a :class:`Ready` with the node classes it may run on
  and the nodes it prefers (the scheduling round's snapshot);
- ``launch(view, job, key)``: a :class:`TaskLaunch`: what a task's launch carries (its
  inputs, where it pushes its output, at what rate, its input cache, the dependencies it
  reads while it runs) and whether its output counts only once committed (pushed);

and reacts to events with ``on_<event>(view, event) -> list[StrategyDecision]``. Its own
bookkeeping (Pado's commit ledger, its receivers) is private to it and changes only
inside its handlers; everything else it wants done is a decision, applied by the core in
the order returned.

What it reads is a live, read-only view of the core's state (:class:`StrategyView`: the
nodes as :class:`LiveNode`, the jobs as :class:`LiveJob` with their tasks as
:class:`LiveTask`). Unlike a scheduler's snapshot, nothing is copied for it: these are
Protocols over the core's own records, so a query costs what a dict lookup costs and sees
the state as it is at the call. Only the members declared here are part of the API; the
records have others, which may change at any time. The view is read only by contract
(the Protocols declare properties, so a type checker refuses an assignment): a strategy
that changes what it reads breaks the core's invariants.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from testbed.api.policy import NodeClass
from testbed.plan import Dependency, JobPlan
from testbed.wire.protocol import (
    BlockReceived,
    BlockRef,
    FlushAggregate,
    PushDelivered,
    PushTarget,
    TaskInputs,
)

TaskKey = tuple[int, int]
"""A task within its job: (stage, index); its id is ``LiveJob.task_id(key)``."""
TaskStatus = Literal["pending", "running", "pushing", "done"]
"""``pushing``: it succeeded and its output is being pushed; it counts once committed."""
JobStatus = Literal["waiting", "running", "succeeded", "failed"]
NodeStatus = Literal["launching", "up", "draining", "lost", "gone"]

# ---------------------------------------------------------------- the view


class LiveTask(Protocol):
    """One task of a job, as it is now."""

    @property
    def stage(self) -> int: ...

    @property
    def index(self) -> int: ...

    @property
    def status(self) -> TaskStatus: ...

    @property
    def attempt(self) -> int:
        """The current (or last) attempt, from 0; -1 before the first launch."""

    @property
    def node(self) -> str | None:
        """The node of the current attempt: running it, pushing its output, or (done) that
        produced it; None while pending."""

    @property
    def location(self) -> str | None:
        """The producer's URL while it still holds the output; None once that copy is lost
        (``locations`` may name other copies)."""

    @property
    def block(self) -> str | None:
        """The id of the last successful attempt's output block (``<task id>.a<attempt>``)."""

    @property
    def locations(self) -> tuple[str, ...]:
        """The URLs of the agents holding the output, its producer first (then checkpoints,
        pushed copies)."""

    @property
    def available(self) -> bool:
        """Its output exists somewhere and may be read."""

    @property
    def partition_bytes(self) -> tuple[int, ...]:
        """Bytes of each partition of the last successful attempt's output."""


class LiveJob(Protocol):
    """A job: its physical plan (stages of tasks and their dependencies) and its tasks' states."""

    @property
    def job_id(self) -> str: ...

    @property
    def workload(self) -> str:
        """The scenario's ``workload`` (a built-in name or a plugin's import path)."""

    @property
    def plan(self) -> JobPlan: ...

    @property
    def status(self) -> JobStatus: ...

    @property
    def submitted(self) -> float: ...

    @property
    def tasks(self) -> Mapping[TaskKey, LiveTask]: ...

    def task_id(self, key: TaskKey) -> str:
        """``<job>.s<stage>.t<index>``."""
        ...

    def key_of(self, task_id: str) -> TaskKey | None:
        """The key of one of this job's task ids; None for any other string."""
        ...

    def ready(self, streamed: frozenset[int] = frozenset()) -> Iterator[TaskKey]:
        """Pending tasks whose every input is available, in stage then index order, lazily.
        A shuffle from a ``streamed`` stage does not wait for it: its outputs reach the task
        while it runs (``TaskLaunch.streamed``, ``FeedReceiver``)."""
        ...

    def stage_available(self, stage: int) -> bool:
        """Every output of the stage is available."""
        ...

    def input_refs(self, key: TaskKey) -> tuple[tuple[BlockRef, ...], ...]:
        """The blocks the task reads, per dependency, from where they are now (lineage)."""
        ...

    def dep_refs(self, key: TaskKey, dep: Dependency) -> tuple[BlockRef, ...]:
        """The blocks the task reads through one dependency."""
        ...


class LiveNode(Protocol):
    """An agent's node."""

    @property
    def node_id(self) -> str: ...

    @property
    def node_class(self) -> str:
        """``reserved`` or ``transient``."""

    @property
    def ordinal(self) -> int:
        """Its launch order within its class (a stable order to sort nodes by)."""

    @property
    def status(self) -> NodeStatus: ...

    @property
    def alive(self) -> bool:
        """Launching, up or draining: not declared lost or gone."""

    @property
    def url(self) -> str:
        """Its agent's block server (what a ``PushTarget`` or a ``BlockRef`` location names)."""

    @property
    def slots(self) -> int: ...

    @property
    def memory_mb(self) -> int: ...

    @property
    def running(self) -> Collection[str]:
        """The ids of the tasks running there."""

    @property
    def cached_inputs(self) -> tuple[tuple[str, int], ...]:
        """Its input cache as the agent last reported it: (key, bytes), least recent first."""


class StrategyView(Protocol):
    """The core's state, read only."""

    @property
    def nodes(self) -> Mapping[str, LiveNode]: ...

    @property
    def jobs(self) -> Mapping[str, LiveJob]: ...

    def now(self) -> float:
        """The run's time in seconds (virtual on the simulator)."""
        ...


# ---------------------------------------------------------------- the queries' answers


@dataclass(frozen=True, slots=True)
class Ready:
    """A task that may be scheduled now: the classes it may run on, the nodes it prefers."""

    key: TaskKey
    classes: frozenset[NodeClass]
    preferred: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskLaunch:
    """What a task's launch carries (``testbed.wire.protocol.TaskSpec``'s strategy fields)."""

    inputs: tuple[tuple[BlockRef, ...], ...]
    """Per dependency of its stage, the blocks it reads (``LiveJob.input_refs``: lineage)."""
    push: tuple[PushTarget, ...] = ()
    """Agents the task pushes its output's partitions to once it succeeds."""
    push_rate_bytes_s: float | None = None
    input_cache_mb: int = 0
    """The size of the input cache the agent keeps for the task's source (0: none)."""
    streamed: tuple[int, ...] = ()
    """Dependencies whose blocks reach the task while it runs (``FeedReceiver``)."""
    pushing: bool = False
    """The output is pushed: it counts once committed (``CommitPush``), not at the task's success."""


# ---------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class JobSubmitted:
    job_id: str


@dataclass(frozen=True, slots=True)
class TaskStarted:
    job_id: str
    key: TaskKey
    attempt: int
    node_id: str
    launch: TaskLaunch


@dataclass(frozen=True, slots=True)
class TaskSucceeded:
    """The core recorded the attempt's success (``pushing``: its output now waits for a commit)."""

    job_id: str
    key: TaskKey
    attempt: int
    node_id: str
    pushing: bool


@dataclass(frozen=True, slots=True)
class BlockReported:
    """A node verified a block pushed or copied to it."""

    node_id: str
    message: BlockReceived


@dataclass(frozen=True, slots=True)
class PushReported:
    """A pushing node's commit request (or its push's failure)."""

    node_id: str
    message: PushDelivered


@dataclass(frozen=True, slots=True)
class Tick:
    """Before every scheduling round (time-driven decisions)."""


@dataclass(frozen=True, slots=True)
class Reconnected:
    """What was sent to the node may be lost (its agent or the master reconnected)."""

    node_id: str


@dataclass(frozen=True, slots=True)
class NodeLost:
    """The node is gone and the core recovered its tasks by lineage: ``interrupted`` are the
    tasks that ran or pushed there, per job, now pending."""

    node_id: str
    node_class: str
    interrupted: Mapping[str, tuple[TaskKey, ...]] = field(default_factory=dict)


StrategyEvent = (
    JobSubmitted | TaskStarted | TaskSucceeded | BlockReported | PushReported | Tick | Reconnected | NodeLost
)


# ---------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Note:
    """Journal an event (``kind``, with ``fields``)."""

    kind: str
    fields: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WriteFile:
    """Write a text file under the run directory (the job's DAG and plan)."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class SetUpReceiver:
    """A reserved task receives its pushes on ``node_id`` (journaled ``receiver_set_up``)."""

    job_id: str
    key: TaskKey
    node_id: str


@dataclass(frozen=True, slots=True)
class FeedReceiver:
    """Tell a running receiver what is committed to it so far (cumulative)."""

    node_id: str
    inputs: TaskInputs


@dataclass(frozen=True, slots=True)
class Flush:
    """Make and push a partial aggregate of outputs held on ``node_id``."""

    node_id: str
    command: FlushAggregate


@dataclass(frozen=True, slots=True)
class CommitPush:
    """The attempt's pushed output is committed: held by ``holders``, the task is done."""

    job_id: str
    key: TaskKey
    attempt: int
    holders: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AbandonPush:
    """The attempt's output cannot be committed: the task runs again (``failed``: the push
    itself failed, journaled ``push_failed`` with ``error`` if the task was still pushing)."""

    job_id: str
    key: TaskKey
    attempt: int
    failed: bool = False
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CountPushed:
    """Bytes a reserved node received whole (``jobs.csv``'s ``bytes_pushed``)."""

    job_id: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class AddReplica:
    """A verified copy of the task's output lives at ``url`` (a checkpoint): journaled
    ``checkpointed`` and counted if it is of the task's current output."""

    job_id: str
    key: TaskKey
    block: str
    node_id: str
    url: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class Reopen:
    """A committed output must be produced again (its receiver was lost)."""

    job_id: str
    key: TaskKey


@dataclass(frozen=True, slots=True)
class Recover:
    """Recompute, by lineage, every lost output an unfinished task of the job needs."""

    job_id: str


@dataclass(frozen=True, slots=True)
class Reschedule:
    """Ask for a scheduling round."""


StrategyDecision = (
    Note
    | WriteFile
    | SetUpReceiver
    | FeedReceiver
    | Flush
    | CommitPush
    | AbandonPush
    | CountPushed
    | AddReplica
    | Reopen
    | Recover
    | Reschedule
)


# ---------------------------------------------------------------- the interface


class Strategy:
    """The interface, with the defaults of lineage recovery (``spark``): every task of a ready
    stage on any class, inputs read from their producers, no push, no reaction. A strategy
    overrides what it changes. A plugin (``policy.strategy: module:Class``) subclasses it, or
    defines ``plan`` and ``launch`` and is given the handlers it lacks when it loads; it is
    built with ``policy.options.<its name>`` as keyword arguments, as a scheduler plugin is."""

    name = "spark"

    def plan(self, view: StrategyView, job: LiveJob) -> Iterable[Ready]:
        classes: frozenset[NodeClass] = frozenset({"reserved", "transient"})
        return (Ready(key, classes) for key in job.ready())

    def launch(self, view: StrategyView, job: LiveJob, key: TaskKey) -> TaskLaunch:
        return TaskLaunch(job.input_refs(key))

    def on_job_submitted(self, view: StrategyView, event: JobSubmitted) -> list[StrategyDecision]:
        return []

    def on_task_started(self, view: StrategyView, event: TaskStarted) -> list[StrategyDecision]:
        return []

    def on_task_succeeded(self, view: StrategyView, event: TaskSucceeded) -> list[StrategyDecision]:
        return []

    def on_block_reported(self, view: StrategyView, event: BlockReported) -> list[StrategyDecision]:
        """A spark run copies nothing: a stray report is ignored."""
        return []

    def on_push_reported(self, view: StrategyView, event: PushReported) -> list[StrategyDecision]:
        """A spark run pushes nothing: a stray report is ignored."""
        return []

    def on_tick(self, view: StrategyView, event: Tick) -> list[StrategyDecision]:
        return []

    def on_reconnected(self, view: StrategyView, event: Reconnected) -> list[StrategyDecision]:
        return []

    def on_node_lost(self, view: StrategyView, event: NodeLost) -> list[StrategyDecision]:
        """Nothing beyond the core's lineage recovery."""
        return []
