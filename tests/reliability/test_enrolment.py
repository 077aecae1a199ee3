"""The broker of a compose run or Swarm stack, started as its image starts it (``testbed broker``
with the broker's secret file of ``testbed secrets``): the enrolment login every agent holds
may only ask for a name and read the answers, and a named agent's own login speaks for its
node only, as on a run's own broker."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import pytest

from master.shell.compose_file import SECRET_FILES, write_secrets
from testbed.node.processes import SECRETS_FILE_ENV, child_env
from testbed.wire.broker import (
    ENROL_USER,
    Credentials,
    RunCredentials,
    agent_password,
    free_port,
    wait_for_port,
)
from tests.support.mqtt_clients import client, received

pytestmark = pytest.mark.e2e

ASK = "tb/run1/enrol/c0ffee123456/ask"
ANSWER = "tb/run1/enrol/c0ffee123456/named"
OTHER_ASK = "tb/run1/enrol/feedbeef0000/ask"


@dataclass(frozen=True)
class ComposeBroker:
    host: str
    port: int
    master: Credentials
    enrol: Credentials
    agent_secret: str

    def agent(self, node_id: str) -> Credentials:
        return Credentials(node_id, agent_password(self.agent_secret, node_id))


def secrets_of(directory: Path, kind: str) -> dict[str, str]:
    return json.loads((directory / SECRET_FILES[kind]).read_text())


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[ComposeBroker]:
    directory = tmp_path / "run.secrets"
    write_secrets(directory)
    handed = tmp_path / "broker.secrets"  # the broker deletes the file it was handed, if it may
    shutil.copy(directory / SECRET_FILES["broker"], handed)
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "testbed.app.cli", "broker", "--host", "127.0.0.1", "--port", str(port)),
        env=child_env({SECRETS_FILE_ENV: str(handed)}),
    )
    try:
        await wait_for_port("127.0.0.1", port, 15.0, process)
        master, enrol = secrets_of(directory, "master"), secrets_of(directory, "enrol")
        yield ComposeBroker(
            "127.0.0.1",
            port,
            Credentials(master["TESTBED_MQTT_USERNAME"], master["TESTBED_MQTT_PASSWORD"]),
            Credentials(enrol["TESTBED_MQTT_USERNAME"], enrol["TESTBED_MQTT_PASSWORD"]),
            master["TESTBED_AGENT_SECRET"],
        )
    finally:
        process.terminate()
        await process.wait()
    assert not handed.exists(), "the broker left its secrets behind"


async def test_the_enrolment_login_asks_for_a_name_and_nothing_else(broker: ComposeBroker) -> None:
    """Its forged node state is dropped, another agent's request (which carries that agent's
    key) does not reach it, and the master's answer does."""
    state = "tb/run1/node/transient-0/state"
    async with (
        client(broker, broker.master) as master,
        client(broker, broker.enrol) as asker,
        client(broker, broker.enrol) as snoop,
        client(broker, broker.agent("transient-0")) as node,
    ):
        await master.subscribe("tb/run1/enrol/+/ask", qos=1)
        await master.subscribe(state, qos=1)
        for topic in ("tb/run1/enrol/+/ask", "tb/#", ANSWER):
            await snoop.subscribe(topic, qos=1)
        await asker.publish(state, b"forged state", qos=1)
        await asker.publish(OTHER_ASK, b"a request and its key", qos=1)
        await node.publish(state, b"real state", qos=1)
        assert await received(master, until=b"real state") == [b"a request and its key", b"real state"]
        await master.publish(ANSWER, b"sealed answer", qos=1)
        assert await received(snoop, until=b"sealed answer") == [b"sealed answer"]


async def test_only_the_master_answers_and_a_named_agent_speaks_for_its_node_only(
    broker: ComposeBroker,
) -> None:
    task = "tb/run1/node/transient-0/task"
    async with (
        client(broker, broker.master) as master,
        client(broker, broker.enrol) as asker,
        client(broker, broker.agent("reserved-0")) as rogue,
        client(broker, broker.agent("transient-0")) as node,
    ):
        await master.subscribe(task, qos=1)
        await master.subscribe("tb/run1/enrol/+/ask", qos=1)
        await asker.subscribe(ANSWER, qos=1)
        await rogue.subscribe("tb/run1/enrol/+/ask", qos=1)
        await rogue.publish(ANSWER, b"forged answer", qos=1)
        await rogue.publish(task, b"forged result", qos=1)
        await rogue.publish(ASK, b"forged request", qos=1)
        await node.publish(task, b"real result", qos=1)
        assert await received(master, until=b"real result") == [b"real result"]
        await asker.publish(ASK, b"a request", qos=1)
        assert await received(master, until=b"a request") == [b"a request"]
        await master.publish(ANSWER, b"real answer", qos=1)
        assert await received(asker, until=b"real answer") == [b"real answer"]
        await rogue.subscribe("tb/run1/node/reserved-0/cmd", qos=1)
        await master.publish("tb/run1/node/reserved-0/cmd", b"its own command", qos=1)
        assert await received(rogue, until=b"its own command") == [b"its own command"]


@pytest.mark.parametrize("who", ["wrong-password", "derived-from-the-agent-secret", "other-run"])
async def test_the_enrolment_login_is_the_runs_alone(broker: ComposeBroker, who: str) -> None:
    creds = {
        "wrong-password": Credentials(ENROL_USER, "guess"),
        "derived-from-the-agent-secret": broker.agent(ENROL_USER),
        "other-run": Credentials(ENROL_USER, RunCredentials.generate().agent_secret),
    }[who]
    with pytest.raises(aiomqtt.MqttError):
        async with client(broker, creds):
            pass
    with pytest.raises(ValueError):
        RunCredentials(broker.master, broker.agent_secret).agent_for(ENROL_USER)
