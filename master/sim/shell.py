"""The discrete-event shell: the master core (``MasterCore``), model agents and the clock.

It drives the core as the real shell (``master.shell.master``) does, on a virtual clock: every
event goes in with the core's run time (the heap's time less the origin ``Begin`` set), and
every command comes out carried out here. A ``Journal`` goes to the run's journal file
(``master.shell.journal_file``, the real shell's writer, which adds the table row the event makes); a
``Send`` reaches its model agent at once (as the next action of the same instant); a
``StartNode``, ``KillNode``, ``SlowNode`` or ``ReleaseNode`` is the provider's, acted on after the other
commands of the event, as a real provider's coroutines are (whether the node is ours is
asked when the command comes); a ``WakeAt`` becomes a ``Wake`` at that time, delivered
right after the first event at or past it (a real shell's loop timers run in the turn after
its handler); a ``WantRound`` a scheduling round after every other action of the instant
(the real shell's "backlog first, then the round"); a ``Probe`` is answered by the model
agent at once; a ``RunFile`` is written; a ``PlanJob`` is planned as the real shell plans it
and answered within the turn (``Shell.answer``); a ``Log`` goes to the ``master`` logger. The
agents' messages go in as ``FromNode``, unencoded: the core reads the same objects a real
shell decodes.
"""

from __future__ import annotations

import gc
import heapq
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from master.core import commands as cmd
from master.core.events import (
    Abort,
    Begin,
    Crashed,
    Event,
    FromNode,
    LinkDown,
    OutputStaged,
    ProbeAnswered,
    Round,
    RoundLanded,
    Stop,
    Wake,
)
from master.core.machine import MasterCore
from master.core.shell_base import Shell
from master.core.view import CoreView
from master.event_heap import EventHeap
from master.shell import answers
from master.shell.journal_file import Journal
from master.sim.agents import ModelAgents
from master.sim.clock import DELIVER, ROUND, WAKE
from master.summary.latency import RoundTimes
from testbed.wire.protocol import Message, TaskSpec

COLLECT_EVERY = 1 << 20
"""Events between two passes of the cycle collector while a simulation runs (``SimShell.run``)."""
AgentsOf = Callable[[EventHeap, Callable[[str, Message], None]], ModelAgents]
"""The model agents on a shell's clock: ``agents_of(heap, deliver)``."""


