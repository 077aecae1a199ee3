"""Nodes as local OS processes: the default backend, no Docker needed.

Each agent runs in its own session (process group) with its own node
directory. ``evict`` is SIGKILL to the whole group (the agent and its task
workers), sent as it is called, followed by deleting the directory: nothing on
the node survives.
The provider only ever signals process groups it started itself. An agent's
secrets (``testbed.node.processes.SECRET_ENV``) reach it in a file of a private
temporary directory, which it reads and deletes, never in its environment. Each agent's
``TMPDIR`` (where its task forkserver keeps its socket) is a directory of its own in
that private one, deleted with the node: a SIGKILLed agent leaves no ``pymp-*`` behind.
The private directory's path is recorded in the nodes directory (``TEMP_RECORD``), so that
the end of a resumed run (``remove_recorded_temp``) deletes one a SIGKILLed master left.

With ``cgroups`` (a faithful run) each node gets its own CPU cgroup with a quota
of ``cpus`` cores and a child group per task slot (``testbed.node.cgroups``); the agent
joins its own child at start (``--cgroup``) and each task worker its slot's. The
groups go with the node; the node's last throttling counters stay in ``cpu_stats``
for the fidelity monitor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from master.providers.base import ForeignNodeError, NodeSpec
from testbed.node.cgroups import CpuCgroups, CpuStats
from testbed.node.processes import SECRET_ENV, child_env, kill_group, private_env
from testbed.node.slow_episodes import SlowBuckets, SlowQuotas
from testbed.node.stragglers import command as straggler_command
from testbed.node.stragglers import straggler_group

SOCKET_PATH_MAX = 107
"""The longest path of an AF_UNIX socket (Linux: 108 bytes, its NUL included)."""
FORKSERVER_SOCKET_TAIL = f"/transient-9999/pymp-{'x' * 8}/listener-{'x' * 8}"
"""What a node's forkserver socket adds to the provider's temporary directory, at most."""
TEMP_PREFIX = "testbed-"
TEMP_RECORD = ".private-dirs"
"""In the nodes directory: the private temporary directories of the run's providers, one per line."""


@dataclass
class LocalNode:
    node_id: str
    process: asyncio.subprocess.Process
    directory: Path
    temp: Path
    cgroup: Path | None = None
    straggler: asyncio.subprocess.Process | None = None
    """Its straggler processes' leader (``straggle``), in a process group of its own."""

    def kill(self) -> None:
        """SIGKILL the node's process groups: its agent's (its task workers with it) and its
        straggler processes'."""
        kill_group(self.process.pid, signal.SIGKILL)
        if self.straggler is not None:
            kill_group(self.straggler.pid, signal.SIGKILL)

    async def wait(self) -> None:
        await self.process.wait()
        if self.straggler is not None:
            await self.straggler.wait()


