"""Malformed control messages: dropped and counted, never raised into an actor.

Hypothesis throws three kinds of input at the decoder and at the master's and
an agent's message handlers: arbitrary bytes, arbitrary msgpack values, and
well-formed messages of every kind with hostile field values (for the master:
aimed at its real nodes and tasks, with right and wrong incarnations,
sessions and attempts).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.agent import Agent, AgentConfig
from master.core.nodes import NodeRecord
from master.core.tasks import locate
from master.shell.master import Master
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import (
    CancelTask,
    Codec,
    EvictionNotice,
    Heartbeat,
    Message,
    NodeState,
    TaskUpdate,
    Topics,
)
from tests.support.masters import offline_master, shell_act
from tests.support.scenarios import make_scenario

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)  # what msgpack can carry
scalars = st.one_of(
    st.none(),
    st.booleans(),
    ints,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.binary(max_size=30),
)
packable = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=9) | ints, inner, max_size=5)
    ),
    max_leaves=12,
)
KINDS = ["node_state", "heartbeat", "launch", "cancel", "notice", "task", "nonsense"]
FIELDS = ["node_id", "state", "incarnation", "session", "task_id", "attempt", "task", "metrics"]
FIELDS += ["partition_bytes", "lost_blocks", "seconds", "running"]
near_miss = st.fixed_dictionaries(
    {"kind": st.sampled_from(KINDS), "v": st.sampled_from([1, 2, "1", None])},
    optional={name: packable for name in FIELDS},
)
garbage = st.one_of(
    st.binary(max_size=200),
    packable.map(lambda value: msgpack.packb(value, use_bin_type=True)),
    near_miss.map(lambda value: msgpack.packb(value, use_bin_type=True)),
    st.binary(min_size=1, max_size=200).map(lambda tail: b"\x81\xa4kind" + tail),  # truncated/corrupt maps
)


@FUZZ
@given(payload=garbage)
def test_the_codec_never_raises_and_counts_every_drop(payload: bytes) -> None:
    codec = Codec()
    message = codec.decode(payload)
    if message is None:
        assert codec.malformed == 1
    else:
        assert isinstance(message, Message) and codec.malformed == 0
        assert codec.decode(Codec.encode(message)) == message


# ------------------------------------------------------------------ the master


def idle_master(tmp_path: Path) -> Master:
    """A master with a job, two nodes up and tasks running, never connected to anything."""
    scenario = make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 2}])
    master = offline_master(scenario, tmp_path)
    for ordinal in range(2):
        node = NodeRecord(f"transient-{ordinal}", "transient", ordinal, 0.0, 2, 1024, 0.3)
        node.status, node.incarnation, node.session, node.url = "up", f"inc{ordinal}", 1, "http://127.0.0.1:9"
        master.nodes[node.node_id] = node
    shell_act(master, master.core.submit_job, scenario.jobs[0], 0)
    master.schedule_once()
    return master


def plausible(master: Master, data: st.DataObject) -> tuple[str, bytes]:
    """A well-formed message about the master's real nodes and tasks, with hostile details:
    right or stale incarnations and sessions, right or wrong attempts and partition counts."""
    topics = Topics("fuzz")
    node = master.nodes[data.draw(st.sampled_from(sorted(master.nodes)), label="node")]
    running = sorted(node.running) or ["j000.s0.t0"]
    task_id = data.draw(st.sampled_from([*running, "j000.s1.t1", "j009.s0.t0"]), label="task")
    located = locate(master.core, task_id)
    attempt = located[0].tasks[located[1]].attempt if located else 0
    blocks = [r.block for j in master.jobs.values() for r in j.tasks.values() if r.block] or ["x"]
    kind = data.draw(st.sampled_from(["task", "task", "task", "state", "hb"]), label="kind")
    if kind == "task":
        message: Message = TaskUpdate(
            node_id=node.node_id,
            task_id=task_id,
            attempt=data.draw(st.sampled_from([attempt, attempt, attempt - 1, attempt + 1])),
            state=data.draw(st.sampled_from(["succeeded", "succeeded", "failed", "running"])),
            partition_bytes=tuple(data.draw(st.lists(st.integers(0, 10**9), max_size=3))),
            failure=data.draw(st.sampled_from([None, "error", "fetch", "enospc", "oom", "killed"])),
            lost_blocks=tuple(data.draw(st.lists(st.sampled_from(blocks), max_size=2))),
        )
        return topics.task_updates(node.node_id), Codec.encode(message)
    if kind == "state":
        message = NodeState(
            node_id=node.node_id,
            node_class=node.node_class,  # type: ignore[arg-type]
            state=data.draw(st.sampled_from(["up", "draining", "lost", "gone"])),
            incarnation=data.draw(st.sampled_from([node.incarnation, "stale"])),
            session=data.draw(st.sampled_from([node.session - 1, node.session, node.session + 1])),
            host="127.0.0.1",
            port=9,
        )
        return topics.state(node.node_id), Codec.encode(message)
    beat = Heartbeat(node_id=node.node_id, incarnation=node.incarnation, seq=1)
    return topics.heartbeat(node.node_id), Codec.encode(beat)


odd_topics = st.sampled_from(["tb/fuzz", "", "tb/fuzz/node", "tb/fuzz/node/transient-0/task/extra", "#"])
valid_elsewhere = st.one_of(
    st.builds(CancelTask, task_id=st.text(max_size=12), attempt=st.integers(-2, 3)),
    st.builds(EvictionNotice, node_id=st.sampled_from(["transient-0", "x"]), seconds=st.floats()),
).map(Codec.encode)


@FUZZ
@given(data=st.data(), steps=st.integers(min_value=1, max_value=12))
def test_the_master_survives_any_message_sequence(tmp_path: Path, data: st.DataObject, steps: int) -> None:
    async def feed(master: Master) -> int:
        undecodable = 0
        for _ in range(steps):
            source = data.draw(st.sampled_from(["plausible"] * 3 + ["garbage", "elsewhere"]), label="source")
            if source == "plausible":
                topic, payload = plausible(master, data)
            else:
                topic = data.draw(odd_topics | st.sampled_from([Topics("fuzz").task_updates("transient-1")]))
                payload = data.draw(garbage if source == "garbage" else valid_elsewhere)
            undecodable += Codec().decode(payload) is None
            master._on_message(topic, payload)
            await asyncio.sleep(0)  # let a Will's liveness probe start, as it would
            master.schedule_once()  # the scheduler still works on whatever state is left
        shell_act(master, master.core.snapshot)
        master.api.status()
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()
        return undecodable

    master = idle_master(tmp_path)
    try:  # Hypothesis may abandon an example half-way (its data ran out): close the journal anyway
        undecodable = asyncio.run(feed(master))
    finally:
        master.journal.close()
    assert master.codec.malformed == undecodable


# ------------------------------------------------------------------ an agent


@FUZZ
@given(payloads=st.lists(garbage.filter(lambda p: Codec().decode(p) is None), max_size=5))
def test_an_agent_drops_and_counts_what_it_cannot_decode(tmp_path: Path, payloads: list[bytes]) -> None:
    config = AgentConfig("fuzz", "transient-0", "transient", BrokerAddress("127.0.0.1", 1), tmp_path)
    agent = Agent(config)
    for payload in payloads:
        agent._on_message(Topics("fuzz").command("transient-0"), payload)
    assert agent.codec.malformed == len(payloads)
    assert not agent.running
