"""The ``spark`` and ``spark-checkpoint`` recovery strategies, as the core's event handlers.

- ``spark``: lineage recovery as the core implements it (executors on both
  classes; outputs on the producer's disk; lost outputs recomputed on demand).
- ``spark-checkpoint``: executors on transient nodes only; each output crossing a
  shuffle or broadcast boundary is copied by its producer, once the task has succeeded, to
  ``checkpoint_node`` (a reserved agent); once the reserved agent has verified and
  committed the copy, it is one of the output's locations, so the loss of the
  producer loses nothing.
- both run a driver stage (``driver_stages``: MLR's model updates, which MLlib computes in
  Spark's driver program) on a reserved node, as the Pado paper's engines ran their master
  on a reserved container; its output is not copied.

``SparkStrategy`` is also the base of the others (``testbed.api.Strategy``'s
queries and handlers, docs/strategies.md section 6), with the physical plans' logical DAGs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Literal

from master.options import PolicyOptions
from master.recovery.lineage import checkpoint_node, executor_classes, spark_plan
from master.recovery.pado_compiler import PadoPlan
from master.recovery.stage_dags import is_stage_dag, stage_dag, stage_operators
from testbed.api import (
    AddReplica,
    BlockRef,
    BlockReported,
    JobPlan,
    JobSubmitted,
    LiveJob,
    LiveNode,
    NodeClass,
    PushReported,
    PushTarget,
    Ready,
    Strategy,
    StrategyDecision,
    StrategyView,
    TaskKey,
    TaskLaunch,
    WriteFile,
)
from testbed.logical_dag import LogicalDag
from testbed.scenario.schema import Scenario, ScenarioError
from testbed.workloads import catalog

BOTH: frozenset[NodeClass] = frozenset({"reserved", "transient"})


def logical_dag(plan: JobPlan) -> LogicalDag | None:
    """The workload's logical DAG with the physical plan's parallelism (None: no DAG, e.g. sleep)."""
    if is_stage_dag(plan):
        return stage_dag(plan)
    found = catalog.lineage(plan)
    return None if found is None else found.dag


def physical_operators(plan: JobPlan) -> list[tuple[str, ...]]:
    """The logical operators each physical stage runs (fused one-to-one chains)."""
    if is_stage_dag(plan):
        return stage_operators(plan)
    found = catalog.lineage(plan)
    return [] if found is None else list(found.operators)


def stage_classes(pado: PadoPlan, plan: JobPlan) -> list[NodeClass]:
    """Each physical stage's class under Algorithm 1 (its operators all share one)."""
    classes: list[NodeClass] = []
    for stage_id, ops in enumerate(physical_operators(plan)):
        placed = {pado.placement[op] for op in ops}
        if len(placed) != 1:
            raise ValueError(f"physical stage {stage_id} mixes placements: {sorted(placed)}")
        classes.append(placed.pop())
    return classes


def driver_stages(plan: JobPlan) -> frozenset[int]:
    """The physical stages running an operator of Spark's driver program (``Operator.driver``:
    MLR's model updates), which the spark baselines run on a reserved node."""
    dag = logical_dag(plan)
    if dag is None:
        return frozenset()
    return frozenset(
        s for s, ops in enumerate(physical_operators(plan)) if any(dag.operator(op).driver for op in ops)
    )


def narrow_input_nodes(job: LiveJob, key: TaskKey) -> tuple[str, ...]:
    """The nodes holding the outputs a task reads through its narrow dependencies: Spark's
    preferred locations (NSDI'12, section 5.1: a task that processes a partition available in
    memory on a node is sent to that node; a narrow child has its parent's locations). The
    scheduler places the task there when the node has room, else anywhere. A parent whose
    producer lost its output (a copy survives elsewhere, a checkpoint) names no node."""
    nodes: list[str] = []
    for dep in job.plan.stages[key[0]].deps:
        if dep.kind != "narrow":
            continue
        parent = job.tasks[(dep.stage, key[1])]
        if parent.location is not None and parent.node is not None and parent.node not in nodes:
            nodes.append(parent.node)
    return tuple(nodes)


def shuffle_consumers(plan: JobPlan, stage: int) -> list[int]:
    return [
        s for s, st in enumerate(plan.stages) for d in st.deps if d.stage == stage and d.kind == "shuffle"
    ]


def wide_consumers(plan: JobPlan, stage: int) -> list[int]:
    """The stages reading the stage's output across a stage boundary (a shuffle or a broadcast)."""
    return [s for s, st in enumerate(plan.stages) for d in st.deps if d.stage == stage and d.kind != "narrow"]


# ---------------------------------------------------------------- spark


