"""The ``pado`` recovery strategy (Pado, EuroSys'17), as the core's event handlers.

Each physical stage runs on the class Algorithm 1 gives its operators. The
reserved tasks that receive a transient stage's shuffle output get their
reserved node first (set up before any transient task is ready); a transient
task pushes each partition to its receiver's node as soon as it ends, in the
agent's background, and asks the master to commit; the ``CommitLedger``
accepts one attempt per (task, receiver), and the receiver reads exactly the
committed blocks, as they are committed (incremental receivers). Outputs bound
for a commutative and associative receiver are held on their node and pushed
as partial aggregates; transient tasks read their sources through their
agent's input cache and prefer a node that caches them. The compiler is
``master/recovery/pado_compiler.py``; the ledger and the flush and executor rules are
``master/recovery/pado_rules.py``'s; the rest of the runtime is here: the
queries (``plan``, ``launch``) read the core's view, the handlers keep Pado's
own bookkeeping (``PadoJob``) and return the decisions the core applies
(``testbed.api``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from master.options import PolicyOptions
from master.recovery.pado_compiler import compile_pado
from master.recovery.pado_rules import Block, Executor, Push, choose_executor, should_flush
from master.recovery.pado_state import (
    DEFAULT_AGGREGATION,
    DEFAULT_INPUT_CACHE_MB,
    Aggregate,
    Held,
    PadoJob,
    PadoOptions,
    aggregates_into,
    blocks_by_partition,
    push_block_id,
    pushed_stages,
)
from master.recovery.spark import (
    BOTH,
    SparkStrategy,
    logical_dag,
    narrow_input_nodes,
    shuffle_consumers,
    stage_classes,
)
from testbed.api import (
    AbandonPush,
    BlockRef,
    BlockReported,
    CommitPush,
    CountPushed,
    Dependency,
    FeedReceiver,
    Flush,
    FlushAggregate,
    JobSubmitted,
    LiveJob,
    NodeClass,
    NodeLost,
    Note,
    PushDelivered,
    PushReported,
    PushTarget,
    Ready,
    Reconnected,
    Recover,
    Reopen,
    Reschedule,
    SetUpReceiver,
    StrategyDecision,
    StrategyView,
    TaskInputs,
    TaskKey,
    TaskLaunch,
    TaskStarted,
    TaskSucceeded,
    Tick,
)
from testbed.logical_dag import LogicalDag
from testbed.node.lru import LruCache
from testbed.scenario.schema import Scenario
from testbed.workloads.input_cache import input_cache_key

log = logging.getLogger("master.recovery")

Pushed = tuple[LiveJob, PadoJob, Push, tuple[TaskKey, ...], int]
"""A pushed block's job, Pado state, push, tasks and their stage."""


