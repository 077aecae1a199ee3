"""Density: memory of idle agent processes on this machine.

Our figure: N idle agents (local provider, each its own process group)
connected to the embedded broker, first with lazy task workers (the agent
process alone), then with warm workers (each agent's task forkserver started,
numpy and the workloads preloaded). Memory per agent as RSS and as PSS (the
agent's fair share of pages shared between processes). Peer, in the same run:
N bare Python processes idling in an asyncio loop.

    python benchmarks/density.py [--agents 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

import aiomqtt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.providers.base import NodeSpec
from master.providers.local import LocalProvider, python_command
from testbed.wire.broker import EmbeddedBroker, agent_env, master_address
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import Codec, NodeState, Topics

BARE = [sys.executable, "-c", "import asyncio; asyncio.run(asyncio.sleep(3600))"]


def memory_of_group(pgid: int) -> tuple[int, int]:
    """(RSS, PSS) in bytes of every process in a process group."""
    rss = pss = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            for line in Path(f"/proc/{entry}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
        except (OSError, IndexError, ValueError):
            continue
    return rss, pss


async def wait_up(address: BrokerAddress, run_id: str, count: int) -> None:
    codec, seen = Codec(), set()
    async with aiomqtt.Client(
        address.host, address.port, username=address.username, password=address.password
    ) as client:
        await client.subscribe(Topics(run_id).state(), qos=1)
        async for message in client.messages:
            state = codec.decode(bytes(message.payload))
            if isinstance(state, NodeState) and state.state == "up":
                seen.add(state.node_id)
                if len(seen) == count:
                    return


async def measure(count: int, lazy: bool | None, broker: EmbeddedBroker, tmp: Path) -> tuple[float, float]:
    run_id = f"density-{'bare' if lazy is None else ('lazy' if lazy else 'warm')}"
    provider = LocalProvider(run_id, tmp / run_id)
    try:
        for i in range(count):
            command = (
                BARE
                if lazy is None
                else [
                    *python_command(),
                    "--run",
                    run_id,
                    "--node-id",
                    f"transient-{i}",
                    "--node-class",
                    "transient",
                    "--broker",
                    broker.url,
                    *(["--lazy-workers"] if lazy else []),
                ]
            )
            env = {} if lazy is None else await agent_env(broker, f"transient-{i}")  # its broker login
            await provider.launch(NodeSpec(f"transient-{i}", "transient", 2, 1024, None, tuple(command), env))
        if lazy is None:
            await asyncio.sleep(3)  # a bare interpreter is idle once started; nothing to wait on
        else:
            await asyncio.wait_for(wait_up(master_address(broker), run_id, count), 300)
            await asyncio.sleep(5 if not lazy else 1)  # let warm forkservers finish preloading
        totals = [memory_of_group(provider.pid(f"transient-{i}")) for i in range(count)]
    finally:
        await provider.close()
    return sum(t[0] for t in totals) / count / 2**20, sum(t[1] for t in totals) / count / 2**20


async def main(count: int) -> None:
    broker = EmbeddedBroker()
    await broker.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows = [
                (label, await measure(count, lazy, broker, Path(tmp)))
                for label, lazy in (
                    ("agent, lazy workers", True),
                    ("agent, warm workers", False),
                    ("peer: bare python asyncio", None),
                )
            ]
    finally:
        await broker.stop()
    for label, (rss, pss) in rows:
        fits = 24 * 1024 / pss
        print(
            f"{label:28s} n={count}  RSS {rss:6.1f} MB  PSS {pss:6.1f} MB per agent  "
            f"(24 GiB / PSS = {fits:.0f} agents)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    asyncio.run(main(parser.parse_args().agents))
