"""The settings room: a scenario compiled once, for one host, into ``RunSettings``.

``resolve(scenario, host, where)`` is the one place where ``dilation: auto`` is fixed (from
``host``, an explicit value: ``Host.this_machine()`` is read at the CLI's edge) and where the
scenario's policies are built, each with its options validated by its own ``Options`` model.
Every problem comes back at once, one line each, as a ``ScenarioError`` (exit 2); ``resolution``
gives the problems with the resolved scenario instead of raising. ``testbed validate`` is
``resolve`` (with the checks of this host: cgroups, broker, the chaos plan); ``testbed run``
calls it once and hands the settings down to the run, which builds nothing again.
"""

from testbed.settings.dilation import resolve_dilation
from testbed.settings.resolve import Resolution, resolution, resolve
from testbed.settings.run_settings import Host, Policies, RunSettings

__all__ = ["Host", "Policies", "Resolution", "RunSettings", "resolution", "resolve", "resolve_dilation"]
