"""Scenarios compiled the way ``testbed run`` compiles them (``testbed.settings.resolve``), for
the tests that build a core, a master or a run themselves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from testbed.scenario.schema import Scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host, RunSettings


def settings_of(scenario: Scenario, host: Host | None = None, **policies: Any) -> RunSettings:
    """``scenario`` resolved for ``host`` (default: this machine, which a real run runs on);
    ``policies``: any of its built policies (``scheduler``, ``strategy``, ``autoscaler``,
    ``speculator``) replaced by a test's own."""
    settings = resolve(scenario, host or Host.this_machine())
    return replace(settings, policies=replace(settings.policies, **policies)) if policies else settings
