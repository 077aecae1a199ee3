"""The public plugin API of transient-testbed: everything a scheduler, recovery strategy, autoscaler or
workload plugin needs.

A plugin imports only from this module; what is here keeps its name and meaning
within a major ``API_VERSION`` (a new optional capability or field with a default
raises the minor version; a removal or a change of meaning raises the major one).

A policy is pure: it gets an immutable :class:`ClusterSnapshot` (``now`` is a field of
it; a policy never reads the clock, sleeps or does I/O) and returns decisions that the
master applies. Name one in a scenario by import path (``policy.scheduler:
my_module:RandomScheduler``) or by an entry point; see docs/plugins.md.

Interfaces and their optional capabilities (members with a default, inherited by
a plugin that subclasses the interface, and given to one that does not when it loads;
the master reads every member the interface declares, never probing for one):

- :class:`Scheduler`: ``schedule(snapshot) -> list[Decision]``; optional
  ``needs_all_pending`` (True: every ready task is in the snapshot; False: a window of the
  first pending tasks of each job, faster for head-of-queue schedulers) and
  ``needs_node_views`` (False: it places from ``ClusterSnapshot.free`` alone, and the round's
  snapshot has no node views) and ``needs_free_index`` (False: it never reads
  ``ClusterSnapshot.free``, and the round's snapshot has none) and ``needs_exposure`` (False:
  it never reads ``PendingTask.exposed_s``, ``loss_s`` or ``expected_run_s``, which then show 0) and
  ``modelled_round_s()`` (a model of its last round's time, which the simulator may charge
  to its clock). Its decisions may also preempt a running task (:class:`Preempt`: killed,
  back to pending, its work counted as wasted) or move it (:class:`Migrate`: killed and
  started again elsewhere).
- :class:`Strategy` (``policy.strategy``, a recovery strategy): the queries
  ``plan(view, job) -> Iterable[Ready]`` and ``launch(view, job, key) -> TaskLaunch``,
  and the handlers ``on_<event>(view, event) -> list[StrategyDecision]`` (no-ops by
  default). It reads a live, read-only :class:`StrategyView` of the core (:class:`LiveJob`,
  :class:`LiveTask`, :class:`LiveNode`), not a snapshot; the messages its events and
  decisions carry (:class:`BlockReceived`, :class:`PushDelivered`, :class:`TaskInputs`,
  :class:`FlushAggregate`, :class:`PushTarget`, :class:`BlockRef`) and a job's plan
  (:class:`JobPlan`, :class:`StagePlan`, :class:`Dependency`) are here too.
- :class:`Autoscaler`: ``decide(snapshot, provisioning) -> list[ScaleDecision]``;
  optional ``provisioning_delay_s``, ``wake_at(snapshot, provisioning)``,
  ``facts(snapshot)`` and ``needs_current_jobs`` (False: it reads the jobs only to look up
  tasks queued on nodes, and may get the scheduling round's jobs as that round saw them).
- :class:`Workload` (a job's ``workload``): ``map(record)`` and ``reduce(key, values)``;
  optional ``iterations`` with ``step(round, key, values)``, ``combine(key, values)``,
  ``read(chunk)``, ``generate(split, splits, seed)``,
  ``reference(records)``, ``sim_model()`` and ``dag(job)`` (a general DAG of stages instead
  of map/reduce: :class:`JobDag`, :class:`StageSpec`, :class:`StageInput`, :class:`DagTask`,
  ``testbed.api.dag``). It runs in the agents' worker processes
  (and in ``testbed check-output``); the master only imports it to check it and, on
  ``--backend sim``, to ask it for its :class:`SimModel`.

Any plugin class may declare ``api_version = "1.11"``, the version it was written
against: a different major version, or a newer minor one, is refused before the run.

A plugin class is built with its options as keyword arguments (``policy.options.<name>``
where ``<name>`` is the scenario's ``policy.scheduler``/``policy.autoscaler`` value);
it may declare a pydantic model ``Options`` (a nested class attribute) so that
``testbed validate`` checks them; then it is built with the validated model's fields.
A workload's options are its job's ``options``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from testbed.api.dag import (
    DagError,
    DagTask,
    EdgeKind,
    JobDag,
    JobInputs,
    StageCost,
    StageInput,
    StageSpec,
    partition_of,
)
from testbed.api.policy import (
    Assign,
    Autoscaler,
    ClusterSnapshot,
    Decision,
    Dequeue,
    Drain,
    Enqueue,
    FreeNode,
    FreeNodes,
    JobView,
    Launch,
    LogDecision,
    Migrate,
    NodeClass,
    NodeView,
    PendingTask,
    Preempt,
    Release,
    Reserve,
    RunningTask,
    ScaleDecision,
    Scheduler,
    Undrain,
)
from testbed.api.speculation import (
    AttemptView,
    Speculate,
    SpeculationNode,
    SpeculationSnapshot,
    Speculator,
    TaskGroup,
)
from testbed.api.strategy import (
    AbandonPush,
    AddReplica,
    BlockReported,
    CommitPush,
    CountPushed,
    FeedReceiver,
    Flush,
    JobStatus,
    JobSubmitted,
    LiveJob,
    LiveNode,
    LiveTask,
    NodeLost,
    NodeStatus,
    Note,
    PushReported,
    Ready,
    Reconnected,
    Recover,
    Reopen,
    Reschedule,
    SetUpReceiver,
    Strategy,
    StrategyDecision,
    StrategyEvent,
    StrategyView,
    TaskKey,
    TaskLaunch,
    TaskStarted,
    TaskStatus,
    TaskSucceeded,
    Tick,
    WriteFile,
)
from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.wire.protocol import (
    BlockReceived,
    BlockRef,
    FlushAggregate,
    PushDelivered,
    PushedPart,
    PushTarget,
    TaskInputs,
)

API_VERSION = "1.13"
"""``major.minor`` of this module's contract (see the module docstring); 1.1 added
:class:`Workload` and ``api_version``, 1.2 :class:`SimModel`, ``Workload.sim_model`` and
``Workload.iterations``/``step``, 1.3 the recovery :class:`Strategy` with its view, events
and decisions (``testbed.api.strategy``), 1.4 ``ClusterSnapshot.free`` (:class:`FreeNodes`,
:class:`FreeNode`: the nodes with a free slot, indexed by the master) and
``Scheduler.needs_node_views``, 1.5 ``Scheduler.needs_free_index``, 1.6
``Autoscaler.needs_current_jobs``, 1.7 ``Workload.dag`` and the stage DAG
(``testbed.api.dag``), and the speculation rule's interface (``testbed.api.speculation``) with
``RunningTask.progress`` and ``progress_rate``, 1.8 ``Scheduler.modelled_round_s``, 1.9 the
scheduler's :class:`Preempt` and :class:`Migrate` decisions."""


