"""The scenario's task profiles (files, or models written inline), read once when the scenario
is compiled (``RunSettings.profiles``): the core sizes its stages' memory from them, reading no file."""

from __future__ import annotations

from testbed.scenario.schema import InlineProfile, Scenario, ScenarioError
from testbed.workloads.task_model import Profiles, TaskProfile, load_profile


def load_profiles(scenario: Scenario) -> Profiles:
    """The scenario's profiles keyed by (workload, role); a ScenarioError if a file is
    malformed (inline models are checked with the scenario)."""
    try:
        return {(p.workload, p.role): p for p in map(_profile, scenario.profiles)}
    except ValueError as exc:
        raise ScenarioError([f"profiles: {exc}"]) from None


def _profile(entry: str | InlineProfile) -> TaskProfile:
    if isinstance(entry, str):
        return load_profile(entry)
    return TaskProfile.from_dict(entry.model_dump(exclude_none=True))
