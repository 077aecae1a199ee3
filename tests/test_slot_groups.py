"""The agent's side of the per-slot CPU groups: which slot's group a task worker joins, and a
worker that cannot join one fails its task rather than run beyond its share."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from agents.agent import Agent, AgentConfig, RunningAttempt
from agents.worker_main import run_in_worker
from testbed.node.cgroups import slot_group
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import TaskSpec


def agent(tmp_path: Path, cgroup: Path | None) -> Agent:
    broker = BrokerAddress("127.0.0.1", 1)
    return Agent(AgentConfig("run", "reserved-0", "reserved", broker, tmp_path, slots=2, cgroup=cgroup))


def attempt(task_id: str) -> RunningAttempt:
    spec = TaskSpec(task_id=task_id, job_id="j", stage=0, index=0, attempt=0, op="sleep.run", memory_mb=64)
    return RunningAttempt(spec, None)


def test_each_worker_takes_the_lowest_free_slot_and_gives_it_back_when_gone(tmp_path: Path) -> None:
    node = agent(tmp_path, tmp_path / "cg" / "reserved-0")
    a, b, c, d = (attempt(t) for t in "abcd")
    assert node._slot_group(a) == str(slot_group(tmp_path / "cg" / "reserved-0", 0))
    assert node._slot_group(b) == str(slot_group(tmp_path / "cg" / "reserved-0", 1))
    assert node._slot_group(c) is None and c.slot is None  # a third worker: the node's quota only
    node._free_slot(a)
    node._free_slot(a)  # once only
    node._free_slot(c)
    assert node.free_slots == {0}
    assert node._slot_group(d) == str(slot_group(tmp_path / "cg" / "reserved-0", 0))


def test_without_per_slot_groups_no_worker_joins_one(tmp_path: Path) -> None:
    node = agent(tmp_path, None)
    assert node._slot_group(attempt("a")) is None and not node.free_slots


def test_a_worker_that_cannot_join_its_slots_group_fails_its_task(tmp_path: Path) -> None:
    receiver, sender = multiprocessing.Pipe(duplex=False)
    spec = attempt("a").spec.model_dump()
    run_in_worker(
        spec, str(tmp_path), "http://127.0.0.1:1", sender, cpu_group=str(tmp_path / "no-such-group")
    )
    outcome = receiver.recv()
    assert outcome["state"] == "failed" and "cannot join" in outcome["error"], outcome
