"""A worker killed from outside is ``killed``, not ``oom``: only the kernel's OOM count says oom."""

from __future__ import annotations

import os
import signal
import time
from multiprocessing.connection import Connection
from pathlib import Path

from agents.agent import _forkserver
from agents.oom import counter_files, death_outcome, oom_kill_count
from agents.worker_process import receive_outcome, start_worker


def wait_to_be_killed(conn: Connection) -> None:
    conn.send_bytes(b"up")  # not the result: the agent's receiver never reads this as one
    time.sleep(120)


async def test_a_worker_killed_from_outside_is_not_reported_out_of_memory() -> None:
    receiver, sender = _forkserver.Pipe(duplex=False)
    ready_receiver, ready_sender = _forkserver.Pipe(duplex=False)
    process = _forkserver.Process(target=wait_to_be_killed, args=(ready_sender,), daemon=True)
    try:
        await start_worker(process, None)
        sender.close()
        ready_sender.close()
        assert ready_receiver.recv_bytes() == b"up"
        os.kill(process.pid, signal.SIGKILL)
        outcome = await receive_outcome(receiver, process, None)
    finally:
        if process.exitcode is None:
            process.kill()
            process.join()
        ready_receiver.close()
    assert process.exitcode == -signal.SIGKILL
    assert outcome["failure"] == "killed", outcome
    assert "from outside" in outcome["error"]


def test_the_oom_kill_count_is_read_from_cgroup_v2_or_v1(tmp_path: Path) -> None:
    v2 = counter_files("0::/agents/a1\n", tmp_path)
    assert v2 == [tmp_path / "agents/a1/memory.events", tmp_path / "memory.events"]
    v1 = counter_files("4:memory:/docker/abc\n1:cpu:/\n0::/\n", tmp_path)
    assert v1[:2] == [
        tmp_path / "memory/docker/abc/memory.oom_control",
        tmp_path / "memory/memory.oom_control",
    ]
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory/memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    assert oom_kill_count(v1) == 3
    assert oom_kill_count(v2) is None
    assert isinstance(oom_kill_count(), int | None)  # this machine's own cgroup, whatever it is


def test_a_v2_node_groups_oom_count_comes_first_a_v1_cpu_group_has_none(tmp_path: Path) -> None:
    """A container's worker in its slot's v2 group is out of the agent's: the node's count is."""
    node = tmp_path / "testbed/run/n0"
    node.mkdir(parents=True)
    assert oom_kill_count(node=node) == oom_kill_count()  # no memory.events: the agent's own
    (node / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")
    assert oom_kill_count(node=node) == 2


def test_only_a_larger_oom_count_makes_a_sigkill_oom() -> None:
    assert death_outcome(-signal.SIGKILL, 3, 4)["failure"] == "oom"
    assert death_outcome(-signal.SIGKILL, 3, 3)["failure"] == "killed"
    assert death_outcome(-signal.SIGKILL, None, None)["failure"] == "killed"
    assert death_outcome(1, 3, 4)["failure"] == "killed"
