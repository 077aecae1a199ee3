"""Containers as nodes hold their own credentials, in a file and never in their environment,
and with them cannot speak for another node nor read its blocks: the local case's attacks
(tests/reliability/test_least_privilege.py) on ``--backend docker``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import docker
import pytest

from master.providers.container_secrets import SECRETS_FILE
from testbed.wire.blocks import TOKEN_HEADER
from testbed.wire.capabilities import NODE_KEY_ENV, block_cap
from testbed.wire.protocol import Codec, NodeState, Topics
from testbed.workloads.wordcount import read_output
from tests.support.attackers import COMPROMISED, MAPS, ForgedResults
from tests.support.docker import new_run_id, remove_run, run_leftovers
from tests.support.runs import expected_counts

pytestmark = [pytest.mark.docker, pytest.mark.e2e]


class ContainerAttack(ForgedResults):
    """ForgedResults' forged task results, and with the compromised node's own credentials: a
    ``gone`` for another node on that node's topic, and a GET of another node's map output
    with a capability minted from its own node key. Meanwhile, every node's container is
    inspected: its environment and its secret file."""

    def __init__(self, client: docker.DockerClient, run_id: str) -> None:
        super().__init__(None)
        self.docker, self.run_id = client, run_id
        self.indexes: dict[str, int] = {}
        self.block_answers: list[int] = []
        self.gone_sent: list[str] = []
        self.envs: dict[str, list[str]] = {}
        self.leftover_files: dict[str, int] = {}

    def container(self, node_id: str) -> Any:
        return self.docker.containers.get(f"testbed-{self.run_id}-{node_id}")

    async def act(self, client: aiomqtt.Client, master: Any, record: dict[str, Any]) -> None:
        await super().act(client, master, record)
        if record["event"] == "node_up":
            await asyncio.to_thread(self.inspect, record["node"])
        elif record["event"] == "task_started":
            self.indexes[record["task"]] = record["index"]
            if record["node"] != COMPROMISED and not self.gone_sent:
                await self.forge_gone(client, master, record["node"])
        elif self.is_map_output_elsewhere(record):
            await self.read_block(master, record)

    @staticmethod
    def is_map_output_elsewhere(record: dict[str, Any]) -> bool:
        done = record["event"] == "task_finished" and record["status"] == "succeeded"
        return done and record["stage"] == 0 and record["node"] != COMPROMISED

    def inspect(self, node_id: str) -> None:
        container = self.container(node_id)
        self.envs[node_id] = container.attrs["Config"]["Env"]
        self.leftover_files[node_id] = container.exec_run(["test", "-e", SECRETS_FILE]).exit_code

    async def forge_gone(self, client: aiomqtt.Client, master: Any, victim: str) -> None:
        node = master.nodes[victim]
        gone = NodeState(
            node_id=victim,
            node_class=node.node_class,
            state="gone",
            incarnation=node.incarnation,
            session=node.session,
        )
        await client.publish(Topics(master.run_id).state(victim), Codec.encode(gone), qos=1)
        self.gone_sent.append(victim)

    async def read_block(self, master: Any, record: dict[str, Any]) -> None:
        block = f"{record['job']}.s0.t{self.indexes[record['task']]}.a{record['attempt']}"
        own_key = (await master.starts.secrets_of(COMPROMISED))[NODE_KEY_ENV]
        address = await asyncio.to_thread(self.address, record["node"])
        headers = {TOKEN_HEADER: block_cap(own_key, "GET", block)}
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://{address}:7070/blocks/{block}/0", headers=headers) as response,
        ):
            self.block_answers.append(response.status)

    def address(self, node_id: str) -> str:
        networks = self.container(node_id).attrs["NetworkSettings"]["Networks"]
        return next(iter(networks.values()))["IPAddress"]


async def test_a_container_holds_its_own_credentials_in_a_file_and_cannot_act_for_others(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = f"secrets-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    attacker = ContainerAttack(docker_client, run_id)
    try:
        result, events = await attacker.attack(tmp_path, backend="docker")
        master = attacker.master
        assert attacker.sent and attacker.gone_sent and attacker.block_answers, "an attack was not tried"
        assert result.ok, result.summary
        assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, MAPS, seed=7000)
        assert master.core.senders.forged == len(attacker.sent)  # those on its own topic
        assert [e for e in events if e["event"] in ("gone_ignored", "node_lost")] == []  # dropped
        assert set(attacker.block_answers) == {403}, attacker.block_answers
        nodes = sorted(master.nodes)
        secrets = [master.keys.run_secret, master.keys.api_token]
        for node_id in nodes:
            secrets += list((await master.starts.secrets_of(node_id)).values())
        secrets = [s for s in secrets if s not in nodes]  # a login's user name is its node id
        assert sorted(attacker.envs) == nodes
        for node_id, env in attacker.envs.items():
            assert not [s for s in secrets if any(s in variable for variable in env)], f"{node_id}: {env}"
        assert set(attacker.leftover_files.values()) == {1}, attacker.leftover_files  # read and deleted
        assert run_leftovers(docker_client, run_id) == []
    finally:
        remove_run(docker_client, run_id)
