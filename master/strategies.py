"""The shell of the eviction-recovery strategies: ``spark``, ``spark-checkpoint``, ``pado``.

The pure decisions live in ``master/policies/lineage.py`` and
``master/policies/pado.py``; this module maps them onto the physical plans of our
workloads (``testbed/workloads/*.plan``) and applies them to the master's job
states. The master calls one hook per event (job submitted, task ready, task
launched, task succeeded, block received, push delivered, node lost); see
docs/strategies.md, section 6.

- ``spark``: lineage recovery as ``JobRuntime`` implements it (executors on both
  classes; outputs on the producer's disk; lost outputs recomputed on demand).
- ``spark-checkpoint``: executors on transient nodes only; each output crossing a
  shuffle boundary is copied by its producer, once the task has succeeded, to
  ``checkpoint_node`` (a reserved agent); once the reserved agent has verified and
  committed the copy, it is one of the output's locations, so the loss of the
  producer loses nothing.
- ``pado``: each physical stage runs on the class Algorithm 1 gives its
  operators. The reserved tasks that receive a transient stage's shuffle output
  get their reserved node first (set up before any transient task is ready);
  a transient task pushes each partition to its receiver's node as soon as it
  ends, in the agent's background, and asks the master to commit; the
  ``CommitLedger`` accepts one attempt per (task, receiver), and the receiver
  reads exactly the committed blocks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from master.dag import LogicalDag, pagerank_dag, sort_dag, wordcount_dag
from master.jobs import JobRuntime, TaskKey
from master.policies.base import NodeClass
from master.policies.lineage import checkpoint_node, executor_classes, spark_plan
from master.policies.pado import (
    Block,
    CommitLedger,
    Executor,
    LruCache,
    PadoPlan,
    Push,
    choose_executor,
    compile_pado,
)
from testbed.protocol import BlockReceived, BlockRef, PushDelivered, PushedPart, PushTarget, TaskUpdate
from testbed.scenario import ScenarioError
from testbed.workloads.input_cache import input_cache_key
from testbed.workloads.plan import Dependency, JobPlan

if TYPE_CHECKING:
    from master.master import Master, NodeRecord

log = logging.getLogger("master.strategies")
BOTH: frozenset[NodeClass] = frozenset({"reserved", "transient"})
DEFAULT_INPUT_CACHE_MB = 64
"""Each transient agent's task input cache under ``pado`` (``policy.options.pado.input_cache_mb``)."""


# ---------------------------------------------------------------- logical DAG of a physical plan


def logical_dag(plan: JobPlan) -> LogicalDag | None:
    """The workload's logical DAG with the physical plan's parallelism (None: no DAG, e.g. sleep)."""
    stages = plan.stages
    if plan.workload == "wordcount":
        return wordcount_dag(stages[0].tasks, stages[1].tasks)
    if plan.workload == "sort":
        return sort_dag(stages[0].tasks, stages[1].tasks)
    if plan.workload == "pagerank":
        return pagerank_dag(stages[1].tasks, len(stages) - 3, readers=stages[0].tasks)
    return None


def physical_operators(plan: JobPlan) -> list[tuple[str, ...]]:
    """The logical operators each physical stage runs (fused one-to-one chains)."""
    if plan.workload == "wordcount":
        return [("read", "map"), ("reduce", "write")]
    if plan.workload == "sort":
        return [("read", "partition"), ("sort", "write")]
    if plan.workload == "pagerank":
        iterations = len(plan.stages) - 3
        ops: list[tuple[str, ...]] = [("read-edges",), ("links",), ("ranks-0", "contribs-1")]
        for i in range(1, iterations + 1):
            ops.append((f"ranks-{i}", f"contribs-{i + 1}") if i < iterations else (f"ranks-{i}", "write"))
        return ops
    return []


def stage_classes(pado: PadoPlan, plan: JobPlan) -> list[NodeClass]:
    """Each physical stage's class under Algorithm 1 (its operators all share one)."""
    classes: list[NodeClass] = []
    for stage_id, ops in enumerate(physical_operators(plan)):
        placed = {pado.placement[op] for op in ops}
        if len(placed) != 1:
            raise ValueError(f"physical stage {stage_id} mixes placements: {sorted(placed)}")
        classes.append(placed.pop())
    return classes


