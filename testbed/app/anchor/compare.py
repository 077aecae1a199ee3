"""The anchor's two sides on one job: the scenario ours runs, the spec Spark runs, and the check
that their outputs are equal. (Running ours needs the master, so the benchmark and the test do
that; this module runs only Spark, in a process of its own.)"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from testbed.app.anchor import inputs
from testbed.scenario.schema import PagerankJob, SortJob, WordcountJob
from testbed.workloads import sort, wordcount
from testbed.workloads.pagerank import reference as pagerank_reference

MISSING = "pyspark is not installed: pip install 'transient-testbed[spark]' (and a Java 17 runtime)"
SPARK_RUN_TIMEOUT_S = 900.0
RESERVED = 1
"""Nodes that play reserved ones: never evicted (Spark: the lowest executor ids)."""


WRITERS = {"wordcount": inputs.write_wordcount, "sort": inputs.write_sort, "pagerank": inputs.write_pagerank}
Entries = list[dict[str, Any]]
"""Storms of a scenario, or kills of a Spark run."""


def pyspark_missing() -> str | None:
    """Why the anchor cannot run here, or None."""
    return None if importlib.util.find_spec("pyspark") else MISSING


def write_input(kind: str, params: dict[str, Any], seed: int, folder: Path) -> dict[str, Any]:
    """Our generator's input for ``kind`` written as one file a split; the job entry reading it."""
    model = {"wordcount": WordcountJob, "sort": SortJob, "pagerank": PagerankJob}[kind]
    job = model(workload=kind, **params)
    writer = {
        "wordcount": inputs.write_wordcount,
        "sort": inputs.write_sort,
        "pagerank": inputs.write_pagerank,
    }
    files = writer[kind](job, seed, folder)
    entry = {"workload": kind, "input": str(folder), "maps": len(files), "reduces": job.reduces}
    if kind == "pagerank":
        entry |= {"iterations": job.iterations, "damping": job.damping}
    return entry


def scenario_data(
    entry: dict[str, Any], transient: int, storms: list[dict[str, Any]], seed: int
) -> dict[str, Any]:
    """One job on ``RESERVED`` + ``transient`` single-slot nodes; evicted nodes are replaced at
    once, as Spark's standalone worker relaunches a lost executor."""
    return {
        "name": f"anchor-{entry['workload']}",
        "seed": seed,
        "cluster": {
            "reserved": {"count": RESERVED, "slots": 1},
            "transient": {"count": transient, "slots": 1},
        },
        "policy": {"scheduler": "fifo", "strategy": "spark"},
        "chaos": {"transient": {"replace": True, "provisioning_delay": 0}, "storms": storms},
        "jobs": [entry],
        "timeout": 900,
    }


def spark_spec(
    entry: dict[str, Any], executors: int, out: Path, kills: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "job": entry["workload"],
        "inputs": entry["input"],
        "reduces": entry["reduces"],
        "iterations": entry.get("iterations", 0),
        "damping": entry.get("damping", 0.85),
        "out": str(out),
        "executors": executors,
        "executor_mb": 512,
        "protected": RESERVED,
        "kills": kills,
    }


def run_spark(spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Runs ``spark_run`` on ``spec``; its result (event-log figures, kills done)."""
    workdir.mkdir(parents=True, exist_ok=True)
    spec_file, result_file = workdir / "spec.json", workdir / "result.json"
    spec_file.write_text(json.dumps(spec))
    command = [sys.executable, "-m", "testbed.app.anchor.spark_run", str(spec_file), str(result_file)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=SPARK_RUN_TIMEOUT_S, check=False)
    (workdir / "spark.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"spark_run failed ({done.returncode}); its log: {workdir / 'spark.log'}")
    return json.loads(result_file.read_text())


def output_differences(kind: str, ours: Path, spark: Path) -> list[str]:
    """Where Spark's output differs from ours (empty when equal; PageRank within 1e-9)."""
    if kind == "wordcount":
        a, b = wordcount.read_output(ours), wordcount.read_output(spark)
        wrong = sorted(w for w in a.keys() | b.keys() if a[w] != b[w])
        return [f"{len(wrong)} words differ, e.g. {wrong[:3]}"] if wrong else []
    if kind == "sort":
        a, b = sort.read_output(ours).comparable(), sort.read_output(spark).comparable()
        return [] if a == b else [f"(records, checksum, ordered): ours {a}, Spark {b}"]
    x, y = pagerank_reference.read_output(ours), pagerank_reference.read_output(spark)
    return [] if x.matches(y) else [f"ranks differ: {len(x.ids)} nodes ours, {len(y.ids)} Spark's"]
