"""The master's sans-I/O core: state machines that take events and time as inputs.

Nothing here does I/O, reads a clock, or imports the shell (``master.shell.master``,
its API, providers, MQTT); ``lint-imports`` checks it (pyproject.toml).
docs/architecture.md, "The sans-I/O core", describes the target and the steps.
"""
