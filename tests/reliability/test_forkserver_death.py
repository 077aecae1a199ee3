"""An agent's task forkserver dies while a worker start waits on it: the task still ends.

The forkserver is frozen (SIGSTOP), a task is launched, and once the agent's
start is blocked reading the new worker's pid, the forkserver is SIGKILLed:
the start fails with EOFError. The agent must start a new forkserver and run
the task, not leave the attempt running and unreported forever.
"""

from __future__ import annotations

import asyncio
import multiprocessing.forkserver
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import aiomqtt
import pytest

from agents.agent import Agent, AgentConfig, RunningAttempt, _forkserver
from agents.worker_main import warmed
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import CancelTask, Codec, LaunchTask, NodeState, TaskSpec, TaskUpdate, Topics
from tests.support.processes import process_alive

pytestmark = pytest.mark.e2e
READ_SYSCALL = "0"  # x86_64


async def until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Readiness polling on a condition of another process (bounded)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)
    assert condition(), what


def forkserver_pid() -> int | None:
    return multiprocessing.forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]


def a_thread_blocks_in_read() -> bool:
    """Another thread of this process waits in read(): the start reading the worker's pid
    (this thread reads its own ``syscall`` file, so it is in read() too)."""
    for task in Path("/proc/self/task").iterdir():
        if task.name == str(threading.get_native_id()):
            continue
        try:
            if (task / "syscall").read_text().split()[0] == READ_SYSCALL:
                return True
        except (OSError, IndexError):
            continue
    return False


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86_64 syscall numbers")
async def test_a_task_survives_its_forkserver_dying_during_the_worker_start(
    tmp_path: Path, mosquitto: str
) -> None:
    broker = BrokerAddress.parse(mosquitto)
    agent = Agent(AgentConfig("fs", "transient-0", "transient", broker, tmp_path, heartbeat_interval=0.2))
    topics, codec = Topics("fs"), Codec()
    running = asyncio.create_task(agent.run())
    try:
        async with aiomqtt.Client(broker.host, broker.port) as master:
            await master.subscribe(topics.state("transient-0"), qos=1)
            await master.subscribe(topics.task_updates("transient-0"), qos=1)
            messages = aiter(master.messages)
            async with asyncio.timeout(30):
                while not isinstance(codec.decode(bytes((await anext(messages)).payload)), NodeState):
                    pass
            await until(lambda: forkserver_pid() is not None, "the agent warms its forkserver")
            frozen = forkserver_pid()
            assert frozen is not None
            os.kill(frozen, signal.SIGSTOP)
            spec = TaskSpec(
                task_id="j000.s0.t0",
                job_id="j000",
                stage=0,
                index=0,
                attempt=0,
                op="sleep.run",
                memory_mb=64,
                params={"duration_s": 0.1},
            )
            await master.publish(topics.command("transient-0"), codec.encode(LaunchTask(task=spec)), qos=1)
            await until(a_thread_blocks_in_read, "the worker start waits for the forkserver")
            os.kill(frozen, signal.SIGKILL)
            async with asyncio.timeout(60):  # before the fix: no outcome, ever
                while True:
                    update = codec.decode(bytes((await anext(messages)).payload))
                    if isinstance(update, TaskUpdate) and update.state != "running":
                        break
            assert update.state == "succeeded", update
            assert forkserver_pid() != frozen and not process_alive(frozen)
    finally:
        agent._stop.set()
        await running


def test_cancelling_an_attempt_whose_worker_is_still_starting_does_not_crash_the_agent(
    tmp_path: Path,
) -> None:
    """The agent's shutdown killed every attempt's worker, and one still starting has no
    process yet: AttributeError, and the agent skipped announcing it is gone."""
    agent = Agent(AgentConfig("fs", "transient-0", "transient", BrokerAddress("127.0.0.1", 1), tmp_path))
    spec = TaskSpec(
        task_id="j000.s0.t0", job_id="j000", stage=0, index=0, attempt=0, op="sleep.run", memory_mb=64
    )
    starting = RunningAttempt(spec, _forkserver.Process(target=warmed, daemon=True))
    agent.core.handle(LaunchTask(task=spec))  # the set-up: the core runs it, its worker still starting
    agent.workers[starting.key] = starting
    agent._handle(CancelTask(task_id=spec.task_id, attempt=0))
    assert starting.cancelled
