"""One registry per kind of part: the built-ins in one table, merged with installed plugins.

A scenario names a scheduler, a strategy, an autoscaler, a speculation rule or a workload by
a name. The built-in names are in ``BUILTINS`` (kind -> name -> ``module:Class``, the same
form an entry point's value has); a third-party package adds its own through the entry-point
group of the kind (``GROUPS``: ``transient_testbed.schedulers``, ...), found by
``importlib.metadata``. Nothing here imports the classes: ``testbed`` may not import
``master`` (the import contracts), and the table names them by import path, loaded only when
a scenario uses them (``testbed.scenario.plugins.find_plugin``).

Why a Python table and not ``[project.entry-points]`` in pyproject for the built-ins: entry
points are read from the installed distribution's metadata, so a built-in added to pyproject
would be unknown until the package is reinstalled (a checkout, a worktree, an editable install
made from another directory); two copies of the list would need a test to keep them equal.
A built-in is thus one line here, a plugin one entry point in its own package: both are
found, checked and built by the same code.
"""

from __future__ import annotations

from importlib import metadata

KINDS = ("scheduler", "strategy", "autoscaler", "speculation", "workload")
GROUPS = {
    "scheduler": "transient_testbed.schedulers",
    "strategy": "transient_testbed.strategies",
    "autoscaler": "transient_testbed.autoscalers",
    "speculation": "transient_testbed.speculation",
    "workload": "transient_testbed.workloads",
}
"""The entry-point group each kind of plugin registers under."""

BUILTINS: dict[str, dict[str, str]] = {
    "scheduler": {
        "fifo": "master.schedulers.fifo:FifoScheduler",
        "yarn": "master.schedulers.yarn:YarnScheduler",
        "yarn-me": "master.schedulers.yarn_me:YarnMeScheduler",
        "eagle": "master.schedulers.eagle:EagleScheduler",
        "firmament": "master.schedulers.firmament:FirmamentScheduler",
    },
    "strategy": {
        "spark": "master.recovery.spark:SparkStrategy",
        "spark-checkpoint": "master.recovery.spark:CheckpointStrategy",
        "pado": "master.recovery.pado:PadoStrategy",
        "auto": "master.recovery.auto:AutoStrategy",
    },
    "autoscaler": {
        "static": "master.autoscalers.static:StaticAutoscaler",
        "cloudcoaster": "master.autoscalers.cloudcoaster:CloudCoasterAutoscaler",
    },
    "speculation": {
        "none": "master.speculation:NoSpeculation",
        "hadoop": "master.speculation.rules:HadoopSpeculator",
        "late": "master.speculation.rules:LateSpeculator",
        "spark": "master.speculation.rules:SparkSpeculator",
    },
    "workload": {
        "wordcount": "testbed.workloads.wordcount",
        "sort": "testbed.workloads.sort",
        "pagerank": "testbed.workloads.pagerank",
        "mlr": "testbed.workloads.mlr",
        "sleep": "testbed.workloads.sleep",
        "noop": "testbed.workloads.noop",
        "sql": "testbed.workloads.sql",
    },
}
"""Every built-in: a policy by its class, a workload by its package (its plan, tasks, lineage,
check and generator: ``testbed.workloads.catalog.builtin``; a plugin workload is a ``testbed.api.Workload``
class instead)."""


def builtin_names(kind: str) -> tuple[str, ...]:
    """The built-in names of ``kind``, in the table's order (the scenario reference lists them)."""
    return tuple(BUILTINS[kind])


def is_builtin(kind: str, name: object) -> bool:
    """Whether ``name`` is a built-in of ``kind``; raw scenario data may hold any value here (a list,
    a number): it is no built-in, and the schema refuses it with its own message."""
    return isinstance(name, str) and name in BUILTINS[kind]


def installed(kind: str, name: str) -> metadata.EntryPoint | None:
    """The installed entry point ``name`` of ``kind``'s group, if a package registers one."""
    found = metadata.entry_points(group=GROUPS[kind], name=name)
    return next(iter(found), None)


def known(kind: str, name: str) -> bool:
    """Whether ``name`` is a built-in or an installed plugin of ``kind`` (an import path
    ``package.module:Name`` is judged when it is imported)."""
    return is_builtin(kind, name) or installed(kind, name) is not None


def listed(kind: str) -> str:
    """The built-in names of ``kind`` as a message lists them: ``fifo, yarn, ...``."""
    return ", ".join(BUILTINS[kind])
