"""The broker dies mid-run and comes back on the same port: the run completes exactly.

A restarted broker (no persistence) has forgotten every retained state, every
subscription and every message it had accepted but not yet delivered; a
Mosquitto stopped with SIGTERM also publishes the Last Will of every client it
drops. None of that may lose a task, count one twice, or pass for node loss.
"""

from __future__ import annotations

import asyncio
import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from master.shell.run import run_scenario
from testbed.wire.broker import (
    EmbeddedBroker,
    ManagedBroker,
    MosquittoBroker,
    master_address,
    mosquitto_binary,
)
from testbed.wire.mqtt import MqttLink
from testbed.wire.protocol import Codec, NodeState
from testbed.workloads.wordcount import read_output
from tests.support.runs import assert_clean, assert_exact, expected_counts
from tests.support.scenarios import hold_job, make_scenario, scenario_in
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

JOB = {"workload": "wordcount", "size_mb": 4, "maps": 6, "reduces": 3}
NODES = 4


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


async def retained_states(broker: ManagedBroker, count: int) -> dict[str, NodeState]:
    """The retained node states a fresh subscriber gets from the (restarted) broker."""
    address = master_address(broker)
    codec = Codec()
    states: dict[str, NodeState] = {}
    async with aiomqtt.Client(
        address.host, address.port, username=address.username, password=address.password
    ) as client:
        await client.subscribe("tb/+/node/+/state", qos=1)
        async with asyncio.timeout(30):
            async for message in client.messages:
                state = codec.decode(bytes(message.payload))
                if message.retain and isinstance(state, NodeState):
                    states[state.node_id] = state
                if len(states) == count:
                    return states
    return states


async def run_with_restart(broker: ManagedBroker, run_dir: Path, hard: bool) -> dict[str, Any]:
    """Restart the broker right after the first launch command is queued; look at what it retains.
    The run's input (its scenario, the hold's module) is in ``run_dir``'s sibling ``in``."""
    # the hold keeps the run going until every agent reconnected and re-published its state (a
    # fast run could end before the last one); it was a 15 s sleep
    hold, restarted = hold_job(run_dir.parent / "in")
    scenario = scenario_in(run_dir.parent / "in", jobs=[JOB, hold])
    seen: dict[str, Any] = {}
    reconnected: set[str] = set()
    all_back = asyncio.Event()

    async def restart() -> None:
        try:
            await restart_and_look()
        finally:
            restarted.touch()

    async def restart_and_look() -> None:
        if hard:
            assert broker.process is not None
            broker.process.kill()
            await broker.process.wait()
        else:
            await broker.stop()
            assert broker.process is not None and broker.process.returncode == 0, "it had to be killed"
        await broker.start()
        async with asyncio.timeout(60):  # fail, not hang, if an agent never comes back
            await all_back.wait()
        seen["retained"] = await retained_states(broker, NODES)

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and "restart" not in seen:
            seen["restart"] = asyncio.get_running_loop().create_task(restart())
        if record["event"] == "node_reconnected":
            reconnected.add(record["node"])
            if len(reconnected) == NODES:
                all_back.set()

    result = await run_scenario(settings_of(scenario), run_dir, on_event=on_event, broker=broker)
    await seen["restart"]
    seen["result"] = result
    return seen


def assert_exact_and_counted_once(run_dir: Path, seen: dict[str, Any]) -> None:
    result = seen["result"]
    assert result.ok, result.summary
    assert read_output(run_dir / "outputs" / "j000") == expected_counts(4, 6, seed=7000)
    journal = events(run_dir)
    names = Counter(e["event"] for e in journal)
    assert names["node_lost"] == 0 and result.summary["evictions"] == 0, "an outage passed for node loss"
    assert names["broker_reconnected"] >= 1
    rows = list(csv.DictReader((run_dir / "tasks.csv").open()))
    attempts = Counter((r["task_id"], r["attempt"]) for r in rows)
    assert max(attempts.values()) == 1, "a task attempt was counted twice"
    assert len(rows) == 9 + 2 and all(r["status"] == "succeeded" for r in rows)  # the job's, the hold's
    assert result.summary["relaunched_tasks"] == 0
    retained = seen["retained"]
    assert len(retained) == NODES, "the agents did not re-publish their retained state"
    assert all(s.state == "up" and s.session >= 2 for s in retained.values())
    assert_clean(run_dir)


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "sigkill"])
async def test_embedded_broker_restart_mid_run(tmp_path: Path, isolated_path: None, hard: bool) -> None:
    seen = await run_with_restart(EmbeddedBroker(), tmp_path / "run", hard)
    assert_exact_and_counted_once(tmp_path / "run", seen)


@pytest.mark.skipif(mosquitto_binary() is None, reason="mosquitto is not installed")
async def test_mosquitto_restart_mid_run(tmp_path: Path, isolated_path: None) -> None:
    """Mosquitto stopped with SIGTERM sends the Will of every client it drops (as long as the
    master is still connected to hear them): none of them may pass for node loss."""
    seen = await run_with_restart(MosquittoBroker(), tmp_path / "run", hard=False)
    assert_exact_and_counted_once(tmp_path / "run", seen)


