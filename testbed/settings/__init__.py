"""The settings room: a scenario compiled once, for one host, into ``RunSettings``.

``resolve(scenario, host, where)`` (``testbed.settings.resolve``) is the one place where
``dilation: auto`` is fixed (from ``host``, an explicit value: ``Host.this_machine()`` is read at
the CLI's edge) and where the scenario's policies are built, each with its options validated by
its own ``Options`` model. Every problem comes back at once, one line each, as a
``ScenarioError`` (exit 2); ``resolution`` gives the problems with the resolved scenario instead
of raising. ``testbed validate`` is ``resolve`` (with the checks of this host: cgroups, broker,
the chaos plan); ``testbed run`` calls it once and hands the settings down to the run, which
builds nothing again.

This package's ``__init__`` imports nothing: the core imports the settings' types
(``run_settings``, ``cluster``, ``node_classes``), which import no scenario schema, and
importing one of them must not load the compiler (``resolve``) with the schema behind it.
"""
