"""The pure policy interface: immutable cluster snapshots in, decisions out.

Plugins import these through ``testbed.api`` (the public, versioned surface); the
master's policies import them from here (or ``testbed.api.policy``).

A policy never does I/O, never sleeps and never reads the clock: ``now`` is a
field of the snapshot. The master (the imperative shell) builds a snapshot,
asks the policy, and applies the decisions. Tests build snapshots by hand and
drive them with a virtual clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

NodeClass = Literal["reserved", "transient"]


@dataclass(frozen=True, slots=True)
class RunningTask:
    task_id: str
    job_id: str
    memory_mb: int
    started: float
    expected_end: float
    elastic: bool = False
    long: bool = False
    disk_mb_s: float = 0.0
    """Disk bandwidth charged to the node's elastic budget (``Assign.disk_mb_s``)."""
    progress: float = 0.0
    """Its progress score in [0, 1] as its node last reported it (Hadoop's definition:
    ``testbed.api.speculation``); 0 before any report."""
    progress_rate: float = 0.0
    """Score per second since it started (0 before any report)."""


@dataclass(frozen=True, slots=True)
class NodeView:
    node_id: str
    node_class: NodeClass
    slots: int
    memory_mb: int
    running: tuple[RunningTask, ...] = ()
    draining: bool = False
    launched: float = 0.0
    reserved_for: str | None = None
    partition: Literal["general", "short"] = "general"
    queued: tuple[str, ...] = ()
    rebalance: bool = False
    """The node got a rebalance recommendation: at elevated risk of eviction (docs/chaos.md)."""
    zone: str | None = None
    """Its availability zone (``cluster.<class>.zones``), if the scenario gives zones."""

    @property
    def free_slots(self) -> int:
        return self.slots - len(self.running)

    @property
    def free_memory_mb(self) -> int:
        return self.memory_mb - sum(t.memory_mb for t in self.running)


@dataclass(frozen=True, slots=True)
class PendingTask:
    """A task whose inputs are available: it may start now."""

    task_id: str
    job_id: str
    stage: int
    index: int
    ideal_memory_mb: int
    est_duration_s: float = 1.0
    preferred_nodes: tuple[str, ...] = ()
    allowed_classes: frozenset[NodeClass] = frozenset({"reserved", "transient"})
    long: bool = False
    excluded_nodes: frozenset[str] = frozenset()
    """Nodes where this task hit a resource fault (full disk, out of memory): place it elsewhere.
    The master drops an assignment to one of them."""
    workload: str = ""
    """The job's workload (``sort``, ...): the key of its profiled task models."""
    input_bytes: int = 0
    """The bytes of the input split a map reads, where its job replicates its input
    (``jobs[].input_replication``); 0 otherwise."""
    input_on_node: tuple[tuple[str, int], ...] = ()
    """The nodes holding a replica of that split and the bytes each holds, by node id."""
    exposed_s: float = 0.0
    """How long from now its output is expected to stay needed on the node it runs on (wall
    seconds): until the later tasks that read it (a map's reduces) have read it. The core's
    estimate (``master.core.exposure``): the rest of the task's own stage, at least its own
    run, plus the consuming stage's run, from the mean successful attempts of those stages
    so far in the run (before any, each stage's prior: one attempt as the testbed's execution
    model costs it, ``master.stage_prior``; the job's ``est_duration_s`` where it has none). 0:
    no later stage reads its output (a final stage's task)."""
    loss_s: float = 0.0
    """The work (wall seconds) lost if its node is evicted within ``exposed_s``: recomputing
    the task and the run of every later task that reads its output (each reduce of a map's
    job), as if all were reading it (the same means). 0 where ``exposed_s`` is 0."""
    expected_run_s: float = 0.0
    """The task's own expected run (wall seconds), for a scheduler that reads the exposure: the
    job's ``est_duration_s`` where the job gives its own estimate (a sleep job's), else the mean
    of its stage's successful attempts so far, before any the stage's prior (as for
    ``exposed_s``). 0: not estimated (a scheduler that reads no exposure; ``est_duration_s``
    stands for it)."""


