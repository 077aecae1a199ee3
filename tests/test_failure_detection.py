"""Failure detection by heartbeats, on a virtual clock.

Heartbeats heard while the cluster came up still count once the run's time 0
is set, so a node that falls silent right then is lost after heartbeat_timeout.
A node silent alone is lost at once; a whole cluster silent at once is asked
over HTTP first, and only the agents that do not answer are lost.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from agents.shuffle import make_app
from master.core.liveness import patience_s
from master.core.nodes import NodeRecord
from master.shell.master import Master
from tests.support.masters import Clock, master_with_a_node, shell_act


async def test_silence_before_time_zero_counts(tmp_path: Path) -> None:
    clock = Clock()
    master, node = master_with_a_node(tmp_path, clock)
    clock.now += 8  # the other nodes take 8 s to come up; this one was heard just now
    node.last_seen = master.journal.now()
    clock.now += 1.5
    master.begin()
    assert master.journal.now() == 0
    assert master.journal.now() - node.last_seen == 1.5


TIMEOUT = 2.0  # make_scenario's heartbeat_timeout


@pytest.fixture
async def live_agent_url(tmp_path: Path) -> AsyncIterator[str]:
    """An agent's real HTTP app, answering ``/health`` as incarnation ``i1`` of transient-0."""
    runner = web.AppRunner(make_app(tmp_path, "t", identity={"node": "transient-0", "incarnation": "i1"}))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


def closed_port_url() -> str:
    """The URL of a port nobody listens on: a dead agent."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def two_nodes(tmp_path: Path, clock: Clock, live_url: str) -> tuple[Master, NodeRecord, NodeRecord]:
    master, alive = master_with_a_node(tmp_path, clock)
    alive.url, alive.incarnation = live_url, "i1"
    dead = NodeRecord("transient-1", "transient", 1, 0.0, 2, 1024, 0.3, status="up")
    dead.url, dead.incarnation = closed_port_url(), "i2"
    master.nodes[dead.node_id] = dead
    return master, alive, dead


def journal_events(master: Master, name: str) -> list[dict]:
    lines = (master.run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


async def test_a_node_silent_alone_is_asked_and_lost_when_dead(tmp_path: Path, live_agent_url: str) -> None:
    clock = Clock()
    master, alive, dead = two_nodes(tmp_path, clock, live_agent_url)
    clock.now += TIMEOUT + 0.1
    alive.last_seen = master.journal.now()  # the other node is heard: the broker works
    shell_act(master, master.core.watch.check_heartbeats)
    assert sorted(master.core.watch.probing) == ["transient-1"] and dead.status == "up"  # probed first
    await master._settle()
    assert (alive.status, dead.status) == ("up", "lost")
    assert [e["reason"] for e in journal_events(master, "node_lost")] == ["heartbeat_timeout"]


async def test_a_whole_silent_cluster_is_asked_before_any_node_is_lost(
    tmp_path: Path, live_agent_url: str
) -> None:
    clock = Clock()
    master, alive, dead = two_nodes(tmp_path, clock, live_agent_url)
    clock.now += TIMEOUT + 0.1  # nobody heard: a broker that stalls, or one that no longer routes
    shell_act(master, master.core.watch.check_heartbeats)
    assert (alive.status, dead.status) == ("up", "up")
    probes = set(master._work)
    assert len(probes) == 2
    shell_act(master, master.core.watch.check_heartbeats)  # next interval, probes out: not asked twice
    assert set(master._work) == probes
    await asyncio.gather(*probes)
    assert (alive.status, dead.status) == ("up", "lost")
    assert master.core.watch.answered["transient-0"] == master.journal.now()  # a fresh timeout from now
    assert [e["nodes"] for e in journal_events(master, "cluster_silent")] == [["transient-0", "transient-1"]]
    assert [e["node"] for e in journal_events(master, "node_lost")] == ["transient-1"]


async def test_a_silent_node_that_answers_is_kept_until_the_patience_runs_out(
    tmp_path: Path, live_agent_url: str
) -> None:
    """Its MQTT connection may be stuck while the agent lives; not for ever."""
    clock = Clock()
    master, node = master_with_a_node(tmp_path, clock)
    node.url, node.incarnation = live_agent_url, "i1"
    clock.now += TIMEOUT + 0.1
    shell_act(master, master.core.watch.check_heartbeats)
    await master._settle()
    assert node.status == "up"
    shell_act(master, master.core.watch.check_heartbeats)  # answered just now: not asked again yet
    assert not master.core.watch.probing
    clock.now += patience_s(TIMEOUT)
    shell_act(master, master.core.watch.check_heartbeats)
    await master._settle()
    assert node.status == "lost"


async def test_a_frozen_node_is_lost_alone_but_waited_for_when_everyone_is_quiet(tmp_path: Path) -> None:
    """A frozen agent's port accepts (the kernel does) but nobody answers."""
    clock = Clock()
    with socket.socket() as frozen:
        frozen.bind(("127.0.0.1", 0))
        frozen.listen()
        master, alive, dead = two_nodes(tmp_path, clock, closed_port_url())
        alive.url = dead.url = f"http://127.0.0.1:{frozen.getsockname()[1]}"
        clock.now += TIMEOUT + 0.1  # both silent: the whole cluster is quiet
        shell_act(master, master.core.watch.check_heartbeats)
        await master._settle()
        assert (alive.status, dead.status) == ("up", "up")
        alive.last_seen = master.journal.now()  # one node speaks again: the other is silent alone
        shell_act(master, master.core.watch.check_heartbeats)
        await master._settle()
        assert (alive.status, dead.status) == ("up", "lost")
