"""What a resumed run rebuilds from the journal besides its jobs (issue #43's leftovers): the
observed stage means, where input replicas are, and the run's totals.

The master runs in a ``Driver`` (no process); its journal is written by the real ``Journal``
(its rounding of ``t`` included) and read back by ``recover``, as ``testbed run --resume`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from master.core.events import Round
from master.core.exposure import exposure
from master.shell.run import measured_summary
from master.summary.latency import RoundTimes
from master.summary.resumes import last_segment_only
from testbed.app.report.build import write_report
from testbed.wire.protocol import InputReads, StoreInputs
from tests.support.crash import crash, resumed
from tests.support.driver import Driver, sends
from tests.support.scenarios import make_scenario, scenario_data


def test_a_resumed_core_prices_a_pending_task_on_the_means_observed_before_the_crash(tmp_path: Path) -> None:
    """The maps of j000 finish at different times; the master dies while j001's maps are
    pending. The resumed core has the same stage means as the live one, so a pending map of
    j001 gets the same ``expected_run_s`` (not the prior's)."""
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2, "repeat": 2, "every": 30}]
    scenario = make_scenario(jobs=jobs)
    first = Driver(scenario)
    first.boot()
    first.do(Round(), at=1.0)
    for seconds, (node_id, spec) in zip(
        (2.0, 3.5, 7.25, 11.0), sorted(first.running().values(), key=str), strict=True
    ):
        first.advance(1.0 + seconds)
        first.finish(node_id, spec)
    first.advance(31.0)  # j001 arrives; its maps not launched yet
    live = first.core.durations
    assert live.totals[("wordcount", 0)][1] == 4
    crash(first, tmp_path)

    second = resumed(scenario, tmp_path)
    assert second.core.durations.totals.keys() == live.totals.keys()
    for key, (total, count) in live.totals.items():
        assert second.core.durations.totals[key] == (pytest.approx(total, abs=1e-3), count)
    pending = second.core.jobs["j001"]
    assert pending.tasks[(0, 0)].status == "pending"
    now = second.now
    expected = exposure(first.core.jobs["j001"], 0, live, now).run_s
    assert exposure(pending, 0, second.core.durations, now).run_s == expected
    assert expected != exposure(pending, 0, type(live)(), now).run_s, "the prior would price it the same"


def stored(driver: Driver) -> dict[tuple[str, str], list[int]]:
    """(job, node) -> the splits its ``inputs_stored`` names."""
    return {(e["job"], e["node"]): e["splits"] for e in driver.events("inputs_stored")}


def holders(driver: Driver, job_id: str) -> dict[tuple[str, str], list[int]]:
    """The same, from the core's placement (``InputReplication``)."""
    job = driver.core.jobs[job_id]
    index = {job.task_id((0, i)): i for i in range(job.plan.stages[0].tasks)}
    placed: dict[tuple[str, str], list[int]] = {}
    for task_id, nodes in driver.core.inputs.jobs[job_id].replicas.holders.items():
        for node in nodes:
            placed.setdefault((job_id, node), []).append(index[task_id])
    return {key: sorted(splits) for key, splits in placed.items()}


def test_input_replicas_are_journaled_and_a_resume_places_them_again_on_its_cluster(tmp_path: Path) -> None:
    source = tmp_path / "words.txt"
    source.write_text("a b c d\n" * 2000)
    jobs = [{"workload": "wordcount", "input": str(source), "maps": 4, "reduces": 2, "input_replication": 2}]
    scenario = make_scenario(jobs=jobs)
    first = Driver(scenario)
    first.boot()
    assert stored(first) == holders(first, "j000") and len(stored(first)) >= 2
    told = {(n, m.job_id): [s.block for s in m.splits] for n, m in sends(first.log, StoreInputs)}
    assert {key: len(blocks) for key, blocks in told.items()} == {
        (node, job): len(splits) for (job, node), splits in stored(first).items()
    }
    first.do(Round(), at=1.0)
    node_id, spec = min(first.running().values(), key=str)
    first.finish(node_id, spec)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    crash(first, run_dir)

    second = resumed(scenario, run_dir)
    again = stored(second)
    assert again == holders(second, "j000"), "the master's view is what it told the new agents"
    assert {node for _, node in again} <= set(second.core.nodes)
    assert not {node for _, node in again} & set(first.core.nodes), "a dead holder named again"
    assert sorted(i for splits in again.values() for i in splits) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert {n for n, _ in sends(second.log, StoreInputs)} == {node for _, node in again}