def shuffle_consumers(plan: JobPlan, stage: int) -> list[int]:
    return [
        s for s, st in enumerate(plan.stages) for d in st.deps if d.stage == stage and d.kind == "shuffle"
    ]


# ---------------------------------------------------------------- spark


class SparkStrategy:
    """``spark``: what ``JobRuntime`` does (lineage recomputation)."""

    name = "spark"

    def __init__(self, master: Master) -> None:
        self.master = master

    def job_submitted(self, job: JobRuntime) -> None:
        dag = logical_dag(job.plan)
        if dag is not None:
            directory = self.master.run_dir / "dags"
            directory.mkdir(exist_ok=True)
            text = json.dumps(self.describe(job, dag), indent=2) + "\n"
            (directory / f"{job.job_id}.json").write_text(text, encoding="utf-8")

    def describe(self, job: JobRuntime, dag: LogicalDag) -> dict[str, Any]:
        plan = spark_plan(dag)
        return {
            "job_id": job.job_id,
            "workload": job.workload,
            "strategy": self.name,
            "dag": dag.to_dict(),
            "plan": plan.to_dict("spark-checkpoint" if self.name == "spark-checkpoint" else "spark"),
            "physical_stages": self.physical(job),
        }

    def physical(self, job: JobRuntime) -> list[dict[str, Any]]:
        operators = physical_operators(job.plan)
        return [
            {
                "stage": s,
                "op": st.op,
                "tasks": st.tasks,
                "operators": list(operators[s]),
                "deps": [{"stage": d.stage, "kind": d.kind} for d in st.deps],
                "final": st.final,
                "executors": sorted(self.allowed_classes(job, (s, 0))),
            }
            for s, st in enumerate(job.plan.stages)
        ]

    def allowed_classes(self, job: JobRuntime, key: TaskKey) -> frozenset[NodeClass]:
        return executor_classes("spark")

    def preferred_nodes(self, job: JobRuntime, key: TaskKey) -> tuple[str, ...]:
        return ()

    def ready(self, job: JobRuntime) -> Iterable[TaskKey]:
        return job.ready()

    def input_refs(self, job: JobRuntime, key: TaskKey) -> tuple[tuple[BlockRef, ...], ...]:
        return job.input_refs(key)

    def push_targets(self, job: JobRuntime, key: TaskKey) -> tuple[PushTarget, ...]:
        return ()

    def push_rate(self) -> float | None:
        return None

    def input_cache_mb(self, job: JobRuntime, key: TaskKey) -> int:
        """The size of the node's input cache the task reads its source through (0: none)."""
        return 0

    def task_succeeded(
        self, job: JobRuntime, key: TaskKey, node: NodeRecord, update: TaskUpdate, now: float
    ) -> bool:
        block = f"{job.task_id(key)}.a{update.attempt}"
        return job.succeeded(key, update.attempt, node.url, block, update.partition_bytes, now=now)

    def block_received(self, node: NodeRecord, message: BlockReceived) -> None:
        """A spark run pushes nothing; a stray report is ignored."""

    def push_delivered(self, node: NodeRecord, message: PushDelivered) -> None:
        """A spark run pushes nothing; a stray report is ignored."""

    def before_node_lost(self, node: NodeRecord) -> None:
        """Nothing beyond JobRuntime's lineage recovery."""

    def after_node_lost(self, node: NodeRecord) -> None:
        """Nothing beyond JobRuntime's lineage recovery."""

    # ------------------------------------------------------------ shared helpers

    def reserved_nodes(self) -> list[NodeRecord]:
        """Reserved agents able to receive data, in a stable order."""
        nodes = [n for n in self.master.nodes.values() if n.node_class == "reserved" and n.status == "up"]
        return sorted(nodes, key=lambda n: n.ordinal)

    def located(self, block: str) -> tuple[JobRuntime, TaskKey, int] | None:
        """The job, task and attempt of a block id ``<task id>.a<attempt>``."""
        task_id, _, attempt = block.rpartition(".a")
        job = self.master.jobs.get(task_id.partition(".")[0])
        key = job.key_of(task_id) if job is not None else None
        if job is None or key is None or not attempt.isdigit():
            return None
        return job, key, int(attempt)


