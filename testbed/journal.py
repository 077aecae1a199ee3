"""The run journal's schema: every event kind and every table, with its fields and their types.

A run directory holds ``events.jsonl`` (one JSON object per event: ``t``, the
seconds since the run started, ``event``, its kind, and the kind's fields) and
one CSV table per kind of finished thing (``tasks``, ``jobs``, ``nodes``,
``decisions``, ``evictions``). This module is the one description of both:

- the master's writer (``master.journal.Journal``) checks every event against
  it (``check_event``: a kind or a field not declared here, or a value of the
  wrong type, is a bug and raises) and takes the CSV columns from
  ``testbed.journal_tables`` (``TABLES``), where a table row that repeats an
  event's facts is derived from the event (``ROWS_FROM_EVENTS``), so the two
  cannot disagree;
- the readers (``testbed report``'s ``rundir``, ``summarize``, resume) read events
  with ``read_events`` and select them by kind with ``events_of``, typed.

It lives in ``testbed``, not ``master``, so that the report reads runs without
importing the master. Readers stay tolerant: a field a past version did not
write is missing, so they use ``.get`` and their own defaults.
"""

import json
import math
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    Literal,
    NotRequired,
    TypedDict,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

# --------------------------------------------------------------------- events


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


class JobFinished(Event):
    job: str
    status: str
    jct_s: float | None
    error: str | None


class NodeLaunching(Event, _Class):
    node: str
    container: NotRequired[str]  # an adopted node's (compose, Swarm): its container's hostname


class NodeStartFailed(NodeLaunching):
    """A launched node that never came up (its start deadline passed)."""


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


class NodeLost(Event, _MaybeClass):
    node: str
    reason: str
    detect_s: float | None


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


class TaskFinished(Event, _MaybeClass):
    task: str
    job: str | None
    stage: int | None
    node: str | None
    attempt: int
    status: str
    failure: str | None
    spill_bytes: NotRequired[int]
    bytes_in: NotRequired[int]
    bytes_out: NotRequired[int]
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


class Autoscale(Event):
    action: str
    node: str | None
    reason: str
    provisioning: int
    long_servers: NotRequired[int]
    total_servers: NotRequired[int]
    target: NotRequired[int]


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
    "job_finished": JobFinished,
    "node_launching": NodeLaunching,
    "node_start_failed": NodeStartFailed,
    "node_up": NodeUp,
    "node_draining": NodeDraining,
    "node_undrained": NodeUndrained,
    "node_release": NodeRelease,
    "node_lost": NodeLost,
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
    "receiver_set_up": ReceiverSetUp,
    "task_pushing": TaskPushing,
    "aggregate_flush": AggregateFlush,
    "push_received": PushReceived,
    "push_failed": PushFailed,
    "push_commit": PushCommit,
    "autoscale": Autoscale,
    "transient_servers": TransientServers,
}
"""Every event kind the master writes, by its ``event`` name."""


# --------------------------------------------------------------------- checking


class JournalSchemaError(ValueError):
    """An event that does not match its kind in this schema (a bug in the writer)."""


@dataclass(frozen=True)
class _Kind:
    required: frozenset[str]
    types: dict[str, tuple[type, ...]]


def runtime_types(annotation: Any) -> tuple[type, ...]:
    """The classes a JSON value of the annotated type may be (a float field takes an int too)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return tuple(t for arg in get_args(annotation) for t in runtime_types(arg))
    if origin is Literal:
        return tuple({type(value) for value in get_args(annotation)})
    if origin is not None:
        return (origin,)
    if annotation is float:
        return (int, float)
    return (annotation,)


def _kind(event: type[Event]) -> _Kind:
    hints = get_type_hints(event)
    fields = {name: runtime_types(hint) for name, hint in hints.items() if name not in ("t", "event")}
    required = frozenset(event.__required_keys__) - {"t", "event"}  # type: ignore[attr-defined]
    return _Kind(required, fields)


_KINDS = {name: _kind(event) for name, event in EVENTS.items()}


def check_event(name: str, fields: Mapping[str, Any]) -> None:
    """Raise ``JournalSchemaError`` unless ``fields`` are those of the event kind ``name``."""
    kind = _KINDS.get(name)
    if kind is None:
        raise JournalSchemaError(f"journal event {name!r} is not a kind of testbed/journal.py's EVENTS")
    missing = kind.required - fields.keys()
    if missing:
        raise JournalSchemaError(f"journal event {name!r} lacks {sorted(missing)}")
    for field, value in fields.items():
        allowed = kind.types.get(field)
        if allowed is None:
            raise JournalSchemaError(f"journal event {name!r} has no field {field!r} in testbed/journal.py")
        if not isinstance(value, allowed):
            expected = " | ".join(t.__name__ for t in allowed)
            raise JournalSchemaError(f"journal event {name!r}: {field}={value!r} is not of type {expected}")


# --------------------------------------------------------------------- reading


@dataclass(frozen=True)
class ReadEvents:
    events: list[dict[str, Any]]
    malformed: int
    """Lines that are not an event: a torn last line after a crash, or junk."""


def read_events(path: Path) -> ReadEvents:
    """Every whole event of an ``events.jsonl`` (a JSON object with a numeric ``t`` and an
    ``event``), in file order; events of kinds this schema does not know are kept."""
    events: list[dict[str, Any]] = []
    malformed = 0
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                malformed += 1
                continue
            if isinstance(event, dict) and _is_time(event.get("t")) and "event" in event:
                events.append(event)
            else:
                malformed += 1
    return ReadEvents(events, malformed)


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_NAMES = {event: name for name, event in EVENTS.items()}
E = TypeVar("E", bound=Event)


def events_of(events: Iterable[Mapping[str, Any]], kind: type[E]) -> Iterator[E]:
    """The events of one kind, typed (``events_of(events, TaskStarted)``)."""
    name = _NAMES[kind]
    for event in events:
        if event.get("event") == name:
            yield cast(E, event)