@dataclass(frozen=True, slots=True)
class JobView:
    job_id: str
    submitted: float
    pending: tuple[PendingTask, ...]
    running: int = 0
    done_tasks: int = 0
    total_tasks: int = 0
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class FreeNode:
    """A node up (not draining) with a free slot: its free slots and memory."""

    node_id: str
    node_class: NodeClass
    free_slots: int
    free_memory_mb: int


@dataclass(frozen=True, slots=True)
class FreeNodes:
    """The nodes of ``ClusterSnapshot.nodes`` that are up (not draining) with a free slot, as
    the master keeps them from round to round (so a scheduler need not walk every node):
    each one by id, and per node class and number of free slots their ids in increasing order."""

    nodes: Mapping[str, FreeNode]
    by_slots: Mapping[tuple[NodeClass, int], tuple[str, ...]]
    """(class, free slots) -> the ids of those nodes with exactly that many free slots, sorted;
    only non-empty entries."""


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    now: float
    nodes: tuple[NodeView, ...]
    jobs: tuple[JobView, ...]
    memory_increment_mb: int = 100
    unavailable: frozenset[NodeClass] = frozenset()
    """Classes whose cloud capacity is out now (docs/chaos.md, "Capacity"): a launch of them
    waits or is refused."""
    free: FreeNodes | None = None
    """The nodes with a free slot, indexed: the master gives them in a scheduling round's
    snapshot; None in other snapshots (an autoscaler's, one made by hand): derive them from
    ``nodes`` (``NodeView.free_slots``, ``free_memory_mb``)."""


@dataclass(frozen=True, slots=True)
class Assign:
    """Start a task on a node now; if it was queued on that node, it leaves that queue."""

    task_id: str
    node_id: str
    memory_mb: int
    elastic: bool = False
    predicted_duration_s: float | None = None
    disk_mb_s: float = 0.0
    """Disk bandwidth an elastic task is expected to use for its spills (MB/s). The shell
    shows it back as ``RunningTask.disk_mb_s`` while the task runs."""


@dataclass(frozen=True, slots=True)
class Reserve:
    node_id: str
    job_id: str | None
    """``None`` lifts the reservation."""


@dataclass(frozen=True, slots=True)
class LogDecision:
    """A decision-statistics entry (regular accepted, elastic rejected, ...)."""

    job_id: str
    task_id: str
    decision: str
    node_id: str | None = None
    detail: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Enqueue:
    """Append a task to a node's queue (a node-side queue, as in Eagle).

    The queue is shell state shown back as ``NodeView.queued`` (in enqueue
    order). A queued task is still pending: it stays in ``JobView.pending``
    until it starts, and it starts only through a later ``Assign`` to that
    node (the scheduler picks the order: FIFO, SRPT, ...). ``copy`` marks a
    second copy of a task already queued elsewhere (CloudCoaster's on-demand
    copy of a task queued on a transient node).
    """

    task_id: str
    node_id: str
    copy: bool = False


@dataclass(frozen=True, slots=True)
class Dequeue:
    """Remove a task from a node's queue (another copy of it has started)."""

    task_id: str
    node_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Preempt:
    """Kill a running task's attempt now and put the task back among the pending ones.

    The attempt's slot-seconds count as wasted (``preempted_attempts``, ``wasted_slot_s``);
    a late success of it is ignored, so its output is committed at most once, by the attempt
    that later succeeds. The master checks it: a task not running (or running with a
    speculative copy, or pushing its output, or fed while it runs) is left as it is."""

    task_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Migrate:
    """Preempt a running task and start it again on ``node_id`` at once (with the memory it
    had). Checked as ``Preempt`` and as ``Assign`` on the target: a target that is gone, full
    or the task's own node leaves the task running where it is."""

    task_id: str
    node_id: str
    reason: str = ""


Decision = Assign | Reserve | LogDecision | Enqueue | Dequeue | Preempt | Migrate


