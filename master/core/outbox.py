"""The core's outbox and its journal: what a handler decides, buffered as commands.

``CoreJournal`` has the ``event``/``now`` API of the journal file
(``master.shell.journal_file.Journal``), so the strategies and the run's records write to it
unchanged; each call becomes a ``Journal`` command stamped with the core's time.
Events are checked against ``testbed.journal.schema``'s schema here, so a bad event fails
in the core, in a simulation as in a real run. The core journals events only: the
journal's tables are made from them by its writer (``testbed.journal.tables``).
"""

from __future__ import annotations

from typing import Any

from master.core.commands import Command, Journal, Log, LogLevel, WantRound
from testbed.journal.schema import check_event


class Outbox:
    def __init__(self) -> None:
        self.now = 0.0
        """Run seconds of the event being handled."""
        self._commands: list[Command] = []
        self._round_wanted = False
        self._news: float | None = None
        """When a round was first asked for since the last round's snapshot (``take_news``)."""

    def put(self, command: Command) -> None:
        self._commands.append(command)

    def want_round(self) -> None:
        """Ask the shell for one scheduling round: at most one ``WantRound`` is outstanding."""
        if self._news is None:
            self._news = self.now
        if not self._round_wanted:
            self._round_wanted = True
            self._commands.append(WantRound())

    def round_begins(self) -> None:
        self._round_wanted = False

    def take_news(self) -> float | None:
        """The time of the first news since the last call (None: none came): a round's
        snapshot takes it as the turn of the tasks it shows first (``master.core.turns``)."""
        news, self._news = self._news, None
        return news

    def take(self) -> list[Command]:
        commands, self._commands = self._commands, []
        return commands


class CoreJournal:
    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    def now(self) -> float:
        """Seconds since the run started (the time of the event being handled)."""
        return self.outbox.now

    def event(self, name: str, /, **fields: Any) -> None:
        check_event(name, fields)
        self.outbox.put(Journal(self.outbox.now, name, fields))

    def say(self, level: LogLevel, message: str) -> None:
        """Say ``message`` on the master's console (``Log``): what an operator watches, not journaled."""
        self.outbox.put(Log(level, message))
