"""The run journal's event kinds, each with its fields and their types (``EVENTS``).

Part of the journal's schema: ``testbed.journal.schema`` checks events against these
declarations and reads them back; ``testbed.journal.tables`` makes the CSV rows
from them. Import them from ``testbed.journal.schema``.
"""

from typing import Any, NotRequired, TypedDict


class Event(TypedDict):
    t: float
    event: str


_Class = TypedDict("_Class", {"class": str})
_MaybeClass = TypedDict("_MaybeClass", {"class": NotRequired[str]})
"""The node class travels as ``class``, a Python keyword: hence these two bases."""


class RunStarted(Event):
    run_id: str
    name: str


class RunFinished(Event):
    status: str


class MasterError(Event):
    error: str
    traceback: NotRequired[str]
    """Where it was raised (a policy plugin's own code, say)."""


class RunAborted(Event):
    reason: str


class BrokerStarted(Event):
    broker: str
    url: str
    pid: int | None


class BrokerDied(Event):
    broker: str
    status: int | None


class BrokerRestarted(Event):
    broker: str
    pid: int | None


class Resuming(Event):
    run_id: str
    crashed_at: float


class RunResumed(Event):
    run_id: str
    crashed_at: float
    finished_jobs: int
    restored_jobs: int
    lost_attempts: int


class JobSubmitted(Event):
    job: str
    workload: str
    tasks: int
    long: bool
    est_s: float


class JobRestored(Event):
    job: str
    tasks: int
    kept: int


class InputsStored(Event):
    """The node was told the job's input splits it holds (``jobs[].input_replication``;
    ``master.core.input_holders``): their maps' indices, file splits it copies
    (``StoreInputs``) and, in the simulator, modelled ones. Once per job and holder, when the
    job arrives (or is restored by ``--resume``, on the new cluster), or when a holder placed
    while it launched comes up."""

    job: str
    node: str
    splits: list[int]


class JobFinished(Event):
    """A job ended; its fields are its row of jobs.csv (``testbed.journal.tables``). A job that
    never had a plan (not submitted before the timeout, or not plannable) has no times, no
    task counts and no counters."""

    job: str
    status: str
    jct_s: float | None
    error: str | None
    name: NotRequired[str]
    workload: NotRequired[str]
    submit_s: NotRequired[float]
    start_s: NotRequired[float | None]
    tasks: NotRequired[int]
    relaunched_tasks: NotRequired[int]
    error_relaunches: NotRequired[int]
    bytes_recomputed: NotRequired[int]
    bytes_checkpointed: NotRequired[int]
    bytes_pushed: NotRequired[int]
    cache_hits: NotRequired[int]
    cache_misses: NotRequired[int]
    bytes_from_cache: NotRequired[int]
    map_phase_s: NotRequired[float | None]
    reduce_phase_s: NotRequired[float | None]
    speculative_attempts: NotRequired[int]
    """Under speculation (``policy.speculation``): copies launched, those that won (succeeded
    first), and the slot-seconds of attempts killed because the other attempt won."""
    speculative_wins: NotRequired[int]
    wasted_slot_s: NotRequired[float]
    """Also the slot-seconds of its preempted attempts, where it had any."""
    preempted_attempts: NotRequired[int]
    """Attempts a scheduler killed by ``Preempt`` or ``Migrate`` (absent where none)."""
    input_local_bytes: NotRequired[int]
    """Where its maps read their replicated splits (``jobs[].input_replication``), as the real
    workers reported (``input_reads`` of its ``task_finished``); absent where none reported
    (a job without replication, every simulated job)."""
    input_remote_bytes: NotRequired[int]
    input_source_bytes: NotRequired[int]
    input_local_fraction: NotRequired[float | None]


class NodeLaunching(Event, _Class):
    node: str
    container: NotRequired[str]  # an adopted node's (compose, Swarm): its container's hostname


class _NodeEnd(TypedDict):
    """What nodes.csv says of a node that ended, beyond its events' own fields."""

    launched_s: NotRequired[float | None]
    price_per_hour: NotRequired[float | None]


class NodeStartFailed(NodeLaunching, _NodeEnd):
    """A launched node that never came up (its start deadline passed)."""

    error: NotRequired[str]
    """Why: its deadline and, for an adopted agent, what its container showed."""


class NodeUp(Event, _Class):
    node: str
    pid: int
    url: str


class NodeDraining(Event):
    node: str
    reason: str


class NodeUndrained(Event):
    node: str
    reason: str


class NodeRelease(Event, _Class):
    node: str
    reason: str


class NodeLost(Event, _MaybeClass, _NodeEnd):
    node: str
    reason: str
    detect_s: float | None
    ended_s: NotRequired[float]
    """When the node ended: an evicted node's kill, which came before its loss was heard."""


class NodeEnded(Event, _Class, _NodeEnd):
    """A node alive when the run ended (``reason``: ``run_end``)."""

    node: str
    reason: str


