"""A stage's duration prior (``master.stage_prior``): the execution model's uncontended attempt of
the stage, which the shell gives with a job's plan when the scheduler reads the exposure."""

from __future__ import annotations

import pytest

from master.core import commands as cmd
from master.core.events import JobPlanned
from master.shell import answers
from master.stage_prior import StagePrior
from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host, RunSettings
from tests.support.scenarios import make_scenario

MB = 2**20
TRANSIENT = {"scheduler": "firmament", "options": {"firmament": {"cost_model": "transient"}}}
SIMULATION = {"ops": {"wordcount.map": {"s_per_mb": 0.5, "output_ratio": 0.25, "fixed_s": 0.1}}}
"""A map of 2 s per 4 MB split plus 0.1 s, writing a quarter of its split."""


def settings(**fields: object) -> RunSettings:
    jobs = [{"workload": "wordcount", "size_mb": 16, "maps": 4, "reduces": 2}]
    scenario = make_scenario(jobs=jobs, policy=TRANSIENT, simulation=SIMULATION, **fields)
    return resolve(scenario, Host(2.0))


def planned(run: RunSettings) -> JobPlanned:
    answer = answers.plan(cmd.PlanJob(0, run.jobs[0], run.seed), run)
    assert isinstance(answer, JobPlanned)
    return answer


def test_each_stage_is_one_uncontended_attempt_of_the_execution_model() -> None:
    run = settings()
    prior = planned(run).stage_prior_s
    launch = run.scenario.simulation.launch_s(run.cluster["reserved"].cores)
    reduce_mb = 4 * 0.25 * 4 / 2  # a partition of each map's 1 MB output (2 partitions)
    nic = run.scenario.cluster.reserved.network_mbps * 1e6 / 8
    reduce_compute = run.scenario.simulation.op("wordcount.reduce").s_per_mb * reduce_mb
    assert prior[0] == pytest.approx(launch + 0.1 + 0.5 * 4)
    assert prior[1] == pytest.approx(launch + reduce_mb * MB / nic + reduce_compute)


def test_a_real_run_stretches_it_by_its_dilation() -> None:
    """The model is in emulated seconds; a node of a run dilated 3 times runs 3 times slower."""
    simulated = planned(settings()).stage_prior_s
    dilated = planned(settings(fidelity={"mode": "faithful", "dilation": 3})).stage_prior_s
    assert dilated == pytest.approx(tuple(3 * seconds for seconds in simulated))


def test_a_scheduler_that_reads_no_exposure_gets_no_prior() -> None:
    scenario = make_scenario(policy={"scheduler": "firmament"})  # quincy
    assert planned(resolve(scenario, Host(2.0))).stage_prior_s == ()


def test_narrow_and_broadcast_parents_are_read_whole() -> None:
    """A narrow reader reads one parent task's output, a broadcast one every parent's."""
    run = settings()
    source = StagePlan(
        "wordcount.map",
        4,
        partitions=2,
        task_params=tuple({"generate": {"nbytes": 4 * MB}} for _ in range(4)),
    )
    narrow = StagePlan("wordcount.reduce", 4, deps=(Dependency(0, "narrow"),))
    broadcast = StagePlan("wordcount.reduce", 2, deps=(Dependency(0, "broadcast"),), final=True)
    shuffle = StagePlan("wordcount.reduce", 2, deps=(Dependency(0, "shuffle"),), final=True)
    prior = StagePrior(run)
    _, one, every = prior.of(JobPlan("wordcount", (source, narrow, broadcast)), (64, 64, 64))
    _, half = prior.of(JobPlan("wordcount", (source, shuffle)), (64, 64))
    assert one < half < every  # 1 MB, 2 MB, 4 MB
