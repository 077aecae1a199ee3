"""Live evictions at run time: a request becomes an ``EvictRequest`` event for the core.

The chaos rules run in the master core (``master.core.chaos``), on its timers: a
notice, a kill, a replacement, a capacity outage are the core's decisions, and
the shell carries out their commands (``KillNode``: the provider kills the node
with SIGKILL and destroys its disk; the master then learns of it the way it
would of any crash: the broker's Last Will, or missed heartbeats). What is left
here is the door for live evictions (the HTTP API, the CLI, the Python API,
tests): the request goes into the core, and its answer (``Evicted``) comes back
as the victims, or as the reason it was refused. docs/chaos.md says the
semantics.
"""

from __future__ import annotations

from collections.abc import Sequence

from master.core.events import EvictRequest
from master.providers.base import ForeignNodeError
from master.shell.master_ports import ChaosShellPort
from testbed.scenario.chaos import EvictSpec


class NotRunning(Exception):
    """A live eviction outside the run (before its time 0, or as it ends); the message says when."""


class ChaosShell:
    def __init__(self, master: ChaosShellPort) -> None:
        self.master = master

    async def evict_now(self, evict: EvictSpec, named: Sequence[str] | None = None) -> list[str]:
        """A live storm: evict at once, reason ``manual``; the nodes evicted. ``NotRunning``
        before the run's time 0 and once it is ending; ``ForeignNodeError`` for a named node
        that is not a live node of this run."""
        nodes = tuple(named) if named else None
        foreign = frozenset(n for n in nodes or () if not self.master.provider.owns(n))
        answer = self.master.evict(EvictRequest(evict, nodes, foreign))
        if answer.refused == "not_running":
            raise NotRunning(answer.error)
        if answer.refused == "foreign":
            raise ForeignNodeError(answer.error)
        return list(answer.nodes)

    async def evict(self, node_id: str) -> bool:
        """Evict one node by name now; False if it was not (not running, not ours, gone already)."""
        try:
            return bool(await self.evict_now(EvictSpec(count=1), [node_id]))
        except (NotRunning, ForeignNodeError):
            return False