async def test_a_will_is_trusted_only_for_the_current_session_of_a_dead_agent(tmp_path: Path) -> None:
    """Deterministic version of what a broker outage does: the Will of an older session is
    stale, and a Will of the current session from an agent that still answers is ignored."""
    broker = EmbeddedBroker()
    scenario = make_scenario(jobs=[JOB])
    forged: list[asyncio.Task[None]] = []

    async def publish_wills(run_id: str, node: Any) -> None:
        """A stale Will (the session before) and one for the current session, as the broker would."""
        agent = await broker.agent_login(node.node_id)
        async with aiomqtt.Client(
            broker.host, broker.port, username=agent.username, password=agent.password
        ) as client:
            for session in (node.session - 1, node.session):
                will = NodeState(
                    node_id=node.node_id,
                    node_class=node.node_class,
                    state="lost",
                    incarnation=node.incarnation,
                    session=session,
                )
                await client.publish(f"tb/{run_id}/node/{node.node_id}/state", Codec.encode(will), qos=1)

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and not forged:
            node = master.nodes[record["node"]]
            forged.append(asyncio.get_running_loop().create_task(publish_wills(master.run_id, node)))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=on_event, broker=broker)
    await forged[0]
    assert result.ok, result.summary
    journal = events(tmp_path)
    assert not [e for e in journal if e["event"] == "node_lost"]
    ignored = [e for e in journal if e["event"] == "will_ignored"]
    assert len(ignored) == 1 and ignored[0]["session"] == 1, ignored
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 6, seed=7000)
    assert_clean(tmp_path)


@pytest.mark.parametrize("moment", ["aggregate_flush", "push_received"])
async def test_pado_pushes_survive_a_broker_restart(tmp_path: Path, moment: str) -> None:
    """Pado's push protocol under a broker restart right after the first flush command, or
    the first receipt: a flush, a push report or a receipt the broker lost is sent again
    (``Resync``), and every pushed task is committed exactly once."""
    scenario = make_scenario(
        cluster={"reserved": 2, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        jobs=[{"workload": "wordcount", "size_mb": 8, "maps": 12, "reduces": 3}],
        policy={"strategy": "pado"},
        timeout=90,
    )
    broker = EmbeddedBroker()
    restarts: list[asyncio.Task[None]] = []

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == moment and not restarts:
            restarts.append(asyncio.get_running_loop().create_task(broker.restart()))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=on_event, broker=broker)
    await restarts[0]
    assert result.ok, result.summary
    assert_exact(scenario, tmp_path)
    journal = events(tmp_path)
    assert not [e for e in journal if e["event"] == "node_lost"]
    assert [e for e in journal if e["event"] == "broker_reconnected"]
    accepted = Counter(
        e["task"] for e in journal if e["event"] == "push_commit" and e["verdict"] == "accepted"
    )
    assert accepted == Counter(f"j000.s0.t{i}" for i in range(12))
    assert_clean(tmp_path)


async def busy_clients(
    broker: EmbeddedBroker, count: int, connections: list[int]
) -> tuple[list[MqttLink], list[asyncio.Task[None]]]:
    """Clients that publish (QoS 1 and 0) to each other as fast as the broker takes them;
    each connection they make appends its session number to ``connections``."""

    async def subscribe(link: MqttLink) -> None:
        await link.subscribe("tb/#")
        connections.append(link.session)

    address = master_address(broker)
    links = [MqttLink(address, f"c{i}", lambda topic, payload: None, subscribe) for i in range(count)]
    for link in links:
        link.start()
    await asyncio.gather(*(link.connected.wait() for link in links))

    async def publish(link: MqttLink, topic: str) -> None:
        while True:
            link.publish(topic, bytes(200))
            await link.publish_now(f"{topic}/beat", b"beat")
            await asyncio.sleep(0)

    return links, [asyncio.create_task(publish(link, f"tb/c/{i}")) for i, link in enumerate(links)]


async def test_the_embedded_broker_drops_every_client_at_once_when_told_to_stop() -> None:
    """SIGTERM under traffic: the broker exits by itself, and no client gets back onto it meanwhile.

    amqtt's own shutdown closed clients one at a time while it still accepted
    connections, and sometimes hung on one until killed: a client that had
    reconnected sat on a broker that no longer routed anything.
    """
    for _ in range(8):  # the hang took about 1 stop in 15
        broker = EmbeddedBroker()
        await broker.start()
        connections: list[int] = []
        links, publishers = await busy_clients(broker, 5, connections)
        try:
            await asyncio.sleep(0.2)  # the traffic flows
            await broker.stop()
            assert broker.process is not None and broker.process.returncode == 0, "it had to be killed"
            assert connections == [1] * 5, "a client reconnected to the stopping broker"
        finally:
            for task in publishers:
                task.cancel()
            await asyncio.gather(*publishers, return_exceptions=True)
            for link in links:
                await link.close()
