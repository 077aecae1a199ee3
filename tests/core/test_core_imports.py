"""What the master core loads, counted in a fresh interpreter: the import contracts
(pyproject.toml) follow the import statements, not what a package's ``__init__`` imports as a
side effect, so this counts ``sys.modules`` after importing every core module and the chaos
rules. A package ``__init__`` that gathers its modules (``testbed.settings`` gathering
``resolve``, ``testbed.workloads`` gathering every workload's task code) once loaded the
scenario schema, its plugin loader and the task code into the core behind the contracts' back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = sorted(
    f"master.core.{path.stem}" for path in (ROOT / "master" / "core").glob("*.py") if path.stem != "__init__"
)
FORBIDDEN = (
    # the scenario's compiler: its schema, loaders, plugin loader, inputs and the settings' resolver
    "testbed.scenario.schema", "testbed.scenario.loading", "testbed.scenario.plugins",
    "testbed.scenario.inputs", "testbed.scenario.jobs", "testbed.scenario.fidelity",
    "testbed.settings.resolve", "testbed.settings.profiles",
    # the shells, the simulator, the task code, the node's resources, the network
    "master.shell", "master.sim", "master.recovery", "master.providers", "testbed.app",
    "testbed.workloads.catalog", "testbed.workloads.base", "testbed.workloads.wordcount",
    "testbed.node", "testbed.wire.mqtt", "aiohttp", "aiomqtt", "docker", "yaml",
)  # fmt: skip
"""Modules (or packages) none of the core's may load; ``asyncio`` and ``logging`` are not here:
pydantic loads them, and the import contract keeps the core's own code off them."""


def loaded_by(modules: list[str]) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def test_the_core_loads_no_compiler_no_shell_and_no_task_code() -> None:
    assert len(CORE) > 20 and "master.core.machine" in CORE
    modules = loaded_by([*CORE, "master.chaos.rules"])
    found = {name for name in FORBIDDEN if name in modules or any(m.startswith(name + ".") for m in modules)}
    assert found == set()
    assert "testbed.workloads.progress" in modules  # the pure descriptions it reads do load
