"""Chained jobs end to end on local agents: a wordcount over files, then a wordcount over its
committed output (``after:``), with a node evicted under the child; both outputs exact against
references computed here from the original files alone (not through the testbed's code)."""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.app.cli import main
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

CLUSTER = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 5}


def write_inputs(folder: Path) -> list[Path]:
    rng = random.Random(44)
    words = ["alpha", "Beta", "gamma", "delta", "épée", "x1", "42", "under_score", "naïve", "zeta"]
    words += [f"w{i}" for i in range(3000)]
    paths = []
    for index in range(3):
        path = folder / f"text-{index}.txt"
        lines = (" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(20000))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def counts_of(texts: list[str]) -> Counter[str]:
    return Counter(token for text in texts for token in re.findall(r"[^\W_]+", text.lower()))


def read_output(folder: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for part in sorted(folder.glob("part-*")):
        for line in part.read_text(encoding="utf-8").splitlines():
            word, count = line.split("\t")
            assert word not in found
            found[word] = int(count)
    return found


def evict_under_the_child() -> tuple[Any, list[str]]:
    """Evict the node of the child's first finished map (its output is lost before the reduce)."""
    evicted: list[str] = []

    def hook(master: Any, record: dict[str, Any]) -> None:
        child_map = record["event"] == "task_finished" and record["task"].startswith("j001.s0")
        if child_map and record["class"] == "transient" and record["status"] == "succeeded" and not evicted:
            evicted.append(record["node"])
            asyncio.get_running_loop().create_task(master.chaos.evict(record["node"]))

    return hook, evicted


@pytest.mark.parametrize("strategy", ["spark", "pado"])
async def test_a_wordcount_of_a_wordcount_is_exact_under_an_eviction(tmp_path: Path, strategy: str) -> None:
    inputs = write_inputs(tmp_path)
    scenario = make_scenario(
        cluster=CLUSTER,
        policy={"strategy": strategy},
        jobs=[
            {"name": "counts", "workload": "wordcount", "input": str(tmp_path / "text-*.txt"), "reduces": 3},
            {"name": "counts-of-counts", "workload": "wordcount", "after": "counts", "maps": 4, "reduces": 2},
        ],
    )
    hook, evicted = evict_under_the_child()
    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=hook)
    assert result.ok, result.summary
    assert evicted and result.summary["evictions"] >= 1
    words = counts_of([path.read_text(encoding="utf-8") for path in inputs])
    assert read_output(run_dir / "outputs" / "j000") == words
    counts_of_counts = Counter(words.keys()) + Counter(map(str, words.values()))
    assert read_output(run_dir / "outputs" / "j001") == counts_of_counts
    assert main(["check-output", "--run", str(run_dir)]) == 0
    assert_clean(run_dir)
