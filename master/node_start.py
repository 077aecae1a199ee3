"""Starting the run's nodes: the initial cluster paced on the machine, each launch, the nodes
adopted in attach mode, and their end when the run stops.

The verdicts are pure (``master.liveness``: the start window and deadline;
``master.core.startup.cluster_up``); this shell launches through the provider
and reaches the master through ``master.ports.NodeStartPort``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

from master.core.lifecycle import NODE
from master.core.startup import cluster_up
from master.liveness import launches_now, start_deadline_s, start_window
from master.nodes import NodeRecord
from master.policies import reserved_partitions
from master.ports import NodeStartPort
from master.providers.base import AdoptingProvider
from master.scale_model import NodeShares
from testbed.capabilities import NODE_KEY_ENV, name_proof
from testbed.protocol import NameRequest, NodeNamed
from testbed.scenario_cluster import NodeClassSpec

log = logging.getLogger("master")
ATTACH_WAIT_S = 300.0
"""How long an attached master waits for the scenario's agents (compose, Swarm) to come up: a
stack on a loaded host starts them in any order, in minutes (their healthcheck's start period)."""


class NodeStarts:
    def __init__(self, master: NodeStartPort) -> None:
        self.master = master
        scenario = master.scenario
        reserved_ids = [f"reserved-{i}" for i in range(scenario.cluster.reserved.count)]
        self.partitions = reserved_partitions(scenario, reserved_ids)
        self.ordinals = {"reserved": 0, "transient": 0}
        """The next ordinal of each class: a node's id is never reused within a run."""
        self.adopted: dict[tuple[str, str], str] = {}
        """(hostname, naming incarnation) -> node id of each adopted node."""
        self.cluster_up = asyncio.Event()
        self.came_up = asyncio.Event()

    async def launch_initial(self) -> None:
        cluster = self.master.scenario.cluster
        if not self.master.attach:
            await self.start_paced(
                ["reserved"] * cluster.reserved.count + ["transient"] * cluster.transient.count
            )
            return
        log.info(
            "waiting for %d reserved and %d transient nodes", cluster.reserved.count, cluster.transient.count
        )
        try:
            await asyncio.wait_for(self.cluster_up.wait(), ATTACH_WAIT_S)
        except TimeoutError:
            up = [n.node_class for n in self.master.nodes.values() if n.status == "up"]
            raise RuntimeError(
                f"after {ATTACH_WAIT_S:g}s, {up.count('reserved')} of {cluster.reserved.count} reserved and "
                f"{up.count('transient')} of {cluster.transient.count} transient nodes are up "
                "(an agent that never asked for its name is not started, or cannot reach the broker)"
            ) from None

    async def start_paced(self, classes: list[str]) -> None:
        """Launch the initial nodes a window at a time (``master.liveness.launches_now``): a
        node leaves the window when it is up, or when it has not come up within
        ``start_deadline_s`` (it is killed and the run goes on without it, saying so)."""
        cpus = os.cpu_count() or 2
        window = start_window(cpus, self.master.scenario.cluster.start_window)
        queue = list(classes)
        while True:
            launching = [n for n in self.master.nodes.values() if n.status == "launching"]
            deadline = start_deadline_s(len(launching), cpus)
            for node in launching:
                if self.master.journal.now() - node.launched_t > deadline:
                    await self._start_failed(node, deadline)
            starting = sum(1 for n in self.master.nodes.values() if n.status == "launching")
            for _ in range(launches_now(starting, len(queue), window)):
                await self.launch(queue.pop(0))
            if not queue and not any(n.status == "launching" for n in self.master.nodes.values()):
                break
            self.came_up.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):  # the start deadlines are checked every second
                    await self.came_up.wait()
        if not any(n.status == "up" for n in self.master.nodes.values()):
            raise RuntimeError("no node came up: see the nodes' logs in the run directory's logs/")

    async def _start_failed(self, node: NodeRecord, deadline: float) -> None:
        log.warning(
            "node %s did not come up within %.0fs: the run goes on without it", node.node_id, deadline
        )
        node.status = "lost"
        self.master.journal.event("node_start_failed", node=node.node_id, **{"class": node.node_class})
        self.master.records.node_row(node, self.master.journal.now(), "start_failed")
        if self.master.provider.owns(node.node_id):
            await self.master.provider.evict(node.node_id)

    async def launch(self, node_class: str) -> NodeRecord:
        spec = self._spec(node_class)
        record = self._register(node_class, spec.slots, spec.memory_mb)
        node_id = record.node_id
        env = {
            **self.master.agent_env,
            **(await self.master.node_env(node_id) if self.master.node_env else {}),
            NODE_KEY_ENV: self.master.keys.node_key(node_id),
        }
        await self.master.provider.launch(
            node_id,
            node_class,
            spec.slots,
            spec.memory_mb,
            NodeShares.of(self.master.scenario, spec).cpus,
            self.master.agent_command(node_id, node_class),
            env,
        )
        return record

    async def shutdown(self) -> None:
        now = self.master.journal.now()
        for node in self.master.nodes.values():
            if node.alive:
                node.status = NODE.next(node.status, "run_ended")
                self.master.records.node_row(node, now, "run_end")
        await self.master.provider.close()

    def node_joined(self) -> None:
        """A node came up: the paced start-up may launch the next, the cluster may be up."""
        self.came_up.set()
        cluster = self.master.scenario.cluster
        wanted = {"reserved": cluster.reserved.count, "transient": cluster.transient.count}
        nodes = ((n.node_class, n.status) for n in self.master.nodes.values())
        if cluster_up(nodes, self.master.attach, wanted):
            self.cluster_up.set()

    def adopt(self, request: NameRequest) -> None:
        """A node the master did not launch (attach mode) asks for its name: it gets the next
        id of its class, as a launched node would, and keeps its hostname as ``container``.
        A repeated request (the agent asks until answered) gets the same answer."""
        key = (request.host, request.incarnation)
        node_id = self.adopted.get(key)
        if node_id is None:
            record = self._register(request.node_class, request.slots, request.memory_mb, request.host)
            node_id = self.adopted[key] = record.node_id
            if isinstance(self.master.provider, AdoptingProvider):
                self.master.provider.adopt(node_id, request.host)
            log.info("adopted %s (container %s)", node_id, request.host)
        proof = name_proof(self.master.keys.run_secret, request.host, request.incarnation, node_id)
        self.master.send(
            request.host,
            NodeNamed(host=request.host, incarnation=request.incarnation, node_id=node_id, proof=proof),
        )

    def _spec(self, node_class: str) -> NodeClassSpec:
        cluster = self.master.scenario.cluster
        return cluster.reserved if node_class == "reserved" else cluster.transient

    def _register(self, node_class: str, slots: int, memory_mb: int, container: str = "") -> NodeRecord:
        """A new node of ``node_class``, launching, under the next id of its class."""
        ordinal = self.ordinals[node_class]
        self.ordinals[node_class] += 1
        node_id = f"{node_class}-{ordinal}"
        record = NodeRecord(
            node_id,
            node_class,
            ordinal,
            self.master.journal.now(),
            slots,
            memory_mb,
            self._spec(node_class).price_per_hour,
            container=container,
        )
        record.partition = "short" if node_class == "transient" else self.partitions.get(node_id, "general")
        self.master.nodes[node_id] = record
        adopted = {"container": container} if container else {}
        self.master.journal.event("node_launching", node=node_id, **{"class": node_class}, **adopted)
        return record
