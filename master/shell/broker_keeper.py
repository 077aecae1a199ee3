"""The run owns its broker: when the broker process dies mid-run, start it again.

Everyone already recovers from a broker restart (sessions, re-sent launches and
push reports; docs/reliability.md, section 1), so a dead broker the run started
is restarted on the same port with the same logins. A broker that keeps dying
(``MAX_DEATHS`` within ``DEATH_WINDOW_S``) or cannot be started again ends the
run at once with the reason, rather than leaving it idle until its timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from testbed.wire.broker import ManagedBroker

log = logging.getLogger("master.broker")
MAX_DEATHS = 3
DEATH_WINDOW_S = 60.0


def may_restart(deaths: list[float], now: float) -> bool:
    """Whether a broker that died at the times ``deaths`` (the last one just now) is restarted."""
    return sum(1 for t in deaths if now - t <= DEATH_WINDOW_S) <= MAX_DEATHS


class BrokerKeeper:
    """Watches the broker's process; ``event`` journals, ``give_up(reason)`` ends the run."""

    def __init__(
        self,
        broker: ManagedBroker,
        event: Callable[..., Any],
        give_up: Callable[[str], None],
        clock: Callable[[], float],
    ) -> None:
        self.broker = broker
        self.event = event
        self.give_up = give_up
        self.clock = clock
        self.deaths: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self, restart: bool = True) -> None:
        """Journal which broker the run uses; with ``restart``, watch it and restart it."""
        self.event("broker_started", broker=self.broker.kind, url=self._url(), pid=self._pid())
        log.info("the run's broker: %s on %s", self.broker.kind, self._url())
        if restart:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        """Before the run stops its broker: that exit is not a death."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _watch(self) -> None:
        while True:
            process = self.broker.process
            assert process is not None, "the broker is started before it is watched"
            status = await process.wait()
            now = self.clock()
            self.deaths.append(now)
            log.warning("the %s broker died (exit status %s)", self.broker.kind, status)
            self.event("broker_died", broker=self.broker.kind, status=status)
            if not may_restart(self.deaths, now):
                self.give_up(f"the broker died {len(self.deaths)} times, the last with exit status {status}")
                return
            try:
                await self.broker.start()
            except (OSError, RuntimeError, TimeoutError) as exc:
                self.give_up(f"the broker died (exit status {status}) and could not be restarted: {exc}")
                return
            self.event("broker_restarted", broker=self.broker.kind, pid=self._pid())

    def _pid(self) -> int | None:
        return self.broker.process.pid if self.broker.process is not None else None

    def _url(self) -> str:
        return f"mqtt://{self.broker.host}:{self.broker.port}"
