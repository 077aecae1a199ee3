"""Output validation: a job's output directory against an independent reference.

``check_output(job, seed, directory)`` returns the problems found (empty when the output is
correct). Each built-in workload's package has its own ``check`` (``description.BuiltinWorkload``):

- sort: like valsort, keys in order across the part files (in partition order), and the
  record count and order-independent checksum equal the input's;
- wordcount: every part sorted by word, no word in two parts, and the counts equal a plain
  single-process count of the input;
- pagerank: the ranks sum to 1 and equal a single-process scipy.sparse power iteration
  within a relative 1e-9;
- mlr: the model equals a single-process numpy gradient descent within 1e-9 of its largest
  weight (``mlr.RTOL`` says why);
- sql: the rows equal DuckDB's answer to the same query on the same files (exactly but for
  floats, to ``reference.FLOAT_TOLERANCE``; in order where the query orders);
- a workload plugin: the output lines, as a multiset, equal the plugin's reference (its
  ``reference``, else its ``map`` and ``reduce`` in one process; ``user.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.scenario.schema import PluginJob
from testbed.workloads import user
from testbed.workloads.catalog import builtin


def check_output(job: Any, seed: int, directory: Path) -> list[str]:
    directory = Path(directory)
    if not directory.is_dir():
        return [f"{directory}: no such output directory"]
    if not list(directory.glob("part-*")):
        return [f"{directory}: no part-* files"]
    if isinstance(job, PluginJob):
        return user.check_plugin(job, seed, directory)
    workload = builtin(job.workload)
    if workload is None or workload.check is None:
        return [f"no output check for workload {job.workload!r}"]
    return workload.check(job, seed, directory)