def finish_all(driver: Driver, until: str, reads: InputReads) -> None:
    """Finish what runs, round after round (each map reporting ``reads``), until job ``until``
    has finished."""
    for _ in range(50):
        driver.advance(driver.now + 0.5)
        driver.do(Round())
        for node_id, spec in sorted(driver.running().values(), key=str):
            driver.finish(node_id, spec, **({"input_reads": reads} if spec.stage == 0 else {}))
        if any(e["job"] == until for e in driver.events("job_finished")):
            return
    raise AssertionError(f"{until} did not finish")


def test_a_resumed_runs_totals_cover_the_whole_run_each_job_once_and_mark_the_resume(tmp_path: Path) -> None:
    """j000 finishes before the crash, j001 is cut short after one map reported its reads. The
    resumed run's input totals and j001's row count those reads too; summary and report count
    each job once and say where the run was resumed."""
    source = tmp_path / "words.txt"
    source.write_text("a b c d\n" * 2000)
    job = {"workload": "wordcount", "input": str(source), "maps": 2, "reduces": 1, "input_replication": 2}
    jobs = [{**job, "repeat": 2, "every": 30}]
    scenario = make_scenario(jobs=jobs)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    first = Driver(scenario, reads_reported=True)
    first.boot()
    finish_all(first, "j000", InputReads(local=100))
    (j000,) = first.events("job_finished")
    first.do(Round(), at=31.0)
    (node_id, spec), _ = sorted(first.running().values(), key=str)
    first.finish(node_id, spec, input_reads=InputReads(local=50, source=5))
    crash(first, run_dir)

    second = resumed(scenario, run_dir, reads_reported=True)
    second.run_to_end()  # what runs again reports no reads
    assert second.core.inputs.summary() == {
        "input_local_fraction": round(250 / 255, 6),
        "input_read_bytes": {"local": 250, "remote": 0, "source": 5},
    }
    (j001,) = second.events("job_finished")
    assert (j001["job"], j001["input_local_bytes"], j001["input_source_bytes"]) == ("j001", 50, 5)
    crash(second, run_dir)

    summary = measured_summary(run_dir, scenario)
    assert (summary["jobs"], summary["succeeded"]) == (2, 2)
    assert summary["max_jct_s"] >= j000["jct_s"]
    (point,) = summary["resumes"]
    assert (point["finished_jobs"], point["restored_jobs"]) == (1, 1)
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(scenario_data(jobs=jobs)))
    (run_dir / "summary.json").write_text(json.dumps(summary))
    report = write_report(run_dir)[0].read_text()
    assert "Resumed after a master crash (1 time): at 31.00 s (1 jobs finished before it" in report
    assert report.count("| j000 | wordcount | succeeded |") == 1
    (total,) = [line for line in report.splitlines() if line.startswith("| total |") and "250 B" in line]
    assert total.endswith("| 250 B | 0 B | 5 B | - |"), "the jobs' local fractions summed"


LATENCIES = (("placement_latency", "s"), ("solver_time", "s"), ("solver_time", "cpu_s"))


def test_a_resumed_summary_names_the_figures_only_its_last_segment_made() -> None:
    """The master's in-memory samples (placement latency, round times) are not journaled."""
    fields = RoundTimes(charged=False).summary([0.25, 0.5])
    names = [f"{name}_p{q}_{unit}" for name, unit in LATENCIES for q in (50, 99)]
    assert last_segment_only(fields) == {"last_segment_only": sorted(names)}
