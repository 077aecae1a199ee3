"""The scenario compiled for this machine (``testbed.settings.resolve`` with ``Host.this_machine()``):
the CLI's edge, where the host is read, for ``run``, ``sweep``, ``crosscheck`` and ``calibrate``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from testbed.scenario.schema import Scenario
    from testbed.settings.run_settings import RunSettings


def settings_for(scenario: Scenario, path: str) -> RunSettings:
    """The scenario compiled for this host: problems name ``path`` (a ``ScenarioError``)."""
    from testbed.settings.resolve import resolve  # late: ``testbed --help`` imports this module
    from testbed.settings.run_settings import Host

    return resolve(scenario, Host.this_machine(), path)


def host_dilation(scenario: Scenario) -> float:
    """The scenario's dilation, ``auto`` resolved for this host."""
    from testbed.settings.dilation import resolve_dilation
    from testbed.settings.run_settings import Host

    return resolve_dilation(scenario, Host.this_machine().cores).fidelity.factor


def check_settings(scenario: Scenario, path: str) -> None:
    """Compile the scenario for this host (its policies built, built-in or plugin, with their
    options): a problem is a ``ScenarioError`` whose lines name ``path``."""
    settings_for(scenario, path)
