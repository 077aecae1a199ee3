"""The control plane: every MQTT message type, its topic and its msgpack codec.

Each message is a frozen pydantic model with a ``kind`` tag and the protocol
version ``v``. ``Codec.decode`` validates; a malformed payload is counted in
``Codec.malformed`` and dropped (``None``), never raised into an actor.
Handlers must be idempotent: QoS 1 may deliver a message twice.

Every model's validator, and the codec's, is built where it is first used (``defer_build``):
``testbed validate`` and the other commands that only load a scenario import this module
for its types and never build one (built at import, they cost validate about 0.07 s of CPU).
"""

from __future__ import annotations

import itertools
import os
from typing import Annotated, Any, Literal

import msgpack
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

PROTOCOL_VERSION = 1
NodeClass = Literal["reserved", "transient"]
INLINE_NOOP = "noop"
"""The op of empty tasks: agents complete them at once, without a worker process."""
_ids = itertools.count()
_prefix = os.urandom(4).hex()
MAX_BACKOFF_S = 1.0
"""The longest wait between an MQTT link's reconnection attempts (before jitter of up to +50%):
the master gives its agents this long to come back after its own outage."""


def new_id() -> str:
    """A message id unique across processes (random prefix + counter)."""
    return f"{_prefix}-{next(_ids)}"


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    v: Literal[1] = PROTOCOL_VERSION
    id: str = Field(default_factory=new_id, max_length=64)


# ------------------------------------------------------------------ data plane refs

_set = object.__setattr__
"""Sets an attribute of a frozen model (``BlockRef.trusted``), as pydantic's own constructors do."""


class BlockRef(BaseModel):
    """One partition of one stored block, and where replicas of it live (agent base URLs)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    block: str = Field(max_length=200, pattern=r"^[A-Za-z0-9_.-]+$")
    partition: int = Field(ge=0)
    locations: tuple[str, ...] = Field(min_length=1)
    caps: tuple[str, ...] = Field(
        default=(),
        description="the capability to read the block at each location (testbed.wire.capabilities)",
    )

    @classmethod
    def trusted(cls, block: str, partition: int, locations: tuple[str, ...]) -> BlockRef:
        """The reference ``BlockRef(block=..., partition=..., locations=...)`` gives, built
        without validation, for the master's own state: a block id it named, the locations it
        recorded. A quarter of the cost (a reduce reads one per map: 400 per launch in
        sim-yarn-me-1k); what ``model_construct`` sets, which costs more than validating.
        Refs from the network are validated as ever (``Codec.decode``)."""
        if not locations or partition < 0:
            raise ValueError(f"no location or a negative partition for block {block}")
        ref = object.__new__(cls)
        _set(ref, "__dict__", {"block": block, "partition": partition, "locations": locations, "caps": ()})
        _set(ref, "__pydantic_fields_set__", {"block", "partition", "locations"})
        _set(ref, "__pydantic_extra__", None)
        _set(ref, "__pydantic_private__", None)
        return ref

    def cap_at(self, location: str) -> str:
        """The read capability for ``location`` ("" when the master gave none)."""
        for where, cap in zip(self.locations, self.caps, strict=False):
            if where == location:
                return cap
        return ""


class PushTarget(BaseModel):
    """Where an agent copies a task's output block once the task has succeeded:
    the partitions ``partitions`` go to the agent at ``url`` (a reserved node)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    node_id: str = Field(max_length=100)
    url: str = Field(max_length=300)
    partitions: tuple[int, ...] = Field(min_length=1)
    token: str = Field(default="", max_length=100, description="the capability to store this block there")


