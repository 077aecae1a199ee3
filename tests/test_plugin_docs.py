"""docs/plugins.md's examples, extracted and run: the policies against hand-built snapshots
here, and the scheduler in a real run in tests/e2e/test_plugin_run.py."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from tests.support.plugins import doc_files, write_doc_files


@pytest.fixture
def doc_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The doc's files in a directory of their own, importable for this test only."""
    write_doc_files(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in (
        "random_placement",
        "backlog_autoscaler",
        "evicted_to_reserved",
        "test_my_policies",
        "test_my_strategy",
        "inverted_index",
        "test_inverted_index",
        "mutual_follows",
    ):
        sys.modules.pop(module, None)


def test_the_doc_ships_a_scheduler_an_autoscaler_a_workload_their_tests_and_scenarios() -> None:
    assert set(doc_files()) == {
        "random_placement.py",
        "backlog_autoscaler.py",
        "evicted_to_reserved.py",
        "evicted.yaml",
        "test_my_policies.py",
        "test_my_strategy.py",
        "random.yaml",
        "inverted_index.py",
        "index.yaml",
        "test_inverted_index.py",
        "experiment.yaml",
        "mutual_follows.py",
        "mutual.yaml",
        "test_random_run.py",
        "backlog.yaml",
    }


def test_the_docs_own_tests_pass(doc_dir: Path) -> None:
    tests = importlib.import_module("test_my_policies")
    names = [name for name in dir(tests) if name.startswith("test_")]
    assert len(names) == 2
    for name in names:
        getattr(tests, name)()


def test_the_docs_strategy_test_passes(doc_dir: Path) -> None:
    importlib.import_module("test_my_strategy").test_what_an_eviction_sets_back_runs_on_reserved_nodes()


def test_the_docs_scheduler_is_about_30_lines() -> None:
    code = [line for line in doc_files()["random_placement.py"].splitlines() if line.strip()]
    assert len(code) <= 32


def test_the_docs_workload_test_passes(doc_dir: Path) -> None:
    importlib.import_module("test_inverted_index").test_inverted_index_matches_its_reference(doc_dir / "work")


def test_the_docs_dag_workload_equals_its_reference(doc_dir: Path) -> None:
    from testbed.scenario.schema import load_scenario
    from testbed.workloads.catalog import plan_job
    from testbed.workloads.check import check_output
    from testbed.workloads.local import LocalJob

    scenario = load_scenario(doc_dir / "mutual.yaml")
    job, seed = scenario.jobs[0], scenario.seed * 1000
    plan = plan_job(job, seed, scenario)
    kinds = [[d.kind for d in s.deps] for s in plan.stages]
    assert kinds == [[], ["shuffle"], ["shuffle"], ["narrow", "broadcast"]]
    local = LocalJob(plan, doc_dir / "work").run(1 << 20)
    assert check_output(job, seed, local.outputs) == []
    lines = [line for part in sorted(local.outputs.glob("part-*")) for line in part.read_text().splitlines()]
    assert len(lines) > 5 and {line.split("\t")[2] for line in lines} == {str(len(lines))}


@pytest.mark.parametrize("scenario", ["index.yaml", "evicted.yaml", "mutual.yaml"])
def test_the_docs_scenarios_validate(doc_dir: Path, scenario: str) -> None:
    from testbed.app.cli import main

    assert main(["validate", str(doc_dir / scenario)]) == 0
