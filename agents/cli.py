"""Command line of one node agent: ``python -m agents ...`` or ``testbed agent ...``.

Kept lean on purpose: an idle agent imports only what it runs (asyncio,
aiohttp, aiomqtt, the protocol), not the workloads, numpy or the CLI.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path

log = logging.getLogger("agents.cli")
BROKER_WAIT_S = 300.0
"""How long an agent goes on trying to reach a broker out of reach (a stack's broker may start
later, or restart) before it gives up: as long as an attached master waits for its agents."""


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free port) to 65535."""
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, found {text!r}")
    return int(text)


def broker_url(text: str) -> str:
    """An argparse type: ``mqtt://HOST[:PORT]``."""
    from testbed.wire.mqtt import BrokerAddress

    try:
        BrokerAddress.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, dest="run_id")
    parser.add_argument(
        "--node-id", help="default: the master names the agent (reserved-N, transient-N): compose, Swarm"
    )
    parser.add_argument("--node-class", choices=("reserved", "transient"), required=True)
    parser.add_argument("--broker", required=True, type=broker_url, help="mqtt://HOST:PORT")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--listen", default="127.0.0.1")
    parser.add_argument(
        "--advertise",
        default="127.0.0.1",
        help="address peers and the master reach this node at; 'auto': the address that routes to the broker",
    )
    parser.add_argument("--port", type=port_number, default=0)
    parser.add_argument("--heartbeat-interval", type=float, default=0.5)
    parser.add_argument(
        "--broker-wait",
        type=float,
        default=BROKER_WAIT_S,
        help="seconds the broker may stay out of reach before the agent gives up (exit 1)",
    )
    parser.add_argument(
        "--lazy-workers", action="store_true", help="start the task forkserver on the first task, not at once"
    )
    parser.add_argument(
        "--task-memory-limit-mb", type=int, help="memory each task may allocate; beyond it the task fails oom"
    )
    parser.add_argument(
        "--cgroup",
        type=Path,
        help="the node's CPU cgroup: the agent joins its leaf 'agent' first, each task worker its slot's",
    )
    parser.add_argument("--network-mbps", type=float, help="the node's NIC bandwidth, each direction")
    parser.add_argument("--disk-mb-s", type=float, help="the node's spill bandwidth")


def run_agent(args: argparse.Namespace) -> int:
    import asyncio

    from testbed.node.processes import die_with_parent, take_secrets
    from testbed.wire.mqtt import BrokerUnreachable

    if args.cgroup is not None:  # first: the forkserver and every task worker are born under the node's quota
        from testbed.node.cgroups import agent_group, join

        join(agent_group(args.cgroup))
    die_with_parent()
    secrets = take_secrets()  # task workers get none of them
    _work_in(args)
    from agents.agent import ListenFailed  # after join: the agent's imports count on its quota

    try:
        import uvloop
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    try:
        runner(_named_agent(args, secrets))
    except (BrokerUnreachable, ListenFailed) as exc:  # Swarm's on-failure policy starts it again
        print(f"agent {args.node_id or socket.gethostname()}: giving up: {exc}", file=sys.stderr)
        return 1
    return 0  # stopped by SIGTERM or SIGINT: a release, or the end of the run


def _work_in(args: argparse.Namespace) -> None:
    """Run in the node's own directory, as a container's agent runs in ``/data``: each task
    worker starts in the agent's working directory, and once the one the agent was started in
    is deleted (its starter's), every start fails with "[Errno 2] No such file or directory"."""
    args.data_dir = args.data_dir.absolute()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(args.data_dir)


async def _named_agent(args: argparse.Namespace, secrets: dict[str, str]) -> None:
    """Run the agent under its ``--node-id``, or else under the name the master gives it."""
    from agents.agent import Agent, AgentConfig
    from agents.naming import ask_name
    from testbed.wire.capabilities import NODE_KEY_ENV
    from testbed.wire.mqtt import BrokerAddress

    node_id, broker_host = args.node_id, BrokerAddress.parse(args.broker, secrets).host
    if not node_id:  # compose, Swarm: its own login and node key replace the enrolment login
        node_id, own, broker_host = await ask_name(
            BrokerAddress.parse(args.broker, secrets),
            args.run_id,
            socket.gethostname(),
            args.node_class,
            args.slots,
            args.memory_mb,
            args.broker_wait,
        )
        secrets = {**secrets, **own}
    broker = BrokerAddress.parse(args.broker, secrets)
    config = AgentConfig(
        run_id=args.run_id,
        node_id=node_id,
        node_class=args.node_class,
        broker=broker,
        data_dir=args.data_dir,
        slots=args.slots,
        memory_mb=args.memory_mb,
        listen=args.listen,
        advertise=await _advertised(args.advertise, broker_host, args.broker_wait),
        port=args.port,
        node_key=secrets.get(NODE_KEY_ENV, ""),
        heartbeat_interval=args.heartbeat_interval,
        warm_workers=not args.lazy_workers,
        task_memory_limit_mb=args.task_memory_limit_mb,
        network_mbps=args.network_mbps,
        disk_mb_s=args.disk_mb_s,
        cgroup=args.cgroup,
        broker_wait_s=args.broker_wait,
    )
    await Agent(config).run()


async def _advertised(advertise: str, broker_host: str, wait_s: float) -> str:
    """``--advertise``, or with ``auto`` this host's address on the route to the broker: to the
    address it was named over when it asked for its name (no second lookup, which a Swarm's
    DNS may not answer while the broker's task moves), else to the broker's name."""
    from testbed.wire.mqtt import BrokerUnreachable
    from testbed.wire.routes import route_address

    if advertise != "auto":
        return advertise
    try:
        return await route_address(broker_host, wait_s)
    except ValueError as exc:  # the broker's name went with its task (Swarm), and did not come back
        raise BrokerUnreachable(str(exc)) from None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents", description="one node agent")
    add_agent_arguments(parser)
    return run_agent(parser.parse_args(argv))
