"""The entry point of a task's worker process, kept free of heavy imports.

The agent names this function as the worker's target, so importing it must
not pull numpy and the workloads into the agent itself; the worker process
(forked from the forkserver, which preloads ``agents.worker``) imports them.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any


def run_in_worker(
    spec_data: dict[str, Any],
    node_dir: str,
    own_url: str,
    conn: Connection,
    memory_limit_mb: int | None = None,
    feed: Connection | None = None,
    cpu_group: str | None = None,
    score: Any = None,
) -> None:
    """Run the task (its memory capped, if the node says so), send one result dict, exit.
    ``feed`` brings the blocks of streamed dependencies (``TaskInputs`` as dicts) while it runs;
    ``cpu_group``: its task slot's CPU cgroup (``testbed.node.cgroups``), joined first;
    ``score``: the shared double (``multiprocessing`` ``RawValue``) its progress score goes to."""
    from pathlib import Path

    from agents.worker import execute, memory_cap
    from testbed.wire.protocol import TaskSpec

    try:
        if cpu_group is not None:
            from testbed.node.cgroups import join

            try:
                join(Path(cpu_group))
            except OSError as exc:  # never run a task beyond its slot's share unnoticed
                conn.send({"state": "failed", "failure": "error", "error": f"cannot join {cpu_group}: {exc}"})
                return
        spec = TaskSpec.model_validate(spec_data)
        with memory_cap(memory_limit_mb):
            outcome = execute(spec, Path(node_dir), own_url, feed, score)
        conn.send(outcome)
    finally:
        conn.close()


def combine_in_worker(
    op: str, members: list[str], block: str, partitions: int, node_dir: str, conn: Connection
) -> None:
    """Merge held outputs into one block (Pado's partial aggregation), send the result, exit."""
    from pathlib import Path

    from agents.worker import combine

    try:
        conn.send(combine(op, members, block, partitions, Path(node_dir)))
    finally:
        conn.close()


def warmed() -> None:
    """Nothing: a worker forked with this target shows the forkserver has preloaded the workloads."""
