"""The one table from the core's commands to a shell's verbs: ``Shell``.

Every shell that carries out the core's commands (the real master, the simulator's shell, the
test driver, ``StrategyBench``) subclasses ``Shell`` and implements one verb per command type
(``do_send`` for ``Send``, ...); ``execute`` dispatches through the table. ``VERBS`` must name
every type of the ``Command`` union (checked when this module loads), and a subclass must
define every verb (checked when the class is defined), so a command added to the core fails
at import until each shell has a verb for it. A shell that ignores a command says so with a
verb that does nothing.

A command whose answer the core waits for (``PlanJob``) is answered within the turn: its verb
queues the answer (``answer``), and ``execute``, once the turn's commands are carried out, hands
each queued answer to the core (``handle_answer``) and carries out what it causes, before the
shell handles any other event. The core holds its due timers meanwhile, so the run goes on as
if the answer had come inside the event that asked for it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, get_args

from master.core import commands as cmd
from master.core.events import Event

VERBS: dict[type, str] = {
    cmd.Send: "do_send",
    cmd.Journal: "do_journal",
    cmd.StartNode: "do_start_node",
    cmd.NameNode: "do_name_node",
    cmd.KillNode: "do_kill_node",
    cmd.SlowNode: "do_slow_node",
    cmd.ReleaseNode: "do_release_node",
    cmd.Probe: "do_probe",
    cmd.CommitOutput: "do_commit_output",
    cmd.PrepareJob: "do_prepare_job",
    cmd.PlanJob: "do_plan_job",
    cmd.Log: "do_log",
    cmd.RunFile: "do_run_file",
    cmd.WakeAt: "do_wake_at",
    cmd.WantRound: "do_want_round",
    cmd.ClusterUp: "do_cluster_up",
    cmd.RunOver: "do_run_over",
    cmd.LocateOutput: "do_locate_output",
    cmd.Evicted: "do_evicted",
}
"""Each command type the core emits, and the name of the verb that carries it out."""

_untabled = set(get_args(cmd.Command)) ^ set(VERBS)
if _untabled:
    raise TypeError(
        f"master.core.shell_base.VERBS and master.core.commands.Command differ in "
        f"{sorted(t.__name__ for t in _untabled)}: give each command a verb here"
    )


class Shell:
    """A shell: one ``do_<command>`` verb per command type (``VERBS``), run by ``execute``."""

    _verbs: ClassVar[dict[type, Callable[[Any, Any], None]]] = {}

    def __init__(self) -> None:
        self._answers: deque[Event] = deque()
        self._answering = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [name for name in VERBS.values() if not callable(getattr(cls, name, None))]
        if missing:
            raise TypeError(f"shell {cls.__qualname__} has no verb for {', '.join(missing)}")
        cls._verbs = {kind: getattr(cls, name) for kind, name in VERBS.items()}

    def execute(self, commands: Iterable[cmd.Command]) -> None:
        """Carry out ``commands`` in order, each by its verb."""
        verbs = self._verbs
        for command in commands:
            verbs[type(command)](self, command)
        if self._answering:
            return
        self._answering = True
        try:
            while self._answers:
                self.execute(self.handle_answer(self._answers.popleft()))
        finally:
            self._answering = False

    def answer(self, event: Event) -> None:
        """Queue ``event``, the answer to a command being carried out, for this turn."""
        self._answers.append(event)

    def handle_answer(self, event: Event) -> list[cmd.Command]:
        """The core's commands for ``event`` (an answer ``execute`` hands it), not yet carried out."""
        raise NotImplementedError(f"shell {type(self).__qualname__} answers no command")
