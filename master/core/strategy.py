"""A recovery strategy as the core sees it: queries over a read-only view, and event handlers
that return decisions (data) the core applies (``master.core.recovery``).

A strategy (``master.strategies``: ``spark``, ``spark-checkpoint``, ``pado``) never changes
the core's state and never sends, journals or writes itself. It answers two questions:

- ``plan(view, job)``: the job's tasks that may be scheduled now, in the order the
  scheduler should see them, each with the node classes it may run on and the nodes it
  prefers (the scheduling round's snapshot);
- ``launch(view, job, key)``: what a task's launch carries (its inputs, where it pushes
  its output, at what rate, its input cache, the dependencies it reads while it runs) and
  whether its output counts only once committed (pushed);

and reacts to events with ``on_<event>(view, event) -> list[Decision]``. Its own
bookkeeping (Pado's commit ledger, its receivers) is private to it and changes only
inside its handlers; everything else it wants done is a decision, applied by the core in
the order returned. docs/plugins.md ("Design note: strategy plugins") gives the design.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from master.core.jobs import JobRuntime, TaskKey
from master.core.nodes import NodeRecord
from master.policies.base import NodeClass
from testbed.protocol import BlockReceived, BlockRef, FlushAggregate, PushDelivered, PushTarget, TaskInputs
from testbed.scenario import Scenario


class StrategyView(Protocol):
    """The core's state, read only: a strategy reads it and changes nothing in it."""

    @property
    def scenario(self) -> Scenario: ...

    @property
    def nodes(self) -> Mapping[str, NodeRecord]: ...

    @property
    def jobs(self) -> Mapping[str, JobRuntime]: ...

    def now(self) -> float: ...


# ---------------------------------------------------------------- the queries' answers


@dataclass(frozen=True, slots=True)
class Ready:
    """A task that may be scheduled now: the classes it may run on, the nodes it prefers."""

    key: TaskKey
    classes: frozenset[NodeClass]
    preferred: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Launch:
    """What a task's launch carries (``testbed.protocol.TaskSpec``'s strategy fields)."""

    inputs: tuple[tuple[BlockRef, ...], ...]
    push: tuple[PushTarget, ...] = ()
    push_rate_bytes_s: float | None = None
    input_cache_mb: int = 0
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
    launch: Launch


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
    """The node is gone and the core recovered its tasks (``JobRuntime.node_lost``):
    ``interrupted`` are the tasks that ran or pushed there, per job, now pending."""

    node_id: str
    node_class: str
    interrupted: Mapping[str, tuple[TaskKey, ...]] = field(default_factory=dict)


StrategyEvent = (
    JobSubmitted | TaskStarted | TaskSucceeded | BlockReported | PushReported | Tick | Reconnected | NodeLost
)


# ---------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Note:
    """Journal an event."""

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


Decision = (
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
    overrides what it changes; ``master.strategies`` has the three the testbed ships. A
    plugin (``policy.strategy: module:Class``) is built with ``policy.options.<its name>``
    as keyword arguments, as a scheduler plugin is; the view gives it the scenario."""

    name = "spark"

    def plan(self, view: StrategyView, job: JobRuntime) -> Iterable[Ready]:
        classes: frozenset[NodeClass] = frozenset({"reserved", "transient"})
        return (Ready(key, classes) for key in job.ready())

    def launch(self, view: StrategyView, job: JobRuntime, key: TaskKey) -> Launch:
        return Launch(job.input_refs(key))

    def on_job_submitted(self, view: StrategyView, event: JobSubmitted) -> list[Decision]:
        return []

    def on_task_started(self, view: StrategyView, event: TaskStarted) -> list[Decision]:
        return []

    def on_task_succeeded(self, view: StrategyView, event: TaskSucceeded) -> list[Decision]:
        return []

    def on_block_reported(self, view: StrategyView, event: BlockReported) -> list[Decision]:
        """A spark run copies nothing: a stray report is ignored."""
        return []

    def on_push_reported(self, view: StrategyView, event: PushReported) -> list[Decision]:
        """A spark run pushes nothing: a stray report is ignored."""
        return []

    def on_tick(self, view: StrategyView, event: Tick) -> list[Decision]:
        return []

    def on_reconnected(self, view: StrategyView, event: Reconnected) -> list[Decision]:
        return []

    def on_node_lost(self, view: StrategyView, event: NodeLost) -> list[Decision]:
        """Nothing beyond the core's lineage recovery."""
        return []
