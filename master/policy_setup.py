"""Scheduling, placement and autoscaling policies: pure decisions over cluster snapshots.

``policy.options`` in a scenario holds one mapping per policy name, e.g.
``options: {yarn-me: {elastic_disk_mb_s: 100}}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from master.autoscalers.static import StaticAutoscaler
from master.chaos.rules import class_rules
from master.schedulers.eagle import EagleScheduler, Partition, short_partition_size, split_partitions
from master.schedulers.fifo import FifoScheduler
from master.schedulers.firmament import FirmamentScheduler, cost_model
from master.schedulers.firmament.costs import EvictionRisk
from master.schedulers.yarn import ModelSource, YarnScheduler, checked_options
from master.schedulers.yarn_me import DEFAULT_ELASTIC_DISK_MB_S, YarnMeScheduler
from master.speculation import build_speculator
from testbed.api.policy import Autoscaler, PendingTask, Scheduler
from testbed.api.speculation import Speculator
from testbed.durations import parse_duration
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import (
    AUTOSCALERS,
    DEFAULT_TASK_MEMORY_MB,
    SCHEDULERS,
    SPECULATORS,
    STRATEGIES,
    InlineProfile,
    PluginJob,
    Scenario,
    ScenarioError,
)
from testbed.workloads.task_model import Role, TaskModel, TaskProfile, load_profile

EAGLE_OPTIONS = frozenset({"short_fraction", "probes", "queue_order", "on_demand_copies"})
CLOUDCOASTER_OPTIONS = frozenset({"threshold", "r", "p", "provisioning_delay"})
DEFAULT_SHORT_FRACTION = 0.1


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
    """The scenario's profiles (files, or models written inline) keyed by (workload, role);
    a ScenarioError if a file is malformed (inline models are checked with the scenario)."""
    try:
        return {(p.workload, p.role): p for p in map(_profile, scenario.profiles)}
    except ValueError as exc:
        raise ScenarioError([f"profiles: {exc}"]) from None


def _profile(entry: str | InlineProfile) -> TaskProfile:
    if isinstance(entry, str):
        return load_profile(entry)
    return TaskProfile.from_dict(entry.model_dump(exclude_none=True))


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


def profile_models(scenario: Scenario) -> ModelSource | None:
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


def dilated_disk_budget(options: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
    """YARN-ME's per-node disk budget under time dilation: divided by it, as the nodes' disks
    and the task models' disk rates are."""
    dilation = scenario.fidelity.factor
    budget = options.get("elastic_disk_mb_s", DEFAULT_ELASTIC_DISK_MB_S)
    if dilation == 1.0 or isinstance(budget, bool) or not isinstance(budget, int | float):
        return options
    return {**options, "elastic_disk_mb_s": budget / dilation}


def make_scheduler(scenario: Scenario) -> Scheduler:
    """The scenario's scheduler; a ScenarioError (exit 2) when it cannot be built."""
    name = scenario.policy.scheduler
    options = options_for(scenario, name)
    try:
        if name == "fifo" and not options:
            return FifoScheduler()
        if name == "yarn":
            return YarnScheduler.from_options(options, profile_models(scenario))
        if name == "yarn-me":
            budget = dilated_disk_budget(options, scenario)
            return YarnMeScheduler.from_options(budget, profile_models(scenario))
        if name == "eagle":
            return _eagle(scenario, options)
        if name == "firmament":
            return FirmamentScheduler(cost_model(options, eviction_risk(scenario)))
    except ValueError as exc:
        raise ScenarioError([f"policy.options.{name}: {exc}"]) from None
    if name == "fifo":
        raise ScenarioError([f"policy.options.fifo: fifo takes no options, found {sorted(options)}"])
    return find_plugin("scheduler", name, "policy.scheduler").build(options)


def policy_plugins(scenario: Scenario) -> dict[str, Any]:
    """The scenario's plugins with their import path and version (provenance): the policies
    by role, and ``workloads`` by the name the jobs give them."""
    named = {"scheduler": (scenario.policy.scheduler, SCHEDULERS),
             "strategy": (scenario.policy.strategy, STRATEGIES),
             "autoscaler": (scenario.policy.autoscaler, AUTOSCALERS),
             "speculation": (scenario.policy.speculation, SPECULATORS)}  # fmt: skip
    plugins: dict[str, Any] = {
        role: find_plugin(role, name, f"policy.{role}").provenance()
        for role, (name, builtins) in named.items()
        if name not in builtins
    }
    workloads = {
        job.workload: find_plugin("workload", job.workload, f"jobs.{index}.workload").provenance()
        for index, job in enumerate(scenario.jobs)
        if isinstance(job, PluginJob)
    }
    if workloads:
        plugins["workloads"] = workloads
    return plugins


