"""What a node agent imports as it starts: every local run and every e2e test starts one per
node, and on a slow node its imports are most of its start. Counted in fresh interpreters,
as the local provider starts them: what the agent (``python -m agents``), and a task worker
forked from its forkserver, have in ``sys.modules``, not how long they took.

The agent runs the control plane (asyncio, aiohttp, aiomqtt, the pydantic wire protocol);
its task forkserver preloads the task code of the built-in workloads (numpy), so that a
worker starts in milliseconds. Neither imports what only the master or the CLI runs: the
scenario schema and its YAML loader, the planners' inputs, statistics and plots."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MASTER_ONLY = ("scipy", "matplotlib", "rich", "yaml", "testbed.scenario.schema", "testbed.app")
"""Packages and modules of the master and the CLI (the scenario schema alone, with the chaos
models and arrivals it imports, was 0.4 CPU s of every forkserver's start)."""
AGENT_HEAVY = (*MASTER_ONLY, "numpy", "testbed.workloads")


def loaded(modules: set[str], names: tuple[str, ...]) -> set[str]:
    """Which of ``names`` (packages or modules) are among ``modules``."""
    return {name for name in names if name in modules or any(m.startswith(name + ".") for m in modules)}


def test_an_agent_imports_only_the_control_plane(tmp_path: Path) -> None:
    """A real agent, started as the local provider starts it, up to its HTTP server and its
    first connection attempt (no broker listens on port 1: it gives up at once, exit 1)."""
    code = (
        "import atexit, json, runpy, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
        "runpy.run_module('agents', run_name='__main__', alter_sys=True)"
    )
    argv = ["--run", "r1", "--node-id", "transient-1", "--node-class", "transient", "--lazy-workers"]
    argv += ["--broker", "mqtt://127.0.0.1:1", "--broker-wait", "0", "--data-dir", str(tmp_path / "node")]
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "giving up" in done.stderr
    modules = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert {"agents.agent", "aiohttp.web", "aiomqtt"} <= modules  # it did start
    assert loaded(modules, AGENT_HEAVY) == set()


def test_a_task_worker_imports_the_task_code_and_nothing_of_the_master() -> None:
    """A worker forked from the agent's own forkserver context (its preload list) reports its
    modules through a pipe: the target is ``exec``, so that nothing but the report is imported."""
    code = (
        "import json, sys\nfrom agents.agent import _forkserver\n"
        "receiver, sender = _forkserver.Pipe(duplex=False)\n"
        "report = 'import sys; conn.send(sorted(sys.modules)); conn.close()'\n"
        "worker = _forkserver.Process(target=exec, args=(report, {'conn': sender}))\n"
        "worker.start(); sender.close(); modules = receiver.recv(); worker.join()\n"
        "print(json.dumps(modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    modules = set(json.loads(done.stdout.strip().splitlines()[-1]))
    # preloaded, so that no task pays them: the built-in workloads' code, and the plugin
    # loader a plugin's task needs (0.03-0.05 CPU s in each fresh worker otherwise)
    assert {"agents.worker", "testbed.workloads.wordcount", "numpy", "testbed.scenario.plugins"} <= modules
    assert loaded(modules, MASTER_ONLY) == set()
