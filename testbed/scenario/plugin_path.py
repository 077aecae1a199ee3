"""Where a scenario's plugins are found: ``policy.plugin_path`` made absolute at load, with the
scenario's own directory added when the scenario names a plugin from outside the testbed (a
policy or a workload, by import path or entry point), read from the raw data before the
schema validates it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.registry import is_builtin

MAX_PLUGIN_DIRS = 16
"""Directories ``policy.plugin_path`` may list."""


def resolve_plugin_path(data: dict[str, Any], scenario_dir: Path) -> list[str]:
    """``policy.plugin_path`` made absolute, with the scenario's directory appended when the
    scenario names a plugin (a policy or a workload, by import path or entry point): the run
    directory's copy of the scenario then finds the plugin too (``testbed run --resume``).
    Returns the directories (the first ``MAX_PLUGIN_DIRS``: the schema refuses more)."""
    policy = data.get("policy", {})
    if not isinstance(policy, dict):
        return []
    path = policy.get("plugin_path", [])
    if not isinstance(path, list) or not all(isinstance(entry, str) for entry in path):
        return []  # the schema says what is wrong
    resolved = [str((scenario_dir / Path(entry).expanduser()).resolve()) for entry in path]
    if _names_plugin(data, policy) and str(scenario_dir) not in resolved:
        resolved.append(str(scenario_dir))
    if resolved:
        data["policy"] = {**policy, "plugin_path": resolved}
    return resolved[:MAX_PLUGIN_DIRS]


def _names_plugin(data: dict[str, Any], policy: dict[str, Any]) -> bool:
    policies = (
        policy.get("scheduler", "fifo"),
        policy.get("strategy", "spark"),
        policy.get("autoscaler", "static"),
        policy.get("speculation", "none"),
    )
    jobs = data.get("jobs")
    workloads = (
        [job.get("workload") for job in jobs if isinstance(job, dict)] if isinstance(jobs, list) else []
    )
    kinds = ("scheduler", "strategy", "autoscaler", "speculation")
    return any(_outside(kind, name) for kind, name in zip(kinds, policies, strict=True)) or any(
        _outside("workload", workload) for workload in workloads
    )


OWN_PACKAGES = frozenset({"testbed", "master", "agents"})
"""A plugin class in the testbed's own packages (``testbed.workloads.join:JoinAggregate``) is
importable wherever the testbed is: it needs no scenario directory on the plugin path."""


def _outside(kind: str, name: object) -> bool:
    """Whether ``name`` is a plugin outside the testbed (neither a built-in nor an import path
    into the testbed's own packages); a non-string is the schema's to refuse."""
    if not isinstance(name, str) or is_builtin(kind, name):
        return False
    return name.split(":", 1)[0].split(".", 1)[0] not in OWN_PACKAGES