class LocalProvider:
    def __init__(
        self, run_id: str, nodes_dir: Path, log_dir: Path | None = None, cgroups: CpuCgroups | None = None
    ) -> None:
        self.run_id = run_id
        self.nodes_dir = nodes_dir
        self.log_dir = log_dir or nodes_dir
        self.cgroups = cgroups
        self.nodes: dict[str, LocalNode] = {}
        self.cpu_stats: dict[str, CpuStats] = {}
        """Each node's CPU throttling counters, read as its cgroup goes (isolated runs)."""
        self.slot_stats: dict[str, CpuStats] = {}
        """Each node's slot groups' counters, totalled, read likewise."""
        self._private: Path | None = None
        self.quotas = SlowQuotas(cgroups.version) if cgroups is not None else None
        """The launch quotas of nodes slowed by an episode, to restore; their buckets' rates too."""
        self.buckets = SlowBuckets()

    def _private_dir(self) -> Path:
        """This provider's temporary directory (mode 0700, removed at close): agents' secret
        files, and each node's ``TMPDIR``. In ``/tmp`` when the temporary directory's path is
        too long for a node's forkserver socket in it (as CPython 3.13's multiprocessing does)."""
        if self._private is None:
            base = tempfile.gettempdir()
            if len(base) + len(f"/{TEMP_PREFIX}{'x' * 8}") + len(FORKSERVER_SOCKET_TAIL) > SOCKET_PATH_MAX:
                base = "/tmp"
            self._private = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=base))
            self.nodes_dir.mkdir(parents=True, exist_ok=True)
            with open(self.nodes_dir / TEMP_RECORD, "a", encoding="utf-8") as record:
                record.write(f"{self._private}\n")
        return self._private

    def _private_env(self, node_id: str, env: Mapping[str, str], temp: Path) -> dict[str, str]:
        """``env`` with its secrets moved to a file only this user can read, and ``temp`` as
        the agent's ``TMPDIR``."""
        secrets = {k: v for k, v in env.items() if k in SECRET_ENV}
        public = {k: v for k, v in env.items() if k not in SECRET_ENV} | {"TMPDIR": str(temp)}
        if not secrets:
            return public
        return {**public, **private_env(secrets, self._private_dir(), f"{node_id}-{os.urandom(4).hex()}")}

    def owns(self, node_id: str) -> bool:
        return node_id in self.nodes

    async def launch(self, spec: NodeSpec) -> None:
        """Its class and memory are carried by its command line."""
        node_id, cpus = spec.node_id, spec.cpus
        directory = self.nodes_dir / node_id
        directory.mkdir(parents=True, exist_ok=True)
        temp = self._private_dir() / node_id
        temp.mkdir(exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            *spec.command,
            "--data-dir",
            str(directory),
            "--listen",
            "127.0.0.1",
            "--advertise",
            "127.0.0.1",
        ]
        cgroup = None
        if self.cgroups is not None and cpus is not None:
            cgroup = await asyncio.to_thread(
                self.cgroups.create, self.run_id, node_id, cpus, spec.slots, spec.slowdown
            )
            argv += ["--cgroup", str(cgroup)]
        with open(self.log_dir / f"{node_id}.log", "ab") as log:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=child_env(self._private_env(node_id, spec.env, temp)),
                start_new_session=True,
            )
        self.nodes[node_id] = LocalNode(node_id, process, directory, temp, cgroup)

    def _node(self, node_id: str) -> LocalNode:
        node = self.nodes.get(node_id)
        if node is None:
            raise ForeignNodeError(
                f"node {node_id!r} is not a live node of run {self.run_id}; refusing to touch it"
            )
        return node

    def evict(self, node_id: str) -> Coroutine[Any, Any, None]:
        """SIGKILL the node's process group at once, in the caller's own step (the master's
        ``KillNode``, right after it journaled the eviction: no turn of the event loop in
        between); awaiting the result removes the node's disk and cgroup once its processes
        are gone."""
        node = self._node(node_id)
        node.kill()
        return self._evicted(node)

    async def _evicted(self, node: LocalNode) -> None:
        await node.wait()
        self.nodes.pop(node.node_id, None)  # a concurrent evict or release may have gone first
        await self._remove(node)

    async def release(self, node_id: str, grace_s: float = 5.0) -> None:
        """SIGTERM the agent alone, as ``docker stop`` signals a container's first process: it
        cancels its running tasks and reports them so. Its task workers are not signalled: one
        that died of the SIGTERM before the agent cancelled it was reported "killed". Then
        SIGKILL the group."""
        node = self._node(node_id)
        with contextlib.suppress(ProcessLookupError):
            node.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(node.process.wait(), grace_s)
        except TimeoutError:
            kill_group(node.process.pid, signal.SIGKILL)
            await node.process.wait()
        node.kill()  # stray task workers of a finished agent, its straggler processes
        await node.wait()
        self.nodes.pop(node_id, None)  # a concurrent evict or release may have gone first
        await self._remove(node)

    async def _remove(self, node: LocalNode) -> None:
        """The node's disk, temporary files and CPU group, once its processes are gone."""
        self.buckets.forget(node.directory)
        await asyncio.to_thread(shutil.rmtree, node.directory, True)
        await asyncio.to_thread(shutil.rmtree, node.temp, True)
        await self._remove_cgroup(node)

    async def close(self) -> None:
        await asyncio.gather(
            *(self.release(n, grace_s=2.0) for n in list(self.nodes)), return_exceptions=True
        )
        if self._private is not None:  # and secret files of agents that died before reading them
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None
        if self.cgroups is not None:
            self.cgroups.remove_run(self.run_id)

    def node_cpu_stats(self) -> dict[str, CpuStats]:
        """Throttling counters of every node so far: live ones read now, gone ones as they went."""
        return self._stats_so_far(self.cpu_stats, slots=False)

    def slot_cpu_stats(self) -> dict[str, CpuStats]:
        """The same of every node's task slots, totalled per node."""
        return self._stats_so_far(self.slot_stats, slots=True)

    def _stats_so_far(self, gone: dict[str, CpuStats], slots: bool) -> dict[str, CpuStats]:
        if self.cgroups is None:
            return dict(gone)
        groups = [(node.node_id, node.cgroup) for node in self.nodes.values() if node.cgroup is not None]
        return self.cgroups.stats_so_far(gone, groups, slots)

    async def straggle(self, node_id: str, factor: float, slots: int) -> None:
        """LATE's recipe (``testbed.node.stragglers``): busy loops and a paced disk writer in
        the node's group, weighted to leave its ``slots`` slots ``1 / factor`` of its quota;
        killed with the node (``LocalNode.kill``)."""
        node = self._node(node_id)
        if node.cgroup is None or self.cgroups is None:
            raise ValueError(f"{node_id}: straggler processes need the node's CPU group (faithful mode)")
        group = await asyncio.to_thread(straggler_group, self.cgroups.version, node.cgroup, slots, factor)
        with open(self.log_dir / f"{node_id}.log", "ab") as log:
            node.straggler = await asyncio.create_subprocess_exec(
                *straggler_command(group, node.directory, factor, slots),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=child_env(),
                start_new_session=True,
            )

    async def slow(self, node_id: str, factor: float) -> None:
        """Its CPU quotas and token buckets' rates divided by ``factor``
        (``testbed.node.slow_episodes``; 1: its launch's)."""
        node = self.nodes.get(node_id)
        if node is None:
            return
        with contextlib.suppress(FileNotFoundError):  # the node is being removed
            await asyncio.to_thread(self.buckets.slow, node.directory, factor)
            if node.cgroup is not None and self.quotas is not None:
                await asyncio.to_thread(self.quotas.slow, node.cgroup, factor)

    async def _remove_cgroup(self, node: LocalNode) -> None:
        """Keep the node's last counters, then remove its group once its processes are gone
        (killed task workers take a moment to exit)."""
        if node.cgroup is None or self.cgroups is None:
            return
        if self.quotas is not None:
            self.quotas.forget(node.cgroup)
        group, cgroups = node.cgroup, self.cgroups
        await cgroups.retire(
            node.node_id, group, (self.cpu_stats, self.slot_stats), lambda: cgroups.remove(group)
        )

    def pid(self, node_id: str) -> int:
        return self._node(node_id).process.pid


def python_command() -> list[str]:
    return [sys.executable, "-m", "agents"]


def remove_recorded_temp(nodes_dir: Path) -> None:
    """Delete the private temporary directories recorded in ``nodes_dir`` (by providers whose
    master may have died without closing them), once no node of the run is alive."""
    try:
        lines = (nodes_dir / TEMP_RECORD).read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    for path in map(Path, lines):
        if _made_by_a_provider(path):
            shutil.rmtree(path, ignore_errors=True)


def _made_by_a_provider(path: Path) -> bool:
    """Whether ``path`` is a directory ``_private_dir`` could have made: ``testbed-*`` right
    under the temporary directory or ``/tmp``, not a symbolic link, owned by this user."""
    bases = {Path(tempfile.gettempdir()).resolve(), Path("/tmp").resolve()}
    if not path.is_absolute() or not path.name.startswith(TEMP_PREFIX) or path.parent.resolve() not in bases:
        return False
    try:
        status = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid()
