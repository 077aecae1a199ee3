"""The control-plane codec: round trips, and malformed payloads counted and dropped."""

from __future__ import annotations

import msgpack
import pytest

from testbed.protocol import (
    BlockRef,
    CachedInput,
    CancelTask,
    Codec,
    EvictionNotice,
    FlushAggregate,
    Heartbeat,
    LaunchTask,
    NodeState,
    PushTarget,
    Resync,
    TaskMetrics,
    TaskSpec,
    TaskUpdate,
    Topics,
)

SPEC = TaskSpec(
    task_id="j000.s1.t2",
    job_id="j000",
    stage=1,
    index=2,
    attempt=3,
    op="wordcount.reduce",
    memory_mb=128,
    params={"x": [1, 2]},
    partitions=1,
    final=True,
    output_url="http://127.0.0.1:1/o",
    inputs=((BlockRef(block="j000.s0.t0.a0", partition=2, locations=("http://127.0.0.1:9",)),),),
)

MESSAGES = [
    NodeState(
        node_id="t001", node_class="transient", state="up", incarnation="ab", host="h", port=1, slots=2
    ),
    Heartbeat(node_id="t001", incarnation="ab", seq=5, running=("a", "b")),
    Heartbeat(
        node_id="t001",
        incarnation="ab",
        seq=6,
        cached_inputs=(CachedInput(key="wordcount-map-ab", nbytes=7),),
    ),
    FlushAggregate(
        block="j000.s0.x1",
        op="wordcount.map",
        members=("j000.s0.t0.a0", "j000.s0.t3.a1"),
        partitions=2,
        push=(PushTarget(node_id="reserved-0", url="http://127.0.0.1:9", partitions=(0, 1)),),
    ),
    LaunchTask(task=SPEC),
    CancelTask(task_id="x", attempt=1),
    EvictionNotice(node_id="t001", seconds=30.0),
    Resync(),
    TaskUpdate(
        node_id="t001",
        task_id="x",
        attempt=0,
        state="failed",
        failure="fetch",
        lost_blocks=("b1",),
        metrics=TaskMetrics(spill_bytes=10),
    ),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.kind)
def test_round_trip(message) -> None:
    codec = Codec()
    assert codec.decode(codec.encode(message)) == message
    assert codec.malformed == 0


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\xc1",  # a byte msgpack never uses
        msgpack.packb([1, 2, 3]),
        msgpack.packb({"kind": "heartbeat"}),
        msgpack.packb({"kind": "nonsense", "v": 1}),
        msgpack.packb({"kind": "heartbeat", "v": 2, "node_id": "a", "incarnation": "b", "seq": 1}),
        msgpack.packb({"kind": "heartbeat", "v": 1, "node_id": "a", "incarnation": "b", "seq": "x"}),
        msgpack.packb(
            {"kind": "heartbeat", "v": 1, "node_id": "a", "incarnation": "b", "seq": 1, "extra": 1}
        ),
        msgpack.packb({"kind": "launch", "v": 1, "task": {"task_id": "x"}}),
    ],
)
def test_malformed_payloads_are_counted_and_dropped(payload: bytes) -> None:
    codec = Codec()
    assert codec.decode(payload) is None
    assert codec.malformed == 1


def test_topics_are_namespaced_by_run() -> None:
    topics = Topics("run1")
    assert topics.state("t001") == "tb/run1/node/t001/state"
    assert topics.command("r000") == "tb/run1/node/r000/cmd"
    assert Topics.node_of(topics.task_updates("t007")) == "t007"