class GoneIgnored(Event):
    node: str


class ForgedMessage(Event):
    node: str
    kind: str
    why: str


class NodeDiskFull(Event):
    node: str
    times: int


class OutputDiskFull(Event):
    job: str
    free_bytes: int


class JournalDiskFull(Event):
    error: str


class NodeReplacing(Event, _Class):
    node: str


class NodeReconnected(Event):
    node: str
    session: int
    resent: int


class BrokerReconnected(Event):
    session: int
    resent: int


class WillIgnored(Event):
    node: str
    session: int


class ClusterSilent(Event):
    nodes: list[str]


class Eviction(Event, _Class):
    node: str
    reason: str
    lifetime_s: float | None
    tasks_running: int
    bytes_lost: int


class EvictionNotice(Event):
    node: str
    seconds: float


class RebalanceRecommendation(Event):
    node: str


class LifetimeDrawn(Event, _Class):
    node: str
    lifetime_s: float


class SlowdownDrawn(Event, _Class):
    """A node's slowdown factor (``chaos.slowdown``), drawn at its launch: f times slower."""

    node: str
    factor: float


class SlowdownEpisode(Event):
    """A ``chaos.slowdown`` episode began (``began``) or ended on the node: it is now ``factor``
    times slower than its own factor (1: its episodes are over)."""

    node: str
    episode: int
    factor: float
    began: bool


class EvictionTiming(Event, _Class):
    node: str
    reason: str
    drawn_s: float | None
    actual_s: float | None
    promised_s: float | None
    intended_s: float | None
    lead_s: float | None


class CapacityUnavailable(Event, _Class):
    """The class's capacity ran out (docs/chaos.md, "Capacity"); ``until_s`` run seconds."""

    until_s: float


class CapacityAvailable(Event, _Class):
    pass


class LaunchWaiting(Event, _Class):
    """A launch of the class waits for capacity until ``until_s`` (run seconds)."""

    until_s: float


class LaunchRefused(Event, _Class):
    """A launch of the class is refused: no capacity within ``max_wait``."""

    requested_s: float


class Storm(Event):
    storm: int
    firing: int
    victims: list[str]


class TaskStarted(Event, _Class):
    task: str
    job: str
    stage: int
    index: int
    node: str
    attempt: int
    memory_mb: int
    role: NotRequired[str]
    """``copy``: a speculative copy of a running task (``reason``: the speculator's)."""
    reason: NotRequired[str]
    read_plan: NotRequired[list[str]]
    """A replicated map on a real backend: the holders its launch offered its split at, in
    the order it reads them (empty: the source; ``jobs[].input_replication``)."""


class TaskFinished(Event, _MaybeClass):
    """An attempt ended; its fields are its row of tasks.csv (``testbed.journal.tables``), the
    metrics (``bytes_in`` to ``cpu_s``) when its node reported them."""

    task: str
    job: str | None
    stage: int | None
    node: str | None
    attempt: int
    status: str
    failure: str | None
    index: NotRequired[int | None]
    memory_mb: NotRequired[int | None]
    elastic: NotRequired[int]
    ideal_memory_mb: NotRequired[int]
    predicted_s: NotRequired[float | None]
    start_s: NotRequired[float | None]
    end_s: NotRequired[float]
    """When the attempt ended, if not at ``t`` (one a crashed master left running)."""
    bytes_in: NotRequired[int]
    bytes_out: NotRequired[int]
    spill_bytes: NotRequired[int]
    spills: NotRequired[int]
    merge_passes: NotRequired[int]
    peak_buffered_bytes: NotRequired[int]
    peak_rss_bytes: NotRequired[int]
    cache_hits: NotRequired[int]
    cache_misses: NotRequired[int]
    cache_bytes_read: NotRequired[int]
    compute_s: NotRequired[float]
    cpu_s: NotRequired[float]
    role: NotRequired[str]
    """Under speculation: ``original`` or ``copy`` (a speculative attempt)."""
    input_reads: NotRequired[dict[str, Any]]
    """A replicated map's reads of its split as its worker reported them, in bytes:
    ``{"local": n, "remote": {holder node: n}, "source": n}`` (absent in the simulator, and
    where no report came: an attempt lost with its node)."""
    error: NotRequired[str]
    """Why an attempt that is no success ended (every one carries it): a data failure's
    error in full (bad input, a workload plugin's traceback), the node's error, or the
    core's cause (a lost node, a cancel because the job failed, a vanished task)."""


class TaskVanished(Event):
    """An acknowledged task its node no longer lists; ``action``: ``resent`` (the launch) or
    ``failed`` (the attempt)."""

    task: str
    node: str
    attempt: int
    action: NotRequired[str]


class LaunchUnacknowledged(TaskVanished):
    """A launch its node never acknowledged (fields as ``task_vanished``)."""


class TaskQueued(Event):
    task: str
    node: str
    copy: NotRequired[bool]