class Scheduler(Protocol):
    """Which pending task runs on which node, with how much memory.

    Optional capabilities are members with a default, inherited by a scheduler
    that subclasses this Protocol and given to a plugin that does not when it loads
    (``testbed.scenario.plugins``; the shell never probes for them):

    - ``needs_all_pending``: the scheduler looks at every ready task (YARN-ME's
      timeline). False when it places the head of each queue only (FIFO): its
      snapshot then holds a window of the ready tasks (the first pending tasks of each job).
    - ``needs_node_views``: False when it places from ``ClusterSnapshot.free`` alone
      (FIFO): the round's snapshot then has no ``nodes`` (an empty tuple), and the master
      builds no ``NodeView`` for it.
    - ``needs_free_index``: False when it never reads ``ClusterSnapshot.free`` (Eagle keeps
      its own nodes): the round's snapshot then has ``free=None``, and the master copies no
      index of the free nodes for it.
    - ``needs_exposure``: False when it never reads ``PendingTask.exposed_s``, ``loss_s`` or
      ``expected_run_s`` (all but Firmament's transient cost model): its pending tasks then
      show 0 for all three, and the master does not estimate them.
    - ``modelled_round_s()``: the seconds the last ``schedule`` call would take on the
      host its model was fitted on (None: no model, the default). The simulator charges a
      round that much of its virtual clock when ``simulation.charge_policy_time`` is on
      (else the round's measured CPU time), so runs stay the same from rerun to rerun.
    - ``reserved_partitions(node_ids)``: the partition of each initial reserved node, which
      its ``NodeView.partition`` shows (Eagle's short-only partition); all ``general`` by
      default. Transient nodes are always ``short``.
    - ``name``: how the run is labelled (summary, report, ``compare``); a plugin
      is labelled by its import path and version whatever it sets here.
    """

    needs_all_pending: bool = True
    needs_node_views: bool = True
    needs_free_index: bool = True
    needs_exposure: bool = True

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]: ...

    def modelled_round_s(self) -> float | None:
        return None

    def reserved_partitions(self, node_ids: Sequence[str]) -> dict[str, str]:
        return dict.fromkeys(node_ids, "general")


# ------------------------------------------------------------------ autoscaling


@dataclass(frozen=True, slots=True)
class Launch:
    node_class: NodeClass
    """The kind to launch; with named classes (``cluster.classes``), a node of its first class."""
    reason: str = ""
    partition: Literal["general", "short"] = "general"


@dataclass(frozen=True, slots=True)
class Release:
    node_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Drain:
    """Mark a node draining: it takes no new tasks but runs its queue to the end.

    The autoscaler releases it (``Release``) once it has nothing running or queued.
    """

    node_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Undrain:
    """Take a draining node back into service (cheaper than launching a new one)."""

    node_id: str
    reason: str = ""


ScaleDecision = Launch | Release | Drain | Undrain


class Autoscaler(Protocol):
    """Cluster size over time.

    Optional capabilities are members with a default, inherited by an autoscaler
    that subclasses this Protocol and given to a plugin that does not when it loads
    (``testbed.scenario.plugins``; the shell never probes for them):

    - ``provisioning_delay_s``: how long a ``Launch`` takes before the node starts.
    - ``wake_at``: when time alone may change the decision (a removal waiting
      for a node's minimum age), so the shell asks again then; None: never.
    - ``facts``: numbers journaled with each decision (``autoscale`` events).
    - ``needs_current_jobs``: True: the snapshot's ``jobs`` are as they are when ``decide``
      is asked, with every ready task not yet started (the whole backlog, whatever window a
      scheduler that places the head of the queue sees). False when it reads ``jobs`` only to
      look up the tasks queued on nodes (``NodeView.queued``), as CloudCoaster does for their
      long flag: the master may then give it the jobs of the scheduling round just run, as
      that round saw them before its decisions (a task it started still pending; under such
      a scheduler only its window), sparing a second walk over every job.
    """

    provisioning_delay_s: float = 0.0
    needs_current_jobs: bool = True

    def decide(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]: ...

    def wake_at(self, snapshot: ClusterSnapshot, provisioning: int) -> float | None:
        return None

    def facts(self, snapshot: ClusterSnapshot) -> dict[str, int]:
        return {}
