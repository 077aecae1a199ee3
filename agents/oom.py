"""Why a task's worker died of SIGKILL: the kernel's OOM killer, or someone else.

The kernel counts the processes its OOM killer killed in the memory cgroup the
agent runs in: ``oom_kill`` in ``memory.events`` (cgroup v2) or in
``memory.oom_control`` (cgroup v1). The agent reads the count before it starts
a worker and again after the worker died of SIGKILL; only a larger count
makes the death ``oom``. Any other SIGKILL (``kill -9`` from outside, a
supervisor) is ``killed``, with its cause stated as unknown. (A task over the
agent's own memory cap fails with ``MemoryError`` inside the worker and
reports ``oom`` itself.) The count is the cgroup's, so an OOM kill of another
process of the node while the worker ran also counts: on a node, that is the
same memory pressure.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")
_OOM_KILL = re.compile(r"^oom_kill (\d+)$", re.MULTILINE)


def counter_files(proc_cgroup: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """Where this process's memory cgroup may keep its OOM kill count, most specific first
    (inside a cgroup namespace or a container the cgroup root is the process's own)."""
    files = []
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        relative = path.strip().lstrip("/")
        if hierarchy == "0" and not controllers:
            files += [root / relative / "memory.events", root / "memory.events"]
        elif "memory" in controllers.split(","):
            v1 = root / "memory"
            files += [v1 / relative / "memory.oom_control", v1 / "memory.oom_control"]
    return list(dict.fromkeys(files))


def oom_kill_count(files: list[Path] | None = None, node: Path | None = None) -> int | None:
    """The OOM killer's kill count of this process's memory cgroup; None when not readable.
    ``node``: the node's CPU group (``--cgroup``), whose ``memory.events`` comes first where it
    has one (cgroup v2, a container's node): a task worker that moved into its slot's group
    left the agent's in every controller, and the node's count is its whole subtree's."""
    if files is None:
        try:
            files = counter_files(Path("/proc/self/cgroup").read_text())
        except OSError:
            files = []
        files = [node / "memory.events", *files] if node is not None else files
    for path in files:
        try:
            match = _OOM_KILL.search(path.read_text())
        except OSError:
            continue
        if match:
            return int(match.group(1))
    return None


def death_outcome(exitcode: int | None, kills_before: int | None, kills_after: int | None) -> dict[str, Any]:
    """The failed outcome of a worker that died without sending its result."""
    if exitcode != -signal.SIGKILL:
        return {"state": "failed", "failure": "killed", "error": f"worker exited with status {exitcode}"}
    if kills_before is not None and kills_after is not None and kills_after > kills_before:
        return {
            "state": "failed",
            "failure": "oom",
            "error": f"killed by the kernel's OOM killer (cgroup oom_kill {kills_before} -> {kills_after})",
        }
    cause = "the OOM killer did not" if kills_before is not None else "no cgroup OOM count to tell"
    return {"state": "failed", "failure": "killed", "error": f"killed by SIGKILL from outside ({cause})"}
