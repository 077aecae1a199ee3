"""The current ``Master`` behind the core's interface (``master.sim.port.Core``), for the
simulator until the sans-I/O core's ``handle(event, now)`` exists.

The master is never started: no broker link, no HTTP server, no agent process. Its
asyncio parts (arrival timers, its round ticker, the chaos controller's clock, the
autoscaler's delays) run on a private event loop whose clock is the simulator's: each
``handle`` sets that clock to ``now``, runs what is due, applies the event, and returns
what the master did as commands (its sends, its provider's launches and kills, a wish
for a scheduling round, the time of its next timer). Messages from nodes go in through
the master's own message handler, encoded as on the wire, so its sender check, lifecycle
tables and strategies see exactly what a real run's would. Its liveness watch does not
run: model nodes do not send heartbeats, and a killed node is heard of through its Will.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from master.core.events import LinkDown
from master.master import Master
from master.policies import make_autoscaler
from master.sim.port import (
    Begin,
    ClusterUp,
    Command,
    Event,
    FromNode,
    KillNode,
    OutputStaged,
    ReleaseNode,
    Round,
    RunOver,
    Send,
    StartNode,
    Wake,
    WakeAt,
    WantRound,
)
from testbed.mqtt import BrokerAddress
from testbed.protocol import Codec, Message
from testbed.scenario import Scenario

SETTLE_TURNS = 64
"""Loop turns a handled event may take to finish its coroutines (launches, kills: a few)."""


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on the simulator's clock: ``time()`` is what the shell set."""

    def __init__(self) -> None:
        super().__init__()
        self.virtual = 0.0

    def time(self) -> float:
        return self.virtual

    def next_timer(self) -> float | None:
        live = [handle.when() for handle in self._scheduled if not handle.cancelled()]  # type: ignore[attr-defined]
        return min(live) if live else None


class SimProvider:
    """The master's node provider: each call becomes a command to the simulator."""

    def __init__(self, run_id: str, out: list[Command]) -> None:
        self.run_id = run_id
        self.out = out
        self.live: set[str] = set()
        self.ordinals: dict[str, int] = {}

    async def launch(self, node_id: str, node_class: str, *args: Any) -> None:
        del args
        self.live.add(node_id)
        ordinal = self.ordinals[node_class] = self.ordinals.get(node_class, -1) + 1
        self.out.append(StartNode(node_id, node_class, ordinal))

    async def evict(self, node_id: str) -> None:
        if node_id in self.live:
            self.live.discard(node_id)
            self.out.append(KillNode(node_id))

    async def release(self, node_id: str) -> None:
        if node_id in self.live:
            self.live.discard(node_id)
            self.out.append(ReleaseNode(node_id))

    async def close(self) -> None:
        self.live.clear()

    def owns(self, node_id: str) -> bool:
        return node_id in self.live


