"""Command line of one node agent: ``python -m agents ...`` or ``testbed agent ...``.

Kept lean on purpose: an idle agent imports only what it runs (asyncio,
aiohttp, aiomqtt, the protocol), not the workloads, numpy or the CLI.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, dest="run_id")
    parser.add_argument("--node-id", required=True)
    parser.add_argument("--node-class", choices=("reserved", "transient"), required=True)
    parser.add_argument("--broker", required=True, help="mqtt://HOST:PORT")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--listen", default="127.0.0.1")
    parser.add_argument("--advertise", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--heartbeat-interval", type=float, default=0.5)
    parser.add_argument(
        "--lazy-workers", action="store_true", help="start the task forkserver on the first task, not at once"
    )


def run_agent(args: argparse.Namespace) -> int:
    import asyncio

    from agents.agent import Agent, AgentConfig
    from testbed.mqtt import BrokerAddress
    from testbed.processes import die_with_parent

    die_with_parent()
    broker = BrokerAddress.parse(args.broker)  # reads the TESTBED_MQTT_* login
    token = os.environ.get("TESTBED_RUN_TOKEN", "")
    for secret in ("TESTBED_MQTT_USERNAME", "TESTBED_MQTT_PASSWORD", "TESTBED_RUN_TOKEN"):
        os.environ.pop(secret, None)  # task workers need none of them
    config = AgentConfig(
        run_id=args.run_id,
        node_id=args.node_id,
        node_class=args.node_class,
        broker=broker,
        data_dir=args.data_dir,
        slots=args.slots,
        memory_mb=args.memory_mb,
        listen=args.listen,
        advertise=args.advertise,
        port=args.port,
        token=token,
        heartbeat_interval=args.heartbeat_interval,
        warm_workers=not args.lazy_workers,
    )
    try:
        import uvloop
    except ImportError:
        asyncio.run(Agent(config).run())
    else:
        uvloop.run(Agent(config).run())
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents", description="one node agent")
    add_agent_arguments(parser)
    return run_agent(parser.parse_args(argv))
