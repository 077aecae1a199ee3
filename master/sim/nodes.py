"""What each simulated node holds and runs, as the model agents (``master.sim.agents``) keep it:
its blocks, its copies of broadcast inputs, its links and CPU, its agent's decisions (the real
agent's ``agents.core.AgentCore``), and its attempts' modelled workers and the fetch each is
reading."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agents.core import AgentCore
from master.execution_model import Links
from master.sim.cpu import CpuJob, NodeCpu
from testbed.wire.protocol import BlockRef, NodeState, TaskSpec


@dataclass(slots=True)
class Fetch:
    """One remote block an attempt reads: booked on the links at ``begun`` (when its worker
    reached it) until its last byte arrives at ``end``, at the rates of the sender's and the
    receiver's links then (their ``Links.slow``: ``booked_slow``)."""

    ref: BlockRef
    begun: float
    end: float
    nbytes: int
    sender: ModelNode
    booked_slow: tuple[float, float] = (1.0, 1.0)


@dataclass(slots=True)
class BroadcastCopy:
    """A node's copy of a block read by broadcast (``testbed.workloads.broadcast``): fetched
    once, by ``fetch``, whole at ``ready``; the node's other tasks read it there, or wait
    for it while the fetch is under way."""

    fetch: Fetch
    nbytes: int

    @property
    def ready(self) -> float:
        return self.fetch.end


@dataclass(slots=True)
class Attempt:
    spec: TaskSpec
    key: tuple[str, int]
    """(task id, attempt): its key in its node's ``running``."""
    refs: list[BlockRef] = field(default_factory=list)
    """Every input block it reads (its launch's, then its streamed feeds')."""
    closed: set[int] = field(default_factory=set)
    started: bool = False
    """Its work is under way (every input there): its outcome is scheduled."""
    fetching: Fetch | None = None
    """The last remote block it began to read: its holders killed before its last byte
    arrives fail the attempt (``ModelAgents._fail_fetches``)."""
    next_ref: int = 0
    """The next of ``refs`` its worker reads."""
    read: int = 0
    """The input bytes read so far."""
    largest: int = 0
    """The largest block it read (an aggregate's output is one of them: ``SUMS_ITS_INPUTS``)."""
    fetch_from: float = 0.0
    """When its worker began reading."""
    whole: Mapping[str, tuple[int, ...] | None] = field(default_factory=dict)
    """The blocks it reads beyond one partition (narrow and broadcast inputs) and the
    partitions it reads of each (None: every one)."""
    broadcast: frozenset[int] = frozenset()
    """The indices in ``refs`` of its broadcast inputs, read through its node's copies."""
    holders: list[ModelNode] = field(default_factory=list)
    """The node its worker reads each of ``refs`` from, as found when it began, and the bytes
    it reads there (``sizes``): still so while ``ModelAgents.moved`` is ``seen``."""
    sizes: list[int] = field(default_factory=list)
    seen: int = -1
    computing: CpuJob | None = None
    """Its compute on its node's CPU, once its inputs are read."""
    compute_from: float | None = None
    """When its compute began (its inputs read), and its modelled compute and spill seconds."""
    compute_s: float = 0.0

    def score(self, now: float) -> float:
        """Its progress score as Hadoop defines it: a map's (stage 0) is the fraction of its
        input read, which its compute reads as it goes; a later stage's runs through copy
        (its fetches: the fraction of its input blocks read), then sort and reduce (its
        compute), a third each."""
        done = self._computed(now)
        if self.spec.stage == 0:
            return done
        if self.compute_from is not None or not self.refs:
            copied = 1.0 if self.compute_from is not None else 0.0
        else:
            copied = self.next_ref / len(self.refs)
        return min(1.0, (copied + 2.0 * done) / 3.0)

    def _computed(self, now: float) -> float:
        """The fraction of its compute (and spill) done: by its CPU job's work left when it
        shares the node's cores, else by the time since its compute began."""
        if self.compute_from is None or self.compute_s <= 0:
            return 0.0
        job = self.computing
        if job is not None:
            left = max(0.0, job.work - job.rate * (now - job.since))
            return min(1.0, max(0.0, 1.0 - left / self.compute_s))
        return min(1.0, max(0.0, (now - self.compute_from) / self.compute_s))

    @property
    def ready(self) -> bool:
        return set(self.spec.streamed) <= self.closed


