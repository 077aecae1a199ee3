"""A slowed node's NIC on the simulator: both directions run its ``chaos.slowdown`` factor (times
its episode's under way) slower, as a real node's token buckets are divided
(``testbed.node.slow_episodes``); an episode begun or ended mid-transfer leaves the bookings made
as they are and the next ones take the new rate (``SharedBucket.set_rate``). Hand-built fleets
on a bare clock: links of 1,000,000 bytes a second, no burst."""

from __future__ import annotations

from typing import Any

import pytest

from master.sim.nodes import url_of
from testbed.wire.protocol import LaunchTask, Message, NodeState, PushTarget, TaskUpdate
from tests.support.model_agents import NIC_SPEC, agents, reduce_task, run_all, written_blocks
from tests.support.sim import sleep_task

ONE = 2**20 / 1e6
"""1 MiB at 1,000,000 bytes a second."""


def spec(slowed: dict[str, float]) -> dict[str, Any]:
    """``NIC_SPEC`` without its links' burst, the nodes named ``slowed`` that many times slower."""
    chaos = {"slowdown": {"nodes": slowed}} if slowed else {}
    return {**NIC_SPEC, "simulation": {**NIC_SPEC["simulation"], "link_burst": 0.0}, "chaos": chaos}


def finished(heard: list[tuple[float, str, Message]]) -> dict[str, tuple[float, TaskUpdate]]:
    return {m.task_id: (t, m) for t, _, m in heard if isinstance(m, TaskUpdate) and m.state != "running"}


@pytest.mark.parametrize("slowed", ["transient-0", "reserved-0", None])
def test_a_fetch_takes_the_factor_of_its_slowed_sender_or_receiver(slowed: str | None) -> None:
    """A reduce on transient-0 fetches 1 MiB from reserved-0: 1 s at full speed; either end of
    the transfer 2.5x slow: 2.5 s (the receiver's net-in, the sender's net-out)."""
    heap, fleet, heard = agents(spec=spec({slowed: 2.5} if slowed else {}))
    ref = written_blocks(heap, fleet)[0]
    heard.clear()
    fleet.command("transient-0", LaunchTask(task=reduce_task(0, (ref,))))
    run_all(heap)
    _, update = finished(heard)["j000.s1.t0"]
    assert update.state == "succeeded"
    assert update.metrics.fetch_s == pytest.approx(ONE * (2.5 if slowed else 1.0))


def test_a_straggler_processes_node_keeps_its_nic_and_an_episode_still_slows_it() -> None:
    """Under ``straggler: processes`` a real node's busy loops and disk writer leave its buckets
    (its NIC's) as they are: a fetch from the 2.5x node takes 1 s; an episode of 2 on it still
    divides its buckets (``testbed.node.slow_episodes``): 2 s."""
    processes = spec({"reserved-0": 2.5})
    processes["chaos"]["slowdown"]["straggler"] = "processes"
    for episode, seconds in [(None, 1.0), (2.0, 2.0)]:
        heap, fleet, heard = agents(spec=processes)
        ref = written_blocks(heap, fleet)[0]
        heard.clear()
        if episode is not None:
            fleet.slow("reserved-0", episode)
        fleet.command("transient-0", LaunchTask(task=reduce_task(0, (ref,))))
        run_all(heap)
        _, update = finished(heard)["j000.s1.t0"]
        assert update.metrics.fetch_s == pytest.approx(ONE * seconds)


@pytest.mark.parametrize(
    ("slowed", "factor"), [("transient-0", 3.0), ("reserved-0", 3.0), ("reserved-1", 1.0)]
)
def test_a_push_takes_the_factor_of_its_slowed_sender_or_receiver(slowed: str, factor: float) -> None:
    """transient-0 pushes its 1 MiB output to reserved-0: through 1 s after the map's end, and
    committed ``push_overhead`` (0.25 s) later; its sender or its receiver 3x slow: 3 s (a
    node slowed beside them, reserved-1: 1 s)."""
    heap, fleet, heard = agents(spec=spec({slowed: 3.0}))
    target = PushTarget(node_id="reserved-0", url=url_of("reserved-0"), partitions=(0,))
    params = {"generate": {"nbytes": 2**20}}
    writer = sleep_task(0, 0.0).model_copy(
        update={"final": False, "params": params, "op": "sort.map", "push": (target,)}
    )
    heard.clear()
    fleet.command("transient-0", LaunchTask(task=writer))
    run_all(heap)
    done, _ = finished(heard)["j000.s0.t0"]
    copies = [t for t, _, m in heard if not isinstance(m, (TaskUpdate, NodeState))]
    assert copies == pytest.approx([done + factor * ONE + 0.25] * 2)  # BlockReceived, PushDelivered


@pytest.mark.parametrize(("before", "during"), [(1.0, 4.0), (4.0, 1.0)])
def test_an_episode_changing_mid_fetch_leaves_its_booking_and_rates_the_next(
    before: float, during: float
) -> None:
    """A reduce on transient-0 fetches 1 MiB from reserved-0, then 1 MiB from reserved-1; the
    reader's episode factor goes from ``before`` to ``during`` a quarter of the way through
    the first: the first block comes at the rate it was booked at, the second at the new one
    (1 s + 4 s either way; at the rate in force all along, 2 s or 8 s)."""
    heap, fleet, heard = agents(spec=spec({}))
    refs = tuple(written_blocks(heap, fleet))
    heard.clear()
    fleet.slow("transient-0", before)
    fleet.command("transient-0", LaunchTask(task=reduce_task(0, refs)))
    begin = heap.now + 0.5  # its launch overhead
    heap.at(begin + before * ONE / 4, 0, lambda: fleet.slow("transient-0", during))
    run_all(heap)
    _, update = finished(heard)["j000.s1.t0"]
    assert update.state == "succeeded"
    assert update.metrics.fetch_s == pytest.approx(before * ONE + during * ONE)


def test_a_failed_fetchs_unsent_bytes_are_given_back_at_the_rate_they_were_booked_at() -> None:
    """transient-0, 4x slow in an episode, fetches 1 MiB from reserved-0: booked 4 s. The
    episode ends at 1 s, and reserved-0 is killed at 2 s: the fetch fails then, and the half
    not sent gives back its 2 s of the booking, the reader's net-in free at 2 s (given back at
    the rate now, 0.5 s: free at 3.5 s)."""
    heap, fleet, heard = agents(spec=spec({}))
    ref = written_blocks(heap, fleet)[0]
    heard.clear()
    fleet.slow("transient-0", 4.0)
    fleet.command("transient-0", LaunchTask(task=reduce_task(0, (ref,))))
    begin = heap.now + 0.5
    heap.at(begin + ONE, 0, lambda: fleet.slow("transient-0", 1.0))
    heap.at(begin + 2 * ONE, 0, lambda: fleet.kill("reserved-0"))
    run_all(heap)
    at, update = finished(heard)["j000.s1.t0"]
    assert (at, update.state, update.failure) == (pytest.approx(begin + 2 * ONE), "failed", "fetch")
    assert fleet.nodes["transient-0"].links.in_free == pytest.approx(begin + 2 * ONE)
