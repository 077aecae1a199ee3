"""Scheduling, placement and autoscaling policies: pure decisions over cluster snapshots.

``policy.options`` in a scenario holds one mapping per policy name, e.g.
``options: {yarn-me: {max_elastic_per_node: 2}}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from master.policies.base import PendingTask, Scheduler
from master.policies.fifo import FifoScheduler
from master.policies.task_model import Role, TaskModel, TaskProfile, load_profile
from master.policies.yarn import ModelSource, YarnScheduler
from master.policies.yarn_me import YarnMeScheduler
from testbed.scenario import DEFAULT_TASK_MEMORY_MB, Scenario, ScenarioError


def options_for(scenario: Scenario, name: str) -> dict[str, Any]:
    options = scenario.policy.options.get(name, {})
    if not isinstance(options, dict):
        raise ScenarioError([f"policy.options.{name}: expected a mapping of option: value"])
    return options


Profiles = dict[tuple[str, Role], TaskProfile]


def role_of(stage: int) -> Role:
    """Stage 0 reads the input (the map side of the first shuffle); later stages reduce."""
    return "map" if stage == 0 else "reduce"


def load_profiles(scenario: Scenario) -> Profiles:
    """The scenario's profile files keyed by (workload, role); a ScenarioError if one is malformed."""
    try:
        return {(p.workload, p.role): p for p in map(load_profile, scenario.profiles)}
    except ValueError as exc:
        raise ScenarioError([f"profiles: {exc}"]) from None


def stage_memory(scenario: Scenario) -> Callable[[Any, int], int]:
    """``ideal(job_spec, stage)``: the ideal memory (MB) of the tasks of a job's stage.

    The job's own ``memory_mb`` when it sets one; else the stage's ideal from the
    profile of (workload, role) (a stage the profile did not see gets the largest
    ideal of the profiled stages of its role, so it does not spill at it); else
    ``DEFAULT_TASK_MEMORY_MB``.
    """
    profiles = load_profiles(scenario)

    def ideal(job: Any, stage: int) -> int:
        if job.memory_mb is not None:
            return int(job.memory_mb)
        profile = profiles.get((job.workload, role_of(stage)))
        if profile is None:
            return DEFAULT_TASK_MEMORY_MB
        stages = profile.stage_ideal_memory_mb
        if stage < len(stages):
            return stages[stage]
        same_role = [mb for s, mb in enumerate(stages) if role_of(s) == role_of(stage)]
        return max(same_role, default=profile.model.ideal_memory_mb)

    return ideal


def profile_models(scenario: Scenario, workload_of: Callable[[str], str | None]) -> ModelSource | None:
    """Task models from the scenario's profile files, keyed by (workload, role).

    A profile's penalty curve is in fractions of ideal memory, so it transfers to
    tasks of other sizes: the task keeps its own ideal memory, and takes the
    profile's ideal duration as its estimate.
    """
    profiles = load_profiles(scenario)
    if not profiles:
        return None

    def model_of(task: PendingTask) -> TaskModel | None:
        profile = profiles.get((workload_of(task.job_id) or "", role_of(task.stage)))
        if profile is None:
            return None
        return TaskModel(task.ideal_memory_mb, profile.model.ideal_duration_s, profile.model.penalty)

    return model_of


def make_scheduler(
    scenario: Scenario, workload_of: Callable[[str], str | None] = lambda _: None
) -> Scheduler:
    """The scenario's scheduler; a ScenarioError (exit 2) when it cannot be built.

    ``workload_of`` maps a job id to its workload, for profile-based task models.
    """
    name = scenario.policy.scheduler
    options = options_for(scenario, name)
    try:
        if name == "fifo" and not options:
            return FifoScheduler()
        if name == "yarn":
            return YarnScheduler.from_options(options, profile_models(scenario, workload_of))
        if name == "yarn-me":
            return YarnMeScheduler.from_options(options, profile_models(scenario, workload_of))
    except ValueError as exc:
        raise ScenarioError([f"policy.options.{name}: {exc}"]) from None
    if name == "fifo":
        raise ScenarioError([f"policy.options.fifo: fifo takes no options, found {sorted(options)}"])
    raise ScenarioError(
        [f"policy.scheduler: {name!r} is not wired into the master yet; use fifo, yarn or yarn-me"]
    )
