"""Masters and cores driven by hand: one never started, an operation applied from outside ``handle``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from master.core.nodes import NodeRecord
from master.providers.local import LocalProvider
from master.shell.master import Master
from testbed.scenario.schema import Scenario
from testbed.wire.mqtt import BrokerAddress
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

if TYPE_CHECKING:
    from master.core.commands import Command
    from master.core.machine import MasterCore
    from master.shell.master import Master


def offline_master(scenario: Scenario, run_dir: Path, **options: Any) -> Master:
    """A master that is never started: no broker, no provider, no agents. Tests drive its
    handlers directly."""
    from master.shell.master import Master
    from testbed.wire.mqtt import BrokerAddress

    return Master(
        settings_of(scenario),
        "offline",
        run_dir,
        provider=None,  # type: ignore[arg-type]
        broker=BrokerAddress("127.0.0.1", 1),
        token="t",
        agent_command=lambda node_id, node_class: [],
        **options,
    )


def core_act(core: MasterCore, now: float, operation: Any, *args: Any) -> tuple[Any, list[Command]]:
    """Apply one of the core's operations at ``now`` from outside ``handle`` (a test reaching
    into one of its parts): the operation's result and the commands it caused."""
    core.outbox.now = now
    result = operation(*args)
    return result, core._commands()


def shell_act(master: Master, operation: Any, *args: Any) -> Any:
    """The same on a master's core now, its commands carried out by the master (journal, sends)."""
    result, commands = core_act(master.core, master.journal.now(), operation, *args)
    master.execute(commands)
    return result


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def master_with_a_node(tmp_path: Path, clock: Clock, started: bool = True) -> tuple[Master, NodeRecord]:
    """``started``: the run's time 0 has passed (else the cluster is still starting)."""
    master = Master(
        settings_of(make_scenario(chaos={"transient": {"replace": False}})),  # nothing to launch here
        "run",
        tmp_path,
        provider=LocalProvider("run", tmp_path / "nodes"),  # it owns no node: nothing to kill
        broker=BrokerAddress.parse("mqtt://127.0.0.1:1"),
        token="t",
        agent_command=lambda node_id, node_class: [],
    )
    master.journal.clock = clock
    if started:
        master.begin()
    else:
        master.journal.t0 = clock()
    node = NodeRecord("transient-0", "transient", 0, 0.0, 2, 1024, 0.3, status="up")
    master.nodes[node.node_id] = node
    return master, node
