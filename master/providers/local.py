"""Nodes as local OS processes: the default backend, no Docker needed.

Each agent runs in its own session (process group) with its own node
directory. ``evict`` is SIGKILL to the whole group (the agent and its task
workers) followed by deleting the directory: nothing on the node survives.
The provider only ever signals process groups it started itself. An agent's
secrets (``testbed.processes.SECRET_ENV``) reach it in a file of a private
temporary directory, which it reads and deletes, never in its environment.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from master.providers.base import ForeignNodeError
from testbed.processes import SECRET_ENV, child_env, kill_group, private_env


@dataclass
class LocalNode:
    node_id: str
    process: asyncio.subprocess.Process
    directory: Path


class LocalProvider:
    def __init__(self, run_id: str, nodes_dir: Path, log_dir: Path | None = None) -> None:
        self.run_id = run_id
        self.nodes_dir = nodes_dir
        self.log_dir = log_dir or nodes_dir
        self.nodes: dict[str, LocalNode] = {}
        self._secrets_dir: Path | None = None

    def _private_env(self, node_id: str, env: dict[str, str]) -> dict[str, str]:
        """``env`` with its secrets moved to a file only this user can read."""
        secrets = {k: v for k, v in env.items() if k in SECRET_ENV}
        public = {k: v for k, v in env.items() if k not in SECRET_ENV}
        if not secrets:
            return public
        if self._secrets_dir is None:
            self._secrets_dir = Path(tempfile.mkdtemp(prefix="testbed-secrets-"))  # mode 0700
        return {**public, **private_env(secrets, self._secrets_dir, f"{node_id}-{os.urandom(4).hex()}")}

    def owns(self, node_id: str) -> bool:
        return node_id in self.nodes

    async def launch(
        self,
        node_id: str,
        node_class: str,
        slots: int,
        memory_mb: int,
        cpus: float | None,
        command: list[str],
        env: dict[str, str],
    ) -> None:
        del node_class, slots, memory_mb, cpus  # carried by the command line
        directory = self.nodes_dir / node_id
        directory.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        argv = [*command, "--data-dir", str(directory), "--listen", "127.0.0.1", "--advertise", "127.0.0.1"]
        with open(self.log_dir / f"{node_id}.log", "ab") as log:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=child_env(self._private_env(node_id, env)),
                start_new_session=True,
            )
        self.nodes[node_id] = LocalNode(node_id, process, directory)

    def _node(self, node_id: str) -> LocalNode:
        node = self.nodes.get(node_id)
        if node is None:
            raise ForeignNodeError(
                f"node {node_id!r} is not a live node of run {self.run_id}; refusing to touch it"
            )
        return node

    async def evict(self, node_id: str) -> None:
        node = self._node(node_id)
        kill_group(node.process.pid, signal.SIGKILL)
        await node.process.wait()
        self.nodes.pop(node_id, None)  # a concurrent evict or release may have gone first
        await asyncio.to_thread(shutil.rmtree, node.directory, True)

    async def release(self, node_id: str, grace_s: float = 5.0) -> None:
        node = self._node(node_id)
        kill_group(node.process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(node.process.wait(), grace_s)
        except TimeoutError:
            kill_group(node.process.pid, signal.SIGKILL)
            await node.process.wait()
        kill_group(node.process.pid, signal.SIGKILL)  # stray task workers of a finished agent
        self.nodes.pop(node_id, None)  # a concurrent evict or release may have gone first
        await asyncio.to_thread(shutil.rmtree, node.directory, True)

    async def close(self) -> None:
        await asyncio.gather(
            *(self.release(n, grace_s=2.0) for n in list(self.nodes)), return_exceptions=True
        )
        if self._secrets_dir is not None:  # files of agents that died before reading them
            shutil.rmtree(self._secrets_dir, ignore_errors=True)
            self._secrets_dir = None

    def pid(self, node_id: str) -> int:
        return self._node(node_id).process.pid


def python_command() -> list[str]:
    return [sys.executable, "-m", "agents"]
