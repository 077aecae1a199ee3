"""``policy.options.spark-checkpoint.read_from``: where spark-checkpoint's readers read a copied
output. ``producer`` (the default) reads the producer's copy first; ``checkpoint`` fetches it
back from the stable storage (Pado, section 5.2.2), so a reader waits for every parent's copy
(or for its producer's report that the copy failed) and lists the checkpoint first."""

from __future__ import annotations

import pytest

from master.core.events import FromNode, Round
from master.policy_setup import make_strategy
from testbed.scenario.schema import ScenarioError
from testbed.wire.protocol import BlockReceived, PushDelivered, PushedPart, TaskSpec
from tests.support.driver import Driver, launches
from tests.support.scenarios import make_scenario


def wordcount(read_from: str | None) -> Driver:
    options = {} if read_from is None else {"spark-checkpoint": {"read_from": read_from}}
    scenario = make_scenario(
        policy={"strategy": "spark-checkpoint", "options": options},
        cluster={"reserved": 1, "transient": 2},
        jobs=[{"workload": "wordcount", "size_mb": 4, "maps": 2, "reduces": 1}],
    )
    driver = Driver(scenario)
    driver.boot()
    driver.do(Round())
    return driver


def maps_done(driver: Driver) -> list[tuple[str, TaskSpec]]:
    """Every map finishes; none of their copies is reported yet."""
    maps = sorted(driver.running().values(), key=lambda launch: launch[1].index)
    for node_id, spec in maps:
        driver.finish(node_id, spec)
    return maps


def received(driver: Driver, spec: TaskSpec) -> None:
    """The reserved agent reports the copy received whole (its producer has not reported yet)."""
    (target,) = spec.push
    parts = tuple(PushedPart(partition=p, nbytes=10, crc32=p) for p in target.partitions)
    block = f"{spec.task_id}.a{spec.attempt}"
    driver.do(FromNode(target.node_id, BlockReceived(node_id=target.node_id, block=block, parts=parts)))


def copy_failed(driver: Driver, node_id: str, spec: TaskSpec) -> None:
    (target,) = spec.push
    block = f"{spec.task_id}.a{spec.attempt}"
    report = PushDelivered(
        node_id=node_id, task_id=spec.task_id, attempt=spec.attempt, block=block,
        failed=(target.node_id,), error="connection reset",
    )
    driver.do(FromNode(node_id, report))


def reduce_launched(driver: Driver) -> TaskSpec | None:
    """The reduce's launch, if the core has sent it (by the end of one more round)."""
    driver.do(Round(), at=driver.now + 1)
    reduces = [spec for _, spec in launches(driver.log) if spec.stage == 1]
    return reduces[0] if reduces else None


def reserved_url(driver: Driver) -> str:
    return next(n.url for n in driver.core.nodes.values() if n.node_class == "reserved")


def test_by_default_a_reader_starts_at_once_and_reads_the_producer_first() -> None:
    driver = wordcount(None)
    maps = maps_done(driver)
    reduce = reduce_launched(driver)
    assert reduce is not None
    assert all(len(ref.locations) == 1 for ref in reduce.inputs[0])  # no copy in yet
    assert [ref.block for ref in reduce.inputs[0]] == [f"{s.task_id}.a{s.attempt}" for _, s in maps]


def test_fetching_back_waits_for_every_copy_then_reads_the_checkpoint_first() -> None:
    driver = wordcount("checkpoint")
    maps = maps_done(driver)
    assert reduce_launched(driver) is None
    received(driver, maps[0][1])
    assert reduce_launched(driver) is None  # the second copy is still in flight
    received(driver, maps[1][1])
    reduce = reduce_launched(driver)
    assert reduce is not None
    store = reserved_url(driver)
    producers = [driver.core.nodes[node_id].url for node_id, _ in maps]
    assert [ref.locations for ref in reduce.inputs[0]] == [(store, url) for url in producers]


def test_a_failed_copy_lets_its_reader_read_the_producer() -> None:
    driver = wordcount("checkpoint")
    maps = maps_done(driver)
    received(driver, maps[0][1])
    copy_failed(driver, *maps[1])
    reduce = reduce_launched(driver)
    assert reduce is not None
    producer = driver.core.nodes[maps[1][0]].url
    assert reduce.inputs[0][1].locations == (producer,)


@pytest.mark.parametrize("options", [{"read_from": "disk"}, {"read_form": "checkpoint"}])
def test_a_bad_option_is_named(options: dict[str, str]) -> None:
    scenario = make_scenario(
        policy={"strategy": "spark-checkpoint", "options": {"spark-checkpoint": options}},
        cluster={"reserved": 1, "transient": 2},
        jobs=[{"workload": "wordcount", "size_mb": 4, "maps": 2, "reduces": 1}],
    )
    with pytest.raises(ScenarioError, match=r"policy\.options\.spark-checkpoint\.read_f"):
        make_strategy(scenario)
