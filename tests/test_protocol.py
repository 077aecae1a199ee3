"""The control-plane codec: round trips, and malformed payloads counted and dropped."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from testbed.wire.protocol import (
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


_BLOCK = st.from_regex(r"[A-Za-z0-9_.-]{1,40}", fullmatch=True)
_URL = st.from_regex(r"http://[a-z0-9-]{1,12}\.sim:[0-9]{1,4}", fullmatch=True)
_URLS = st.lists(_URL, min_size=1, max_size=3)


@given(_BLOCK, st.integers(0, 10_000), _URLS)
def test_trusted_ref_is_the_validated_one(block: str, partition: int, urls: list[str]) -> None:
    """The master's own refs skip validation (``BlockRef.trusted``): the same object in every
    respect a reader sees (equality, hash, fields set, dump, bytes on the wire), and a copy
    with capabilities (``master.shell.signing``) the same as the validated one's."""
    locations = tuple(urls)
    trusted = BlockRef.trusted(block, partition, locations)
    validated = BlockRef(block=block, partition=partition, locations=locations)
    assert trusted == validated
    assert hash(trusted) == hash(validated)
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    spec = SPEC.model_copy(update={"inputs": ((trusted,),)})
    assert Codec.encode(LaunchTask(task=spec, id="m")) == Codec.encode(
        LaunchTask(task=SPEC.model_copy(update={"inputs": ((validated,),)}), id="m")
    )
    caps = tuple("c" for _ in locations)
    assert trusted.model_copy(update={"caps": caps}) == validated.model_copy(update={"caps": caps})
    assert trusted.cap_at(locations[0]) == ""


def test_trusted_ref_refuses_what_validation_refuses_loudly() -> None:
    """No location, or a negative partition, is a bug in the master: raised, not sent."""
    with pytest.raises(ValueError):
        BlockRef.trusted("b", 0, ())
    with pytest.raises(ValueError):
        BlockRef.trusted("b", -1, ("http://x.sim:1",))


def test_a_launch_names_report_progress_only_when_set() -> None:
    """An agent built before the field (a Docker image) still takes a run's launches without
    speculation; with it, the agent learns to report the attempt's progress score."""
    from testbed.wire.protocol import Codec, LaunchTask, TaskSpec

    spec = TaskSpec(task_id="j.s0.t0", job_id="j", stage=0, index=0, attempt=0, op="sort.map", memory_mb=1)
    codec = Codec()
    assert "report_progress" not in msgpack.unpackb(codec.encode(LaunchTask(task=spec)))["task"]
    reporting = spec.model_copy(update={"report_progress": True})
    assert codec.decode(codec.encode(LaunchTask(task=reporting))).task.report_progress is True