class SparkStrategy(Strategy):
    """``spark``: what the core does (lineage recomputation)."""

    name = "spark"
    needs_both_classes = False
    """Whether it needs a reserved and a transient node (outputs copied from one to the other)."""

    class Options(PolicyOptions):
        """``policy.options.spark``: it takes none."""

    def __init__(self, scenario: Scenario, options: Mapping[str, Any]) -> None:
        """``options``: ``policy.options.<its name>``, validated by its ``Options``."""
        self.scenario = scenario
        self.driver: dict[str, frozenset[int]] = {}
        """Job -> its driver stages (``driver_stages``), when the cluster has reserved nodes
        to run them on (without, Spark's driver work runs beside its executors)."""

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> SparkStrategy:
        """The strategy for ``scenario`` with its validated options; a ScenarioError when its
        cluster cannot run it."""
        both = scenario.kind_count("reserved") and scenario.kind_count("transient")
        if cls.needs_both_classes and not both:
            raise ScenarioError(
                [f"policy.strategy: {cls.name} needs at least one reserved and one transient node"]
            )
        return cls(scenario, options)

    def plan(self, view: StrategyView, job: LiveJob) -> Iterable[Ready]:
        if job.job_id in self.driver:
            return (
                Ready(key, self.classes(job, key[0]), narrow_input_nodes(job, key)) for key in job.ready()
            )
        classes = self.classes(job, 0)
        return (Ready(key, classes, narrow_input_nodes(job, key)) for key in job.ready())

    def launch(self, view: StrategyView, job: LiveJob, key: TaskKey) -> TaskLaunch:
        return TaskLaunch(job.input_refs(key), push=self.push_targets(view, job, key))

    def classes(self, job: LiveJob, stage: int) -> frozenset[NodeClass]:
        """The node classes the stage's tasks may run on."""
        return executor_classes("spark", self.is_driver(job, stage))

    def is_driver(self, job: LiveJob, stage: int) -> bool:
        stages = self.driver.get(job.job_id)
        return stages is not None and stage in stages

    def push_targets(self, view: StrategyView, job: LiveJob, key: TaskKey) -> tuple[PushTarget, ...]:
        return ()

    def on_job_submitted(self, view: StrategyView, event: JobSubmitted) -> list[StrategyDecision]:
        job = view.jobs[event.job_id]
        dag = logical_dag(job.plan)
        if dag is None:
            return []
        driver = driver_stages(job.plan) if self.scenario.kind_count("reserved") else frozenset()
        if driver:
            self.driver[job.job_id] = driver
        text = json.dumps(self.describe(job, dag), indent=2) + "\n"
        return [WriteFile(f"dags/{job.job_id}.json", text)]

    def describe(self, job: LiveJob, dag: LogicalDag) -> dict[str, Any]:
        plan = spark_plan(dag)
        return {
            "job_id": job.job_id,
            "workload": job.workload,
            "strategy": self.name,
            "dag": dag.to_dict(),
            "plan": plan.to_dict("spark-checkpoint" if self.name == "spark-checkpoint" else "spark"),
            "physical_stages": self.physical(job),
        }

    def physical(self, job: LiveJob) -> list[dict[str, Any]]:
        operators = physical_operators(job.plan)
        return [
            {
                "stage": s,
                "op": st.op,
                "tasks": st.tasks,
                "operators": list(operators[s]),
                "deps": [{"stage": d.stage, "kind": d.kind} for d in st.deps],
                "final": st.final,
                "executors": sorted(self.classes(job, s)),
            }
            for s, st in enumerate(job.plan.stages)
        ]

    # ------------------------------------------------------------ shared helpers

    @staticmethod
    def reserved_nodes(view: StrategyView) -> list[LiveNode]:
        """Reserved agents able to receive data, in a stable order."""
        nodes = [n for n in view.nodes.values() if n.node_class == "reserved" and n.status == "up"]
        return sorted(nodes, key=lambda n: n.ordinal)

    @staticmethod
    def located(view: StrategyView, block: str) -> tuple[LiveJob, TaskKey, int] | None:
        """The job, task and attempt of a block id ``<task id>.a<attempt>``."""
        task_id, _, attempt = block.rpartition(".a")
        job = view.jobs.get(task_id.partition(".")[0])
        key = job.key_of(task_id) if job is not None else None
        if job is None or key is None or not attempt.isdigit():
            return None
        return job, key, int(attempt)


# ---------------------------------------------------------------- spark-checkpoint