# ---------------------------------------------------------------- spark-checkpoint


class CheckpointStrategy(SparkStrategy):
    """``spark-checkpoint``: executors on transient nodes, shuffle outputs copied to reserved ones."""

    name = "spark-checkpoint"

    def allowed_classes(self, job: JobRuntime, key: TaskKey) -> frozenset[NodeClass]:
        return executor_classes("spark-checkpoint")

    def push_targets(self, job: JobRuntime, key: TaskKey) -> tuple[PushTarget, ...]:
        stage = job.plan.stages[key[0]]
        reserved = {n.node_id: n for n in self.reserved_nodes()}
        if not shuffle_consumers(job.plan, key[0]) or not reserved:
            return ()
        target = reserved[checkpoint_node(key, list(reserved))]
        return (
            PushTarget(node_id=target.node_id, url=target.url, partitions=tuple(range(stage.partitions))),
        )

    def block_received(self, node: NodeRecord, message: BlockReceived) -> None:
        located = self.located(message.block)
        if located is None or node.node_class != "reserved":
            return
        job, key, _ = located
        if job.add_replica(key, message.block, node.url):
            nbytes = sum(p.nbytes for p in message.parts)
            job.bytes_checkpointed += nbytes
            self.master.journal.event(
                "checkpointed", job=job.job_id, task=job.task_id(key), node=node.node_id, bytes=nbytes
            )
            self.master.kick()


# ---------------------------------------------------------------- pado


@dataclass
class PadoJob:
    """Pado's runtime state of one job."""

    classes: list[NodeClass]
    pushed: frozenset[int]
    """Transient stages whose outputs are pushed to the reserved tasks reading them."""
    ledger: CommitLedger = field(default_factory=CommitLedger)
    receivers: dict[TaskKey, str] = field(default_factory=dict)
    """Reserved task -> the reserved node it was set up on (receives its pushes)."""
    waiting: dict[str, tuple[TaskKey, Push, dict[str, Block]]] = field(default_factory=dict)
    """Commits that arrived before every receiver's report: retried on each report."""
    early: dict[str, tuple[NodeRecord, PushDelivered]] = field(default_factory=dict)
    """Commit requests that overtook their task's success message (by block id)."""


