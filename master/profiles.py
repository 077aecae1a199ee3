"""The scenario's task profiles (files, or models written inline), as the master reads them:
each stage's ideal memory, and the task models the memory-aware schedulers plan with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from testbed.api.policy import PendingTask
from testbed.scenario.schema import DEFAULT_TASK_MEMORY_MB, Scenario
from testbed.settings.profiles import Profiles, load_profiles
from testbed.workloads.task_model import Role, TaskModel

ModelOf = Callable[[PendingTask], TaskModel | None]


def role_of(stage: int) -> Role:
    """Stage 0 reads the input (the map side of the first shuffle); later stages reduce."""
    return "map" if stage == 0 else "reduce"


def stage_memory(profiles: Profiles) -> Callable[[Any, int], int]:
    """``ideal(job_spec, stage)``: the ideal memory (MB) of the tasks of a job's stage.

    The job's own ``memory_mb`` when it sets one; else the stage's ideal from the
    profile of (workload, role) (a stage the profile did not see gets the largest
    ideal of the profiled stages of its role, so it does not spill at it); else
    ``DEFAULT_TASK_MEMORY_MB``. ``profiles``: ``RunSettings.profiles`` (``load_profiles``).
    """

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


def profile_models(scenario: Scenario) -> ModelOf | None:
    """Task models from the scenario's profiles, keyed by (workload, role).

    A profile's curves are in fractions of ideal memory, so they transfer to
    tasks of other sizes: the task keeps its own ideal memory (its measured
    spill scales with it), and takes the profile's ideal duration as its estimate.
    Under time dilation a task runs that many times slower, and so does its model.
    A ``sleep`` task's duration is the scenario's (a trace's, already in wall
    seconds): its own estimate is its model's ideal duration.
    """
    profiles = load_profiles(scenario)
    if not profiles:
        return None
    dilation = scenario.fidelity.factor

    def model_of(task: PendingTask) -> TaskModel | None:
        profile = profiles.get((task.workload, role_of(task.stage)))
        if profile is None:
            return None
        model = profile.model.resized(task.ideal_memory_mb)
        if task.workload == "sleep":
            return replace(model, ideal_duration_s=task.est_duration_s)
        return model.dilated(dilation) if dilation != 1.0 else model

    return model_of
