"""``--jobs`` and ``--dask``: a sweep's cells give the same run directories (byte for byte:
events, tables) run one at a time, on a local pool of 2 and on a real Dask ``LocalCluster`` of
2 worker processes; a Dask sweep resumes like any other; real cells run one at a time."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.app.cli import main
from testbed.app.sweep.grid import Variation
from testbed.app.sweep.options import Executor
from testbed.app.sweep.run import run_sweep

pytestmark = pytest.mark.e2e


SIM = """\
name: tiny-sim
backend: sim
timeout: 1h
cluster: {reserved: 1, transient: 3}
jobs:
  - {workload: sleep, tasks: 6, duration: 120, repeat: 3}
chaos:
  transient: {lifetime: high}
"""
VARY = [Variation.parse("jobs.0.tasks=4,8")]
FILES = ("events.jsonl", "jobs.csv", "tasks.csv", "nodes.csv")


@pytest.fixture(scope="module")
def dask_extra() -> None:
    """The dask extra, imported by the tests that need it (not at collection: a second of CPU)."""
    pytest.importorskip("distributed", reason="the dask extra: pip install '.[dask]'")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, dask_extra: None) -> Iterator[str]:
    """A real cluster of 2 worker processes; their scratch space in a temporary directory of
    the test's (by default Dask leaves ``dask-scratch-space`` in /tmp)."""
    import dask
    import distributed

    scratch = tmp_path_factory.mktemp("dask-scratch")
    with (
        dask.config.set({"temporary-directory": str(scratch)}),  # the scheduler's and workers'
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as local,
        distributed.Client(local),
    ):
        yield local.scheduler_address


def digests(out: Path) -> dict[str, str]:
    """Every cell's files' SHA-256, by cell/file."""
    return {
        f"{cell.name}/{name}": hashlib.sha256((cell / name).read_bytes()).hexdigest()
        for cell in sorted(p for p in out.iterdir() if (p / "summary.json").exists())
        for name in FILES
    }


def test_cells_are_identical_serial_pool_and_dask(tmp_path: Path, cluster: str) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SIM)
    executors = {"serial": Executor(1), "pool": Executor(2), "dask": Executor(dask=cluster)}
    results = {}
    for label, executor in executors.items():
        cells = run_sweep(scenario, VARY, 2, tmp_path / label, [], executor=executor)
        assert [c.status for c in cells] == ["ok"] * 4, label
        results[label] = digests(tmp_path / label)
    assert len(results["serial"]) == 4 * len(FILES)
    assert results["pool"] == results["serial"]
    assert results["dask"] == results["serial"]
    # the cells differ from one another (a seed and a value change the events): the check can fail
    events = {v for k, v in results["serial"].items() if k.endswith("events.jsonl")}
    assert len(events) == 4
    tables = {label: (tmp_path / label / "sweep.csv").read_text() for label in executors}
    assert tables["pool"] == tables["serial"] == tables["dask"]


def test_a_dask_sweep_resumes(tmp_path: Path, cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SIM)
    out = tmp_path / "sweep"
    args = ["sweep", str(scenario), "--vary", "jobs.0.tasks=4,8", "--out", str(out), "--dask", cluster]
    assert main(args) == 0
    before = digests(out)
    kept = out / "logs" / "tasks-4_seed-1.log"
    kept_mtime = kept.stat().st_mtime_ns
    (out / "tasks-8_seed-1" / "summary.json").unlink()  # as if interrupted in that cell
    assert main(args) == 0
    assert "resuming: 1 of 2 runs already done" in capsys.readouterr().err
    assert kept.stat().st_mtime_ns == kept_mtime
    assert digests(out) == before
    rows = {r["run"]: r["status"] for r in csv.DictReader((out / "sweep.csv").open())}
    assert rows == {"tasks-4_seed-1": "ok", "tasks-8_seed-1": "ok"}


@pytest.mark.usefixtures("dask_extra")
def test_dask_unreachable_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from testbed.wire.broker import free_port

    scenario = tmp_path / "s.yaml"
    scenario.write_text(SIM)
    address = f"tcp://127.0.0.1:{free_port()}"
    assert main(["sweep", str(scenario), "--out", str(tmp_path / "o"), "--dask", address]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"--dask {address}: cannot reach the scheduler")


REAL = """\
name: tiny-real
cluster: {reserved: 1, transient: 0, heartbeat_interval: 0.2}
jobs:
  - {workload: sleep, tasks: 1, duration: 0.5}
"""


@pytest.mark.parametrize("share_host", [False, True])
def test_real_cells_run_one_at_a_time_unless_asked(tmp_path: Path, share_host: bool) -> None:
    """With 2 slots the two real cells' runs do not overlap (a run writes its scenario.yaml
    first and its summary.json last); with ``--parallel-real`` they do."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(REAL)
    out = tmp_path / "sweep"
    executor = Executor(2, share_host=share_host)
    cells = run_sweep(scenario, [], 2, out, [], executor=executor)
    assert [c.status for c in cells] == ["ok"] * 2
    first, second = sorted(_span(out / name) for name in ("seed-1", "seed-2"))
    assert (first[1] > second[0]) is share_host


def _span(run: Path) -> tuple[int, int]:
    return (run / "scenario.yaml").stat().st_mtime_ns, (run / "summary.json").stat().st_mtime_ns
