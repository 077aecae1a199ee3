"""What a built-in workload's folder declares: the seam the core, recovery, the simulator and
the CLI read through the registry instead of branching on a workload's name.

A built-in workload is a package ``testbed/workloads/<name>/`` and one line in
``testbed/registry.py``. Its ``__init__`` is the description (``BuiltinWorkload``): the plan
the core makes, the task functions the agents run, the logical DAG the spark and Pado
strategies recover and place by, the record size the simulator counts a generated source in,
the output check and the input generator of the CLI. Its job model (the scenario's fields) is
the one part outside the folder: ``testbed/scenario/jobs.py``, because the scenario schema is
a static pydantic union in the layer under the workloads (whose planners read the scenario).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol

from testbed.logical_dag import LogicalDag
from testbed.workloads.base import Combiner, TaskFunction

if TYPE_CHECKING:
    from testbed.plan import JobPlan


class Lineage(NamedTuple):
    """A job's logical DAG at its plan's parallelism, and the logical operators each physical
    stage runs (a fused one-to-one chain), stage by stage."""

    dag: LogicalDag
    operators: tuple[tuple[str, ...], ...]


OutputCheck = Callable[[Any, int, Path], list[str]]
"""``check(job, seed, directory)``: the problems of a job's output (empty: it is correct)."""
Generator = Callable[[Any, int, IO[bytes]], None]
"""``generate(job, seed, handle)``: the job's generated input, as a file its ``input:`` reads."""


class BuiltinWorkload(Protocol):
    """The names a built-in workload's package defines (``None``: it has none of that part)."""

    OPERATIONS: dict[str, TaskFunction]
    COMBINERS: dict[str, Combiner]
    PROFILED_STAGES: dict[str, int]
    RECORD_BYTES: int
    """Bytes of one generated source record, as the simulator sizes a source from its count."""
    check: OutputCheck | None
    generate: Generator | None

    def plan(self, job: Any, seed: int, scenario: Any) -> JobPlan: ...

    @property
    def lineage(self) -> Callable[[JobPlan], Lineage] | None: ...
