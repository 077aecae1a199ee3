"""Model agents: every node's agent as the master sees it, on the simulator's clock.

They answer the master's commands with the protocol messages real agents send
(``testbed.wire.protocol``), after the times the execution model gives: a launch is
acknowledged ``running`` at once, succeeds (output partition sizes, metrics) after the
launch overhead and its modelled fetch and compute time, or fails with ``fetch`` and the
lost blocks when an input is held by no live node (when it begins, or when its worker
reaches a block whose holders were killed while it fetched earlier ones). A node holds
the blocks its tasks wrote and those pushed to it, and a copy of each block its tasks read
by broadcast (fetched once, by the first of them); a killed node loses them all, and its
Last Will reaches the master after the detection delay. Every byte between two nodes (a
fetch, a push: Pado's, and spark-checkpoint's copies) is booked on the sender's and the
receiver's NIC links (``model.Links``), which every transfer of a node shares as the real
agent's token buckets are; pushes (``pushes.Push``) are reported as real agents report them:
the receiver's ``BlockReceived``, then the sender's ``PushDelivered``.

What each node's agent decides is the real agent's: every command goes to the node's
``agents.core.AgentCore`` (``ModelNode.core``), which decides which launch runs (idempotence
by (task, attempt), a stale attempt's launch ignored), what a cancel kills, which receiver
inputs are fed, which flush is merged, what each report, a ``Resync`` and a heartbeat say;
the model carries out its actions (``_ACTIONS``) on the simulator's clock and tells it what
happened (a worker started or ended, a push landed). The model keeps only what is the
simulator's: the execution model's times, the NIC links, CPU sharing and the event heap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from agents import core
from agents.core import (
    Action,
    AggregateDone,
    HeartbeatDue,
    InputsFed,
    ReplicasStored,
    WorkerFinished,
    WorkerStarted,
)
from master.event_heap import EventHeap
from master.execution_model import MB, ExecutionModel, TaskCost, aggregate_sizes
from master.sim.clock import DELIVER
from master.sim.cpu import NodeCpu
from master.sim.nodes import (
    Attempt,
    BroadcastCopy,
    Fetch,
    ModelNode,
    broadcast_indices,
    in_flight,
    incarnation_of,
    node_state,
    part_bytes,
)
from master.sim.pushes import Push
from testbed.chaosmodels.slowdown import slowdown_factor
from testbed.wire.protocol import BlockRef, FlushAggregate, Message, TaskInputs, TaskSpec

Deliver = Callable[[str, Message], None]
"""A message from a node reaches the master (now)."""


class ModelAgents:
    def __init__(
        self,
        heap: EventHeap,
        model: ExecutionModel,
        deliver: Deliver,
        output_staged: Callable[[TaskSpec], None] = lambda spec: None,
        heartbeat_s: float | None = None,
    ) -> None:
        """``heartbeat_s``: every node up sends a heartbeat this often (None: none, for a
        master that does not watch them)."""
        self.heap = heap
        self.heartbeat_s = heartbeat_s
        self.model = model
        self.deliver = deliver
        self.output_staged = output_staged
        """A final task's part file is at the master's sink (the shell answers ``OutputStaged``)."""
        self.nodes: dict[str, ModelNode] = {}
        self.at_url: dict[str, ModelNode] = {}
        """Each node by its URL (``url_of``), which the master records as the location of the
        blocks it holds."""
        self.fetchers: dict[str, ModelNode] = {}
        """The nodes that may have a fetch or a broadcast copy in flight (each one that began
        one since ``_fail_fetches`` last found it had none): the only ones a kill can fail."""
        self.order: dict[str, int] = {}
        """Each node id's position in ``nodes`` (its first start): ``_fail_fetches`` visits the
        fetchers in that order, as a walk over every node would."""
        self.moved = 0
        """Deaths, releases and copies pushed or merged so far: what changes a block's holders
        once it exists (a task's output is a new block, named by no input before it is)."""

    # ------------------------------------------------------------------ nodes

    def start(self, node_id: str, node_class: str) -> None:
        """Launch a node of the class named ``node_class``: it announces itself ``up`` after the
        modelled start-up, with its class's slots, memory and cores."""
        named = self.model.scenario.node_classes[node_class]
        spec = named.spec
        launch_s = self.model.spec.launch_s(spec.cores)
        node = ModelNode(node_id, node_class, named.kind, spec.slots, spec.memory_mb, launch_s)
        self.nodes[node_id] = node
        self.order.setdefault(node_id, len(self.order))
        slowdown, seed = self.model.scenario.chaos.slowdown, self.model.scenario.seed
        node.slowdown = slowdown_factor(slowdown, seed, node_id, named.kind) if slowdown else 1.0
        node.links.slow = self._links_slowdown(node)
        self.at_url[node.url] = node
        if self.model.spec.cpu_sharing:
            node.cpu = NodeCpu(self.heap, spec.cores)
        self.heap.after(self.model.spec.startup_s(spec.cores), DELIVER, lambda: self._announce(node))

    def _links_slowdown(self, node: ModelNode) -> float:
        """How much slower its own factor makes its NIC: LATE's straggler processes (a real
        local node's ``straggler: processes``) contend for its cores and disk, not its links;
        otherwise its buckets are divided by the factor, its NIC's included."""
        slowdown = self.model.scenario.chaos.slowdown
        return 1.0 if slowdown is not None and slowdown.straggler == "processes" else node.slowdown

    def _announce(self, node: ModelNode) -> None:
        if not node.alive:
            return
        node.up = True
        host, _, port = node.url.removeprefix("http://").partition(":")
        self.deliver(node.node_id, node_state(node, "up", host=host, port=int(port)))
        if self.heartbeat_s is not None:
            self.heap.after(self.heartbeat_s, DELIVER, lambda: self._heartbeat(node))

    def _heartbeat(self, node: ModelNode) -> None:
        """What the node runs, as its agent's core reports it every heartbeat interval."""
        if not node.alive or self.heartbeat_s is None:
            return
        self.act(node, node.core.handle(HeartbeatDue(node.progress(self.heap.now))))
        self.heap.after(self.heartbeat_s, DELIVER, lambda: self._heartbeat(node))

    def probe(self, node_id: str, incarnation: str) -> str:
        """What the node's ``/health`` says: ``answered`` by the same incarnation, else ``refused``
        (nothing listens where a dead model node was)."""
        node = self.nodes.get(node_id)
        alive = node is not None and node.alive and incarnation == incarnation_of(node_id)
        return "answered" if alive else "refused"

    def slow(self, node_id: str, factor: float) -> None:
        """A slowdown episode: the node is ``factor`` times slower than its own factor from now
        (1: back to it). Its cores slow at once, the compute under way on them included; work
        not on them (a sleep, a spill, compute without CPU sharing) takes the factor in force
        when it begins; so do its NIC's bookings (the real bucket's ``set_rate``)."""
        node = self.nodes.get(node_id)
        if node is None or not node.alive:
            return
        node.episode = factor
        node.links.slow = self._links_slowdown(node) * factor
        if node.cpu is not None:
            node.cpu.slow(factor)

    def kill(self, node_id: str) -> None:
        """SIGKILL and its disk destroyed: its blocks and attempts are gone; its Last Will
        (or its silence) reaches the master after the detection delay."""
        node = self.nodes.get(node_id)
        if node is None or not node.alive:
            return
        node.forget()
        self.moved += 1
        self._fail_fetches()
        if node.up:
            lost = node_state(node, "lost")
            self.heap.after(self.model.detection_s(), DELIVER, lambda: self.deliver(node_id, lost))

    def release(self, node_id: str) -> None:
        """A graceful stop (the master already counts the node gone)."""
        node = self.nodes.get(node_id)
        if node is not None:
            node.forget()
            self.moved += 1

    def live_nodes(self) -> int:
        return sum(1 for node in self.nodes.values() if node.alive)

    # ------------------------------------------------------------------ commands

    def command(self, node_id: str, message: Message) -> None:
        """A command from the master reaches the node (now): its agent's core decides, the
        model carries out what it answers (``_ACTIONS``)."""
        node = self.nodes.get(node_id)
        if node is not None and node.alive:
            self.act(node, node.core.handle(message))

    def act(self, node: ModelNode, actions: list[Action]) -> None:
        """Carry out what the node's core answered."""
        for action in actions:
            _ACTIONS[type(action)](self, node, action)

    def start_worker(self, node: ModelNode, spec: TaskSpec) -> None:
        """The core's ``StartWorker``: the attempt's worker is up after the launch overhead;
        its input feed is open at once (``WorkerStarted``)."""
        key = (spec.task_id, spec.attempt)
        refs = [ref for refs in spec.inputs for ref in refs]
        broadcast = broadcast_indices(spec) if spec.broadcast else frozenset()
        attempt = node.running[key] = Attempt(spec, key, refs, broadcast=broadcast)
        self.heap.after(node.launch_s, DELIVER, lambda: self._begin(node, attempt))
        self.act(node, node.core.handle(WorkerStarted(spec.task_id, spec.attempt)))

    def _begin(self, node: ModelNode, attempt: Attempt) -> None:
        """The worker is up: its inputs are fetched (or found lost), then it computes."""
        if not self._current(node, attempt) or attempt.started or not attempt.ready:
            return
        whole = self.model.whole_blocks(attempt.spec)
        holders: list[ModelNode] = []
        sizes: list[int] = []
        lost: set[str] = set()
        broadcast = attempt.broadcast
        for i, ref in enumerate(attempt.refs):
            holder = self._holder(ref)
            if holder is None and (i not in broadcast or (ref.block, ref.partition) not in node.copies):
                lost.add(ref.block)
            elif not lost:  # no holder: its node's copy, which outlives them (``_read_copy``)
                holders.append(holder or node)
                sizes.append(part_bytes(holder, ref, whole) if holder else 0)
        if lost:
            self._finish(node, attempt, failure="fetch", lost=tuple(sorted(lost)))
            return
        attempt.started = True
        attempt.whole, attempt.holders, attempt.sizes, attempt.seen = whole, holders, sizes, self.moved
        attempt.fetch_from = self.heap.now
        split_s = self._split_read_s(node, attempt.spec)
        if split_s:
            self.heap.after(split_s, DELIVER, partial(self._read_on, node, attempt))
        else:
            self._read_on(node, attempt)

    def _split_read_s(self, node: ModelNode, spec: TaskSpec) -> float:
        """A replicated split (``jobs[].input_replication``): read from the node's own disk at
        its ``disk_mb_s`` (none given: at once), or from a holder, booked on both NICs; a split
        with no replica left (or whose holder is gone since the launch) is read from the source,
        as every split is without replication (its time is the map's compute)."""
        read = spec.params.get("input_from")
        if read is None:
            return 0.0
        nbytes = int(read["bytes"])
        if read["kind"] == "local":
            disk = self.model.disk_bytes_s(node.node_class)
            return nbytes / disk if disk else 0.0
        holder = self.nodes.get(read["holder"]) if read["kind"] == "remote" else None
        if holder is None or not holder.alive:
            return 0.0
        return self.model.move(
            nbytes, self.heap.now, holder.links, holder.node_class, node.links, node.node_class
        )

    def _read_on(self, node: ModelNode, attempt: Attempt) -> None:
        """The worker reads its next blocks: local ones at once, a remote one booked on the
        links now, as the real worker books each chunk as it arrives (a booking ahead would
        keep other readers off a link while it is idle); once all are read, it computes.

        A large shuffle's hottest code (a call per remote block: 11 million in sim-yarn-me-1k):
        while no block has moved since the worker began, each block's holder and bytes are
        those ``_begin`` found, and ``_current`` is inlined."""
        if not (node.alive and node.running.get(attempt.key) is attempt):
            return
        now, refs, broadcast = self.heap.now, attempt.refs, attempt.broadcast
        while attempt.next_ref < len(refs):
            i = attempt.next_ref
            attempt.next_ref = i + 1
            if broadcast and i in broadcast:
                if self._read_copy(node, attempt, refs[i], now):
                    return
                continue
            if attempt.seen == self.moved and i < len(attempt.holders):
                holder, nbytes = attempt.holders[i], attempt.sizes[i]
            else:
                ref = refs[i]
                found = self._holder(ref)
                if found is None:  # its holders were killed while earlier blocks came
                    self._fetch_failed(node, attempt, ref.block)
                    return
                holder, nbytes = found, part_bytes(found, ref, attempt.whole)
            attempt.read += nbytes
            attempt.largest = max(attempt.largest, nbytes)
            if holder is not node and nbytes:
                fetch = attempt.fetching = self._fetch(node, holder, refs[i], nbytes, now)
                self.fetchers[node.node_id] = node
                read_on = partial(self._read_on, node, attempt)  # no frame of its own
                self.heap.at(fetch.end, DELIVER, read_on)
                return
        fetch_s = now - attempt.fetch_from
        cost = self.model.attempt_cost(attempt.spec, attempt.read, fetch_s, node.node_class, attempt.largest)
        cost = cost.slowed(node.slowdown)
        attempt.compute_from = now
        on_cpu = node.cpu is not None and bool(cost.compute_s) and not self.model.waits(attempt.spec)
        if not on_cpu:  # an episode under way stretches it all; else its cores do (spills: ``_computed``)
            cost = cost.slowed(node.episode)
        attempt.compute_s = cost.compute_s + cost.spill_s
        if not on_cpu:
            self.heap.after(
                cost.compute_s + cost.spill_s, DELIVER, lambda: self._finish(node, attempt, cost=cost)
            )
        else:  # its compute shares the node's cores (a plain sleep takes none), then it spills
            assert node.cpu is not None
            attempt.computing = node.cpu.run(cost.compute_s, lambda: self._computed(node, attempt, cost))

    def _fetch(self, node: ModelNode, holder: ModelNode, ref: BlockRef, nbytes: int, now: float) -> Fetch:
        """``nbytes`` of ``ref`` from ``holder`` to ``node``, begun now: booked on both nodes'
        links, and on the holder's cores for serving them."""
        wait = self.model.move(nbytes, now, holder.links, holder.node_class, node.links, node.node_class)
        if holder.cpu is not None and self.model.spec.serve_cpu_s_per_mb:
            holder.cpu.serve(nbytes * self.model.spec.serve_cpu_s_per_mb / MB)
        return Fetch(ref, now, now + wait, nbytes, holder, (holder.links.slow, node.links.slow))

    def _read_copy(self, node: ModelNode, attempt: Attempt, ref: BlockRef, now: float) -> bool:
        """A block read by broadcast, through the node's copy, as a real worker reads it
        (``testbed.workloads.broadcast``): the node's first read of it fetches it (booked on the
        links as any fetch) and makes the copy; later reads take the copy, at once, or once the
        fetch making it is through. A block the node holds itself is read where it is.
        True: the worker waits for a fetch (or failed)."""
        copy = node.copies.get((ref.block, ref.partition))
        if copy is None:
            held = ref.block in node.blocks and node.url in ref.locations
            holder = node if held else self._holder(ref)
            if holder is None:
                self._fetch_failed(node, attempt, ref.block)
                return True
            nbytes = part_bytes(holder, ref, attempt.whole)
            if holder is node or not nbytes:
                attempt.read += nbytes
                attempt.largest = max(attempt.largest, nbytes)
                return False
            fetch = attempt.fetching = self._fetch(node, holder, ref, nbytes, now)
            copy = node.copies[(ref.block, ref.partition)] = BroadcastCopy(fetch, nbytes)
            self.fetchers[node.node_id] = node
        elif copy.ready > now:  # another task of the node is fetching it: its failure is this one's
            attempt.fetching = Fetch(ref, now, copy.ready, 0, copy.fetch.sender)
            self.fetchers[node.node_id] = node
        attempt.read += copy.nbytes
        attempt.largest = max(attempt.largest, copy.nbytes)
        if copy.ready <= now:
            return False
        self.heap.after(copy.ready - now, DELIVER, partial(self._read_on, node, attempt))
        return True

    def _computed(self, node: ModelNode, attempt: Attempt, cost: TaskCost) -> None:
        """Its compute is through, stretched by what shared the node's cores: reported as it took."""
        job, attempt.computing = attempt.computing, None
        stretched = replace(cost, compute_s=self.heap.now - job.started) if job is not None else cost
        if node.episode != 1.0:  # an episode under way as its spill begins
            stretched = replace(stretched, spill_s=cost.spill_s * node.episode)
        self.heap.after(stretched.spill_s, DELIVER, lambda: self._finish(node, attempt, cost=stretched))

    def agent_work(self, node: ModelNode, mb_cpu_s: float, done: Callable[[], None]) -> None:
        """``mb_cpu_s``: bytes times CPU seconds per MB, of the node's agent; ``done()`` when
        through (at once without CPU sharing)."""
        if node.cpu is None or not mb_cpu_s or not node.alive:
            done()
        else:
            node.cpu.run(mb_cpu_s / MB, done, agent=True)

    @staticmethod
    def _current(node: ModelNode, attempt: Attempt) -> bool:
        return node.alive and node.running.get(attempt.key) is attempt

    def _fail_fetches(self) -> None:
        """A node was killed: every attempt elsewhere fetching a block that no live node holds
        now fails, with ``fetch`` and that block, as the real worker's ``FetchFailed``
        reports it (a block not yet begun is checked when the worker reaches it).

        Only the ``fetchers`` are visited (a walk over every node's attempts cost 14 ms a
        kill at 10,000 nodes), in the nodes' order; those with nothing left in flight leave
        them. A fetch begun during the walk found its holder alive, so none fails in it."""
        now = self.heap.now
        fetchers = sorted(self.fetchers.values(), key=lambda node: self.order[node.node_id])
        for node in fetchers:
            if not node.alive:
                continue
            for attempt in list(node.running.values()):
                fetch = attempt.fetching
                if fetch is not None and fetch.end > now and self._holder(fetch.ref) is None:
                    self._fetch_failed(node, attempt, fetch.ref.block)
            for key, copy in list(node.copies.items()):  # a copy still coming: never made
                if copy.ready > now and self._holder(copy.fetch.ref) is None:
                    del node.copies[key]
        for node in fetchers:
            if not (node.alive and in_flight(node, now)) and self.fetchers.get(node.node_id) is node:
                del self.fetchers[node.node_id]

    def _fetch_failed(self, node: ModelNode, attempt: Attempt, block: str) -> None:
        if self._current(node, attempt):
            self._unbook_rest(node, attempt)
        self._finish(node, attempt, failure="fetch", lost=(block,), reason="its holders are gone")

    def _unbook_rest(self, node: ModelNode, attempt: Attempt) -> None:
        """The bytes its fetch under way had booked and will not send are given back to the links."""
        now, fetch = self.heap.now, attempt.fetching
        if fetch is None or fetch.end <= now:
            return
        unsent: float = fetch.nbytes
        if fetch.begun < now:  # under way: the part not yet through
            unsent *= (fetch.end - now) / (fetch.end - fetch.begun)
        sender, (out_slow, in_slow) = fetch.sender, fetch.booked_slow
        self.model.unbook(
            unsent, (sender.links, sender.node_class, out_slow), (node.links, node.node_class, in_slow)
        )

    def _holder(self, ref: BlockRef) -> ModelNode | None:
        """A live node that holds the block (its own copy, or a pushed one)."""
        block = ref.block
        for location in ref.locations:
            node = self.at_url.get(location)
            if node is not None and node.alive and block in node.blocks:
                return node
        return None

    def _finish(
        self,
        node: ModelNode,
        attempt: Attempt,
        cost: TaskCost | None = None,
        failure: str | None = None,
        lost: tuple[str, ...] = (),
        reason: str | None = None,
    ) -> None:
        """The worker ends: its outcome goes to the core (``WorkerFinished``), which reports it
        and pushes its block. ``reason``: a fetch failure's message as the real worker words it
        (one block)."""
        spec = attempt.spec
        key = (spec.task_id, spec.attempt)
        if not node.alive or node.running.pop(key, None) is not attempt:
            return
        if failure is not None or cost is None:
            error = self._fetch_error(lost, reason)
            outcome = {"state": "failed", "failure": failure, "error": error, "lost_blocks": lost}
        else:
            outcome = self._succeeded(node, spec, cost)
        self.act(node, node.core.handle(WorkerFinished(spec.task_id, spec.attempt, outcome)))

    @staticmethod
    def _fetch_error(lost: tuple[str, ...], reason: str | None) -> str | None:
        if reason is not None:
            return f"cannot fetch block {lost[0]}: {reason}"
        return f"input blocks lost: {', '.join(lost)}" if lost else None

    def _succeeded(self, node: ModelNode, spec: TaskSpec, cost: TaskCost) -> dict[str, Any]:
        partitions: tuple[int, ...] = ()
        if spec.final:
            self.output_staged(spec)
        else:
            partitions = self.model.output_parts(spec, cost.bytes_out)
            node.blocks[spec.block_id] = partitions
        metrics = {
            "bytes_in": cost.bytes_in,
            "bytes_out": cost.bytes_out,
            "spill_bytes": cost.spill_bytes,
            "spills": 1 if cost.spill_bytes else 0,
            "fetch_s": round(cost.fetch_s, 6),
            "compute_s": round(cost.compute_s, 6),
        }
        return {"state": "succeeded", "partition_bytes": partitions, "metrics": metrics}

    def kill_worker(self, node: ModelNode, task_id: str, attempt: int) -> None:
        """The core's ``Kill`` (a cancel): the worker stops at once, its compute off the cores,
        and ends with no outcome of its own (the core reports it cancelled)."""
        running = node.running.pop((task_id, attempt), None)
        if running is None:
            return
        if node.cpu is not None and running.computing is not None:
            node.cpu.stop(running.computing)
        self.act(node, node.core.handle(WorkerFinished(task_id, attempt, {})))

    def feed_inputs(self, node: ModelNode, inputs: TaskInputs) -> None:
        """The core's ``FeedInputs`` (Pado's incremental receivers): the blocks committed so far
        through a streamed dependency (cumulative) reach the worker; its work starts once the
        last feed of each is in."""
        attempt = node.running.get((inputs.task_id, inputs.attempt))
        if attempt is not None:
            known = {(ref.block, ref.partition) for ref in attempt.refs}
            attempt.refs.extend(ref for ref in inputs.refs if (ref.block, ref.partition) not in known)
            if inputs.last:
                attempt.closed.add(inputs.dependency)
                self._begin(node, attempt)
        fed = InputsFed(inputs.task_id, inputs.attempt, inputs, sent=attempt is not None)
        self.act(node, node.core.handle(fed))

    # ------------------------------------------------------------------ pushes

    def aggregate(self, node: ModelNode, flush: FlushAggregate) -> None:
        """The core's ``Aggregate`` (Pado's partial aggregation): the members held here merged
        into one block (summed gradients: one gradient's size), which the core then pushes."""
        held = [node.blocks[m] for m in flush.members if m in node.blocks]
        node.blocks[flush.block] = aggregate_sizes(flush.op, held, flush.partitions)
        self.moved += 1
        self.act(node, node.core.handle(AggregateDone(flush, {"state": "succeeded"})))

    def push(self, node: ModelNode, push: core.Push) -> None:
        """The core's ``Push``: the block's copies, on the links (``pushes.Push``), reported
        through the receivers' cores (``BlockArrived``) and the sender's (``PushDone``)."""
        origin = (push.task_id, push.attempt)
        Push(self, node, push.block, origin, push.targets).start(push.rate)


def _deliver(agents: ModelAgents, node: ModelNode, message: Message) -> None:
    agents.deliver(node.node_id, message)


def _store_replicas(agents: ModelAgents, node: ModelNode, action: core.StoreReplicas) -> None:
    """The model copies no replica (the master's execution model times a replicated split's read)."""
    agents.act(node, node.core.handle(ReplicasStored(tuple(split.block for split in action.splits))))


_ACTIONS: dict[type, Callable[[ModelAgents, ModelNode, Any], None]] = {
    core.StartWorker: lambda agents, node, a: agents.start_worker(node, a.spec),
    core.Kill: lambda agents, node, a: agents.kill_worker(node, a.task_id, a.attempt),
    core.FeedInputs: lambda agents, node, a: agents.feed_inputs(node, a.inputs),
    core.PublishUpdate: lambda agents, node, a: _deliver(agents, node, a.update),
    core.PublishReport: lambda agents, node, a: _deliver(agents, node, a.report),
    core.SendHeartbeat: lambda agents, node, a: _deliver(agents, node, a.beat),
    core.AnnounceState: lambda agents, node, a: _deliver(agents, node, node_state(node, a.state)),
    core.Push: ModelAgents.push,
    core.Aggregate: lambda agents, node, a: agents.aggregate(node, a.flush),
    core.StoreReplicas: _store_replicas,
    core.DeleteCached: lambda agents, node, a: None,  # the model keeps no cache files
    core.Log: lambda agents, node, a: None,  # nor an agent log
}
"""How the model carries out each action of its node's core."""
