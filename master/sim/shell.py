"""The discrete-event shell: the master core, model agents and the clock, wired together.

Every command the core returns is carried out on the virtual clock: a ``Send`` reaches
its model agent at once, a ``StartNode`` starts a model node, a ``KillNode`` kills one, a
``WakeAt`` schedules the core's timer, a ``WantRound`` a scheduling round after every other
event of the same instant (the real shell's "backlog first, then the round"). The agents'
messages go into the core as ``FromNode`` the moment the model says they arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from master.core import commands as cmd
from master.core import events as ev
from master.sim.agents import ModelAgents
from master.sim.clock import DELIVER, ROUND, WAKE, EventHeap
from testbed.protocol import Message, TaskSpec


class SimShell:
    def __init__(
        self,
        core: Any,
        agents_of: Callable[[EventHeap, Callable[..., None]], ModelAgents],
        round_gap: float = 0.0,
    ) -> None:
        """``core``: the master behind ``master.sim.port.Core`` (plus ``abort``);
        ``agents_of(heap, deliver)``: the model agents on this shell's clock; ``round_gap``:
        the least time between two rounds (what a master whose round takes that long does)."""
        self.core = core
        self.round_gap = round_gap
        self.last_round = float("-inf")
        self.heap = EventHeap()
        self.agents = agents_of(self.heap, self._deliver)
        self.agents.output_staged = self._staged
        self.wakes: set[float] = set()
        self.round_pending = False
        self.begun = False
        self.over: bool | None = None
        """The run's outcome once the core said it is over."""
        self.handled = 0
        """Events handed to the core (the benchmark's count)."""

    def run(
        self,
        limit_s: float,
        progress: Callable[[float], None] | None = None,
        stop: Callable[[], str | None] | None = None,
    ) -> bool:
        """Until the core says the run is over, or ``limit_s`` of virtual time after time 0, or
        ``stop`` (asked every 256 events) gives a reason to end it now (unfinished jobs fail
        with that reason, as at the timeout)."""
        self._apply(self.core.start(self.heap.now))
        deadline: float | None = None
        while self.over is None:
            due = self.heap.next_time()
            if self.begun and deadline is None:
                deadline = self.heap.now + limit_s
            if due is None or (deadline is not None and due > deadline):
                reason = (
                    f"the run hit its timeout of {limit_s:.0f}s (simulated)"
                    if due is not None
                    else "the simulation ran out of events with jobs unfinished"
                )
                self.heap.now = deadline if due is not None and deadline is not None else self.heap.now
                self._apply(self.core.abort(reason, self.heap.now))
                break
            self.heap.step()
            if self.heap.popped % 256:
                continue
            if progress is not None:
                progress(self.heap.now)
            reason = stop() if stop is not None else None
            if reason is not None:
                self._apply(self.core.abort(reason, self.heap.now))
                break
        return bool(self.over)

    # ------------------------------------------------------------------ events into the core

    def _handle(self, event: ev.Event) -> None:
        self.handled += 1
        self._apply(self.core.handle(event, self.heap.now))

    def _deliver(self, node_id: str, message: Message) -> None:
        self._handle(ev.FromNode(node_id, message))

    def _staged(self, spec: TaskSpec) -> None:
        self._handle(ev.OutputStaged(spec.job_id, spec.index, spec.attempt))

    def _wake(self, at: float) -> None:
        self.wakes.discard(at)
        self._handle(ev.Wake())

    def _round(self) -> None:
        self.round_pending = False
        self.last_round = self.heap.now
        self._handle(ev.Round())

    # ------------------------------------------------------------------ commands out of it

    def _apply(self, commands: list[cmd.Command]) -> None:
        for command in commands:
            self._carry_out(command)

    def _carry_out(self, command: cmd.Command) -> None:
        heap, agents = self.heap, self.agents
        if isinstance(command, cmd.Send):
            heap.at(heap.now, DELIVER, lambda c=command: agents.command(c.node_id, c.message))
        elif isinstance(command, cmd.WantRound):
            if not self.round_pending:
                self.round_pending = True
                heap.at(max(heap.now, self.last_round + self.round_gap), ROUND, self._round)
        elif isinstance(command, cmd.WakeAt):
            if command.t not in self.wakes:
                self.wakes.add(command.t)
                heap.at(command.t, WAKE, lambda t=command.t: self._wake(t))
        elif isinstance(command, cmd.StartNode):
            agents.start(command.node_id, command.node_class)
        elif isinstance(command, cmd.KillNode):
            agents.kill(command.node_id)
        elif isinstance(command, cmd.ReleaseNode):
            agents.release(command.node_id)
        elif isinstance(command, cmd.ClusterUp):
            if not self.begun:
                self.begun = True
                heap.at(heap.now, WAKE, lambda: self._handle(ev.Begin()))
        elif isinstance(command, cmd.RunOver):
            self.over = command.ok