@dataclass(frozen=True)
class SimModel:
    """How the simulator (``--backend sim``) costs a workload plugin's tasks, in the terms
    of its execution model (docs/simulation.md): a task computes for ``s_per_mb`` seconds
    per MB of input (at its ideal memory), and its output is ``output_ratio`` bytes per
    input byte, cut evenly into its partitions. Measure one with
    ``testbed.testing.measure_sim_model`` on real tasks."""

    map_s_per_mb: float
    """Compute seconds of a map task per MB of its split."""
    map_output_ratio: float
    """Map output bytes (all partitions) per byte of the split."""
    reduce_s_per_mb: float
    """Compute seconds of a reduce task per MB of the map output it fetches."""
    step_s_per_mb: float = 0.0
    """Compute seconds of a ``step`` task per MB it fetches."""
    step_output_ratio: float = 1.0
    """A ``step`` task's output bytes per byte it fetches."""
    generated_split_mb: float = 0.0
    """MB one ``generate`` split yields (the map input of a job without ``input``, which
    the simulator never generates); a split of input files is its byte range."""


class Workload:
    """A MapReduce workload: subclass it (or write a class with ``map`` and ``reduce``: the
    optional members it lacks are given these defaults when it loads).

    The testbed reads and splits the input, calls ``map`` on every record, partitions
    the pairs by key (CRC32 of the key's msgpack bytes), sorts and spills them under
    the task's memory budget, shuffles them to the reducers over HTTP, merges them and
    calls ``reduce`` once per key, in key order; it retries, recomputes lost map
    outputs after an eviction and commits each reducer's part file exactly once, as
    for the built-in workloads.

    Keys and values travel as msgpack: str, bytes, int, float, bool, None, tuples
    (lists come back as tuples) and dicts. Keys must sort together: give them one type
    (or tuples of one shape). Every function must be deterministic: a task may run
    twice (a retry, a recomputation) and both runs must emit the same pairs.
    """

    api_version: ClassVar[str] = API_VERSION
    """The API version the plugin is written against (checked against ``API_VERSION``)."""

    def read(self, chunk: bytes) -> Iterable[Any]:
        """The records of a chunk of input (whole lines). Default: each line, decoded as
        UTF-8 (invalid bytes become U+FFFD), without its newline."""
        lines = chunk.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return (line.decode("utf-8", errors="replace") for line in lines)

    def map(self, record: Any) -> Iterable[tuple[Any, Any]]:
        """The (key, value) pairs of one record."""
        raise NotImplementedError

    def reduce(self, key: Any, values: Iterator[Any]) -> Iterable[str] | str | None:
        """The output lines of one key (a str is one line); ``values`` holds every value
        the maps emitted for the key (or the combiner's results), in no set order."""
        raise NotImplementedError

    iterations: int = 0
    """Optional: the rounds of ``step`` between ``map`` and ``reduce`` (fixed when the job
    is planned: a class attribute, or set from the options in ``__init__``). 0: map and
    reduce only."""

    step: Any = None
    """Optional (required when ``iterations`` > 0): ``step(round, key, values) ->
    Iterable[(key, value)]``, round 1..``iterations``: called once per key of the previous
    stage's shuffled pairs, in key order, like ``reduce``; its pairs are partitioned,
    spilled and shuffled to the next round (or to ``reduce``) like ``map``'s. State that
    must survive a round (an adjacency list, a rank) travels in the pairs, as in
    Hadoop's iterative jobs."""

    combine: Any = None
    """Optional: ``combine(key, values: list) -> value`` folds some values of one key into
    one, on the map side (at every spill and in the map's final merge) and before the
    reduce. It must be associative and commutative, and ``reduce`` must accept its
    results among the values. None: no combiner."""

    generate: Any = None
    """Optional: ``generate(split, splits, seed) -> Iterable[bytes]``, the input of map
    task ``split`` of ``splits`` as chunks of whole records, for a job without
    ``input`` (synthetic data, deterministic in its arguments)."""

    sim_model: Any = None
    """Optional: ``sim_model() -> SimModel``, the plugin's task costs for ``--backend sim``
    (with the plugin's options: a generated split's size may depend on them). A scenario's
    ``simulation.ops`` entries ``<workload>.map``/``<workload>.reduce`` override it. None:
    the simulator gives its tasks no compute time (only launch overhead and fetches) and
    its generated splits no bytes."""

    dag: Any = None
    """Optional: ``dag(job: JobInputs) -> JobDag``, the job's stages as a general DAG
    (several parents per stage, narrow stages, broadcasts and gathers; ``testbed.api.dag``).
    A plugin with ``dag`` needs no ``map`` or ``reduce``: each stage runs its own body.
    None: the map/step/reduce chain above."""

    reference: Any = None
    """Optional: ``reference(records) -> Iterable[str]``, the job's output lines computed
    from all its records in one process, independently of ``map``/``reduce``, for
    ``testbed check-output``. None: the check runs ``map`` and ``reduce`` in one
    process, with plain in-memory grouping and no combiner."""


