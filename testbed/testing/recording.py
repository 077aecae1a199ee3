"""The master's core driven by hand: ``RecordingShell``, the shell of ``StrategyBench`` and of the
project's core tests.

It carries out nothing but the core's timers, its job plans (``PlanJob``, answered as the real
master answers it) and its console lines (``Log``): every command is kept in ``log``, in order, and
the earliest ``WakeAt`` not yet delivered in ``wake``; time is what its user says (``now``).
"""

from __future__ import annotations

from collections.abc import Iterable

from master.core import commands as cmd
from master.core.events import Event, Round, Wake
from master.core.machine import MasterCore
from master.core.shell_base import Shell
from master.shell import answers


class RecordingShell(Shell):
    def __init__(self, core: MasterCore) -> None:
        super().__init__()
        self.core = core
        self.planner = answers.Planner(core.settings)
        self.now = 0.0
        self.log: list[cmd.Command] = []
        """Every command the core gave (journal events, messages to nodes, ...)."""
        self.wake: float | None = None

    def handle(self, event: Event) -> list[cmd.Command]:
        """``event`` at ``now``: the commands it caused (kept), with those of the answers given
        within its turn (``PlanJob``'s ``JobPlanned``)."""
        start = len(self.log)
        self.execute(self.handle_answer(event))
        return self.log[start:]

    def handle_answer(self, event: Event) -> list[cmd.Command]:
        return self.core.handle(event, self.now)

    def execute(self, commands: Iterable[cmd.Command]) -> None:
        commands = list(commands)
        self.log.extend(commands)
        super().execute(commands)

    def advance(self, to: float) -> None:
        """Move time to ``to``, delivering every Wake asked for on the way (and a Round after
        each, as a shell's loop does)."""
        while self.wake is not None and self.wake <= to:
            self.now, self.wake = max(self.now, self.wake), None
            self.handle(Wake())
            self.handle(Round())
        self.now = max(self.now, to)

    def do_wake_at(self, command: cmd.WakeAt) -> None:
        self.wake = command.t if self.wake is None else min(self.wake, command.t)

    def do_plan_job(self, command: cmd.PlanJob) -> None:
        """Planned as the real master plans it (the job's input files are read)."""
        self.answer(self.planner.plan(command))

    def do_log(self, command: cmd.Log) -> None:
        answers.say(command)

    def _kept(self, command: cmd.Command) -> None:
        """Kept in ``log`` only: the user reads it and answers (nodes' states, probes) by hand."""

    do_send = do_journal = do_start_node = do_name_node = do_kill_node = do_slow_node = _kept
    do_release_node = do_probe = do_commit_output = do_prepare_job = do_run_file = _kept
    do_want_round = do_cluster_up = do_run_over = do_locate_output = do_evicted = _kept
