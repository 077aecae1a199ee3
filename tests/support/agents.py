"""An agent built by hand (no broker connection) over a run directory of its own."""

from __future__ import annotations

from pathlib import Path

from agents.agent import Agent, AgentConfig
from testbed.wire.mqtt import BrokerAddress


def agent(tmp_path: Path) -> Agent:
    config = AgentConfig("run", "transient-0", "transient", BrokerAddress("127.0.0.1", 1), tmp_path)
    return Agent(config)