CheckpointReads = Literal["producer", "checkpoint"]
"""``policy.options.spark-checkpoint.read_from``: where a reader of a copied output reads it.
``producer`` (the default): the producer's own copy, the checkpoint when the producer is
gone. ``checkpoint``: the copy "fetched back" from the stable storage (Pado, section 5.2.2:
"the data also need to be fetched back to transient containers for the following aggregate
tasks"): a reader waits until each parent's copy is in (or its producer reported it
failed) and lists the checkpoint first."""


class CheckpointStrategy(SparkStrategy):
    """``spark-checkpoint``: executors on transient nodes, shuffled and broadcast outputs copied
    to reserved ones."""

    name = "spark-checkpoint"
    needs_both_classes = True

    class Options(PolicyOptions):
        """``policy.options.spark-checkpoint``."""

        read_from: CheckpointReads = "producer"

    def __init__(self, scenario: Scenario, options: Mapping[str, Any]) -> None:
        super().__init__(scenario, options)
        self.fetch_back = options.get("read_from") == "checkpoint"
        self.settled: dict[str, set[str]] = {}
        """Job -> blocks whose copy the producer reported (delivered or failed): with
        ``read_from: checkpoint`` their readers wait no more."""

    def plan(self, view: StrategyView, job: LiveJob) -> Iterable[Ready]:
        ready = super().plan(view, job)
        if not self.fetch_back:
            return ready
        stores = self.store_urls(view)
        copied: dict[int, bool] = {}

        def in_store(stage: int) -> bool:
            if stage not in copied:
                copied[stage] = self.is_driver(job, stage) or self.all_copied(job, stage, stores)
            return copied[stage]

        stages = job.plan.stages
        return (
            r for r in ready if all(in_store(d.stage) for d in stages[r.key[0]].deps if d.kind != "narrow")
        )

    def all_copied(self, job: LiveJob, stage: int, stores: frozenset[str]) -> bool:
        """Whether every output of the stage has its copy in, or its producer said it failed."""
        settled = self.settled.get(job.job_id, set())
        tasks = job.plan.stages[stage].tasks
        return all(
            (t := job.tasks[(stage, i)]).block in settled or not stores.isdisjoint(t.locations)
            for i in range(tasks)
        )

    def launch(self, view: StrategyView, job: LiveJob, key: TaskKey) -> TaskLaunch:
        launch = super().launch(view, job, key)
        if not self.fetch_back:
            return launch
        stores = self.store_urls(view)

        def store_first(ref: BlockRef) -> BlockRef:
            ordered = tuple(sorted(ref.locations, key=lambda url: url not in stores))
            return ref if ordered == ref.locations else BlockRef.trusted(ref.block, ref.partition, ordered)

        return replace(launch, inputs=tuple(tuple(store_first(r) for r in refs) for refs in launch.inputs))

    @classmethod
    def store_urls(cls, view: StrategyView) -> frozenset[str]:
        return frozenset(n.url for n in cls.reserved_nodes(view))

    def on_push_reported(self, view: StrategyView, event: PushReported) -> list[StrategyDecision]:
        located = self.located(view, event.message.block)
        if located is not None and self.fetch_back:
            self.settled.setdefault(located[0].job_id, set()).add(event.message.block)
        return []

    def on_job_submitted(self, view: StrategyView, event: JobSubmitted) -> list[StrategyDecision]:
        """Also forgets the copies of jobs that ended."""
        jobs = view.jobs
        self.settled = {
            j: blocks for j, blocks in self.settled.items() if j in jobs and jobs[j].status == "running"
        }
        return super().on_job_submitted(view, event)

    def classes(self, job: LiveJob, stage: int) -> frozenset[NodeClass]:
        return executor_classes("spark-checkpoint", self.is_driver(job, stage))

    def push_targets(self, view: StrategyView, job: LiveJob, key: TaskKey) -> tuple[PushTarget, ...]:
        """A driver stage's output is not copied: the driver holds it (a broadcast model), on
        a node that is never evicted."""
        stage = job.plan.stages[key[0]]
        reserved = {n.node_id: n for n in self.reserved_nodes(view)}
        if not wide_consumers(job.plan, key[0]) or not reserved or self.is_driver(job, key[0]):
            return ()
        target = reserved[checkpoint_node(key, list(reserved))]
        return (
            PushTarget(node_id=target.node_id, url=target.url, partitions=tuple(range(stage.partitions))),
        )

    def on_block_reported(self, view: StrategyView, event: BlockReported) -> list[StrategyDecision]:
        located = self.located(view, event.message.block)
        node = view.nodes[event.node_id]
        if located is None or node.node_class != "reserved":
            return []
        job, key, _ = located
        nbytes = sum(p.nbytes for p in event.message.parts)
        return [AddReplica(job.job_id, key, event.message.block, node.node_id, node.url, nbytes)]
