"""A broadcast input read once per node (``testbed.workloads.broadcast``): the tasks of a node
reading one block by broadcast fetch it once, at once or one after another, and read the
node's copy; a recomputed block (a new attempt) is fetched again; a failed fetch leaves no
copy; a block the node holds itself is read where it is; other dependencies are fetched by
every task as before."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from testbed.wire.blocks import BlockWriter
from testbed.wire.protocol import BlockRef, TaskSpec
from testbed.workloads.base import BlockFetcher, FetchFailed, TaskContext

HOLDER = "http://holder:1"
HERE = "http://here:1"


class CountingFetcher(BlockFetcher):
    """Serves every block from "another node": three frames naming the block, slowly."""

    def __init__(self, blocks_dir: Path, fail: bool = False) -> None:
        super().__init__(blocks_dir, HERE)
        self.fetched: list[str] = []
        self.fail = fail
        self.lock = threading.Lock()

    def frames(self, ref: BlockRef) -> Iterator[bytes]:
        with self.lock:
            self.fetched.append(ref.block)
        for i in range(3):
            time.sleep(0.05)  # a fetch under way while the node's other tasks start
            if self.fail and i == 2:
                raise FetchFailed(ref.block, "its holder is gone")
            yield f"{ref.block}/{i}".encode()


def ref(block: str, *locations: str) -> BlockRef:
    return BlockRef(block=block, partition=0, locations=locations or (HOLDER,))


def task(
    node: Path, fetcher: BlockFetcher, index: int, model: BlockRef, broadcast: bool = True
) -> TaskContext:
    """Gradient task ``index`` of job j000 on the node ``node``: it reads the model (by broadcast)."""
    spec = TaskSpec(
        task_id=f"j000.s4.t{index}",
        job_id="j000",
        stage=4,
        index=index,
        attempt=0,
        op="mlr.gradient",
        memory_mb=64,
        inputs=((model,),),
        broadcast=(0,) if broadcast else (),
    )
    return TaskContext(spec, node / "blocks", node / "scratch" / spec.block_id, fetcher)


def expected(block: str) -> list[bytes]:
    return [f"{block}/{i}".encode() for i in range(3)]


def test_the_tasks_of_a_node_starting_at_once_fetch_a_broadcast_once(tmp_path: Path) -> None:
    fetcher = CountingFetcher(tmp_path / "blocks")
    model = ref("j000.s3.t0.a0")
    start = threading.Barrier(4)

    def read(index: int) -> list[bytes]:
        start.wait()
        return list(task(tmp_path, fetcher, index, model).input_frames(0))

    with ThreadPoolExecutor(4) as pool:
        frames = list(pool.map(read, range(4)))
    assert frames == [expected(model.block)] * 4
    assert fetcher.fetched == [model.block]
    assert list(task(tmp_path, fetcher, 4, model).input_frames(0)) == expected(model.block)  # a later task
    assert fetcher.fetched == [model.block]
    assert sorted(p.name for p in (tmp_path / "broadcast").glob("*.index")) == ["j000.s3.t0.a0.p0.index"]


def test_a_recomputed_block_is_fetched_again(tmp_path: Path) -> None:
    fetcher = CountingFetcher(tmp_path / "blocks")
    first, recomputed = ref("j000.s3.t0.a0"), ref("j000.s3.t0.a1", "http://elsewhere:1")
    assert list(task(tmp_path, fetcher, 0, first).input_frames(0)) == expected(first.block)
    assert list(task(tmp_path, fetcher, 1, recomputed).input_frames(0)) == expected(recomputed.block)
    assert list(task(tmp_path, fetcher, 2, recomputed).input_frames(0)) == expected(recomputed.block)
    assert fetcher.fetched == [first.block, recomputed.block]


def test_a_failed_fetch_leaves_no_copy_and_the_next_task_fetches_again(tmp_path: Path) -> None:
    failing = CountingFetcher(tmp_path / "blocks", fail=True)
    model = ref("j000.s3.t0.a0")
    with pytest.raises(FetchFailed):
        list(task(tmp_path, failing, 0, model).input_frames(0))
    assert not list((tmp_path / "broadcast").glob(f"{model.block}*"))
    fetcher = CountingFetcher(tmp_path / "blocks")
    assert list(task(tmp_path, fetcher, 1, model).input_frames(0)) == expected(model.block)
    assert fetcher.fetched == [model.block]


def test_a_broadcast_the_node_holds_is_read_where_it_is(tmp_path: Path) -> None:
    writer = BlockWriter(tmp_path / "blocks", "j000.s3.t0.a0", 1)
    writer.write(0, b"the model")
    writer.commit()
    fetcher = CountingFetcher(tmp_path / "blocks")
    model = ref("j000.s3.t0.a0", HOLDER, HERE)
    assert list(task(tmp_path, fetcher, 0, model).input_frames(0)) == [b"the model"]
    assert fetcher.fetched == [] and not (tmp_path / "broadcast").exists()


def test_other_dependencies_are_fetched_by_every_task(tmp_path: Path) -> None:
    fetcher = CountingFetcher(tmp_path / "blocks")
    model = ref("j000.s3.t0.a0")
    for index in range(2):
        assert list(task(tmp_path, fetcher, index, model, broadcast=False).input_frames(0)) == expected(
            model.block
        )
    assert fetcher.fetched == [model.block] * 2
