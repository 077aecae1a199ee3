"""Task input caching (Pado, section 3.2.7): a source read through the node's cache gives
the task exactly the same chunks, a second read never touches the source, every
source-reading op produces the same output from the cache, and the agent's LRU
deletes the files it stops keeping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from agents.core import WorkerFinished
from testbed.node.lru import LruCache
from testbed.scenario.schema import parse_scenario
from testbed.wire.protocol import Codec, Heartbeat, LaunchTask, TaskSpec, TaskUpdate
from testbed.workloads.catalog import plan_job
from testbed.workloads.input_cache import InputCache, input_cache_key
from testbed.workloads.local import LocalJob, run_task
from tests.support.agents import agent


def chunks() -> Iterator[bytes]:
    yield from (bytes([i]) * (1000 + i) for i in range(5))


def untouchable() -> Iterator[bytes]:
    raise AssertionError("a cache hit must not read the source")
    yield b""  # pragma: no cover


def test_a_miss_keeps_the_source_and_a_hit_serves_it_without_reading_it(tmp_path: Path) -> None:
    (tmp_path / "s1").mkdir()
    (tmp_path / "s2").mkdir()
    miss = InputCache(tmp_path / "cache", tmp_path / "s1")
    assert list(miss.read("k", chunks())) == list(chunks())
    assert miss.report is not None and not miss.report.hit
    assert miss.report.nbytes == (tmp_path / "cache" / "k").stat().st_size
    hit = InputCache(tmp_path / "cache", tmp_path / "s2")
    assert list(hit.read("k", untouchable())) == list(chunks())
    assert hit.report is not None and hit.report.hit and hit.report.nbytes == miss.report.nbytes


def test_a_read_abandoned_midway_caches_nothing(tmp_path: Path) -> None:
    cache = InputCache(tmp_path / "cache", tmp_path)
    reader = cache.read("k", chunks())
    next(reader)
    reader.close()
    assert cache.report is None and not (tmp_path / "cache" / "k").exists()


def test_the_key_names_the_source_and_the_op_only() -> None:
    source = {"file": {"path": "/d/a", "start": 0, "end": 10}}
    key = input_cache_key("sort.map", {**source, "boundaries": ["00"]})
    assert key == input_cache_key("sort.map", {**source, "boundaries": ["ff"]})
    assert key != input_cache_key("wordcount.map", source)
    assert key != input_cache_key("sort.map", {"file": {**source["file"], "end": 11}})
    assert input_cache_key("pagerank.links", {}) is None


JOBS: list[dict[str, Any]] = [
    {"workload": "wordcount", "size_mb": 0.3, "maps": 2, "reduces": 2},
    {"workload": "sort", "size_mb": 0.3, "maps": 2, "reduces": 2},
    {"workload": "pagerank", "nodes": 500, "edges": 3000, "iterations": 1, "maps": 2, "reduces": 2},
    {"workload": "pagerank", "input": "named.tsv", "iterations": 1, "maps": 2, "reduces": 2},
]


@pytest.mark.parametrize("job", JOBS, ids=lambda j: j["workload"] + ("-named" if "input" in j else ""))
def test_every_source_reading_op_gives_the_same_output_from_the_cache(tmp_path: Path, job: dict) -> None:
    if "input" in job:
        (tmp_path / job["input"]).write_text("".join(f"n{i} pkg-{i * 7 % 300}\n" for i in range(3000)))
        job = {**job, "input": str(tmp_path / job["input"])}
    scenario = parse_scenario({"name": "t", "jobs": [job]})
    local = LocalJob(plan_job(scenario.jobs[0], 5, scenario), tmp_path)
    plain = local.spec(0, 1, memory_mb=16)
    cached = plain.model_copy(update={"input_cache_mb": 8})
    runs = [
        run_task(spec.model_copy(update={"attempt": attempt}), tmp_path)
        for attempt, spec in enumerate((plain, cached, cached))
    ]
    outputs = [(tmp_path / "blocks" / f"{r.spec.block_id}.data").read_bytes() for r in runs]
    assert outputs[0] == outputs[1] == outputs[2]
    assert [(r.metrics.cache_hits, r.metrics.cache_misses) for r in runs] == [(0, 0), (0, 1), (1, 0)]
    (cache_file,) = (tmp_path / "cache").iterdir()
    assert runs[2].metrics.cache_bytes_read == cache_file.stat().st_size > 0


def test_the_agent_lru_deletes_the_files_it_stops_keeping(tmp_path: Path) -> None:
    node = agent(tmp_path)
    node.core.input_cache = LruCache(250)
    node._publish_update = lambda update: None  # type: ignore[method-assign]  # no broker here
    (tmp_path / "cache").mkdir()
    for key in ("a", "b", "c", "big"):
        (tmp_path / "cache" / key).write_bytes(b"x")

    def cache_accessed(key: str, nbytes: int) -> None:
        """A task that read ``key`` through the cache ends (launched in the core: no worker)."""
        index = len(node.core.finished)
        task = TaskSpec(
            task_id=f"j.s0.t{index}", job_id="j", stage=0, index=index, attempt=0, op="sleep.run", memory_mb=1
        )
        node.core.handle(LaunchTask(task=task))
        outcome = {"state": "succeeded", "cache": {"key": key, "nbytes": nbytes}}
        node._handle(WorkerFinished(task.task_id, 0, outcome))

    cache_accessed("a", 100)
    cache_accessed("b", 100)
    cache_accessed("a", 100)  # a hit: b is now the least recent
    cache_accessed("c", 100)  # evicts b
    cache_accessed("big", 300)  # larger than the whole cache: not kept
    assert [c.key for c in node.core.cached_inputs()] == ["a", "c"]
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["a", "c"]


def test_messages_without_a_cache_report_still_decode() -> None:
    codec = Codec()
    beat = Heartbeat(node_id="n", incarnation="i", seq=1)
    update = TaskUpdate(node_id="n", task_id="j.s0.t0", attempt=0, state="succeeded")
    for message in (beat, update):
        payload = message.model_dump(mode="python")
        del payload["cached_inputs"]
        assert codec.decode(codec.encode(message)).cached_inputs is None
        assert codec.decode(msgpack.packb(payload)).cached_inputs is None
