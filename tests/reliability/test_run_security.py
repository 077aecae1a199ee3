"""A real run: broker credentials and keys stay secret (no command line, no environment, no
file of the run), and nothing listens beyond loopback."""

from __future__ import annotations

import asyncio
import ipaddress
import os
from pathlib import Path
from typing import Any

import psutil
import pytest

from master.shell.run import run_scenario
from testbed.wire.broker import EmbeddedBroker
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def run_processes() -> list[psutil.Process]:
    """This process (the master) and everything it started: broker, agents, forkservers, workers."""
    me = psutil.Process(os.getpid())
    return [me, *me.children(recursive=True)]


def snapshot() -> dict[str, Any]:
    listening, cmdlines, worker_envs, environs = [], [], {}, []
    for process in run_processes():
        try:
            cmdlines.append(" ".join(process.cmdline()))
            if process.pid != os.getpid():
                environs.append(" ".join(f"{k}={v}" for k, v in process.environ().items()))
            listening += [
                (process.pid, c.laddr.ip, c.laddr.port)
                for c in process.net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN
            ]
            if "forkserver" in " ".join(process.cmdline()):
                worker_envs[process.pid] = process.environ()
        except psutil.NoSuchProcess:
            continue
    return {"listening": listening, "cmdlines": cmdlines, "worker_envs": worker_envs, "environs": environs}


def all_bytes(run_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file())


async def test_credentials_stay_secret_and_everything_listens_on_loopback(tmp_path: Path) -> None:
    broker = EmbeddedBroker(log_path=tmp_path / "logs" / "broker.log")  # as a run makes it
    seen: list[dict[str, Any]] = []
    secrets: list[str] = []

    def on_event(master: Any, record: dict[str, Any]) -> None:
        """Every task ran in a worker of its agent's forkserver, which exists once the task ends
        (agents start theirs in the background, so the first task start may come before some)."""
        if not secrets:
            creds = broker.credentials
            nodes = ["reserved-0", "transient-0", "transient-1", "transient-2"]
            secrets.extend([creds.master.password, creds.master.username, creds.agent_secret])
            secrets.extend(creds.agent_for(node).password for node in nodes)
            secrets.extend(master.keys.node_key(node) for node in nodes)
            secrets.extend([master.keys.run_secret, master.keys.api_token])
        if (record["event"] == "task_started" and not seen) or record["event"] == "task_finished":
            seen.append(snapshot())

    result = await asyncio.wait_for(
        run_scenario(settings_of(make_scenario()), tmp_path, on_event=on_event, broker=broker), 300
    )
    assert result.ok, result.summary
    found = seen[0]
    # The master API, the broker and four agents at least: the check is not vacuous.
    assert len(found["listening"]) >= 6, found["listening"]
    for pid, ip, port in found["listening"]:
        assert ipaddress.ip_address(ip).is_loopback, f"pid {pid} listens on {ip}:{port}"
    worker_envs = {pid: env for snap in seen for pid, env in snap["worker_envs"].items()}
    assert worker_envs, "no agent forkserver seen"
    for env in worker_envs.values():
        assert not {"TESTBED_MQTT_PASSWORD", "TESTBED_RUN_TOKEN"} & set(env), "task workers inherit secrets"
    everything = all_bytes(tmp_path)
    assert len(seen[0]["environs"]) >= 5  # the broker and four agents at least
    for secret in secrets:
        assert not any(secret in line for snap in seen for line in snap["cmdlines"]), "a secret in a cmdline"
        assert not any(secret in env for snap in seen for env in snap["environs"]), "a secret in an environ"
        if secret != secrets[-1]:  # the API token is in master.json, which only the owner reads
            assert secret.encode() not in everything, "a credential was written to the run directory"
    assert_clean(tmp_path)
