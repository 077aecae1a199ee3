"""Starting the run's nodes on this host: each launch, the start deadline, the end of the run.

Which nodes start and when (the initial cluster a window at a time, each later
launch) is the core's (``master.core.launch``: ``StartNode`` commands). This shell
starts each through the provider, with its agent's environment, and watches the
start deadline (``master.core.liveness.start_deadline_s``, a host concern): a node that
has not come up in time is reported (``NodeStartFailed``) and the run goes on
without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable

from master.core.commands import StartNode
from master.core.events import NodeStartFailed
from master.core.liveness import start_deadline_s
from master.core.machine import MasterCore
from master.providers.base import AdoptingProvider, NodeProvider, NodeSpec
from master.shell.scale_model import NodeShares, by_processes, class_spec, node_slowdown
from testbed.node.processes import StartupFailed
from testbed.wire.capabilities import NODE_KEY_ENV, RunKeys

log = logging.getLogger("master")
ATTACH_WAIT_S = 300.0
"""How long an attached master waits for the scenario's agents (compose, Swarm) to come up: a
stack on a loaded host starts them in any order, in minutes (their healthcheck's start period)."""


class NodeStarts:
    def __init__(
        self,
        core: MasterCore,
        provider: NodeProvider,
        keys: RunKeys,
        agent_command: Callable[[str, str], list[str]],
        agent_env: dict[str, str],
        node_env: Callable[[str], Awaitable[dict[str, str]]] | None,
    ) -> None:
        self.core = core
        self.provider = provider
        self.keys = keys
        self.agent_command = agent_command
        self.agent_env = agent_env
        self.node_env = node_env
        self.cluster_up = asyncio.Event()
        self.came_up = asyncio.Event()
        self.launching: dict[str, asyncio.Task[None]] = {}
        self.quotas: dict[str, float | None] = {}
        """Each launched node's CPU limit in cores (None: none), its slowdown included: the start
        deadline's bound on its agent's quota (a Docker node without host groups runs its agent
        under the divided ``nano_cpus``; with groups, and locally, only its tasks are slowed)."""

    def start(self, command: StartNode) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(self._launch(command))
        self.launching[command.node_id] = task
        task.add_done_callback(lambda _: self.launching.pop(command.node_id, None))
        return task

    async def _launch(self, command: StartNode) -> None:
        scenario = self.core.settings.scenario
        spec = class_spec(scenario, command.node_class)
        env = {**self.agent_env, **await self.secrets_of(command.node_id)}
        cpus = NodeShares.of(scenario, spec).cpus  # the provider divides its tasks' by the slowdown
        factor = node_slowdown(scenario, command.node_id, command.node_class)
        processes = by_processes(scenario)
        # the least its agent may get: a divided nano_cpus, or 1 / factor beside straggler processes
        self.quotas[command.node_id] = None if cpus is None else cpus / factor
        await self.provider.launch(
            NodeSpec(
                command.node_id,
                command.node_class,
                spec.slots,
                spec.memory_mb,
                cpus,
                tuple(self.agent_command(command.node_id, command.node_class)),
                env,
                slowdown=1.0 if processes else factor,
            )
        )
        if processes and factor > 1:
            await self.provider.straggle(command.node_id, factor, spec.slots)

    async def secrets_of(self, node_id: str) -> dict[str, str]:
        """What the agent of ``node_id`` holds: its broker login and its node key."""
        login = await self.node_env(node_id) if self.node_env else {}
        return {**login, NODE_KEY_ENV: self.keys.node_key(node_id)}

    async def until_cluster_up(
        self, now: Callable[[], float], fail: Callable[[NodeStartFailed], None]
    ) -> None:
        """Wait for the core's ``ClusterUp``; report every node that missed its start deadline
        (checked every second): the core gives up on it and the run goes on without it. Attach
        mode also gives up on an agent that asked for its name but did not come up in time, and
        waits ``ATTACH_WAIT_S`` at most for the scenario's agents, then fails in one line
        (``StartupFailed``) naming what is missing and what the agents' tasks reported."""
        cpus = os.cpu_count() or 2
        waiting_since = now()
        while not self.cluster_up.is_set():
            await self._give_up_on_late_nodes(now, fail, cpus)
            if self.core.attach and now() - waiting_since > ATTACH_WAIT_S:
                raise StartupFailed(await self._attach_shortfall())
            self.came_up.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await self.came_up.wait()
        if not any(n.status == "up" for n in self.core.nodes.values()):
            raise StartupFailed(
                "no node came up, and the run cannot start: see the nodes' logs in the run directory's logs/"
            )

    async def _give_up_on_late_nodes(
        self, now: Callable[[], float], fail: Callable[[NodeStartFailed], None], cpus: int
    ) -> None:
        """``NodeStartFailed`` for each node launched (or, attached, named) longer ago than its
        start deadline; an adopted one's reason says what its container shows."""
        launching = [n for n in self.core.nodes.values() if n.status == "launching"]
        for node in launching:
            deadline = start_deadline_s(
                len(launching), cpus, self._start_quota(node.node_id, node.class_name)
            )
            if now() - node.launched_t <= deadline:
                continue
            reason = f"it did not come up within {deadline:.0f}s"
            if node.container and isinstance(self.provider, AdoptingProvider):
                seen = await self.provider.node_report(node.node_id)
                reason += f" of its naming (container {node.container}: {seen})"
            fail(NodeStartFailed(node.node_id, reason))

    def _start_quota(self, node_id: str, node_class: str) -> float | None:
        """The cores a node starts on: a launched node's quota; an adopted one's class's."""
        if node_id in self.quotas:
            return self.quotas[node_id]
        scenario = self.core.settings.scenario
        return NodeShares.of(scenario, class_spec(scenario, node_class)).cpus

    async def _attach_shortfall(self) -> str:
        """Which of the scenario's nodes never came up, and what compose or Swarm says of the
        agents' containers or tasks (an agent that exited, one stopped as unhealthy)."""
        nodes = list(self.core.nodes.values())
        up, unnamed = [], []
        for node_class, named in self.core.settings.scenario.node_classes.items():
            wanted = named.spec.count
            of_class = [n for n in nodes if n.class_name == node_class]
            up.append(f"{sum(n.status == 'up' for n in of_class)} of {wanted} {node_class}")
            missing = wanted - len(of_class)
            if missing > 0:
                unnamed.append(f"{missing} {node_class}")
        parts = [f"after {ATTACH_WAIT_S:g}s, {' and '.join(up)} nodes are up, and the run cannot start"]
        named = []
        for n in (n for n in nodes if n.status != "up"):
            seen = (
                f": {await self.provider.node_report(n.node_id)}"
                if isinstance(self.provider, AdoptingProvider)
                else ""
            )
            named.append(f"{n.node_id} (container {n.container}, {n.status}{seen})")
        if named:
            parts.append(f"named but not up: {', '.join(named)}")
        if unnamed:
            parts.append(f"never asked for a name (not started, or no broker): {', '.join(unnamed)}")
        if isinstance(self.provider, AdoptingProvider):
            parts.append(f"the agents' tasks: {await self.provider.agents_report()}")
        return "; ".join(parts)

    async def shutdown(self) -> None:
        launches = list(self.launching.values())
        await asyncio.gather(*launches, return_exceptions=True)
        await self.provider.close()
