"""Which nodes the core starts: the initial cluster a window at a time, each later launch,
the nodes adopted in attach mode, and when the initial cluster is up.

A launch is a ``StartNode`` command (the shell's provider starts the process or
container); the node joins when its agent announces itself ``up``. The start
deadline is the shell's (a host concern): it reports a node that did not come up
with ``NodeStartFailed``. The window (``master.core.liveness.start_window``) is an
input: a simulation starts every node at once.
"""

from __future__ import annotations

from collections.abc import Callable

from master.core.commands import ClusterUp, Command, NameNode, StartNode
from master.core.liveness import launches_now
from master.core.nodes import NodeRecord
from master.core.ports import ClusterPort, JobEnding
from master.core.startup import cluster_up
from testbed.wire.protocol import NameRequest


class Launcher:
    def __init__(
        self,
        core: ClusterPort,
        records: JobEnding,
        put: Callable[[Command], None],
        attach: bool,
        window: int | None,
    ) -> None:
        self.core = core
        self.records = records
        self.put = put
        self.attach = attach
        self.window = window
        self.cluster = core.settings.cluster
        reserved = self.cluster.of_kind("reserved")
        reserved_ids = [f"{name}-{i}" for name in reserved for i in range(self.cluster[name].count)]
        self.partitions = core.scheduler.reserved_partitions(reserved_ids)
        self.ordinals = dict.fromkeys(self.cluster.classes, 0)
        """The next ordinal of each class (by name): a node's id is never reused within a run."""
        self.queue: list[str] = []
        """Initial nodes not launched yet (classes, in launch order)."""
        self.initial = True
        """Until the initial cluster is up."""
        self.adopted: dict[tuple[str, str, str], str] = {}
        """(hostname, naming incarnation, key) -> node id of each adopted node."""
        self.registered: list[NodeRecord] = []
        """The nodes registered before the initial cluster was up, in order; those before
        ``settled`` no longer launch (a node never goes back to launching)."""
        self.settled = 0
        self.given_up: set[str] = set()
        """The nodes that did not come up in time (``start_failed``)."""

    def start_initial(self) -> None:
        wanted = self._wanted()
        if self.attach:
            self.core.journal.say(
                "info", f"waiting for {wanted['reserved']} reserved and {wanted['transient']} transient nodes"
            )
            return
        self.queue = [node_class for node_class, count in wanted.items() for _ in range(count)]
        self._next()

    def _next(self) -> None:
        """Launch what the window allows; say ``ClusterUp`` once the initial cluster is up."""
        if not self.initial:
            return
        if self.queue:
            self._still_launching()
            starting = sum(n.status == "launching" for n in self.registered[self.settled :])
            for _ in range(launches_now(starting, len(self.queue), self.window)):
                self.launch(self.queue.pop(0))
        if self.queue or self._still_launching():
            return
        nodes = ((n.class_name, self._start_status(n)) for n in self.core.nodes.values())
        if cluster_up(nodes, self.attach, self._wanted()):
            self.initial = False
            self.put(ClusterUp())

    def _wanted(self) -> dict[str, int]:
        """The initial cluster: each class's (by name) node count, in launch order."""
        return {node_class: shape.count for node_class, shape in self.cluster.classes.items()}

    def _start_status(self, node: NodeRecord) -> str:
        return "given up" if node.node_id in self.given_up else node.status

    def _still_launching(self) -> bool:
        """Whether a node registered so far still launches (then the cluster is not up): in
        O(1) amortised, where asking every node made a start-up of n nodes O(n^2)."""
        while self.settled < len(self.registered) and self.registered[self.settled].status != "launching":
            self.settled += 1
        return self.settled < len(self.registered)

    def node_joined(self) -> None:
        """A node came up: the paced start-up may launch the next, the cluster may be up."""
        self._next()

    def start_failed(self, node: NodeRecord, error: str) -> None:
        if node.status != "launching":
            return
        self.core.journal.say(
            "warning", f"node {node.node_id} did not come up: the run goes on without it ({error})"
        )
        node.status = "lost"
        self.given_up.add(node.node_id)
        self.records.node_ended(node, "node_start_failed", error=error)
        self._next()

    def launch(self, node_class: str) -> NodeRecord:
        """A node of the class named ``node_class``, launched."""
        spec = self.cluster[node_class]
        record = self._register(node_class, spec.slots, spec.memory_mb)
        self.put(StartNode(record.node_id, node_class, record.ordinal))
        return record

    def _register(self, node_class: str, slots: int, memory_mb: int, container: str = "") -> NodeRecord:
        """A new node of the class named ``node_class``, launching, under the next id of its class."""
        spec = self.cluster[node_class]
        ordinal = self.ordinals[node_class]
        self.ordinals[node_class] += 1
        node_id = f"{node_class}-{ordinal}"
        record = NodeRecord(
            node_id,
            spec.kind,
            ordinal,
            self.core.journal.now(),
            slots,
            memory_mb,
            spec.price_per_hour,
            class_name=node_class,
            container=container,
        )
        record.partition = "short" if spec.kind == "transient" else self.partitions.get(node_id, "general")
        self.core.nodes[node_id] = record
        if self.initial:
            self.registered.append(record)
        adopted = {"container": container} if container else {}
        self.core.journal.event("node_launching", node=node_id, **{"class": node_class}, **adopted)
        return record

    def adopt(self, request: NameRequest) -> None:
        """A node the master did not launch (attach mode) asks for its name: it gets the next
        id of its class, as a launched node would, and keeps its hostname as ``container``.
        A repeated request (the agent asks until answered) gets the same answer; one with
        another key is another agent's (the answer is sealed under the key it names)."""
        key = (request.host, request.incarnation, request.key)
        node_id = self.adopted.get(key)
        if node_id is None:
            record = self._register(request.node_class, request.slots, request.memory_mb, request.host)
            node_id = self.adopted[key] = record.node_id
            self.core.journal.say("info", f"adopted {node_id} (container {request.host})")
        self.put(NameNode(request.host, request.incarnation, node_id, request.key))
