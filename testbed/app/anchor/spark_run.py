"""One Spark run, in a process of its own (a fresh driver JVM, its ``local-cluster`` workers and
their executor processes, all gone when it ends):

    python -m testbed.app.anchor.spark_run SPEC.json RESULT.json

SPEC names the job (``wordcount``, ``sort``, ``pagerank``), its input folder, partitions and output
folder, the cluster (``executors`` of one core and ``executor_mb`` MiB each) and the kills: at
``at_s`` seconds after the job is submitted, SIGKILL the executor process in position ``victim``
among the live unprotected executors (by executor id; the first ``protected`` ids play reserved
nodes and are never killed), or once ``after_stage`` N has succeeded. RESULT gets the event log's
figures and the kills done."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from testbed.app.anchor import spark_jobs
from testbed.app.anchor.event_log import read_event_log

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
REGISTRATION_TIMEOUT_S = 180.0
POLL_S = 0.02


def live_executors(app_id: str) -> dict[int, int]:
    """Executor id -> pid of this application's executor JVMs, read from their command lines."""
    import psutil

    found = {}
    for proc in psutil.process_iter(["pid", "cmdline"]):
        args = proc.info["cmdline"] or []
        if EXECUTOR_CLASS in args and app_id in args and "--executor-id" in args:
            found[int(args[args.index("--executor-id") + 1])] = proc.info["pid"]
    return found


class Killer(threading.Thread):
    """Follows the kill plan from its start on and records what it killed. A kill comes ``at_s``
    seconds after the start, or (``after_stage``) as soon as that stage's tasks have all
    succeeded: the deterministic trigger of the test, whose victim then holds map output that
    the next stage still needs."""

    def __init__(self, sc: Any, kills: list[dict[str, Any]], protected: int) -> None:
        super().__init__(daemon=True)
        self.sc, self.app_id, self.protected = sc, sc.applicationId, protected
        self.kills = sorted(kills, key=lambda k: k.get("at_s", 0.0))
        self.start_at = time.monotonic()
        self.done: list[dict[str, Any]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        for kill in self.kills:
            if not self._wait(kill):
                return
            live = sorted(e for e in live_executors(self.app_id) if e >= self.protected)
            if not live:
                continue
            executor = live[kill["victim"] % len(live)]
            os.kill(live_executors(self.app_id)[executor], signal.SIGKILL)
            self.done.append({"at_s": round(time.monotonic() - self.start_at, 3), "executor": executor})

    def _wait(self, kill: dict[str, Any]) -> bool:
        """False if the job ended first."""
        if "after_stage" not in kill:
            return not self.stop.wait(max(0.0, self.start_at + kill["at_s"] - time.monotonic()))
        while not self.stop.wait(POLL_S):
            info = self.sc.statusTracker().getStageInfo(kill["after_stage"])
            if info is not None and info.numCompletedTasks >= info.numTasks > 0:
                return True
        return False


def session(spec: dict[str, Any], event_dir: Path, local_dir: Path) -> Any:
    from pyspark.sql import SparkSession

    mb = spec["executor_mb"]
    here = str(Path(__file__).resolve().parents[3])  # the executors' Python workers import testbed
    path = os.pathsep.join(p for p in [here, os.environ.get("PYTHONPATH")] if p)
    builder = (
        SparkSession.builder.master(f"local-cluster[{spec['executors']},1,{mb}]")
        .appName(f"anchor-{spec['job']}")
        .config("spark.executor.memory", f"{mb}m")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", event_dir.as_uri())
        .config("spark.eventLog.rolling.enabled", "false")  # one plain JSON-lines file: Spark 4
        .config("spark.eventLog.compress", "false")  # rolls and compresses by default
        .config("spark.local.dir", str(local_dir))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executorEnv.PYTHONPATH", path)
    )
    return builder.getOrCreate()


def wait_for_executors(sc: Any, wanted: int) -> None:
    deadline = time.monotonic() + REGISTRATION_TIMEOUT_S
    while sc._jsc.sc().getExecutorMemoryStatus().size() < wanted + 1:  # the driver counts too
        if time.monotonic() > deadline:
            raise TimeoutError(f"{wanted} executors did not register in {REGISTRATION_TIMEOUT_S:.0f} s")
        time.sleep(0.2)


def run_job(sc: Any, spec: dict[str, Any]) -> None:
    inputs, reduces, out = spec["inputs"], spec["reduces"], spec["out"]
    if spec["job"] == "wordcount":
        spark_jobs.run_wordcount(sc, inputs, reduces, out)
    elif spec["job"] == "sort":
        spark_jobs.run_sort(sc, inputs, reduces, out)
    elif spec["job"] == "pagerank":
        spark_jobs.run_pagerank(sc, inputs, reduces, out, spec["iterations"], spec["damping"])
    else:
        raise ValueError(f"unknown job {spec['job']!r}: wordcount, sort or pagerank")


def run(spec: dict[str, Any]) -> dict[str, Any]:
    Path(spec["out"]).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="spark-anchor-") as tmp:
        event_dir, local_dir = Path(tmp) / "events", Path(tmp) / "local"
        event_dir.mkdir()
        local_dir.mkdir()
        spark = session(spec, event_dir, local_dir)
        sc = spark.sparkContext
        sc.setLogLevel("ERROR")
        try:
            wait_for_executors(sc, spec["executors"])
            killer = Killer(sc, spec.get("kills", []), spec.get("protected", 0))
            killer.start()
            run_job(sc, spec)
            killer.stop.set()
        finally:
            spark.stop()
        if spec.get("keep_log"):
            shutil.copytree(event_dir, spec["keep_log"], dirs_exist_ok=True)
        return {"app_id": killer.app_id, "log": read_event_log(event_dir).as_dict(), "kills": killer.done}


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    Path(argv[1]).write_text(json.dumps(run(spec), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
