"""Pado's incremental receivers below the running system: a task reads the blocks of a
streamed dependency as the feed names them, each once, until the last; the agent
hands the latest cumulative message to the worker and nothing after a last one."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path

from agents.agent import RunningAttempt
from agents.core import WorkerStarted
from testbed.wire.protocol import BlockRef, LaunchTask, TaskInputs
from testbed.workloads.base import BlockFetcher, TaskContext
from testbed.workloads.local import LOCAL
from tests.support.agents import agent
from tests.support.workloads import local_wordcount


def test_a_streamed_dependency_reads_each_committed_block_once_until_the_last(tmp_path: Path) -> None:
    """Pado's incremental receivers, the worker's side: the feed names every block committed
    so far (cumulative, possibly repeated); the task reads each once and stops at ``last``."""
    local = local_wordcount(tmp_path)
    refs = [
        BlockRef(block=local.tasks[(0, i)].spec.block_id, partition=1, locations=(LOCAL,)) for i in range(3)
    ]
    spec = local.spec(1, 1).model_copy(update={"inputs": ((refs[0],),), "streamed": (0,)})
    reading, writing = multiprocessing.Pipe(duplex=False)
    for sent, last in ((refs[:1], False), (refs[:2], False), (refs[:2], False), (refs, True)):
        writing.send({"dependency": 0, "refs": [r.model_dump() for r in sent], "last": last})
    ctx = TaskContext(spec, local.blocks, tmp_path, BlockFetcher(local.blocks, LOCAL), feed=reading)
    streamed = [frame for frame in ctx.input_frames(0)]
    plain = [frame for ref in refs for frame in BlockFetcher(local.blocks, LOCAL).frames(ref)]
    assert streamed == plain
    assert not reading.poll()  # it stopped at the last message



def test_two_streamed_dependencies_read_one_after_the_other_lose_no_message(tmp_path: Path) -> None:
    """A join's task reads its first streamed parent whole, then its second: the feed's
    messages for the second that came while it read the first are kept, not dropped (the
    task would wait for them forever)."""
    local = local_wordcount(tmp_path)
    refs = [
        BlockRef(block=local.tasks[(0, i)].spec.block_id, partition=1, locations=(LOCAL,)) for i in range(3)
    ]
    spec = local.spec(1, 1).model_copy(update={"inputs": ((refs[0],), (refs[1],)), "streamed": (0, 1)})
    reading, writing = multiprocessing.Pipe(duplex=False)
    messages = ((1, refs[1:2], False), (0, refs[:2], False), (1, refs[1:], True), (0, refs, True))
    for dependency, sent, last in messages:
        writing.send({"dependency": dependency, "refs": [r.model_dump() for r in sent], "last": last})
    ctx = TaskContext(spec, local.blocks, tmp_path, BlockFetcher(local.blocks, LOCAL), feed=reading)
    first, second = list(ctx.input_frames(0)), list(ctx.input_frames(1))
    frames = BlockFetcher(local.blocks, LOCAL).frames
    assert first == [frame for ref in refs for frame in frames(ref)]
    assert second == [frame for ref in refs[1:] for frame in frames(ref)]
    assert not reading.poll()

async def test_the_agent_feeds_the_worker_nothing_after_the_last_inputs(tmp_path: Path) -> None:
    node = agent(tmp_path)
    local = local_wordcount(tmp_path, maps=2)
    spec = local.spec(1, 0).model_copy(update={"streamed": (0,)})
    node.core.handle(LaunchTask(task=spec))  # the set-up, in the core: a pipe stands in for its worker
    reading, writing = multiprocessing.Pipe(duplex=False)
    refs = tuple(BlockRef(block=f"b{i}", partition=0, locations=(LOCAL,)) for i in range(3))

    def inputs(count: int, last: bool) -> TaskInputs:
        return TaskInputs(task_id=spec.task_id, attempt=0, dependency=0, refs=refs[:count], last=last)

    async def settled() -> None:
        """Until every write to the feed is done (each one done may start the next)."""
        while writes := [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            await asyncio.gather(*writes)

    node._handle(inputs(1, False))  # before the worker runs: kept
    node._handle(inputs(2, False))  # replaces it (cumulative)
    node.workers[(spec.task_id, 0)] = RunningAttempt(spec, None, feed=writing)
    node._handle(WorkerStarted(spec.task_id, 0))
    await settled()
    node._handle(inputs(3, True))
    await settled()
    node._handle(inputs(3, True))  # a repeat after the last: dropped
    node._handle(inputs(1, False).model_copy(update={"attempt": 1}))  # another attempt's: dropped
    await settled()
    received = []
    while reading.poll():
        received.append(reading.recv())
    assert [(len(m["refs"]), m["last"]) for m in received] == [(2, False), (3, True)]