def eviction_risk(scenario: Scenario) -> EvictionRisk:
    """What the transient cost model knows of evictions: the scenario's lifetime model of
    each node class and of each zone that has its own, and the trace's clock."""
    models = {}
    for node_class in ("reserved", "transient"):
        rules = class_rules(scenario, node_class)
        models[(node_class, None)] = rules.model
        for zone in getattr(scenario.cluster, node_class).zones:
            models[(node_class, zone)] = rules.model_for(zone)
    return EvictionRisk(models, scenario.wall_per_trace)


def _eagle(scenario: Scenario, options: dict[str, Any]) -> EagleScheduler:
    knobs = checked_options(options, EAGLE_OPTIONS, "eagle")
    short_fraction(scenario)  # checked here so that a bad fraction is a scenario error
    knobs.pop("short_fraction", None)
    return EagleScheduler(seed=scenario.seed, **knobs)


def short_fraction(scenario: Scenario) -> float:
    """``policy.options.eagle.short_fraction``: the reserved nodes' share in the short-only partition."""
    value = options_for(scenario, "eagle").get("short_fraction", DEFAULT_SHORT_FRACTION)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"short_fraction must be a number in [0, 1), got {value!r}")
    short_partition_size(1, value)  # raises ValueError outside [0, 1)
    return float(value)


def reserved_partitions(scenario: Scenario, node_ids: list[str]) -> dict[str, Partition]:
    """Each on-demand node's partition under ``scheduler: eagle`` (all ``general`` otherwise)."""
    if scenario.policy.scheduler != "eagle":
        return dict.fromkeys(node_ids, "general")
    return split_partitions(node_ids, short_fraction(scenario))


def make_autoscaler(scenario: Scenario) -> Autoscaler:
    """The scenario's autoscaler; a ScenarioError (exit 2) when it cannot be built.

    ``cloudcoaster`` resizes Eagle's short-only partition, so it needs ``scheduler: eagle``;
    its ``provisioning_delay`` is trace time, given to the policy in wall seconds.
    """
    name = scenario.policy.autoscaler
    options = options_for(scenario, name)
    if name not in AUTOSCALERS:
        return find_plugin("autoscaler", name, "policy.autoscaler").build(options)
    try:
        if name == "static":
            checked_options(options, frozenset(), "static")
            return StaticAutoscaler()
        if scenario.policy.scheduler != "eagle":
            raise ScenarioError(
                [f"policy.autoscaler: cloudcoaster resizes Eagle's short-only partition; "
                 f"it needs scheduler: eagle, found {scenario.policy.scheduler!r}"]
            )  # fmt: skip
        knobs = checked_options(options, CLOUDCOASTER_OPTIONS, "cloudcoaster")
        delay = parse_duration(knobs.get("provisioning_delay", "120s"))
        return _cloudcoaster(scenario, knobs, scenario.trace(delay))
    except (ValueError, TypeError) as exc:
        raise ScenarioError([f"policy.options.{name}: {exc}"]) from None


def _cloudcoaster(scenario: Scenario, knobs: dict[str, Any], delay_s: float) -> CloudCoasterAutoscaler:
    return CloudCoasterAutoscaler(
        threshold=float(knobs.get("threshold", 0.95)),
        r=float(knobs.get("r", 3)),
        p=float(knobs.get("p", 0.5)),
        provisioning_delay_s=delay_s,
        short_on_demand=short_partition_size(scenario.cluster.reserved.count, short_fraction(scenario)),
    )


def added_transient_nodes(scenario: Scenario) -> int:
    """The most transient nodes the autoscaler may run beyond the scenario's count (its
    budget), for sizing the scale model before the run (dilation ``auto``)."""
    if scenario.policy.autoscaler != "cloudcoaster":
        return 0  # a plugin's budget is unknown before the run: size for the scenario's count
    options = options_for(scenario, scenario.policy.autoscaler)
    try:
        knobs = checked_options(options, CLOUDCOASTER_OPTIONS, "cloudcoaster")
        return _cloudcoaster(scenario, knobs, 0.0).budget
    except (ValueError, TypeError) as exc:
        raise ScenarioError([f"policy.options.cloudcoaster: {exc}"]) from None


def make_speculator(scenario: Scenario) -> Speculator:
    """The scenario's speculator (``policy.speculation``); a ScenarioError (exit 2) when it
    cannot be built. Its time thresholds are trace time, given to it in wall seconds."""
    name = scenario.policy.speculation
    options = options_for(scenario, name)
    if name not in SPECULATORS:
        return find_plugin("speculation", name, "policy.speculation").build(options)
    try:
        return build_speculator(name, options, scenario.trace)
    except (ValueError, TypeError) as exc:
        raise ScenarioError([f"policy.options.{name}: {exc}"]) from None