class PadoStrategy(SparkStrategy):
    """``pado``: Algorithm 1 placement, reserved receivers set up first, push and commit."""

    name = "pado"

    def __init__(self, master: Master) -> None:
        super().__init__(master)
        self.jobs: dict[str, PadoJob] = {}
        options = master.scenario.policy.options.get("pado", {})
        unknown = set(options) - {"push_bandwidth_mbps", "input_cache_mb"}
        if unknown:
            raise ScenarioError([f"policy.options.pado: unknown option(s) {sorted(unknown)}"])
        mbps = options.get("push_bandwidth_mbps")
        self.rate = float(mbps) * 1e6 / 8 if mbps else None
        self.cache_mb = _non_negative_int(options, "input_cache_mb", DEFAULT_INPUT_CACHE_MB)

    def push_rate(self) -> float | None:
        return self.rate

    def input_cache_mb(self, job: JobRuntime, key: TaskKey) -> int:
        """Section 3.2.7: transient executors cache their tasks' inputs."""
        state = self.jobs.get(job.job_id)
        return self.cache_mb if state is not None and state.classes[key[0]] == "transient" else 0

    def job_submitted(self, job: JobRuntime) -> None:
        dag = logical_dag(job.plan)
        if dag is not None:
            classes = stage_classes(compile_pado(dag), job.plan)
            pushed = frozenset(
                s
                for s, cls in enumerate(classes)
                if cls == "transient"
                and shuffle_consumers(job.plan, s)
                and all(classes[c] == "reserved" for c in shuffle_consumers(job.plan, s))
            )
            self.jobs[job.job_id] = PadoJob(classes, pushed)
        super().job_submitted(job)

    def describe(self, job: JobRuntime, dag: LogicalDag) -> dict[str, Any]:
        state = self.jobs[job.job_id]
        return {
            "job_id": job.job_id,
            "workload": job.workload,
            "strategy": "pado",
            "plan": compile_pado(dag).to_dict(),
            "physical_stages": self.physical(job),
            "pushed_stages": sorted(state.pushed),
        }

    def allowed_classes(self, job: JobRuntime, key: TaskKey) -> frozenset[NodeClass]:
        state = self.jobs.get(job.job_id)
        return frozenset({state.classes[key[0]]}) if state else BOTH

    def preferred_nodes(self, job: JobRuntime, key: TaskKey) -> tuple[str, ...]:
        """A receiver runs where its pushes went; a reserved task linked one-to-one to a
        reserved parent runs where the parent's output is (Algorithm 1's locality)."""
        state = self.jobs.get(job.job_id)
        if state is None:
            return ()
        if state.classes[key[0]] == "transient":
            return self._cached_at(job, key)
        if key in state.receivers:
            return (state.receivers[key],)
        narrow = [d.stage for d in job.plan.stages[key[0]].deps if d.kind == "narrow"]
        return tuple(job.tasks[(s, key[1])].node for s in narrow if job.tasks[(s, key[1])].node)  # type: ignore[misc]

    def _cached_at(self, job: JobRuntime, key: TaskKey) -> tuple[str, ...]:
        """Section 3.2.3's cache-aware choice (``choose_executor``) among the transient
        executors with a free slot: the one caching most of the task's input, if any
        caches it. Otherwise no preference: the scenario's scheduler places the task."""
        stage = job.plan.stages[key[0]]
        cache_key = input_cache_key(stage.op, stage.params(key[1])) if self.cache_mb else None
        if cache_key is None:
            return ()
        nodes = sorted(
            (n for n in self.master.nodes.values() if n.node_class == "transient" and n.status == "up"),
            key=lambda n: n.ordinal,
        )
        executors = [Executor(n.node_id, n.slots - len(n.running)) for n in nodes]
        caches = {n.node_id: LruCache(self.cache_mb << 20, n.cached_inputs) for n in nodes}
        chosen, _ = choose_executor([cache_key], executors, caches, 0)
        return (chosen,) if chosen is not None and cache_key in caches[chosen] else ()

    def ready(self, job: JobRuntime) -> Iterable[TaskKey]:
        """Section 3.2.3: a stage's reserved receivers are set up first; its transient
        tasks become ready only once every receiver has its reserved node."""
        state = self.jobs.get(job.job_id)
        keys = job.ready()
        if state is None:
            return keys
        set_up = {s: self._set_up_receivers(job, state, s) for s in state.pushed}
        return (k for k in keys if set_up.get(k[0], True))

    def _set_up_receivers(self, job: JobRuntime, state: PadoJob, stage: int) -> bool:
        reserved = self.reserved_nodes()
        for consumer in shuffle_consumers(job.plan, stage):
            for index in range(job.plan.stages[consumer].tasks):
                key = (consumer, index)
                if key not in state.receivers and reserved:
                    state.receivers[key] = reserved[index % len(reserved)].node_id
                    self.master.journal.event(
                        "receiver_set_up", job=job.job_id, task=job.task_id(key), node=state.receivers[key]
                    )
                if key not in state.receivers:
                    return False
        return True

    def input_refs(self, job: JobRuntime, key: TaskKey) -> tuple[tuple[BlockRef, ...], ...]:
        state = self.jobs.get(job.job_id)
        if state is None:
            return job.input_refs(key)
        return tuple(
            self._committed_refs(job, state, key, dep)
            if dep.stage in state.pushed
            else job.dep_refs(key, dep)
            for dep in job.plan.stages[key[0]].deps
        )

    def _committed_refs(
        self, job: JobRuntime, state: PadoJob, key: TaskKey, dep: Dependency
    ) -> tuple[BlockRef, ...]:
        """Exactly the blocks the ledger committed to this receiver, one attempt per task."""
        url = self.master.nodes[state.receivers[key]].url
        committed = state.ledger.inputs_for(job.task_id(key))
        refs = []
        for index in range(job.plan.stages[dep.stage].tasks):
            task_id = job.task_id((dep.stage, index))
            refs.append(
                BlockRef(block=f"{task_id}.a{committed[task_id]}", partition=key[1], locations=(url,))
            )
        return tuple(refs)

    def push_targets(self, job: JobRuntime, key: TaskKey) -> tuple[PushTarget, ...]:
        """The receivers this task has not committed to yet, grouped by node."""
        state = self.jobs.get(job.job_id)
        if state is None or key[0] not in state.pushed:
            return ()
        task_id = job.task_id(key)
        by_node: dict[str, list[int]] = {}
        for consumer in shuffle_consumers(job.plan, key[0]):
            for index in range(job.plan.stages[consumer].tasks):
                receiver = (consumer, index)
                if task_id not in state.ledger.inputs_for(job.task_id(receiver)):
                    by_node.setdefault(state.receivers[receiver], []).append(index)
        return tuple(
            PushTarget(node_id=n, url=self.master.nodes[n].url, partitions=tuple(sorted(set(p))))
            for n, p in sorted(by_node.items())
        )

    def task_succeeded(
        self, job: JobRuntime, key: TaskKey, node: NodeRecord, update: TaskUpdate, now: float
    ) -> bool:
        state = self.jobs.get(job.job_id)
        if state is None or key[0] not in state.pushed:
            return super().task_succeeded(job, key, node, update, now)
        block = f"{job.task_id(key)}.a{update.attempt}"
        ok = job.succeeded(
            key, update.attempt, node.url, block, update.partition_bytes, pushing=True, now=now
        )
        if ok:
            self.master.journal.event(
                "task_pushing",
                job=job.job_id,
                task=job.task_id(key),
                attempt=update.attempt,
                node=node.node_id,
            )
            if block in state.early:
                self.push_delivered(*state.early.pop(block))
        return ok

    def _receivers_on(self, job: JobRuntime, state: PadoJob, stage: int, node_id: str) -> list[TaskKey]:
        return [
            (c, i)
            for c in shuffle_consumers(job.plan, stage)
            for i in range(job.plan.stages[c].tasks)
            if state.receivers.get((c, i)) == node_id
        ]

    def block_received(self, node: NodeRecord, message: BlockReceived) -> None:
        """A reserved agent verified a pushed block: the ledger records what each of the
        receivers on it got (``receive``)."""
        located = self.located(message.block)
        if located is None:
            return
        job, key, attempt = located
        state = self.jobs.get(job.job_id)
        if state is None or key[0] not in state.pushed:
            return
        parts = _blocks_by_partition(message.parts)
        push = Push.of(job.task_id(key), attempt)
        for receiver in self._receivers_on(job, state, key[0], node.node_id):
            state.ledger.receive(push.push_id, job.task_id(receiver), parts.get(receiver[1], (0, 0)))
        job.bytes_pushed += sum(p.nbytes for p in message.parts)
        self.master.journal.event(
            "push_received", job=job.job_id, task=job.task_id(key), attempt=attempt, node=node.node_id
        )
        if push.push_id in state.waiting:
            self._commit(job, state, *state.waiting.pop(push.push_id))

    def push_delivered(self, node: NodeRecord, message: PushDelivered) -> None:
        """The transient agent's commit request, through the master (section 3.2.5).
        Ignored from a node already declared lost: commits and evictions are serialised."""
        located = self.located(message.block)
        if located is None or not node.alive:
            return
        job, key, attempt = located
        state = self.jobs.get(job.job_id)
        record = job.tasks[key]
        if state is None or record.attempt != attempt:
            return
        if record.status == "running":
            state.early[message.block] = (node, message)
            return
        if record.status != "pushing":
            return
        if message.failed:
            log.warning("push of %s failed: %s", message.block, message.error)
            if job.abandon_push(key, attempt):
                self.master.journal.event(
                    "push_failed", job=job.job_id, task=job.task_id(key), error=message.error
                )
                self.master.kick()
            return
        manifest: dict[str, Block] = {}
        for node_id, parts in message.delivered.items():
            by_partition = _blocks_by_partition(parts)
            for receiver in self._receivers_on(job, state, key[0], node_id):
                manifest[job.task_id(receiver)] = by_partition.get(receiver[1], (0, 0))
        self._commit(job, state, key, Push.of(message.task_id, attempt), manifest)

    def _commit(
        self, job: JobRuntime, state: PadoJob, key: TaskKey, push: Push, manifest: dict[str, Block]
    ) -> None:
        verdict = state.ledger.commit(push, manifest)
        attempt = push.members[0][1]
        if verdict == "incomplete":
            state.waiting[push.push_id] = (key, push, manifest)
            return
        self.master.journal.event(
            "push_commit", job=job.job_id, task=job.task_id(key), attempt=attempt, verdict=verdict
        )
        if verdict in ("accepted", "superseded") and state.ledger.is_committed(job.task_id(key)):
            holders = tuple(sorted({self.master.nodes[n].url for n in state.receivers.values()}))
            job.committed(key, attempt, holders)
            self.master.kick()

    def before_node_lost(self, node: NodeRecord) -> None:
        """A lost transient node's uncommitted pushes are discarded before anything else
        (``CommitLedger.discard``); its tasks go back to pending in ``JobRuntime.node_lost``
        (section 3.2.5: only the evicted stage's uncommitted tasks)."""
        for job in self.master.jobs.values():
            state = self.jobs.get(job.job_id)
            if state is None:
                continue
            for key, record in job.tasks.items():
                if record.status == "pushing" and record.node == node.node_id:
                    push = Push.of(job.task_id(key), record.attempt)
                    state.ledger.discard(push.push_id)
                    state.waiting.pop(push.push_id, None)

    def after_node_lost(self, node: NodeRecord) -> None:
        """Section 3.2.6, a reserved node failure: each receiver set up on it that has not
        finished is set up on another reserved node, and what had been committed to it
        (``forget_destination``) is computed and pushed again; meanwhile its stage
        waits (its inputs are not all available). Lost reserved outputs are recomputed
        through ``JobRuntime``'s lineage, parent stages first."""
        if node.node_class != "reserved":
            return
        for job in self.master.jobs.values():
            state = self.jobs.get(job.job_id)
            if state is None or job.status not in ("waiting", "running"):
                continue
            for key, holder in list(state.receivers.items()):
                if holder != node.node_id or job.tasks[key].status == "done":
                    continue
                del state.receivers[key]
                for task_id in state.ledger.forget_destination(job.task_id(key)):
                    job.reopen(job.key_of(task_id))  # type: ignore[arg-type]
            job.recover()


def _non_negative_int(options: dict[str, Any], name: str, default: int) -> int:
    value = options.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScenarioError([f"policy.options.pado.{name}: a whole number >= 0, not {value!r}"])
    return value


def _blocks_by_partition(parts: tuple[PushedPart, ...]) -> dict[int, Block]:
    return {p.partition: (p.nbytes, p.crc32) for p in parts if p.nbytes}


STRATEGIES = {"spark": SparkStrategy, "spark-checkpoint": CheckpointStrategy, "pado": PadoStrategy}


def make_strategy(master: Master) -> SparkStrategy:
    """The scenario's strategy; a ScenarioError when its cluster cannot run it."""
    name = master.scenario.policy.strategy
    cluster = master.scenario.cluster
    if name != "spark" and (cluster.reserved.count == 0 or cluster.transient.count == 0):
        raise ScenarioError([f"policy.strategy: {name} needs at least one reserved and one transient node"])
    return STRATEGIES[name](master)
