"""Least privilege inside a run: a compromised agent or a stolen API token cannot change a result.

Real runs (broker, agents, HTTP shuffle) under attack: the attacker acts while the
job runs, and the job's output is checked word by word against the reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import msgpack
import pytest

from agents.push import INDEX_HEADER, encode_index
from testbed.wire.blocks import TOKEN_HEADER, BlockWriter
from testbed.wire.broker import EmbeddedBroker, ManagedBroker, MosquittoBroker, mosquitto_binary
from testbed.wire.protocol import Codec, NodeState, Topics
from testbed.workloads.wordcount import read_output
from tests.support.attackers import MAPS, REDUCES, Attacker, ForgedResults
from tests.support.runs import assert_clean, expected_counts

pytestmark = pytest.mark.e2e

needs_mosquitto = pytest.mark.skipif(mosquitto_binary() is None, reason="mosquitto is not installed")
KINDS = [EmbeddedBroker, pytest.param(MosquittoBroker, marks=needs_mosquitto)]


@pytest.mark.parametrize("kind", KINDS, ids=["amqtt", "mosquitto"])
async def test_a_compromised_agent_cannot_report_results_of_other_nodes(tmp_path: Path, kind: type) -> None:
    """Before per-node logins the forgeries on the victims' topics made the job succeed with
    every forged map's words missing. Now the broker drops those, and the master counts and
    ignores the ones on the compromised node's own topic."""
    attacker = ForgedResults(kind(log_path=tmp_path / "logs" / "broker.log"))
    result, events = await attacker.attack(tmp_path)
    assert attacker.sent, "no map task ran outside the compromised node: the attack was not tried"
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, MAPS, seed=7000)
    assert attacker.master.core.senders.forged == len(attacker.sent)
    assert sum(e["event"] == "forged_message" for e in events) == len(attacker.sent)
    assert_clean(tmp_path)


def forged_block(directory: Path, block: str) -> tuple[str, bytes]:
    """A CRC-valid block whose every partition adds 8,000,000 to the word 'pwned'."""
    writer = BlockWriter(directory, block, REDUCES)
    for partition in range(REDUCES):
        writer.write(partition, msgpack.packb([("pwned", 8_000_000)]))
    writer.commit()
    index = msgpack.unpackb((directory / f"{block}.index").read_bytes())
    return encode_index(index), (directory / f"{block}.data").read_bytes()


class OverwrittenBlocks(Attacker):
    """With the token of master.json, PUT a forged block over each map output once committed."""

    def __init__(self, broker: ManagedBroker, scratch: Path) -> None:
        super().__init__(broker)
        self.scratch = scratch
        self.urls: dict[str, str] = {}
        self.indexes: dict[str, int] = {}

    async def act(self, client: aiomqtt.Client, master: Any, record: dict[str, Any]) -> None:
        del client
        if record["event"] == "node_up":
            self.urls[record["node"]] = record["url"]
        elif record["event"] == "task_started":
            self.indexes[record["task"]] = record["index"]
        elif record["event"] == "task_finished" and record["stage"] == 0 and record["status"] == "succeeded":
            block = f"{record['job']}.s0.t{self.indexes[record['task']]}.a{record['attempt']}"
            token = json.loads((master.run_dir / "master.json").read_text())["token"]
            index, body = forged_block(self.scratch, block)
            headers = {TOKEN_HEADER: token, INDEX_HEADER: index}
            url = f"{self.urls[record['node']]}/blocks/{block}"
            async with aiohttp.ClientSession() as http, http.put(url, data=body, headers=headers) as response:
                self.answers.append(response.status)
            self.sent.append(block)


async def test_the_api_token_cannot_overwrite_committed_blocks(tmp_path: Path) -> None:
    """Before, the one run token opened every agent: each forged map block added 'pwned'
    8,000,000 times per partition to the output. Now the API token opens no agent."""
    broker = EmbeddedBroker(log_path=tmp_path / "logs" / "broker.log")
    attacker = OverwrittenBlocks(broker, tmp_path / "scratch")
    run_dir = tmp_path / "run"
    result, _ = await attacker.attack(run_dir)
    assert len(attacker.sent) >= MAPS - 1
    assert result.ok, result.summary
    assert read_output(run_dir / "outputs" / "j000") == expected_counts(4, MAPS, seed=7000)
    assert set(attacker.answers) == {403}, attacker.answers
    assert_clean(run_dir)


class ForgedGone(Attacker):
    """Once the victim is up: 'gone' for it under the compromised agent's login (the broker
    drops it), then under the victim's own login while it lives (the master asks the
    victim, which answers, and keeps it)."""

    victim = "transient-1"

    async def act(self, client: aiomqtt.Client, master: Any, record: dict[str, Any]) -> None:
        if record["event"] != "task_started" or self.sent:
            return
        node = master.nodes[self.victim]
        gone = NodeState(
            node_id=node.node_id,
            node_class=node.node_class,
            state="gone",
            incarnation=node.incarnation,
            session=node.session,
        )
        topic = Topics(master.run_id).state(self.victim)
        await client.publish(topic, Codec.encode(gone), qos=1)
        victim = await self.broker.agent_login(self.victim)
        async with aiomqtt.Client(
            self.broker.host, self.broker.port, username=victim.username, password=victim.password
        ) as own:
            await own.publish(topic, Codec.encode(gone), qos=1)
        self.sent.append(topic)


async def test_a_gone_for_a_live_node_is_checked_before_the_node_is_dropped(tmp_path: Path) -> None:
    attacker = ForgedGone(EmbeddedBroker(log_path=tmp_path / "logs" / "broker.log"))
    result, events = await attacker.attack(tmp_path)
    assert attacker.sent and result.ok, result.summary
    assert [e["node"] for e in events if e["event"] == "gone_ignored"] == [ForgedGone.victim]
    lost = [e for e in events if e["event"] == "node_lost" and e["node"] == ForgedGone.victim]
    assert lost == [], lost
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, MAPS, seed=7000)
    assert_clean(tmp_path)
