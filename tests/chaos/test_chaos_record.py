"""Live evictions are on the run's clock: refused before its time 0 and once it ends (over the
real HTTP API), and an evicted node's record ends when it was killed."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest

from master.core.events import EvictRequest, Stop
from master.shell.live_chaos import NotRunning
from master.shell.master import Master, NodeRecord
from testbed.chaos_client import ChaosClient, ChaosError
from testbed.scenario.chaos import EvictSpec
from tests.support.masters import Clock, master_with_a_node, shell_act


def master_with_nodes(tmp_path: Path, clock: Clock) -> Master:
    """A real master that launches nothing: one transient node up, three still launching."""
    master, _ = master_with_a_node(tmp_path, clock, started=False)
    for ordinal, node_class in ((1, "transient"), (2, "transient"), (0, "reserved")):
        node = NodeRecord(
            f"{node_class}-{ordinal}", node_class, ordinal, 0.0, 2, 1024, 0.3, status="launching"
        )
        master.nodes[node.node_id] = node
    return master


async def test_live_evictions_are_taken_only_between_time_zero_and_the_end(tmp_path: Path) -> None:
    clock = Clock()
    master = master_with_nodes(tmp_path, clock)
    runner = await master.api.start()
    client = ChaosClient(tmp_path)
    try:
        with pytest.raises(ChaosError) as early:
            await asyncio.to_thread(client.evict, count=1)
        assert str(early.value) == (
            "run run has not started: its cluster is coming up (1 of 4 nodes up); evictions are taken "
            "from its time 0, once every node is up; try again in a few seconds"
        )
        assert "eviction" not in event_names(tmp_path) and master.core.evictions == 0

        master.begin()  # the chaos rules start at time 0
        # taken (the only node up); its provider owns no node, so none is killed for real
        assert await asyncio.to_thread(client.evict, count=1) == ["transient-0"]
        master._handle(Stop())
        with pytest.raises(NotRunning, match="run run is ending: no more evictions"):
            await master.chaos.evict_now(EvictSpec(count=1))
    finally:
        await runner.cleanup()
        master.journal.close()


def event_names(run_dir: Path) -> list[str]:
    return [json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()]


async def test_an_evicted_node_ends_when_it_was_killed_not_when_its_loss_was_heard(tmp_path: Path) -> None:
    clock = Clock()
    master = master_with_nodes(tmp_path, clock)
    master.begin()
    node = master.nodes["transient-0"]
    clock.now += 2.0
    master._handle(EvictRequest(EvictSpec(count=1), (node.node_id,)))  # not its provider's: no kill
    clock.now += 0.5  # the broker's Last Will arrives half a second later
    shell_act(master, master.core.node_lost, node, "evicted")
    master.journal.close()
    rows = list(csv.DictReader((tmp_path / "nodes.csv").open()))
    assert [(r["node_id"], float(r["ended_wall_s"]), r["end_reason"]) for r in rows] == [
        ("transient-0", 2.0, "evicted")
    ]
