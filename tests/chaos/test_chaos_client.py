"""The scripting client finds a run by its directory or by its name under ``runs/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.chaos_client import ChaosClient, ChaosError


def make_run(runs: Path, name: str) -> None:
    (runs / name).mkdir(parents=True)
    (runs / name / "master.json").write_text(json.dumps({"url": f"http://127.0.0.1:1/{name}", "token": "t"}))
    (runs / "latest").symlink_to(name)


def test_latest_is_the_latest_run_under_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_run(tmp_path / "runs", "20260101T000000Z-demo")
    monkeypatch.chdir(tmp_path)
    assert ChaosClient("latest").url.endswith("/20260101T000000Z-demo")
    assert ChaosClient("runs/latest").url.endswith("/20260101T000000Z-demo")
    assert ChaosClient("20260101T000000Z-demo").url.endswith("/20260101T000000Z-demo")


def test_a_directory_that_is_no_run_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ChaosError, match="not the directory of a running run"):
        ChaosClient("latest")
