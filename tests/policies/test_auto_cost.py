"""``strategy: auto``'s loss per eviction on hand-built plans (``master/recovery/auto_cost.py``):
spark rebuilds a lost output's parents in parallel, each loss weighed by the chance that the
evicted node had it, and a reader still running reads a lost input again; a checkpoint copy is
on the critical path (booked on the reserved NICs, read back through them) and an output is
safe once its copies land; an eviction's time is distributed as the lifetime model says
within ``[0, T]``, not uniformly."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from master.recovery.auto_cost import TIMELINES, eviction_times, loss_at
from testbed.api.dag import JobDag, StageCost, StageInput, StageSpec
from testbed.plan import JobPlan
from testbed.workloads.dag import plan_dag
from tests.support.auto_strategy import pado_cluster

DETECTION = pado_cluster("high").detection_s


def source(name: str, tasks: int, mb: float, s_per_mb: float = 0.05, partitions: int = 40) -> StageSpec:
    cost = StageCost(s_per_mb, 1.0, mb / tasks)
    return StageSpec(name, "x:y", tasks, partitions, source="create", cost=cost)


def reader(name: str, tasks: int, *parents: str, partitions: int = 40) -> StageSpec:
    inputs = tuple(StageInput(p) for p in parents)
    return StageSpec(name, "x:y", tasks, partitions, inputs, cost=StageCost(0.05, 1.0))


def dag(*stages: StageSpec) -> JobPlan:
    return plan_dag("hand", JobDag(stages))


def test_spark_rebuilds_a_join_s_parents_in_parallel() -> None:
    """A join of two sources (40 tasks each: the evicted node ran one of each, and one of the
    join): its task, lost while running, starts again after the longer parent's rebuild,
    not after the two in turn (the old model charged every finished stage's task, summed)."""
    plan = dag(
        source("a", 40, 400),
        source("b", 40, 2000),
        reader("c", 40, "a", "b", partitions=1),
        reader("d", 1, "c", partitions=1),
    )
    line = TIMELINES["spark"](plan, pado_cluster("high"))
    a, b, c, _ = line.stages
    assert b.task_s > a.task_s
    t = (c.start_s + c.end_s) / 2
    expected = t + DETECTION + b.task_s + c.task_s - c.end_s
    assert loss_at(plan, line, t, DETECTION) == pytest.approx(expected, rel=1e-12)
    assert expected < t + DETECTION + a.task_s + b.task_s + c.task_s - c.end_s


def test_spark_weighs_each_loss_by_the_chance_the_node_had_it() -> None:
    """Two sources read by one final task: a of 4 long tasks (the evicted node among 40 ran
    one with the chance 4/40), b of 40 short ones (it held one of b's outputs for sure). An
    eviction while a runs costs a's restarted task by that chance; b's lost output is rebuilt
    before a ends, and costs nothing."""
    plan = dag(
        source("a", 4, 400, s_per_mb=0.5, partitions=1),
        source("b", 40, 400, partitions=1),
        reader("c", 1, "a", "b", partitions=1),
    )
    line = TIMELINES["spark"](plan, pado_cluster("high"))
    a, b, _ = line.stages
    assert line.exposed[:2] == [0.1, 1.0]
    t = (b.end_s + a.end_s) / 2
    assert t + DETECTION + b.task_s < a.end_s
    expected = 0.1 * (t + DETECTION + a.task_s - a.end_s)
    assert loss_at(plan, line, t, DETECTION) == pytest.approx(expected, rel=1e-12)


def test_a_reader_still_running_reads_a_lost_output_again() -> None:
    """A chain a -> b -> c with c one final task: whichever node runs it (the evicted one with
    the chance 1/40), it still reads b's outputs while it computes; the one the node held is
    rebuilt (a's first: the node held one of a's too), then c runs again."""
    plan = dag(source("a", 40, 800), reader("b", 40, "a", partitions=1), reader("c", 1, "b", partitions=1))
    line = TIMELINES["spark"](plan, pado_cluster("high"))
    a, b, c = line.stages
    assert line.exposed == [1.0, 1.0, 1 / 40]
    t = c.start_s + 0.25 * (c.end_s - c.start_s)
    restarted = t + DETECTION + a.task_s + b.task_s + c.task_s
    assert loss_at(plan, line, t, DETECTION) == pytest.approx(restarted - c.end_s, rel=1e-12)


def test_a_checkpoint_copy_is_on_the_critical_path() -> None:
    """spark-checkpoint with readers fetching the copies back (Pado's set-up): b starts once
    a's copies are in, booked on the 5 reserved NICs (push_overhead, then each reserved agent
    checking its fifth on one core), and reads them back through those NICs, its 40 tasks at
    once: 40 / 5 per reserved NIC's MB, not its own NIC's one."""
    setting = pado_cluster("high")
    plan = dag(source("a", 40, 1000), reader("b", 40, "a", partitions=1))
    line = TIMELINES["spark-checkpoint"](plan, setting)
    a, b = line.stages
    sim, nic = setting.simulation, setting.nic_mb_s["reserved"]
    landed = a.end_s + a.out_mb / (5 * nic) + sim.push_overhead + a.out_mb / 5 * sim.copy_receive_cpu_s_per_mb
    assert line.safe_s[0] == pytest.approx(landed, rel=1e-12) == line.available_s[0] == b.start_s
    read_back = sim.launch_overhead + b.read_mb / 40 * (0.05 + 40 / (5 * nic))
    assert b.task_s == pytest.approx(read_back, rel=1e-12)
    spark = TIMELINES["spark"](plan, setting)
    assert line.length_s > spark.length_s + (landed - a.end_s)


def test_a_landed_copy_survives_an_eviction_and_one_in_flight_is_lost_by_its_share() -> None:
    """a's task (12.6 s) outlasts its copies' landing (1.7 s): a lost copy delays b."""
    setting = pado_cluster("high")
    plan = dag(source("a", 40, 1000, s_per_mb=0.5), reader("b", 40, "a", partitions=1))
    line = TIMELINES["spark-checkpoint"](plan, setting)
    a, b = line.stages
    t = (b.start_s + b.end_s) / 2  # a's copies are in: only b's running task starts again
    assert loss_at(plan, line, t, DETECTION) == pytest.approx(t + DETECTION + b.task_s - b.end_s, rel=1e-12)
    t = a.end_s + 0.25 * (line.safe_s[0] - a.end_s)  # 3/4 of a's copies still in flight
    rebuilt = t + DETECTION + a.task_s + line.copy_s[0]
    shifted = rebuilt - line.available_s[0]
    assert shifted > 0
    assert loss_at(plan, line, t, DETECTION) == pytest.approx(0.75 * shifted, rel=1e-12)


@pytest.mark.parametrize(
    ("lifetime", "length"), [("high", 10.0), ("low", 4.0), ({"exponential": {"mean": "1h"}}, 10.0)]
)
def test_the_eviction_time_is_distributed_as_the_lifetimes_end(lifetime: object, length: float) -> None:
    """Given a lifetime ending within [0, T], its time's mean: Pado's Weibull rates (shape 0.7)
    end early, near 0.7 / 1.7 of T for T of seconds against scales of minutes, where uniform
    times (the old model's) have T / 2; an exponential's are nearly uniform. The midpoint rule
    is off by at most half a cell."""
    setting = pado_cluster(lifetime)  # type: ignore[arg-type]
    times, weights = eviction_times(setting, length)
    assert weights.sum() == pytest.approx(1.0, rel=1e-12)
    cdf = setting.lifetime.cdf_at
    within = float(cdf(np.array([length]))[0])
    exact = quad(lambda t: 1 - float(cdf(np.array([t]))[0]) / within, 0, length)[0]
    mean = float(np.dot(times, weights))
    assert abs(mean - exact) < length / 64 / 2
    weibull = lifetime in ("high", "low")
    assert abs(mean / length - (0.7 / 1.7 if weibull else 0.5)) < 0.01
