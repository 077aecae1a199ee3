"""A job's physical plan: stages of identical tasks and the dependencies between them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DAG_OP = "dag.task"
"""The op of every stage of a job planned as a stage DAG (``testbed.api.JobDag``,
``testbed.workloads.dag``): the stage's own body runs, named in its params."""


@dataclass(frozen=True, slots=True)
class Dependency:
    """``shuffle``: task i reads partition i of every parent task (many-to-many).
    ``narrow``: task i reads the whole output of parent task i (one-to-one).
    ``broadcast``: every task reads the whole output (partition 0) of every parent task
    (one-to-many: a model or a lookup table that every task of the child needs)."""

    stage: int
    kind: Literal["shuffle", "narrow", "broadcast"]


@dataclass(frozen=True, slots=True)
class StagePlan:
    op: str
    tasks: int
    partitions: int = 1
    deps: tuple[Dependency, ...] = ()
    final: bool = False
    writes_output: bool = True
    """False for final tasks that produce no part file (noop tasks)."""
    task_params: tuple[dict[str, Any], ...] = ()
    shared_params: dict[str, Any] = field(default_factory=dict)

    def params(self, index: int) -> dict[str, Any]:
        own = self.task_params[index] if self.task_params else {}
        return {**self.shared_params, **own}


@dataclass(frozen=True, slots=True)
class JobPlan:
    workload: str
    stages: tuple[StagePlan, ...]

    @property
    def total_tasks(self) -> int:
        return sum(stage.tasks for stage in self.stages)

    def readers_of(self, stage: int) -> tuple[int, ...]:
        """The later stages that read ``stage``'s outputs (any dependency kind)."""
        return tuple(s for s, plan in enumerate(self.stages) if any(dep.stage == stage for dep in plan.deps))
