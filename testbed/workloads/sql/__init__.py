"""The ``sql`` workload: a job's workflow (its query translated, or its builder's) lowered
with Musketeer's merging rules (``testbed.workflows.lowering``) and declared as a stage DAG
(``testbed.api.JobDag``: one ``StageSpec`` per lowered stage, its body
``testbed.workloads.sql_stage:stage_body``), so the strategies place and recover it as any
DAG; and its output check against DuckDB."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.api.dag import EdgeKind, JobDag, StageInput, StageSpec
from testbed.plan import Dependency, JobPlan
from testbed.scenario.inputs import resolve_inputs
from testbed.scenario.splitting import byte_ranges
from testbed.workloads.base import Combiner, TaskFunction
from testbed.workloads.dag import plan_dag

if TYPE_CHECKING:  # the SQL front-end (sqlglot, the sql extra) is imported by a sql job only
    from testbed.workflows import ir

BODY = "testbed.workloads.sql_stage:stage_body"
SPLIT_MB = 16.0
"""A table is read by one task per this many MB of its files (``splits`` overrides)."""


def file_splits(scan: ir.Scan) -> list[dict[str, Any]]:
    """A table's byte ranges (lines cut as Hadoop's text input does), one task each."""
    paths = resolve_inputs(scan.input)
    total_mb = sum(p.stat().st_size for p in paths) / 2**20
    return byte_ranges(paths, scan.splits or max(1, round(total_mb / SPLIT_MB)))


def plan(job: Any, seed: int, scenario: Any = None) -> JobPlan:
    """The job's stages (``seed`` and ``scenario`` unused: the plan is its query's)."""
    return plan_dag("sql", job_dag(lowered(job)[0]))


def lowered(job: Any) -> tuple[JobPlan, Any]:
    """The job's lowered stages, and with ``merge: auto`` the cost model's ``Choice``."""
    from testbed.workflows.cost import planned
    from testbed.workflows.sql_tables import workflow_of

    return planned(workflow_of(job), file_splits, auto=job.merge == "auto")


def job_dag(lowered: JobPlan) -> JobDag:
    """The lowered stages as a ``JobDag`` (stage ``s<i>``; its chain, output and inputs in
    its args, a source's split as its ``file``)."""
    specs = []
    for number, stage in enumerate(lowered.stages):
        inputs = tuple(StageInput(f"s{d.stage}", _edge(d, stage.tasks, lowered)) for d in stage.deps)
        args = {**stage.shared_params, "deps": [f"s{d.stage}" for d in stage.deps]}
        task_args = tuple({"file": own["split"]} for own in stage.task_params)
        specs.append(StageSpec(f"s{number}", BODY, stage.tasks, stage.partitions, inputs, args, task_args))
    return JobDag(tuple(specs))


def _edge(dep: Dependency, tasks: int, lowered: JobPlan) -> EdgeKind:
    if dep.kind == "narrow":
        return "one-to-one"
    if dep.kind == "broadcast":
        return "one-to-many"
    return "many-to-one" if tasks == 1 and lowered.stages[dep.stage].partitions == 1 else "many-to-many"


def check_sql(job: Any, seed: int, directory: Path) -> list[str]:
    """The job's output against DuckDB's answer (``testbed.workflows.reference``)."""
    from testbed.workflows import ir
    from testbed.workflows.reference import DuckdbMissing, compare, duckdb_answer, read_output
    from testbed.workflows.sql_tables import tables_of, workflow_of

    if job.query is None:
        return [f"no SQL reference for the builder workflow {job.builder}: check it in its tests"]
    root = workflow_of(job).root
    try:
        theirs = duckdb_answer(job.query, tables_of(job))
    except DuckdbMissing as err:
        return [str(err)]
    ordered = isinstance(root, ir.Sort) and bool(root.keys)
    return compare(read_output(directory, root.schema()), theirs, ordered)


OPERATIONS: dict[str, TaskFunction] = {}
"""None of its own: its stages run as the stage DAGs' op (``testbed.plan.DAG_OP``, registered
for every DAG by ``testbed.workloads``), their body ``sql_stage.stage_body``."""
COMBINERS: dict[str, Combiner] = {}
PROFILED_STAGES: dict[str, int] = {}
lineage = None
"""Its plan is a stage DAG, which the strategies read as declared (``master.recovery.stage_dags``)."""
RECORD_BYTES = 1
"""A table's split is sized in bytes."""
check = check_sql
generate = None
"""Its tables are files a user gives."""