__all__ = [
    "API_VERSION",
    "AbandonPush",
    "AddReplica",
    "Assign",
    "AttemptView",
    "Autoscaler",
    "BlockReceived",
    "BlockRef",
    "BlockReported",
    "ClusterSnapshot",
    "CommitPush",
    "CountPushed",
    "DagError",
    "DagTask",
    "Decision",
    "Dependency",
    "Dequeue",
    "Drain",
    "EdgeKind",
    "Enqueue",
    "FeedReceiver",
    "Flush",
    "FlushAggregate",
    "FreeNode",
    "FreeNodes",
    "JobDag",
    "JobInputs",
    "JobPlan",
    "JobStatus",
    "JobSubmitted",
    "JobView",
    "Launch",
    "LiveJob",
    "LiveNode",
    "LiveTask",
    "LogDecision",
    "Migrate",
    "NodeClass",
    "NodeLost",
    "NodeStatus",
    "NodeView",
    "Note",
    "PendingTask",
    "Preempt",
    "PushDelivered",
    "PushReported",
    "PushTarget",
    "PushedPart",
    "Ready",
    "Reconnected",
    "Recover",
    "Release",
    "Reopen",
    "Reschedule",
    "Reserve",
    "RunningTask",
    "ScaleDecision",
    "Scheduler",
    "SetUpReceiver",
    "SimModel",
    "Speculate",
    "SpeculationNode",
    "SpeculationSnapshot",
    "Speculator",
    "StageCost",
    "StageInput",
    "StagePlan",
    "StageSpec",
    "Strategy",
    "StrategyDecision",
    "StrategyEvent",
    "StrategyView",
    "TaskGroup",
    "TaskInputs",
    "TaskKey",
    "TaskLaunch",
    "TaskStarted",
    "TaskStatus",
    "TaskSucceeded",
    "Tick",
    "Undrain",
    "Workload",
    "WriteFile",
    "partition_of",
]
