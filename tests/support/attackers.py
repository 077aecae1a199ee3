"""Attackers inside a real run: a compromised agent's MQTT client (and whatever HTTP token it
holds) acting on the journal's events while the job runs (tests/reliability/test_least_privilege.py,
tests/docker/test_docker_secrets.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiomqtt

from master.shell.run import RunResult, run_scenario
from testbed.wire.broker import ManagedBroker
from testbed.wire.protocol import Codec, TaskUpdate, Topics
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

COMPROMISED = "reserved-0"
MAPS, REDUCES = 8, 2
JOBS = [{"workload": "wordcount", "size_mb": 4, "maps": MAPS, "reduces": REDUCES}]


class Attacker:
    """Acts on journal events from a task of its own: an MQTT client logged in as the
    compromised agent, and an HTTP client with whatever token it holds."""

    def __init__(self, broker: ManagedBroker | None) -> None:
        """``broker``: the run's, handed in; None: the one the run starts (Docker: on its network)."""
        self.broker = broker
        self.events: asyncio.Queue[tuple[Any, dict[str, Any]]] = asyncio.Queue()
        self.sent: list[str] = []
        self.answers: list[int] = []
        self.task: asyncio.Task[None] | None = None
        self.master: Any = None

    def on_event(self, master: Any, record: dict[str, Any]) -> None:
        self.master = master
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.run(master))
        self.events.put_nowait((master, record))

    async def run(self, master: Any) -> None:
        """Logged in with the credentials the compromised agent got (what its process holds)."""
        own = await master.starts.secrets_of(COMPROMISED)
        username, password = own["TESTBED_MQTT_USERNAME"], own["TESTBED_MQTT_PASSWORD"]
        async with aiomqtt.Client(
            master.broker.host, master.broker.port, username=username, password=password
        ) as client:
            while True:
                master, record = await self.events.get()
                await self.act(client, master, record)

    async def act(self, client: aiomqtt.Client, master: Any, record: dict[str, Any]) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def attack(self, run_dir: Path, backend: str = "local") -> tuple[RunResult, list[dict[str, Any]]]:
        """The job run with this attacker at work: the run's result and its events."""
        run = run_scenario(
            settings_of(make_scenario(jobs=JOBS)),
            run_dir,
            backend,
            on_event=self.on_event,
            broker=self.broker,
        )
        try:
            result = await asyncio.wait_for(run, 300)
        finally:
            await self.stop()
        return result, [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


class ForgedResults(Attacker):
    """Every map task started on another node is reported 'succeeded' with empty outputs:
    once on the topic of the node running it, once on the compromised node's own topic."""

    async def act(self, client: aiomqtt.Client, master: Any, record: dict[str, Any]) -> None:
        if record["event"] != "task_started" or record["stage"] != 0 or record["node"] == COMPROMISED:
            return
        topics = Topics(master.run_id)
        for sender in (record["node"], COMPROMISED):
            forged = TaskUpdate(
                node_id=sender,
                task_id=record["task"],
                attempt=record["attempt"],
                state="succeeded",
                partition_bytes=(0,) * REDUCES,
            )
            await client.publish(topics.task_updates(sender), Codec.encode(forged), qos=1)
        self.sent.append(record["task"])