class PadoStrategy(SparkStrategy):
    """``pado``: Algorithm 1 placement, reserved receivers set up first, push and commit."""

    name = "pado"
    needs_both_classes = True

    class Options(PolicyOptions):
        """``policy.options.pado`` (their ranges: ``PadoOptions.parse``)."""

        push_bandwidth_mbps: float | None = None
        input_cache_mb: int = DEFAULT_INPUT_CACHE_MB
        aggregate_max_tasks: int = DEFAULT_AGGREGATION.max_tasks
        aggregate_max_delay_s: float = DEFAULT_AGGREGATION.max_delay_s
        incremental_receivers: bool = True

    def __init__(self, scenario: Scenario, options: Mapping[str, Any]) -> None:
        super().__init__(scenario, options)
        self.jobs: dict[str, PadoJob] = {}
        parsed = PadoOptions.parse(dict(options)).dilated(scenario.fidelity.factor)
        self.rate, self.cache_mb = parsed.rate, parsed.cache_mb
        self.limits, self.incremental = parsed.limits, parsed.incremental

    # ------------------------------------------------------------ the queries

    def classes(self, job: LiveJob, stage: int) -> frozenset[NodeClass]:
        state = self.jobs.get(job.job_id)
        return frozenset({state.classes[stage]}) if state else BOTH

    def plan(self, view: StrategyView, job: LiveJob) -> Iterable[Ready]:
        """Section 3.2.3: a stage's reserved receivers are set up first (``on_tick``); its
        transient tasks become ready only once every receiver has its reserved node, and ready
        receivers come before any other task. With incremental receivers, a receiver is
        ready as soon as it is set up: it runs while the pushes arrive, reading each
        committed block as it comes."""
        state = self.jobs.get(job.job_id)
        if state is None:
            return (Ready(key, BOTH) for key in job.ready())
        keys = job.ready(state.pushed if self.incremental else frozenset())
        set_up = {s: self._has_receivers(job, state, s) for s in state.pushed}
        ready = [k for k in keys if set_up.get(k[0], True) and self._may_receive(job, state, k)]
        ordered = sorted(ready, key=lambda k: k not in state.receivers)  # receivers first (stable)
        return (
            Ready(k, frozenset({state.classes[k[0]]}), self._preferred(view, job, state, k)) for k in ordered
        )

    def launch(self, view: StrategyView, job: LiveJob, key: TaskKey) -> TaskLaunch:
        """A receiver reads what is committed to it (the rest as it comes: ``streamed``); a
        pushing task pushes to the receivers it has not committed to, unless its output is held
        for partial aggregation; a transient task reads its source through the input cache
        (section 3.2.7)."""
        state = self.jobs.get(job.job_id)
        if state is None:
            return TaskLaunch(job.input_refs(key), push_rate_bytes_s=self.rate)
        inputs = tuple(
            self._committed_refs(view, job, state, key, dep)
            if dep.stage in state.pushed
            else job.dep_refs(key, dep)
            for dep in job.plan.stages[key[0]].deps
        )
        pushes = key[0] in state.pushed
        return TaskLaunch(
            inputs,
            push=self._receiver_targets(view, job, state, key)
            if pushes and key[0] not in state.aggregated
            else (),
            push_rate_bytes_s=self.rate,
            input_cache_mb=self.cache_mb if state.classes[key[0]] == "transient" else 0,
            streamed=tuple(
                i
                for i, d in enumerate(job.plan.stages[key[0]].deps)
                if d.stage in state.pushed and not self._all_committed(job, state, key, d)
            ),
            pushing=pushes,
        )

    def _preferred(self, view: StrategyView, job: LiveJob, state: PadoJob, key: TaskKey) -> tuple[str, ...]:
        """A receiver runs where its pushes went; a reserved task linked one-to-one to a
        reserved parent runs where the parent's output is (Algorithm 1's locality); a transient
        task runs where its input is cached, else where its one-to-one parent's output is (the
        paper fuses such a chain into one task, section 3.1: MLR's gradients and their
        training data)."""
        if state.classes[key[0]] == "transient":
            return self._cached_at(view, job, key) or narrow_input_nodes(job, key)
        if key in state.receivers:
            return (state.receivers[key],)
        narrow = [d.stage for d in job.plan.stages[key[0]].deps if d.kind == "narrow"]
        return tuple(job.tasks[(s, key[1])].node for s in narrow if job.tasks[(s, key[1])].node)  # type: ignore[misc]

    def _cached_at(self, view: StrategyView, job: LiveJob, key: TaskKey) -> tuple[str, ...]:
        """Section 3.2.3's cache-aware choice (``choose_executor``) among the transient
        executors with a free slot: the one caching most of the task's input, if any
        caches it. Otherwise no preference: the scenario's scheduler places the task."""
        stage = job.plan.stages[key[0]]
        cache_key = input_cache_key(stage.op, stage.params(key[1])) if self.cache_mb else None
        if cache_key is None:
            return ()
        nodes = sorted(
            (n for n in view.nodes.values() if n.node_class == "transient" and n.status == "up"),
            key=lambda n: n.ordinal,
        )
        executors = [Executor(n.node_id, n.slots - len(n.running)) for n in nodes]
        caches = {n.node_id: LruCache(self.cache_mb << 20, n.cached_inputs) for n in nodes}
        chosen, _ = choose_executor([cache_key], executors, caches, 0)
        return (chosen,) if chosen is not None and cache_key in caches[chosen] else ()

    def _may_receive(self, job: LiveJob, state: PadoJob, key: TaskKey) -> bool:
        """A receiver starts before its pushed inputs are all committed only when it has its
        node and the pushing stage can run to its end on transient nodes (its own inputs
        are available), so that waiting receivers never hold the reserved slots a producer
        would need."""
        for dep in job.plan.stages[key[0]].deps:
            if dep.stage in state.pushed and not job.stage_available(dep.stage):
                producer = job.plan.stages[dep.stage]
                if key not in state.receivers or not all(job.stage_available(d.stage) for d in producer.deps):
                    return False
        return True

    def _has_receivers(self, job: LiveJob, state: PadoJob, stage: int) -> bool:
        """Whether every receiver of the stage's pushes has its reserved node."""
        return all(
            (consumer, index) in state.receivers
            for consumer in shuffle_consumers(job.plan, stage)
            for index in range(job.plan.stages[consumer].tasks)
        )

    def _all_committed(self, job: LiveJob, state: PadoJob, key: TaskKey, dep: Dependency) -> bool:
        owners = state.ledger.owners_for(job.task_id(key))
        return all(job.task_id((dep.stage, i)) in owners for i in range(job.plan.stages[dep.stage].tasks))

    def _committed_refs(
        self, view: StrategyView, job: LiveJob, state: PadoJob, key: TaskKey, dep: Dependency
    ) -> tuple[BlockRef, ...]:
        """Exactly the blocks the ledger committed to this receiver: one push per task (a
        task's own output, or a partial aggregate covering it and others)."""
        url = view.nodes[state.receivers[key]].url
        parents = {job.task_id((dep.stage, i)) for i in range(job.plan.stages[dep.stage].tasks)}
        owners = state.ledger.owners_for(job.task_id(key))
        pushes = sorted({push for task, push in owners.items() if task in parents})
        return tuple(BlockRef(block=push_block_id(p), partition=key[1], locations=(url,)) for p in pushes)

    def _receiver_targets(
        self, view: StrategyView, job: LiveJob, state: PadoJob, key: TaskKey
    ) -> tuple[PushTarget, ...]:
        """The receivers this task has not committed to yet, grouped by node."""
        task_id = job.task_id(key)
        by_node: dict[str, list[int]] = {}
        for consumer in shuffle_consumers(job.plan, key[0]):
            for index in range(job.plan.stages[consumer].tasks):
                receiver = (consumer, index)
                if task_id not in state.ledger.inputs_for(job.task_id(receiver)):
                    by_node.setdefault(state.receivers[receiver], []).append(index)
        return tuple(
            PushTarget(node_id=n, url=view.nodes[n].url, partitions=tuple(sorted(set(p))))
            for n, p in sorted(by_node.items())
        )

    # ------------------------------------------------------------ a job and its tasks

    def on_job_submitted(self, view: StrategyView, event: JobSubmitted) -> list[StrategyDecision]:
        job = view.jobs[event.job_id]
        dag = logical_dag(job.plan)
        if dag is not None:
            pado = compile_pado(dag)
            classes = stage_classes(pado, job.plan)
            pushed = pushed_stages(job.plan, classes)
            aggregated = frozenset(
                s for s in pushed if self.limits.max_tasks > 1 and aggregates_into(pado, job.plan, s)
            )
            self.jobs[job.job_id] = PadoJob(classes, pushed, aggregated)
        return super().on_job_submitted(view, event)

    def describe(self, job: LiveJob, dag: LogicalDag) -> dict[str, Any]:
        state = self.jobs[job.job_id]
        return {
            "job_id": job.job_id,
            "workload": job.workload,
            "strategy": "pado",
            "plan": compile_pado(dag).to_dict(),
            "physical_stages": self.physical(job),
            "pushed_stages": sorted(state.pushed),
            "aggregated_stages": sorted(state.aggregated),
        }

    def on_task_started(self, view: StrategyView, event: TaskStarted) -> list[StrategyDecision]:
        """A receiver launched before all its inputs were committed is fed as they are."""
        state = self.jobs.get(event.job_id)
        if state is not None and event.launch.streamed:
            state.streaming[event.key] = event.attempt
        return []

    def on_task_succeeded(self, view: StrategyView, event: TaskSucceeded) -> list[StrategyDecision]:
        """A pushing task's output is being pushed (or held for partial aggregation); a commit
        request that overtook the success is taken now."""
        state = self.jobs.get(event.job_id)
        if state is None or not event.pushing:
            return []
        job, key = view.jobs[event.job_id], event.key
        held = key[0] in state.aggregated
        fields = {
            "job": job.job_id,
            "task": job.task_id(key),
            "attempt": event.attempt,
            "node": event.node_id,
        }
        out: list[StrategyDecision] = [Note("task_pushing", {**fields, "held": held})]
        if held:
            state.held.setdefault((key[0], event.node_id), []).append(Held(key, event.attempt, view.now()))
            out += self._flush_due(view, job, state, view.now())
        block = f"{job.task_id(key)}.a{event.attempt}"
        if block in state.early:
            out += self._push_reported(view, *state.early.pop(block))
        return out

    # ------------------------------------------------------------ receivers and partial aggregation

    def on_tick(self, view: StrategyView, event: Tick) -> list[StrategyDecision]:
        """Before each scheduling round: set up the receivers that lack a reserved node (at
        submission, or after their node was lost), then flush what partial aggregation holds.
        The round's snapshot (``plan``) only reads what this decided."""
        out: list[StrategyDecision] = []
        for job in view.jobs.values():
            state = self.jobs.get(job.job_id)
            if state is None or job.status not in ("waiting", "running"):
                continue
            for stage in sorted(state.pushed):
                self._set_up_receivers(view, job, state, stage, out)
            if state.held:
                out += self._flush_due(view, job, state, view.now())
        return out

    def _set_up_receivers(
        self, view: StrategyView, job: LiveJob, state: PadoJob, stage: int, out: list[StrategyDecision]
    ) -> bool:
        """Give each receiver of the stage's pushes a reserved node (``out`` gets the
        ``SetUpReceiver``s); False while some lack one (no reserved node is up)."""
        reserved = self.reserved_nodes(view)
        for consumer in shuffle_consumers(job.plan, stage):
            for index in range(job.plan.stages[consumer].tasks):
                key = (consumer, index)
                if key not in state.receivers and reserved:
                    state.receivers[key] = reserved[index % len(reserved)].node_id
                    out.append(SetUpReceiver(job.job_id, key, state.receivers[key]))
                if key not in state.receivers:
                    return False
        return True

    def _flush_due(
        self, view: StrategyView, job: LiveJob, state: PadoJob, now: float
    ) -> list[StrategyDecision]:
        """Section 3.2.7: push each node's held outputs of a stage once ``should_flush`` says
        so (task cap reached, time cap reached, or no further task of the stage may end
        there), at most ``max_tasks`` outputs per aggregate."""
        out: list[StrategyDecision] = []
        for (stage, node_id), held in list(state.held.items()):
            held[:] = [
                h
                for h in held
                if (job.tasks[h.key].status, job.tasks[h.key].attempt) == ("pushing", h.attempt)
            ]
            if not self._set_up_receivers(view, job, state, stage, out):
                continue  # a reserved node failed and no other can receive yet
            coming = any(
                r.status == "pending" or (r.status == "running" and r.node == node_id)
                for k, r in job.tasks.items()
                if k[0] == stage
            )
            while held and should_flush(self.limits, now - held[0].since, len(held), coming):
                batch, held[:] = held[: self.limits.max_tasks], held[self.limits.max_tasks :]
                out += self._flush(view, job, state, stage, node_id, batch)
            if not held:
                del state.held[(stage, node_id)]
        return out

    def _flush(
        self, view: StrategyView, job: LiveJob, state: PadoJob, stage: int, node_id: str, batch: list[Held]
    ) -> list[StrategyDecision]:
        """One aggregate per set of outputs going to the same receivers (after a reserved
        failure, rerun tasks push only to the reopened receivers)."""
        groups: dict[tuple[PushTarget, ...], list[Held]] = {}
        for held in batch:
            groups.setdefault(self._receiver_targets(view, job, state, held.key), []).append(held)
        out: list[StrategyDecision] = []
        for targets, members in groups.items():
            block = f"{job.job_id}.s{stage}.x{state.flushes}"
            state.flushes += 1
            push = Push(block, tuple((job.task_id(h.key), h.attempt) for h in members))
            command = FlushAggregate(
                block=block,
                op=job.plan.stages[stage].op,
                members=tuple(job.tasks[h.key].block for h in members),  # type: ignore[misc]
                partitions=job.plan.stages[stage].partitions,
                push=targets,
                push_rate_bytes_s=self.rate,
            )
            state.aggregates[block] = Aggregate(push, node_id, stage, tuple(h.key for h in members), command)
            out.append(Flush(node_id, command))
            tasks = [t for t, _ in push.members]
            out.append(
                Note("aggregate_flush", {"job": job.job_id, "block": block, "node": node_id, "tasks": tasks})
            )
        return out

    def _feed_receivers(
        self, view: StrategyView, job: LiveJob, state: PadoJob, node_id: str | None = None
    ) -> list[StrategyDecision]:
        """Tell every running incremental receiver (on ``node_id``, or anywhere) what is
        committed to it now (all of it: the message is cumulative), and whether that is
        the last of it; the agent ignores what comes after a last."""
        out: list[StrategyDecision] = []
        for key, attempt in list(state.streaming.items()):
            record = job.tasks[key]
            if record.status != "running" or record.attempt != attempt or record.node is None:
                del state.streaming[key]
                continue
            if node_id not in (None, record.node):
                continue
            for i, dep in enumerate(job.plan.stages[key[0]].deps):
                if dep.stage in state.pushed:
                    last = self._all_committed(job, state, key, dep)
                    refs = self._committed_refs(view, job, state, key, dep)
                    message = TaskInputs(
                        task_id=job.task_id(key), attempt=attempt, dependency=i, refs=refs, last=last
                    )
                    out.append(FeedReceiver(record.node, message))
        return out

    def on_reconnected(self, view: StrategyView, event: Reconnected) -> list[StrategyDecision]:
        """Send again what the node must get: its receivers' inputs, its aggregates' flushes
        (the agent ignores a flush it has seen)."""
        out: list[StrategyDecision] = []
        for job in view.jobs.values():
            state = self.jobs.get(job.job_id)
            if state is None:
                continue
            if state.streaming:
                out += self._feed_receivers(view, job, state, event.node_id)
            for aggregate in state.aggregates.values():
                if aggregate.node == event.node_id:
                    out.append(Flush(event.node_id, aggregate.command))
        return out

    # ------------------------------------------------------------ pushes and commits

    def _receivers_on(self, job: LiveJob, state: PadoJob, stage: int, node_id: str) -> list[TaskKey]:
        return [
            (c, i)
            for c in shuffle_consumers(job.plan, stage)
            for i in range(job.plan.stages[c].tasks)
            if state.receivers.get((c, i)) == node_id
        ]

    def _pushed(self, view: StrategyView, block: str) -> Pushed | None:
        """The push a block carries: (job, its state, the push, its tasks, their stage), for a
        task's own output (``<task>.a<attempt>``) or a partial aggregate."""
        job = view.jobs.get(block.partition(".")[0])
        state = self.jobs.get(job.job_id) if job is not None else None
        if job is None or state is None:
            return None
        if block in state.aggregates:
            aggregate = state.aggregates[block]
            return job, state, aggregate.push, aggregate.keys, aggregate.stage
        located = self.located(view, block)
        if located is None or located[1][0] not in state.pushed:
            return None
        _, key, attempt = located
        return job, state, Push.of(job.task_id(key), attempt), (key,), key[0]

    def on_block_reported(self, view: StrategyView, event: BlockReported) -> list[StrategyDecision]:
        """A reserved agent verified a pushed block: the ledger records what each of the
        receivers on it got (``receive``); a commit that waited for it is taken."""
        message = event.message
        pushed = self._pushed(view, message.block)
        if pushed is None:
            return []
        job, state, push, _, stage = pushed
        if (message.block, event.node_id) in state.receipts:
            return []  # repeated after a broker outage (``Resync``)
        state.receipts.add((message.block, event.node_id))
        parts = blocks_by_partition(message.parts)
        for receiver in self._receivers_on(job, state, stage, event.node_id):
            state.ledger.receive(push.push_id, job.task_id(receiver), parts.get(receiver[1], (0, 0)))
        out: list[StrategyDecision] = [CountPushed(job.job_id, sum(p.nbytes for p in message.parts))]
        for task_id, attempt in push.members:
            fields = {"job": job.job_id, "task": task_id, "attempt": attempt, "node": event.node_id}
            out.append(Note("push_received", fields))
        if push.push_id in state.waiting:
            out += self._commit(view, job, state, *state.waiting.pop(push.push_id))
        return out

    def on_push_reported(self, view: StrategyView, event: PushReported) -> list[StrategyDecision]:
        return self._push_reported(view, event.node_id, event.message)

    def _push_reported(
        self, view: StrategyView, node_id: str, message: PushDelivered
    ) -> list[StrategyDecision]:
        """The transient agent's commit request, through the master (section 3.2.5).
        Ignored from a node already declared lost: commits and evictions are serialised."""
        pushed = self._pushed(view, message.block)
        if pushed is None or not view.nodes[node_id].alive:
            return []
        job, state, push, keys, stage = pushed
        if message.block not in state.aggregates:
            record = job.tasks[keys[0]]
            if record.attempt != push.members[0][1]:
                return []
            if record.status == "running":
                state.early[message.block] = (node_id, message)
                return []
        current = [(k, a) for k, (_, a) in zip(keys, push.members, strict=True) if job.tasks[k].attempt == a]
        if not any(job.tasks[k].status == "pushing" for k, _ in current):
            return []
        if message.failed:
            log.warning("push of %s failed: %s", message.block, message.error)
            state.aggregates.pop(message.block, None)
            out: list[StrategyDecision] = [
                AbandonPush(job.job_id, key, attempt, failed=True, error=message.error)
                for key, attempt in current
            ]
            return [*out, Reschedule()]
        manifest: dict[str, Block] = {}
        for receiving, parts in message.delivered.items():
            by_partition = blocks_by_partition(parts)
            for receiver in self._receivers_on(job, state, stage, receiving):
                manifest[job.task_id(receiver)] = by_partition.get(receiver[1], (0, 0))
        return self._commit(view, job, state, keys, push, manifest)

    def _commit(
        self,
        view: StrategyView,
        job: LiveJob,
        state: PadoJob,
        keys: tuple[TaskKey, ...],
        push: Push,
        manifest: dict[str, Block],
    ) -> list[StrategyDecision]:
        """Commit one push for all its tasks at once. Accepted: every task is done, held by
        the reserved nodes. Refused as superseded: its tasks that some other push already
        committed are done; the others (an aggregate overlapping another push in part)
        run again."""
        verdict = state.ledger.commit(push, manifest)
        if verdict == "incomplete":
            state.waiting[push.push_id] = (keys, push, manifest)
            return []
        state.aggregates.pop(push.push_id, None)
        out = self._feed_receivers(view, job, state) if verdict == "accepted" else []
        holders = tuple(sorted({view.nodes[n].url for n in state.receivers.values()}))
        for key, (task_id, attempt) in zip(keys, push.members, strict=True):
            fields = {"job": job.job_id, "task": task_id, "attempt": attempt, "verdict": verdict}
            out.append(Note("push_commit", {**fields, "push": push.push_id}))
            if verdict == "duplicate":
                continue
            if state.ledger.is_committed(task_id):
                out.append(CommitPush(job.job_id, key, attempt, holders))
            else:
                out.append(AbandonPush(job.job_id, key, attempt))
        return [*out, Reschedule()]

    # ------------------------------------------------------------ lost nodes

    def on_node_lost(self, view: StrategyView, event: NodeLost) -> list[StrategyDecision]:
        """Section 3.2.5, a transient eviction: the lost node's uncommitted pushes, its partial
        aggregates and the outputs it held are discarded (``CommitLedger.discard``); its tasks,
        held or pushing, went back to pending (the core's ``JobRuntime.node_lost``: only the evicted
        stage's uncommitted tasks). Section 3.2.6, a reserved node failure: each receiver set
        up on it that has not finished is set up on another reserved node (``on_tick``), and
        what had been committed to it (``forget_destination``) is computed and pushed again;
        meanwhile its stage waits (its inputs are not all available). Lost reserved outputs
        are recomputed through the core's lineage (``JobRuntime``), parent stages first."""
        for job in view.jobs.values():
            state = self.jobs.get(job.job_id)
            if state is not None:
                self._discard(job, state, event)
        if event.node_class != "reserved":
            return []
        out: list[StrategyDecision] = []
        for job in view.jobs.values():
            state = self.jobs.get(job.job_id)
            if state is None or job.status not in ("waiting", "running"):
                continue
            for key, holder in list(state.receivers.items()):
                if holder != event.node_id or job.tasks[key].status == "done":
                    continue
                del state.receivers[key]
                for task_id in state.ledger.forget_destination(job.task_id(key)):
                    out.append(Reopen(job.job_id, job.key_of(task_id)))  # type: ignore[arg-type]
            out.append(Recover(job.job_id))
        return out

    def _discard(self, job: LiveJob, state: PadoJob, event: NodeLost) -> None:
        interrupted = event.interrupted.get(job.job_id, ())
        pushes = [Push.of(job.task_id(key), job.tasks[key].attempt).push_id for key in interrupted]
        pushes += [block for block, a in state.aggregates.items() if a.node == event.node_id]
        for push_id in pushes:
            state.ledger.discard(push_id)
            state.waiting.pop(push_id, None)
            state.aggregates.pop(push_id, None)
        for stage, holder in list(state.held):
            if holder == event.node_id:
                del state.held[(stage, holder)]
