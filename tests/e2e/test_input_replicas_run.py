"""Input replicas on real agents (``jobs[].input_replication``, issue 43 point 5): a wordcount
over files under Firmament's Quincy, each split on 2 nodes, one holder evicted mid-run; the
output is exact, and the maps' workers report that they read their splits from the replicas
their launches offered (their own node's and remote ones), none from the source while a holder
lived; summary.json and jobs.csv count those reads."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.journal.schema import read_events
from testbed.journal.tables import read_table
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
    reads = assert_read_from_replicas(tmp_path / "run", set(evicted))
    read = result.summary["input_read_bytes"]
    assert read == reads and read["local"] > 0 and read["remote"] > 0 and read["source"] == 0
    assert sum(read.values()) >= sum(map(len, texts))  # each split's span once at least
    fraction = result.summary["input_local_fraction"]
    assert fraction == pytest.approx(read["local"] / sum(read.values()), abs=1e-6)
    (row,) = read_table(tmp_path / "run" / "jobs.csv", "jobs")
    assert [int(row[f"input_{kind}_bytes"]) for kind in read] == list(read.values())
    attempts = [task for task in read_table(tmp_path / "run" / "tasks.csv", "tasks") if task["stage"] == "0"]
    per_attempt = {kind: sum(int(task[f"input_{kind}_bytes"] or 0) for task in attempts) for kind in read}
    assert per_attempt == read  # tasks.csv's attempts add up to the job's reads
    assert_clean(tmp_path / "run")


def assert_read_from_replicas(run_dir: Path, evicted: set[str]) -> dict[str, int]:
    """Every map attempt that ended read its split where its launch's read plan said it could
    (its own node only if a holder, remote holders only among those offered), and nothing
    from the source where a holder it was offered lived on; every map that succeeded reported.
    The reported bytes, summed by where they were read."""
    events = read_events(run_dir / "events.jsonl").events
    plans = {(e["task"], e["attempt"]): e["read_plan"] for e in events if e["event"] == "task_started"
             and e["stage"] == 0}  # fmt: skip
    assert plans and all(plans.values()), "a map was offered no holder: read_plan missing or empty"
    assert_holders_were_told(events)
    totals = {"local": 0, "remote": 0, "source": 0}
    ended = [e for e in events if e["event"] == "task_finished" and e["stage"] == 0 and e["status"] != "lost"]
    assert any(e["status"] == "succeeded" for e in ended)
    for end in ended:
        reads, plan = end.get("input_reads"), plans[(end["task"], end["attempt"])]
        assert reads is not None or end["status"] != "succeeded", f"{end['task']} did not say where it read"
        if reads is None:
            continue
        assert set(reads["remote"]) <= set(plan) - {end["node"]}, (end["task"], reads, plan)
        assert reads["local"] == 0 or end["node"] in plan, (end["task"], reads, plan)
        if set(plan) - evicted:
            assert reads["source"] == 0, f"{end['task']} read the source, a holder of {plan} alive: {reads}"
        for kind, nbytes in (("local", reads["local"]), ("remote", sum(reads["remote"].values())),
                             ("source", reads["source"])):  # fmt: skip
            totals[kind] += nbytes
    return totals


def assert_holders_were_told(events: list[dict]) -> None:
    """Every holder a map's launch offered was told it holds that split (``inputs_stored``)."""
    told: dict[tuple[str, int], set[str]] = {}
    for event in events:
        if event["event"] == "inputs_stored":
            for index in event["splits"]:
                told.setdefault((event["job"], index), set()).add(event["node"])
    for start in (e for e in events if e["event"] == "task_started" and e["stage"] == 0):
        assert set(start["read_plan"]) <= told.get((start["job"], start["index"]), set()), start