class TaskSpec(BaseModel):
    """Everything an agent needs to run one task attempt."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    task_id: str = Field(max_length=200)
    job_id: str = Field(max_length=100)
    stage: int = Field(ge=0)
    index: int = Field(ge=0)
    attempt: int = Field(ge=0)
    op: str = Field(max_length=100)
    memory_mb: int = Field(ge=1)
    params: dict[str, Any] = Field(default_factory=dict)
    inputs: tuple[tuple[BlockRef, ...], ...] = ()
    partitions: int = Field(default=1, ge=1, description="output partitions")
    final: bool = False
    output_url: str | None = None
    output_token: str = Field(default="", max_length=100, description="the capability to upload the output")
    push: tuple[PushTarget, ...] = Field(
        default=(), description="copy the output there in the background once the task succeeded"
    )
    push_rate_bytes_s: float | None = Field(
        default=None, gt=0, description="the emulated bandwidth of each push (None: unlimited)"
    )
    input_cache_mb: int = Field(
        default=0, ge=0, description="read the source through the node's input cache of this size (0: none)"
    )
    streamed: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        default=(),
        description="dependencies whose blocks keep arriving while the task runs (TaskInputs)",
    )
    broadcast: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        default=(),
        description="dependencies read by broadcast: fetched once per node, its later tasks read its copy",
    )
    report_progress: bool = Field(
        default=False, description="send its progress score with the node's heartbeats (under speculation)"
    )
    replica: BlockRef | None = Field(
        default=None,
        description="a map's input split as a replica block (jobs[].input_replication), at its live "
        "holders (this node first when it holds one); None: the map reads its source",
    )

    @model_serializer(mode="wrap")
    def _without_default_report(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``report_progress`` and ``replica`` are sent only when set: an agent built before them
        (a Docker image) still takes every launch of a run without speculation or replicas."""
        data = handler(self)
        if not self.report_progress:
            data.pop("report_progress", None)
        if self.replica is None:
            data.pop("replica", None)
        return data

    @property
    def block_id(self) -> str:
        """Where this attempt stores its output on the agent."""
        return f"{self.job_id}.s{self.stage}.t{self.index}.a{self.attempt}"


class TaskMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    bytes_in: int = 0
    bytes_out: int = 0
    records_in: int = 0
    records_out: int = 0
    spill_bytes: int = 0
    spills: int = 0
    merge_passes: int = 0
    peak_buffered_bytes: int = 0
    peak_rss_bytes: int = 0
    fetch_s: float = 0.0
    compute_s: float = 0.0
    cpu_s: float = 0.0
    """CPU seconds of the task's worker process (user + system), for the fidelity monitor."""
    cache_hits: int = 0
    cache_misses: int = 0
    cache_bytes_read: int = 0


# ------------------------------------------------------------------ messages


class NodeState(Message):
    """Retained on ``node/<id>/state``; the broker publishes ``lost`` as the Last Will.

    ``incarnation`` names the agent process, ``session`` its MQTT connection
    (1, 2, ... after each reconnect): a Will speaks only for its own session.
    """

    kind: Literal["node_state"] = "node_state"
    node_id: str = Field(max_length=100)
    node_class: NodeClass
    state: Literal["up", "draining", "lost", "gone"]
    incarnation: str = Field(max_length=64)
    session: int = Field(default=0, ge=0)
    host: str = ""
    port: int = 0
    slots: int = 0
    memory_mb: int = 0
    pid: int = 0


