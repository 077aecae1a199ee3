"""Each stage's expected task duration before the run has seen one succeed: the prior of the
core's stage durations (``master.core.exposure.StageDurations``), which the shell gives with a
job's plan (``JobPlanned.stage_prior_s``), as a real Firmament or Quincy deployment knows a
job's tasks from the jobs of its kind run before.

The prior is the testbed's own cost model of its tasks, the one the simulator runs on
(``master.execution_model.ExecutionModel``: the scenario's ``simulation`` section, whose
defaults and ``testbed calibrate`` files are fitted on real tasks of this testbed): one
uncontended attempt of the stage on a reserved node at its ideal memory, the stage's first
task, reading its source split or its share of its parents' modelled output. That is its
launch, the fetch of its parents' output over its NIC (all of it remote) and its compute, as
the simulator costs an attempt (``ExecutionModel.attempt_cost``). The model is in emulated
seconds, so a real run's prior is that times its dilation (its nodes run that many times
slower), a simulated run's (dilation 1) the model's own. What the model leaves out, the prior
leaves out: the contention of links and cores, a replicated split's own read
(``input_replication``), evictions; where the model is wrong about a real run
(docs/simulation.md, its errors per op), the prior is wrong alike.
"""

from __future__ import annotations

from master.execution_model import ExecutionModel
from testbed.plan import JobPlan, StagePlan
from testbed.settings.run_settings import RunSettings
from testbed.wire.protocol import TaskSpec


class StagePrior:
    """The priors of the jobs of one run (its execution model built once)."""

    def __init__(self, settings: RunSettings) -> None:
        self.model = ExecutionModel(settings.scenario, lambda _job, _stage: 1, lambda _job, _stage: ())
        cluster = settings.cluster
        self.prior_class = cluster.first_of("reserved") or next(iter(cluster.classes))
        """The node class the prior runs a task on (its NIC, its cores): the first reserved one."""
        self.launch_s = self.model.spec.launch_s(cluster[self.prior_class].cores)
        self.dilation = settings.dilation

    def of(self, plan: JobPlan, memory_mb: tuple[int, ...]) -> tuple[float, ...]:
        """Each stage's expected task duration (run seconds), in the plan's order (a parent
        comes before the stages that read it)."""
        seconds: list[float] = []
        out_bytes: list[float] = []
        for index, stage in enumerate(plan.stages):
            spec = _first_task(stage, index, memory_mb[index])
            read = self._read_bytes(plan, stage, out_bytes)
            fetch_s = read / self.model.nic_bytes_s(self.prior_class)
            cost = self.model.attempt_cost(spec, int(read), fetch_s, self.prior_class)
            seconds.append((self.launch_s + cost.seconds) * self.dilation)
            out_bytes.append(float(cost.bytes_out))
        return tuple(seconds)

    @staticmethod
    def _read_bytes(plan: JobPlan, stage: StagePlan, out_bytes: list[float]) -> float:
        """The bytes one task of ``stage`` reads from its parents (each parent task's output
        ``out_bytes``): a partition of each through a shuffle, one parent task's whole output
        through a narrow dependency, every one's through a broadcast."""
        total = 0.0
        for dep in stage.deps:
            parent = plan.stages[dep.stage]
            if dep.kind == "shuffle":
                total += out_bytes[dep.stage] / parent.partitions * parent.tasks
            elif dep.kind == "narrow":
                total += out_bytes[dep.stage]
            else:
                total += out_bytes[dep.stage] * parent.tasks
        return total


def _first_task(stage: StagePlan, index: int, memory_mb: int) -> TaskSpec:
    """The launch of the stage's first task at ``memory_mb`` (its ideal: no penalty), which
    stands for the stage (its split, where it reads one: a job's splits are cut to one size,
    but a file's last)."""
    return TaskSpec(
        task_id=f"prior.s{index}",
        job_id="prior",
        stage=index,
        index=0,
        attempt=0,
        op=stage.op,
        memory_mb=max(1, memory_mb),
        params=stage.params(0),
        partitions=stage.partitions,
        final=stage.final and stage.writes_output,
    )
