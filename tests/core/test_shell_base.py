"""Every shell has a verb for every command the core can emit (``master.core.shell_base``)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from master.core import commands as cmd
from master.core.shell_base import VERBS, Shell
from master.shell.master import Master
from master.sim.shell import SimShell
from testbed.testing.recording import RecordingShell
from testbed.testing.strategy import StrategyBench
from tests.support.driver import Driver


def subclasses(cls: type) -> set[type]:
    return {sub for direct in cls.__subclasses__() for sub in {direct, *subclasses(direct)}}


def test_the_table_names_every_command_of_the_union_once() -> None:
    assert set(VERBS) == set(get_args(cmd.Command))
    assert len(set(VERBS.values())) == len(VERBS)


def test_every_shell_has_a_verb_for_every_command() -> None:
    shells = subclasses(Shell)
    assert {Master, SimShell, RecordingShell, Driver, StrategyBench} <= shells
    for shell in shells:
        for kind in get_args(cmd.Command):
            verb = getattr(shell, VERBS[kind], None)
            assert callable(verb), f"{shell.__qualname__} has no verb for {kind.__name__}"


def test_a_shell_without_a_verb_is_refused_when_defined() -> None:
    verbs = {name: lambda self, command: None for name in VERBS.values() if name != "do_slow_node"}
    with pytest.raises(TypeError, match="Forgetful has no verb for do_slow_node"):
        type("Forgetful", (Shell,), verbs)


def naming(name: str) -> Any:
    """A verb that records its name and command in the shell's ``calls``."""
    return lambda self, command: self.calls.append((name, command))


def test_execute_calls_each_commands_verb_in_order() -> None:
    calls_shell = type("Calls", (Shell,), {name: naming(name) for name in VERBS.values()})
    commands = [cmd.WakeAt(3.0), cmd.KillNode("t0"), cmd.WantRound(), cmd.ReleaseNode("t1")]
    shell = calls_shell()
    shell.calls = []
    shell.execute(commands)
    assert shell.calls == [
        ("do_wake_at", commands[0]),
        ("do_kill_node", commands[1]),
        ("do_want_round", commands[2]),
        ("do_release_node", commands[3]),
    ]
