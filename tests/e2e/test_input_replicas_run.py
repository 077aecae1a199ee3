"""Input replicas on real agents (``jobs[].input_replication``, issue 43 point 5): a wordcount
over files under Firmament's Quincy, each split on 2 nodes, one holder evicted mid-run; the
output is exact, and summary.json counts where the maps read their splits."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.workloads.check import check_output
from testbed.workloads.wordcount import read_output, reference_counts
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def write_texts(directory: Path) -> list[bytes]:
    """Four files of seeded random lines, about 1.5 MB in all."""
    rng = random.Random(4305)
    words = [f"word{i}" for i in range(2000)]
    texts = []
    for n in range(4):
        lines = (" ".join(rng.choice(words) for _ in range(1 + i % 12)) for i in range(9000))
        text = ("\n".join(lines) + "\n").encode()
        (directory / f"part{n}.txt").write_bytes(text)
        texts.append(text)
    return texts


def evict_a_holder_mid_run() -> tuple[Any, dict[str, list[str]]]:
    """When the first map finishes, evict the transient node holding the most replicas of the
    splits whose maps have not finished; ``evicted`` gets its node and the splits it held."""
    evicted: dict[str, list[str]] = {}
    finished: set[str] = set()

    def hook(master: Any, record: dict[str, Any]) -> None:
        if record["event"] != "task_finished" or record["stage"] != 0 or evicted:
            return
        finished.add(record["task"])
        holders = next(iter(master.core.inputs.jobs.values())).replicas.holders
        held: dict[str, list[str]] = {}
        for split, nodes in holders.items():
            for node in nodes:
                if split not in finished and master.core.nodes[node].node_class == "transient":
                    held.setdefault(node, []).append(split)
        node = max(sorted(held), key=lambda n: len(held[n]))
        evicted[node] = held[node]
        asyncio.get_running_loop().create_task(master.chaos.evict(node))

    return hook, evicted


async def test_wordcount_over_replicated_files_is_exact_when_a_holder_is_evicted(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    texts = write_texts(inputs)
    scenario = make_scenario(
        cluster={"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        chaos={"transient": {"lifetime": {"exponential": {"mean": "10h"}}, "replace": True}},
        policy={"scheduler": "firmament", "options": {"firmament": {"cost_model": "quincy"}}},
        jobs=[{"workload": "wordcount", "input": f"{inputs}/*.txt", "maps": 12, "reduces": 2,
               "input_replication": 2}],
    )  # fmt: skip
    hook, evicted = evict_a_holder_mid_run()
    result = await run_scenario(settings_of(scenario), tmp_path / "run", on_event=hook)
    assert result.ok, result.summary
    assert evicted and next(iter(evicted.values())), "no holder of an unfinished split was evicted"
    output = tmp_path / "run" / "outputs" / "j000"
    assert read_output(output) == reference_counts(texts)
    assert check_output(scenario.jobs[0], 7000, output) == []
    read = result.summary["input_read_bytes"]
    assert sum(read.values()) >= sum(map(len, texts)) and read["local"] > 0
    fraction = result.summary["input_local_fraction"]
    assert fraction == pytest.approx(read["local"] / sum(read.values()), abs=1e-6)
    assert_clean(tmp_path / "run")
