"""The YARN-ME paper's DSS traces: the generator, the ``arrivals.dss`` section, and a
sleep task's penalty in the simulator (what the paper's simulator charges an elastic task)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.arrivals.dss import DssMix, dss_jobs
from testbed.scenario.schema import ScenarioError, parse_scenario
from tests.support.sim import rows, simulate


def test_dss_trace_stays_in_the_papers_ranges_and_is_seeded() -> None:
    jobs = dss_jobs(7, DssMix(jobs=200), cutoff_s=10)
    assert len(jobs) == 200
    assert jobs == dss_jobs(7, DssMix(jobs=200), cutoff_s=10)
    assert jobs != dss_jobs(8, DssMix(jobs=200), cutoff_s=10)
    assert [j.submit_s for j in jobs] == sorted(j.submit_s for j in jobs)
    for job in jobs:
        assert 0 <= job.submit_s < 1000 and 1 <= len(job.task_durations) < 100
        assert job.memory_mb is not None and 100 <= job.memory_mb < 10_000 and job.memory_mb % 100 == 0
        assert len(set(job.task_durations)) == 1 and 50 <= job.task_durations[0] < 500
        assert job.est_duration_s == job.task_durations[0] and job.long


def test_exponential_trace_reaches_its_maximum_once_scaled() -> None:
    jobs = dss_jobs(1, DssMix(jobs=50, distribution="exp"), cutoff_s=10)
    assert max(len(j.task_durations) for j in jobs) == 100  # DSS scales the largest draw to the max
    assert min(len(j.task_durations) for j in jobs) >= 1


def test_bad_mix_is_refused() -> None:
    with pytest.raises(ValueError, match="tasks_min"):
        DssMix(tasks_min=5, tasks_max=4)
    with pytest.raises(ValueError, match="distribution"):
        DssMix(distribution="normal")  # type: ignore[arg-type]


def test_arrivals_dss_gives_each_job_its_own_memory() -> None:
    scenario = parse_scenario({"name": "d", "seed": 4, "arrivals": {"dss": {"jobs": 5}}})
    jobs = scenario.arriving_jobs()
    expected = dss_jobs(4, DssMix(jobs=5), cutoff_s=scenario.long_cutoff)
    assert [j.memory_mb for j in jobs] == [j.memory_mb for j in expected]
    assert [j.tasks for j in jobs] == [len(j.task_durations) for j in expected]


def test_arrivals_dss_unknown_knob_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match=r"arrivals: dss: unknown knobs \['jobz'\]"):
        parse_scenario({"name": "d", "arrivals": {"dss": {"jobz": 5}}})


def test_elastic_sleep_task_runs_its_profiles_penalty_in_sim(tmp_path: Path) -> None:
    """One 1,000 MB node, two jobs of one 600 MB sleep task: YARN-ME runs the second at
    300 MB (50%: the sawtooth's lowest penalty within the 400 MB free), which the profile
    puts at 1 + 0.499567 x (3 - 1) = 2.0x its 10 s."""
    profile = str(Path(__file__).resolve().parent.parent / "scenarios/profiles/dss-sawtooth-3x.json")
    result = simulate(
        tmp_path,
        backend="sim",
        cluster={"reserved": {"count": 0}, "transient": {"count": 1, "slots": 2, "memory_mb": 1000}},
        policy={"scheduler": "yarn-me", "options": {"yarn-me": {"elastic_disk_mb_s": 1e6}}},
        profiles=[profile],
        jobs=[
            {"workload": "sleep", "tasks": 1, "duration": 10, "memory_mb": 600},
            {"workload": "sleep", "tasks": 1, "duration": 10, "memory_mb": 600, "submit_at": 0.001},
        ],
    )
    assert result.ok
    tasks = sorted(rows(result.run_dir, "tasks"), key=lambda r: float(r["start_s"]))
    assert [int(r["memory_mb"]) for r in tasks] == [600, 300]
    runtimes = [float(r["end_s"]) - float(r["start_s"]) for r in tasks]
    assert runtimes[0] == pytest.approx(10, abs=0.2)
    assert runtimes[1] == pytest.approx(19.99, abs=0.2)
