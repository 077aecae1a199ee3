"""Input replicas on real nodes (``jobs[].input_replication``): a holder's copy of a split reads
as the source does, and a map fetches it from its holders' shuffle servers, falling back to the
next holder when one breaks off mid-read, and to the source when none can serve it; the worker
counts where it read each byte (``SplitReads``: its outcome's ``input_reads``)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from aiohttp import web

from agents.shuffle import make_app
from agents.worker import execute
from testbed.wire.capabilities import block_cap
from testbed.wire.protocol import BlockRef, Codec, InputReads, InputSplit, TaskSpec, TaskUpdate, replica_block
from testbed.wire.replica_blocks import _span_chunks, span_bytes, store_replicas
from testbed.workloads.base import BlockFetcher
from testbed.workloads.replica_input import SplitReads, read_replica
from testbed.workloads.splits import read_lines_range

KEY = "node-key"
BLOCK = replica_block("j000", 0)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 3 MB of lines of random words (seeded): a split spans several 1 MB frames."""
    rng = random.Random(43)
    words = [f"w{i}" for i in range(500)]
    lines = [" ".join(words[rng.randrange(500)] for _ in range(1 + i % 30)) for i in range(120_000)]
    path = tmp_path_factory.mktemp("source") / "input.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def holder(tmp_path: Path, name: str, split: InputSplit) -> Path:
    node = tmp_path / name
    (node / "blocks").mkdir(parents=True)
    store_replicas(node, [split])
    return node


def map_spec(split: InputSplit, locations: tuple[str, ...]) -> TaskSpec:
    file = {"path": split.path, "start": split.start, "end": split.end}
    ref = BlockRef(block=split.block, partition=0, locations=locations, caps=tuple(
        block_cap(KEY, "GET", split.block) for _ in locations
    ))  # fmt: skip
    return TaskSpec(
        task_id="j000/s0/t0", job_id="j000", stage=0, index=0, attempt=0, op="wordcount.map",
        memory_mb=64, params={"file": file}, replica=ref,
    )  # fmt: skip


def as_read(params: dict) -> list[bytes]:
    file = params["file"]
    return list(read_lines_range(file["path"], file["start"], file["end"]))


@pytest.mark.parametrize("cut", [(0, 1_000_000), (123_457, 2_600_001), (2_000_000, 10_000_000)])
def test_a_local_replica_reads_as_the_source(tmp_path: Path, source: Path, cut: tuple[int, int]) -> None:
    """Splits from the file's start, mid-line at both ends, and past its end."""
    split = InputSplit(block=BLOCK, path=str(source), start=cut[0], end=cut[1])
    node = holder(tmp_path, "holder", split)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    spec = map_spec(split, ("http://holder:1",))
    reads = SplitReads()
    params = read_replica(spec, BlockFetcher(node / "blocks", "http://holder:1"), scratch, reads)
    assert params is not None and params["file"]["path"] == str(scratch / "replica.input")
    assert as_read(params) == as_read(spec.params) != []
    span = (scratch / "replica.input").stat().st_size
    assert reads.to_dict() == {"local": span, "remote": {}, "source": 0}
    assert span == span_bytes(str(source), *cut) == sum(map(len, _span_chunks(split)))


async def serve(node: Path) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(make_app(node / "blocks", KEY), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def test_a_holder_that_stops_mid_read_is_followed_by_the_next(tmp_path: Path, source: Path) -> None:
    """The first holder's copy ends after 3 MB of its nine 1 MB frames (its disk went with its
    node while it served), so it stops sending: once the read times out, the rest comes from
    the second holder, nothing twice, and the reader counts each holder's whole frames."""
    split = InputSplit(block=BLOCK, path=str(source), start=0, end=source.stat().st_size)
    first, second = holder(tmp_path, "first", split), holder(tmp_path, "second", split)
    data = first / "blocks" / f"{BLOCK}.data"
    data.write_bytes(data.read_bytes()[: 3 << 20])
    runners = [await serve(first), await serve(second)]
    reader = tmp_path / "reader"
    (reader / "scratch").mkdir(parents=True)
    try:
        spec = map_spec(split, tuple(url for _, url in runners))
        fetcher = BlockFetcher(reader / "blocks", "http://reader:1", timeout_s=2.0)
        reads = SplitReads()
        params = await asyncio.to_thread(read_replica, spec, fetcher, reader / "scratch", reads)
    finally:
        for runner, _ in runners:
            await runner.cleanup()
    assert params is not None
    assert as_read(params) == as_read(spec.params)
    assert (reader / "scratch" / "replica.input").read_bytes() == source.read_bytes()
    (first_url, second_url), size = spec.replica.locations, source.stat().st_size
    assert reads.local == reads.source == 0 and set(reads.remote) == {first_url, second_url}
    assert reads.remote[first_url] == 2 << 20  # its two frames whole within 3 MB (each framed)
    assert reads.remote[second_url] == size - (2 << 20)


async def test_a_split_no_holder_serves_is_read_from_the_source(tmp_path: Path, source: Path) -> None:
    """One holder lost its copy (HTTP 404), the other is gone (nothing listens): the source."""
    split = InputSplit(block=BLOCK, path=str(source), start=0, end=1000)
    empty = tmp_path / "empty"
    (empty / "blocks").mkdir(parents=True)
    runner, url = await serve(empty)
    gone_runner, gone = await serve(empty)
    await gone_runner.cleanup()
    try:
        spec = map_spec(split, (url, gone))
        fetcher = BlockFetcher(tmp_path / "blocks", "http://reader:1")
        reads = SplitReads()
        assert await asyncio.to_thread(read_replica, spec, fetcher, tmp_path, reads) is None
    finally:
        await runner.cleanup()
    assert not (tmp_path / "replica.input").exists()
    line_end = source.read_bytes().index(b"\n", 999) + 1  # the span runs to the end of its last line
    assert reads.to_dict() == {"local": 0, "remote": {}, "source": line_end}
    unreplicated = spec.model_copy(update={"replica": None})
    assert read_replica(unreplicated, fetcher, tmp_path) is None  # and nothing read: no count asked


def test_a_worker_reports_where_a_replicated_map_read_and_no_other_map_says_so(
    tmp_path: Path, source: Path
) -> None:
    """The real worker: a map whose node holds its split reports it read it there (its
    outcome's ``input_reads``, as the task update carries it); one the master told to read the
    source reports the source; a map of a job without replication reports nothing, and its
    update is encoded without the field, as an older master takes it."""
    split = InputSplit(block=BLOCK, path=str(source), start=0, end=500_000)
    node = holder(tmp_path, "node", split)
    own = "http://node:1"
    spec, span = map_spec(split, (own,)), span_bytes(str(source), 0, 500_000)
    local = execute(spec, node, own)
    assert local["state"] == "succeeded"
    assert local["input_reads"] == {"local": span, "remote": {}, "source": 0}
    told = {**spec.params, "input_from": {"kind": "source", "holder": "source", "bytes": 500_000}}
    told_source = spec.model_copy(update={"replica": None, "params": told})
    assert execute(told_source, node, own)["input_reads"] == {"local": 0, "remote": {}, "source": span}
    plain = execute(spec.model_copy(update={"replica": None}), node, own)
    assert plain["state"] == "succeeded" and "input_reads" not in plain
    codec = Codec()
    update = TaskUpdate(node_id="n", task_id="t", attempt=0, state="succeeded")
    assert "input_reads" not in Codec.encode(update).decode("latin-1")
    reported = update.model_copy(update={"input_reads": InputReads(**local["input_reads"])})
    assert codec.decode(Codec.encode(reported)) == reported
