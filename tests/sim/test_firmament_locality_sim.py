"""Data locality on the simulator (issue 43, point 5): with ``jobs[].input_replication``,
Quincy's preference arcs send more maps to their split's holders than the trivial cost model
does, and the maps read locally are quicker (a remote split crosses the NICs); without it
summary.json has no locality figures. Bad replication is refused at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from testbed.app.cli import main
from tests.support.cli import assert_validate_refuses

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "firmament-locality.yaml"


def simulate(tmp_path: Path, name: str, cost_model: str, replication: int | None = 2) -> dict:
    scenario = yaml.safe_load(SHIPPED.read_text())
    scenario["policy"]["options"]["firmament"]["cost_model"] = cost_model
    job = scenario["jobs"][0]
    job.update(repeat=2, size_mb=512, maps=32)
    if replication is None:
        del job["input_replication"]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    assert main(["run", str(path), "--backend", "sim", "--out", str(tmp_path / name)]) == 0
    return json.loads((tmp_path / name / "summary.json").read_text())


def test_quincy_reads_more_input_locally_than_trivial(tmp_path: Path) -> None:
    trivial, quincy = (simulate(tmp_path, m, m) for m in ("trivial", "quincy"))
    for summary in (trivial, quincy):
        assert summary["succeeded"] == 2
        read = summary["input_read_bytes"]
        assert sum(read.values()) >= 2 * 512 * 1024**2  # every split read at least once
        assert summary["input_local_fraction"] == round(read["local"] / sum(read.values()), 6)
    # trivial ignores where the splits live: about 2 holders in 32 nodes, 1/16, are local
    assert trivial["input_local_fraction"] < 0.25 < 0.75 < quincy["input_local_fraction"]
    assert quincy["mean_jct_s"] < trivial["mean_jct_s"]


def test_without_replication_summary_has_no_locality(tmp_path: Path) -> None:
    summary = simulate(tmp_path, "off", "quincy", replication=None)
    assert "input_local_fraction" not in summary and "input_read_bytes" not in summary


@pytest.mark.parametrize(
    ("replication", "expected"),
    [(33, "the cluster starts with 32; lower it to at most 32"), (0, "greater than or equal to 1")],
)
def test_bad_replication_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], replication: int, expected: str
) -> None:
    scenario = yaml.safe_load(SHIPPED.read_text())
    scenario["jobs"][0]["input_replication"] = replication
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    assert_validate_refuses(path, "jobs.0.", expected, capsys)


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("local", "jobs.0.input_replication: a real run replicates file inputs only: give jobs.0.input"),
        ("docker", "jobs.0.input_replication: --backend docker does not place input replicas"),
    ],
)
def test_a_real_backend_refuses_what_it_cannot_replicate(
    capsys: pytest.CaptureFixture[str], backend: str, expected: str
) -> None:
    """Local agents copy file splits only (the shipped scenario generates its input); Docker's
    and attached nodes may not see the source files: a real run would report reads it did not do."""
    assert main(["validate", str(SHIPPED), "--backend", backend]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"{SHIPPED}: {expected}")