class LegacyCore:
    def __init__(self, scenario: Scenario, run_id: str, run_dir: Path) -> None:
        self.out: list[Command] = []
        self.loop = VirtualLoop()
        self.provider = SimProvider(run_id, self.out)
        self.master = Master(
            scenario,
            run_id,
            run_dir,
            self.provider,  # type: ignore[arg-type]
            BrokerAddress("127.0.0.1", 1),
            "sim",
            lambda node_id, node_class: [],
            autoscaler=make_autoscaler(scenario),
        )
        journal = self.master.journal
        journal.clock = self.loop.time
        journal.t0 = 0.0
        self.master._publish = self._send  # type: ignore[method-assign]
        self.master.api.commit_output = lambda job_id, index, attempt: None  # type: ignore[method-assign]
        self.begun = False
        self.over = False
        self._background: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------ the interface

    def start(self, now: float) -> list[Command]:
        def start() -> None:
            # model nodes send no heartbeats: the core's liveness checks are off, as while its
            # own broker link is down (a killed node is heard of through its Will)
            self.master._handle(LinkDown())
            self.master._execute(self.master.core.start(self.master.journal.now()))

        return self._step(now, start)

    def handle(self, event: Event, now: float) -> list[Command]:
        if isinstance(event, FromNode):
            return self._step(now, lambda: self._message(event.node_id, event.message))
        if isinstance(event, Round):
            return self._step(now, self._round)
        if isinstance(event, Begin):
            return self._step(now, self._begin)
        if isinstance(event, OutputStaged):
            staged = (event.job_id, event.index, event.attempt)
            return self._step(now, lambda: self.master.output_staged(*staged))
        if isinstance(event, Wake):
            return self._step(now, lambda: None)
        raise TypeError(f"the simulator does not send {event!r}")

    def abort(self, reason: str, now: float) -> list[Command]:
        """End the run now (its time limit): unfinished jobs fail with ``reason``."""
        return self._step(now, lambda: self.master.fail_unfinished(reason))

    def finish(self, now: float) -> bool:
        """The run is over: stop the master's parts, journal the end, close the journal."""
        master = self.master

        async def stop() -> None:
            master.chaos.stop()
            for task in self._background:
                task.cancel()
            await asyncio.gather(*self._background, return_exceptions=True)
            await master.autoscaling.stop()
            master._act(master.core.end_nodes)
            await master.starts.shutdown()

        self._step(now, stop)
        ok = master.core.records.all_succeeded()
        master.journal.event("run_finished", status="succeeded" if ok else "failed")
        master.journal.close()
        self.loop.close()
        return ok

    def status(self) -> dict[str, Any]:
        return self.master.api.status()

    def ideal_memory_mb(self, job_id: str, stage: int) -> int:
        """The memory at which the job's stage does not spill (what the model's penalty is of)."""
        return self.master.jobs[job_id].stage_memory_mb[stage]

    # ------------------------------------------------------------------ inside the loop

    def _message(self, node_id: str, message: Message) -> None:
        self.master._on_message(self.master.topics.task_updates(node_id), Codec.encode(message))

    def _round(self) -> None:
        """What the master's scheduling loop does on a kick."""
        self.master._kick.clear()
        self.master.schedule_once()
        self.master.autoscaling.step()

    def _begin(self) -> None:
        """Time 0: what ``Master.run`` does once its initial cluster is up."""
        master = self.master
        master.begin()
        master.chaos.start()
        master.autoscaling.start()
        self.begun = True

    def _send(self, node_id: str, message: Message) -> None:
        self.out.append(Send(node_id, message))

    def _step(self, now: float, action: Callable[[], Any]) -> list[Command]:
        self.loop.virtual = max(self.loop.virtual, now)

        async def run() -> None:
            result = action()
            if asyncio.iscoroutine(result):
                await result
            await self._settle()

        self.loop.run_until_complete(run())
        return self._commands()

    async def _settle(self) -> None:
        """Let what the action started finish (launches, kills), and what is due run."""
        current = asyncio.current_task()
        for _ in range(SETTLE_TURNS):
            await asyncio.sleep(0)
            busy = [t for t in asyncio.all_tasks() if t is not current and t not in self._background]
            due = self.loop.next_timer()
            if not busy and (due is None or due > self.loop.virtual):
                return

    def _commands(self) -> list[Command]:
        out = list(self.out)
        self.out.clear()
        master = self.master
        if master._kick.is_set():
            out.append(WantRound())
        if not self.begun and not self.over and master.starts.cluster_up.is_set():
            out.append(ClusterUp())
        due = self.loop.next_timer()
        if due is not None:
            out.append(WakeAt(due))
        if master._all_done.is_set() and not self.over:
            self.over = True
            out.append(RunOver(master.core.records.all_succeeded()))
        return out


def close_quietly(core: LegacyCore) -> None:
    with contextlib.suppress(Exception):
        core.master.journal.close()
    with contextlib.suppress(Exception):
        core.loop.close()