class SimShell(Shell):
    def __init__(
        self,
        core: MasterCore,
        run_dir: Path,
        agents_of: AgentsOf,
        round_gap: float = 0.0,
        charge_policy_time: bool = False,
    ) -> None:
        """``agents_of(heap, deliver)``: the model agents on this shell's clock; ``round_gap``:
        the least time between two rounds (what a master whose round takes that long does);
        ``charge_policy_time``: a round's time (``RoundTimes``) passes on the clock before its
        decisions take effect, and no round starts meanwhile."""
        super().__init__()
        self.core = core
        self.planner = answers.Planner(core.settings)
        self.view = CoreView(core)
        self.run_dir = run_dir
        self.round_gap = round_gap
        self.last_round = float("-inf")
        self.times = RoundTimes(charge_policy_time)
        self.busy_until = float("-inf")
        """The heap time the round in flight lands at (charged rounds only)."""
        self.heap = EventHeap()
        self.origin: float | None = None
        """The heap time that is the run's time 0 (``Begin``); None before."""
        self.journal = Journal(run_dir, clock=self.now, flush_each=False)
        """Flushed every 256 events (``run``) and at the end: a simulation is never resumed."""
        self.agents = agents_of(self.heap, self._deliver)
        self.agents.output_staged = self._staged
        self.wakes = EventHeap()
        """A ``Wake`` for each heap time a ``WakeAt`` asked for and not yet delivered (no two of
        one time): ``_due_wakes`` runs those due after every event."""
        self.provided: set[str] = set()
        """The nodes the provider has started and not yet killed or released."""
        self.provider_due: list[Callable[[], None]] = []
        """What the provider is to do once the event's other commands are carried out."""
        self.round_pending = False
        self.begun = False
        self.over: bool | None = None
        """The run's outcome once the core said it is over."""
        self.handled = 0
        """Events handed to the core (the benchmark's count)."""

    def now(self) -> float:
        """The core's run time: the heap's, less the origin once the run began."""
        return self.heap.now if self.origin is None else self.heap.now - self.origin

    def status(self) -> dict[str, Any]:
        """The run's state for the progress line (``/status``'s shape, ``master.core.view``)."""
        return {"t": round(self.now(), 3), **self.view.status()}

    def run(
        self,
        limit_s: float,
        progress: Callable[[float], None] | None = None,
        stop: Callable[[], str | None] | None = None,
    ) -> bool:
        """Until the core says the run is over, or ``limit_s`` of virtual time after time 0, or
        ``stop`` (asked every 256 events) gives a reason to end it now (unfinished jobs fail
        with that reason, as at the timeout).

        The cycle collector is off meanwhile and collects every ``COLLECT_EVERY`` events: the
        simulator's objects are freed by reference counting (a 2,000-node run of 10,500 tasks
        left 45 objects in cycles, all made at import), and the collector's automatic passes
        over every live task record were 15 to 20% of its CPU time. Each pass looks at the
        objects made since the last one only, the others frozen (``gc.freeze``) until the run
        ends: full passes over a whole run's records were 6% of sim-yarn-me-1k's CPU (1.4 GB
        of objects by its end)."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run(limit_s, progress, stop)
        finally:
            gc.unfreeze()
            if collecting:
                gc.enable()

    def _run(
        self,
        limit_s: float,
        progress: Callable[[float], None] | None,
        stop: Callable[[], str | None] | None,
    ) -> bool:
        # model nodes send no heartbeats: the core's liveness checks are off, as while its own
        # broker link is down (a killed node is heard of through its Will)
        self._handle(LinkDown())
        self._apply(self.core.start(self.now()))
        self._due_wakes()
        deadline: float | None = None
        heap = self.heap
        queue, pop = heap.queue, heapq.heappop  # ``heap.step()`` inlined: a call per event
        while self.over is None:
            due = queue[0][0] if queue else None
            if self.begun and deadline is None:
                deadline = heap.now + limit_s
            if due is None or (deadline is not None and due > deadline):
                reason = (
                    f"the run hit its timeout of {limit_s:.0f}s (simulated)"
                    if due is not None
                    else "the simulation ran out of events with jobs unfinished"
                )
                heap.now = deadline if due is not None and deadline is not None else heap.now
                self._handle(Abort(reason, journal=False))
                break
            heap.now, _, _, action = pop(queue)
            heap.popped += 1
            action()
            if heap.popped % 256:
                continue
            if not self.heap.popped % COLLECT_EVERY:
                gc.collect()  # the cycles a plugin may make
                gc.freeze()
            if progress is not None:
                progress(self.heap.now)
            reason = stop() if stop is not None else None
            self.journal.flush()
            if reason is None and self.journal.disk_full is not None:
                reason = f"the journal's disk is full ({self.journal.disk_full})"
            if reason is not None:
                self._handle(Abort(reason, journal=False))
                break
        return bool(self.over)

    def crash(self, error: Exception) -> None:
        """A policy, a strategy or a plugin raised on an event: the run ends at once, as a real
        master's does (``Crashed``)."""
        self._apply(self.core.handle(Crashed(error), self.now()))

    def finish(self) -> bool:
        """The run is over: the core stops (its nodes end with it), the end is journaled."""
        for command in self.core.handle(Stop(), self.now()):
            if isinstance(command, cmd.Journal):
                self.journal.write_event(command.t, command.kind, command.fields)
        ok = self.core.records.all_succeeded()
        self.journal.event("run_finished", status="succeeded" if ok else "failed")
        self.journal.close()
        return ok

    # ------------------------------------------------------------------ events into the core

    def _handle(self, event: Event) -> None:
        """One event in at the heap's time, its commands carried out, then the core's timers
        that are due by now (what a real shell's loop runs in the turn after the handler)."""
        self._apply(self.handle_answer(event))
        self._due_wakes()

    def handle_answer(self, event: Event) -> list[cmd.Command]:
        self.handled += 1
        return self.core.handle(event, self.now())

    def _due_wakes(self) -> None:
        wakes = self.wakes.queue
        if wakes and wakes[0][0] <= self.heap.now:
            self.wakes.run(self.heap.now)

    def _wake(self) -> None:
        self.handled += 1
        self._apply(self.core.handle(Wake(), self.now()))

    def _deliver(self, node_id: str, message: Message) -> None:
        self._handle(FromNode(node_id, message))

    def _staged(self, spec: TaskSpec) -> None:
        self._handle(OutputStaged(spec.job_id, spec.index, spec.attempt))

    def _round(self) -> None:
        self.round_pending = False
        self.last_round = self.heap.now
        started = time.thread_time()
        self._handle(Round(defer=self.times.charged))
        measured = time.thread_time() - started
        if not self.core.round.asked:
            return  # nothing was pending: no decision to time or to charge
        spent = self.times.add(measured, self.core.round.modelled_s)
        if self.core.round.in_flight is not None:
            self.busy_until = self.heap.now + spent
            self.heap.at(self.busy_until, WAKE, lambda: self._handle(RoundLanded()))

    def _begin(self) -> None:
        """Time 0: the initial cluster is up (what ``Master.begin`` does)."""
        self.origin = self.heap.now
        self._handle(Begin(self.origin))

    # ------------------------------------------------------------------ commands out of it

    def _apply(self, commands: list[cmd.Command]) -> None:
        """The commands' verbs, then what they left to the provider (after the event's other
        commands, as a real provider's coroutines run)."""
        self.execute(commands)
        provider, self.provider_due = self.provider_due, []
        for action in provider:
            action()

    def do_journal(self, command: cmd.Journal) -> None:
        self.journal.write_event(command.t, command.kind, command.fields)

    def do_send(self, command: cmd.Send) -> None:
        self.heap.at(self.heap.now, DELIVER, lambda: self.agents.command(command.node_id, command.message))

    def do_start_node(self, command: cmd.StartNode) -> None:
        self.provider_due.append(partial(self._start, command))

    def do_kill_node(self, command: cmd.KillNode) -> None:
        if command.node_id in self.provided:
            self.provider_due.append(partial(self._stop, command.node_id, self.agents.kill))

    def do_release_node(self, command: cmd.ReleaseNode) -> None:
        if command.node_id in self.provided:
            self.provider_due.append(partial(self._stop, command.node_id, self.agents.release))

    def do_slow_node(self, command: cmd.SlowNode) -> None:
        if command.node_id in self.provided:
            self.provider_due.append(partial(self.agents.slow, command.node_id, command.factor))

    def _start(self, command: cmd.StartNode) -> None:
        self.provided.add(command.node_id)
        self.agents.start(command.node_id, command.node_class)

    def _stop(self, node_id: str, stop: Callable[[str], None]) -> None:
        if node_id in self.provided:
            self.provided.discard(node_id)
            stop(node_id)

    def do_want_round(self, command: cmd.WantRound) -> None:
        if not self.round_pending:
            self.round_pending = True
            heap = self.heap
            heap.at(max(heap.now, self.last_round + self.round_gap, self.busy_until), ROUND, self._round)

    def do_wake_at(self, command: cmd.WakeAt) -> None:
        # the real shell's arithmetic (a loop timer ``t - now`` from now), so times agree
        at = self.heap.now + max(0.0, command.t - self.now())
        if all(wake[0] != at for wake in self.wakes.queue):
            self.wakes.at(at, WAKE, self._wake)
            self.heap.at(at, WAKE, self._due_wakes)

    def do_probe(self, command: cmd.Probe) -> None:
        self.heap.at(self.heap.now, DELIVER, lambda: self._answer(command))

    def do_run_file(self, command: cmd.RunFile) -> None:
        path = self.run_dir / command.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(command.text, encoding="utf-8")

    def do_cluster_up(self, command: cmd.ClusterUp) -> None:
        if not self.begun:
            self.begun = True
            self.heap.at(self.heap.now, WAKE, self._begin)

    def do_run_over(self, command: cmd.RunOver) -> None:
        self.over = command.ok

    def do_prepare_job(self, command: cmd.PrepareJob) -> None:
        """No outputs are produced in a simulation."""

    do_commit_output = do_locate_output = do_evicted = do_prepare_job

    def do_plan_job(self, command: cmd.PlanJob) -> None:
        self.answer(self.planner.plan(command))

    def do_log(self, command: cmd.Log) -> None:
        answers.say(command)

    def do_name_node(self, command: cmd.NameNode) -> None:
        """A simulation adopts no agent."""

    def _answer(self, probe: cmd.Probe) -> None:
        outcome = self.agents.probe(probe.node_id, probe.incarnation)
        self._handle(ProbeAnswered(probe.node_id, probe.purpose, outcome, probe.session))  # type: ignore[arg-type]
