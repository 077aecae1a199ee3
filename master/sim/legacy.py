"""The current ``Master`` behind the core's interface (``master.sim.port.Core``), for the
simulator until the sans-I/O core's ``handle(event, now)`` exists.

The master is never started: no broker link, no HTTP server, no agent process. Its
asyncio parts (the loop timers of the core's ``WakeAt``s, which carry the arrivals, the
round ticker, the chaos rules and the autoscaler's delays, and the provider's coroutines)
run on a private event loop whose clock is the simulator's: each
``handle`` sets that clock to ``now``, runs what is due, applies the event, and returns
what the master did as commands (its sends, its provider's launches and kills, a wish
for a scheduling round, the time of its next timer). Messages from nodes go in through
the master's own message handler, encoded as on the wire, so its sender check, lifecycle
tables and strategies see exactly what a real run's would. Its liveness watch does not
run: model nodes do not send heartbeats, and a killed node is heard of through its Will.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable
from pathlib import Path
from typing import Any

from master.core import commands as cmd
from master.core import events as ev
from master.master import Master
from master.policies import make_autoscaler
from testbed.mqtt import BrokerAddress
from testbed.protocol import Codec, Message
from testbed.scenario import Scenario

SETTLE_TURNS = 64
"""Loop turns a handled event may take to finish its coroutines (launches, kills: a few)."""


class _NeverBlocks(selectors.DefaultSelector):
    """No file descriptor of the master's is live in a simulation: never wait for one."""

    def select(self, timeout: float | None = None) -> list[Any]:
        del timeout
        return super().select(0)


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on the simulator's clock: ``time()`` is what the shell set, and a turn
    never waits (the shell moves the clock to the next event instead)."""

    def __init__(self) -> None:
        super().__init__(_NeverBlocks())
        self.virtual = 0.0

    def time(self) -> float:
        return self.virtual

    def next_timer(self) -> float | None:
        """When the earliest timer is due (it may have been cancelled: a spurious wake)."""
        scheduled = self._scheduled  # type: ignore[attr-defined]
        return scheduled[0].when() if scheduled else None

    def has_ready(self) -> bool:
        return bool(self._ready)  # type: ignore[attr-defined]

    def run_once(self) -> None:
        """One turn: every ready callback and every timer due by ``time()``; never blocks
        (called only when something is ready or due)."""
        self._run_once()  # type: ignore[attr-defined]

    def __enter__(self) -> VirtualLoop:
        """The running loop of this thread while the simulation runs (``get_running_loop``)."""
        asyncio.events._set_running_loop(self)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.events._set_running_loop(None)


class SimProvider:
    """The master's node provider: each call becomes a command to the simulator."""

    def __init__(self, run_id: str, out: list[cmd.Command]) -> None:
        self.run_id = run_id
        self.out = out
        self.live: set[str] = set()
        self.ordinals: dict[str, int] = {}

    async def launch(self, node_id: str, node_class: str, *args: Any) -> None:
        del args
        self.live.add(node_id)
        ordinal = self.ordinals[node_class] = self.ordinals.get(node_class, -1) + 1
        self.out.append(cmd.StartNode(node_id, node_class, ordinal))

    async def evict(self, node_id: str) -> None:
        if node_id in self.live:
            self.live.discard(node_id)
            self.out.append(cmd.KillNode(node_id))

    async def release(self, node_id: str) -> None:
        if node_id in self.live:
            self.live.discard(node_id)
            self.out.append(cmd.ReleaseNode(node_id))

    async def close(self) -> None:
        self.live.clear()

    def owns(self, node_id: str) -> bool:
        return node_id in self.live


class LegacyCore:
    def __init__(self, scenario: Scenario, run_id: str, run_dir: Path) -> None:
        self.out: list[cmd.Command] = []
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

    def start(self, now: float) -> list[cmd.Command]:
        def start() -> None:
            # model nodes send no heartbeats: the core's liveness checks are off, as while its
            # own broker link is down (a killed node is heard of through its Will)
            self.master._handle(ev.LinkDown())
            self.master._execute(self.master.core.start(self.master.journal.now()))

        return self._step(now, start)

    def handle(self, event: ev.Event, now: float) -> list[cmd.Command]:
        if isinstance(event, ev.FromNode):
            return self._step(now, lambda: self._message(event.node_id, event.message))
        if isinstance(event, ev.Round):
            return self._step(now, self._round)
        if isinstance(event, ev.Begin):
            return self._step(now, self._begin)
        if isinstance(event, ev.OutputStaged):
            staged = (event.job_id, event.index, event.attempt)
            return self._step(now, lambda: self.master.output_staged(*staged))
        if isinstance(event, ev.Wake):
            return self._step(now, lambda: None)
        raise TypeError(f"the simulator does not send {event!r}")

    def abort(self, reason: str, now: float) -> list[cmd.Command]:
        """End the run now (its time limit): unfinished jobs fail with ``reason``."""
        return self._step(now, lambda: self.master.fail_unfinished(reason))

    def finish(self, now: float) -> bool:
        """The run is over: stop the master's parts, journal the end, close the journal."""
        master = self.master

        async def stop() -> None:
            for task in self._background:
                task.cancel()
            await asyncio.gather(*self._background, return_exceptions=True)
            master._handle(ev.Stop())
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

    def _begin(self) -> None:
        """Time 0: what ``Master.run`` does once its initial cluster is up."""
        master = self.master
        master.begin()
        self.begun = True

    def _send(self, node_id: str, message: Message) -> None:
        self.out.append(cmd.Send(node_id, message))

    def _step(self, now: float, action: Callable[[], Any]) -> list[cmd.Command]:
        self.loop.virtual = max(self.loop.virtual, now)
        result = action()
        if asyncio.iscoroutine(result):
            self.loop.create_task(result)
        self._settle()
        return self._commands()

    def _settle(self) -> None:
        """Run what is ready (the coroutines the action started: launches, kills) and what is due."""
        loop = self.loop
        for _ in range(SETTLE_TURNS):
            due = loop.next_timer()
            if not loop.has_ready() and (due is None or due > loop.virtual):
                return
            loop.run_once()

    def _commands(self) -> list[cmd.Command]:
        out = list(self.out)
        self.out.clear()
        master = self.master
        if master._kick.is_set():
            out.append(cmd.WantRound())
        if not self.begun and not self.over and master.starts.cluster_up.is_set():
            out.append(cmd.ClusterUp())
        due = self.loop.next_timer()
        if due is not None:
            out.append(cmd.WakeAt(due))
        if master._all_done.is_set() and not self.over:
            self.over = True
            out.append(cmd.RunOver(master.core.records.all_succeeded()))
        return out