@dataclass(slots=True)
class ModelNode:
    node_id: str
    node_class: str
    """Its class's name: what its NIC, disk and costs are looked up by."""
    kind: str
    """Its class's kind, that its agent announces."""
    slots: int
    memory_mb: int
    launch_s: float
    """A launch command to its attempt's work starting (``SimulationSpec.launch_s`` of its cores)."""
    alive: bool = True
    up: bool = False
    blocks: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Block id -> the bytes of each of its partitions held here."""
    copies: dict[tuple[str, int], BroadcastCopy] = field(default_factory=dict)
    """(block, partition) -> its copy here, made by the first of its tasks to read it by broadcast."""
    links: Links = field(default_factory=Links)
    slowdown: float = 1.0
    """Its ``chaos.slowdown`` factor: its tasks' compute, spills and sleeps take that many times as
    long, and its NIC moves that many times slower (``Links.slow``)."""
    episode: float = 1.0
    """How many times slower its slowdown episodes under way make it, on top of ``slowdown``."""
    cpu: NodeCpu | None = None
    """Its cores shared by its attempts and its agent (None: no CPU sharing modelled)."""
    running: dict[tuple[str, int], Attempt] = field(default_factory=dict)
    """Each attempt's modelled worker, from the core's ``StartWorker`` until it ends (as the
    real agent's ``workers``): what runs, not what the agent reports (the core's)."""
    core: AgentCore = field(init=False)
    """Its agent's state and decisions: which launch runs, what a cancel does, each attempt's
    outcome (repeated to a launch sent again), the push reports, what a heartbeat lists."""

    def __post_init__(self) -> None:
        self.core = AgentCore(self.node_id, incarnation_of(self.node_id))

    @property
    def url(self) -> str:
        return url_of(self.node_id)

    def forget(self) -> None:
        """Dead: its blocks, copies and workers are gone, and its agent with them (it gets no
        command again)."""
        self.alive = False
        self.blocks.clear()
        self.copies.clear()
        self.running.clear()
        self.core = AgentCore(self.node_id, incarnation_of(self.node_id))
        if self.cpu is not None:
            self.cpu.clear()

    def progress(self, now: float) -> dict[str, float]:
        """Each current attempt's progress score, as its worker writes it for the heartbeats."""
        running = self.running
        return {task_id: running[a.key].score(now) for task_id, a in self.core.running.items()}


def incarnation_of(node_id: str) -> str:
    return f"sim-{node_id}"


def url_of(node_id: str) -> str:
    return f"http://{node_id}.sim:1"


def broadcast_indices(spec: TaskSpec) -> frozenset[int]:
    """The indices, in an attempt's refs (its inputs' blocks in order), of its broadcast inputs."""
    indices: list[int] = []
    start = 0
    for dependency, refs in enumerate(spec.inputs):
        if dependency in spec.broadcast:
            indices.extend(range(start, start + len(refs)))
        start += len(refs)
    return frozenset(indices)


def part_bytes(node: ModelNode, ref: BlockRef, whole: Mapping[str, tuple[int, ...] | None]) -> int:
    """The bytes the reference reads from the node's copy: the partition it names, or the
    partitions of a block read whole (``ExecutionModel.whole_blocks``: None, every one)."""
    parts = node.blocks[ref.block]
    if ref.block in whole:
        read = whole[ref.block]
        return sum(parts) if read is None else sum(parts[i] for i in read if i < len(parts))
    return parts[ref.partition] if ref.partition < len(parts) else 0


def in_flight(node: ModelNode, now: float) -> bool:
    """A fetch of one of the node's attempts, or a broadcast copy to it, not yet through."""
    return any(a.fetching is not None and a.fetching.end > now for a in node.running.values()) or any(
        copy.ready > now for copy in node.copies.values()
    )


def node_state(node: ModelNode, state: str, **extra: object) -> NodeState:
    """The node's state message, as its agent publishes it (one incarnation, one session)."""
    return NodeState(
        node_id=node.node_id,
        node_class=node.kind,  # type: ignore[arg-type]
        state=state,  # type: ignore[arg-type]
        incarnation=incarnation_of(node.node_id),
        session=1,
        slots=node.slots,
        memory_mb=node.memory_mb,
        **extra,  # type: ignore[arg-type]
    )