class TaskDequeued(Event):
    task: str
    node: str
    reason: str


class RevocationOutcome(Event):
    node: str
    surviving: list[str]
    requeue: list[str]
    rerun: list[str]


class ResourceFault(Event):
    node: str
    task: str
    failure: str


class OutputCommitted(Event):
    job: str
    index: int
    attempt: int


class Checkpointed(Event):
    job: str
    task: str
    node: str
    bytes: int


class StrategyChosen(Event):
    """``strategy: auto``'s choice for a job at its arrival, with every candidate's prediction
    (seconds: eviction-free length, expected evictions, seconds each costs; ``predicted_s`` the
    total the choice is the least of)."""

    job: str
    strategy: str
    predicted_s: dict[str, float]
    eviction_free_s: dict[str, float]
    evictions: dict[str, float]
    per_eviction_s: dict[str, float]


class ReceiverSetUp(Event):
    job: str
    task: str
    node: str


class TaskPushing(Event):
    job: str
    task: str
    attempt: int
    node: str
    held: bool


class AggregateFlush(Event):
    job: str
    block: str
    node: str
    tasks: list[str]


class PushReceived(Event):
    job: str
    task: str
    attempt: int
    node: str


class PushFailed(Event):
    job: str
    task: str
    error: str | None


class PushCommit(Event):
    job: str
    task: str
    attempt: int
    verdict: str
    push: str


class SchedulerDecision(Event):
    """A scheduler's decision statistics (``testbed.api.policy.LogDecision``): regular, elastic
    accepted or rejected, reserved; ``detail`` as the policy gave it."""

    job: str
    task: str
    decision: str
    node: str | None
    detail: dict[str, Any]


class Autoscale(Event):
    """A scale decision, with the autoscaler's ``facts``: those named here as fields
    (CloudCoaster's), any other (a plugin's) in ``facts``."""

    action: str
    node: str | None
    reason: str
    provisioning: int
    long_servers: NotRequired[int]
    total_servers: NotRequired[int]
    target: NotRequired[int]
    facts: NotRequired[dict[str, Any]]


class TransientServers(Event):
    in_service: int
    draining: int
    provisioning: int


EVENTS: dict[str, type[Event]] = {
    "run_started": RunStarted,
    "run_finished": RunFinished,
    "master_error": MasterError,
    "run_aborted": RunAborted,
    "broker_started": BrokerStarted,
    "broker_died": BrokerDied,
    "broker_restarted": BrokerRestarted,
    "resuming": Resuming,
    "run_resumed": RunResumed,
    "job_submitted": JobSubmitted,
    "job_restored": JobRestored,
    "inputs_stored": InputsStored,
    "job_finished": JobFinished,
    "node_launching": NodeLaunching,
    "node_start_failed": NodeStartFailed,
    "node_up": NodeUp,
    "node_draining": NodeDraining,
    "node_undrained": NodeUndrained,
    "node_release": NodeRelease,
    "node_lost": NodeLost,
    "node_ended": NodeEnded,
    "node_replacing": NodeReplacing,
    "gone_ignored": GoneIgnored,
    "forged_message": ForgedMessage,
    "node_disk_full": NodeDiskFull,
    "output_disk_full": OutputDiskFull,
    "journal_disk_full": JournalDiskFull,
    "node_reconnected": NodeReconnected,
    "broker_reconnected": BrokerReconnected,
    "will_ignored": WillIgnored,
    "cluster_silent": ClusterSilent,
    "eviction": Eviction,
    "eviction_notice": EvictionNotice,
    "rebalance_recommendation": RebalanceRecommendation,
    "lifetime_drawn": LifetimeDrawn,
    "slowdown_drawn": SlowdownDrawn,
    "slowdown_episode": SlowdownEpisode,
    "eviction_timing": EvictionTiming,
    "storm": Storm,
    "capacity_unavailable": CapacityUnavailable,
    "capacity_available": CapacityAvailable,
    "launch_waiting": LaunchWaiting,
    "launch_refused": LaunchRefused,
    "task_started": TaskStarted,
    "task_finished": TaskFinished,
    "task_vanished": TaskVanished,
    "launch_unacknowledged": LaunchUnacknowledged,
    "task_queued": TaskQueued,
    "task_dequeued": TaskDequeued,
    "revocation_outcome": RevocationOutcome,
    "resource_fault": ResourceFault,
    "output_committed": OutputCommitted,
    "checkpointed": Checkpointed,
    "strategy_chosen": StrategyChosen,
    "receiver_set_up": ReceiverSetUp,
    "task_pushing": TaskPushing,
    "aggregate_flush": AggregateFlush,
    "push_received": PushReceived,
    "push_failed": PushFailed,
    "push_commit": PushCommit,
    "decision": SchedulerDecision,
    "autoscale": Autoscale,
    "transient_servers": TransientServers,
}
"""Every event kind the master writes, by its ``event`` name."""