class NameRequest(Message):
    """An agent started without a node id (by compose or Swarm) asks the master for one, on
    ``enrol/<host>/ask``, ``host`` being its hostname (a container's short id). It asks
    again until answered: the master may start after it. ``key``: a random key of its own,
    which only the master may read (the broker's rules), for the answer's proof and seal."""

    kind: Literal["name_request"] = "name_request"
    host: str = Field(max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    node_class: NodeClass
    incarnation: str = Field(max_length=64)
    slots: int = Field(default=0, ge=0)
    memory_mb: int = Field(default=0, ge=0)
    key: str = Field(min_length=16, max_length=64)


class NodeNamed(Message):
    """The master's answer to a ``NameRequest``, on ``enrol/<host>/named``: that agent is
    ``node_id`` (``reserved-N``, ``transient-N``, as a node the master launches). ``sealed``:
    that node's broker login and node key, sealed under the request's key, and ``proof`` =
    ``testbed.wire.capabilities.name_proof`` under it: only the master, which read the key, names."""

    kind: Literal["named"] = "named"
    host: str = Field(max_length=100)
    incarnation: str = Field(max_length=64)
    node_id: str = Field(max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    proof: str = Field(max_length=64)
    sealed: str = Field(default="", max_length=1024)


class CachedInput(BaseModel):
    """One entry of an agent's task input cache (Pado, section 3.2.7)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    key: str = Field(max_length=100)
    nbytes: int = Field(ge=0)


CachedInputs = tuple[CachedInput, ...] | None
"""An agent's input cache, least recently used first; None: the sender does not say."""


Score = Annotated[float, Field(ge=0.0, le=1.0)]
"""A progress score."""


class Heartbeat(Message):
    kind: Literal["heartbeat"] = "heartbeat"
    node_id: str = Field(max_length=100)
    incarnation: str = Field(max_length=64)
    seq: int
    running: tuple[str, ...] = ()
    attempts: dict[str, int] = Field(default_factory=dict, max_length=10_000)
    """The attempt of each running task (the master reconciles them with its own view)."""
    cached_inputs: CachedInputs = Field(default=None, max_length=10_000)
    progress: dict[str, Score] = Field(default_factory=dict, max_length=10_000)
    """Each running task's progress score (Hadoop's: a map's fraction of its input read; a
    reduce's copy, sort and reduce phases a third each), of the attempt ``attempts`` names."""


class LaunchTask(Message):
    kind: Literal["launch"] = "launch"
    task: TaskSpec


class CancelTask(Message):
    kind: Literal["cancel"] = "cancel"
    task_id: str
    attempt: int


class FlushAggregate(Message):
    """Pado's partial aggregation (section 3.2.7): merge the outputs ``members`` (block ids
    of finished tasks of one stage, held on this node) into the block ``block``, one
    partition per receiver partition, with the op's combiner, then push it like a task
    output and ask the master to commit it (``PushDelivered`` with ``block``)."""

    kind: Literal["flush"] = "flush"
    block: str = Field(max_length=200, pattern=r"^[A-Za-z0-9_.-]+$")
    op: str = Field(max_length=100)
    members: tuple[Annotated[str, Field(max_length=200, pattern=r"^[A-Za-z0-9_.-]+$")], ...] = Field(
        min_length=1, max_length=10_000
    )
    partitions: int = Field(ge=1)
    push: tuple[PushTarget, ...] = Field(min_length=1)
    push_rate_bytes_s: float | None = Field(default=None, gt=0)


class InputSplit(BaseModel):
    """A byte range of a source file, stored as the replica block ``block``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    block: str = Field(max_length=200, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    path: str = Field(max_length=4096)
    start: int = Field(ge=0)
    end: int = Field(ge=0)


def replica_block(job_id: str, index: int) -> str:
    """The block id of map ``index``'s input split of ``job_id``, on every holder."""
    return f"{job_id}.input.t{index}"


class StoreInputs(Message):
    """Input replication (``jobs[].input_replication``): copy these splits of a job arrived
    from their source into this node's replica blocks (``testbed.wire.replica_blocks``)."""

    kind: Literal["store_inputs"] = "store_inputs"
    job_id: str = Field(max_length=100)
    splits: tuple[InputSplit, ...] = Field(min_length=1, max_length=100_000)


class TaskInputs(Message):
    """Pado's incremental receivers: every block committed so far to a running task
    through its streamed dependency ``dependency`` (cumulative, so a lost or repeated
    message does no harm); ``last``: there will be no other."""

    kind: Literal["inputs"] = "inputs"
    task_id: str = Field(max_length=200)
    attempt: int = Field(ge=0)
    dependency: int = Field(ge=0)
    refs: tuple[BlockRef, ...] = Field(max_length=100_000)
    last: bool = False


class Resync(Message):
    """Sent to an agent after a broker outage (the master's reconnect or the agent's): repeat
    every push report made so far (``PushDelivered``, ``BlockReceived``). A dying broker may
    have acknowledged them without delivering; the master ignores what it already knows."""

    kind: Literal["resync"] = "resync"


class EvictionNotice(Message):
    """Warning that the node will be evicted ``seconds`` from now (spot-style notice)."""

    kind: Literal["notice"] = "notice"
    node_id: str
    seconds: float


class InputReads(BaseModel):
    """Where a map read its replicated input split (``jobs[].input_replication``), in bytes, as
    its worker counted them: from its own node's replica, from each remote holder (by the URL
    its launch's ``TaskSpec.replica`` named) and from the source."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    local: int = Field(default=0, ge=0)
    remote: dict[Annotated[str, Field(max_length=300)], Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, max_length=100
    )
    source: int = Field(default=0, ge=0)


class TaskUpdate(Message):
    kind: Literal["task"] = "task"
    node_id: str
    task_id: str
    attempt: int
    state: Literal["running", "succeeded", "failed"]
    metrics: TaskMetrics = Field(default_factory=TaskMetrics)
    partition_bytes: tuple[Annotated[int, Field(ge=0)], ...] = ()
    result: dict[str, Any] = Field(default_factory=dict)
    failure: Literal["error", "data", "fetch", "enospc", "oom", "killed", "cancelled"] | None = None
    error: str | None = Field(default=None, max_length=4000)
    lost_blocks: tuple[str, ...] = Field(default=(), description="inputs a fetch could not get")
    cached_inputs: CachedInputs = Field(default=None, max_length=10_000)
    input_reads: InputReads | None = Field(
        default=None, description="a replicated map's reads of its split; None: not such a map"
    )

    @model_serializer(mode="wrap")
    def _without_default_reads(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``input_reads`` is sent only when set: every update but a replicated map's end is
        the one an older master (which forbids unknown fields) takes."""
        data = handler(self)
        if self.input_reads is None:
            data.pop("input_reads", None)
        return data


class PushedPart(BaseModel):
    """One partition of a pushed block, as its sender indexed it or its receiver verified it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    partition: int = Field(ge=0)
    nbytes: int = Field(ge=0)
    crc32: int = Field(ge=0)


class BlockReceived(Message):
    """A receiving agent stored a pushed block whole, every partition's CRC verified."""

    kind: Literal["received"] = "received"
    node_id: str = Field(max_length=100)
    block: str = Field(max_length=200)
    parts: tuple[PushedPart, ...]


class PushDelivered(Message):
    """The producing agent's commit request: where each push of a task attempt's output
    went (``delivered``: node -> parts as sent) and which destinations failed."""

    kind: Literal["pushed"] = "pushed"
    node_id: str = Field(max_length=100)
    task_id: str = Field(max_length=200)
    attempt: int = Field(ge=0)
    block: str = Field(max_length=200)
    delivered: dict[str, tuple[PushedPart, ...]] = Field(default_factory=dict)
    failed: tuple[str, ...] = ()
    error: str | None = Field(default=None, max_length=2000)


AnyMessage = Annotated[
    NodeState
    | NameRequest
    | NodeNamed
    | Heartbeat
    | LaunchTask
    | CancelTask
    | FlushAggregate
    | TaskInputs
    | StoreInputs
    | Resync
    | EvictionNotice
    | TaskUpdate
    | BlockReceived
    | PushDelivered,
    Field(discriminator="kind"),
]
_adapter: TypeAdapter[Any] = TypeAdapter(AnyMessage, config=ConfigDict(defer_build=True))


class Codec:
    """msgpack encoding plus validating decoding that counts what it drops."""

    def __init__(self) -> None:
        self.malformed = 0

    @staticmethod
    def encode(message: Message) -> bytes:
        return msgpack.packb(message.model_dump(mode="python"), use_bin_type=True)

    def decode(self, payload: bytes | bytearray) -> Any | None:
        try:
            return _adapter.validate_python(msgpack.unpackb(payload, raw=False))
        except (ValidationError, ValueError, TypeError, msgpack.UnpackException, RecursionError):
            self.malformed += 1
            return None


class Topics:
    """Topic names, namespaced by run id."""

    def __init__(self, run_id: str) -> None:
        self.root = f"tb/{run_id}"

    def state(self, node_id: str = "+") -> str:
        return f"{self.root}/node/{node_id}/state"

    def heartbeat(self, node_id: str = "+") -> str:
        return f"{self.root}/node/{node_id}/hb"

    def command(self, node_id: str) -> str:
        return f"{self.root}/node/{node_id}/cmd"

    def task_updates(self, node_id: str = "+") -> str:
        return f"{self.root}/node/{node_id}/task"

    def name_requests(self, host: str = "+") -> str:
        """Where an unnamed agent on ``host`` asks for its name (``NameRequest``)."""
        return f"{self.root}/enrol/{host}/ask"

    def name_answers(self, host: str) -> str:
        """Where the master names the agent on ``host`` (``NodeNamed``)."""
        return f"{self.root}/enrol/{host}/named"

    @property
    def events(self) -> str:
        return f"{self.root}/events"

    @staticmethod
    def node_of(topic: str) -> str:
        """The node a ``tb/<run>/node/<id>/...`` topic is about, the host of an
        ``tb/<run>/enrol/<host>/...`` one; "" for any other topic."""
        parts = topic.split("/")
        return parts[3] if len(parts) > 4 and parts[2] in ("node", "enrol") else ""
