"""Control-plane throughput and latency: empty tasks end to end through master, broker and agents.

Our figure: a `noop` job of N empty tasks on a cluster of A agents (the agent
completes each at once, without a worker process), so the time is the
master's scheduling, the MQTT round trip and the journal. Throughput = tasks /
(job finish - submission); latency per task = its result's arrival at the
master - its launch (tasks.csv end_s - start_s).

Peer, measured in the same run: the broker alone, one client publishing N
QoS-1 messages to another and the other replying to each (a bare MQTT round
trip with aiomqtt and msgpack, no testbed code).

    python benchmarks/dispatch.py [--agents 50] [--tasks 20000] [--broker embedded|mqtt://host:port]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiomqtt
import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.run import run_scenario
from testbed.broker import EmbeddedBroker
from testbed.mqtt import BrokerAddress
from testbed.scenario import parse_scenario


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def bare_round_trips(url: str, count: int, window: int = 200) -> tuple[float, list[float]]:
    """Requests from one client, echoed by another, at most ``window`` in flight."""
    address = BrokerAddress.parse(url)
    sent: dict[int, float] = {}
    latencies: list[float] = []
    async with (
        aiomqtt.Client(address.host, address.port, identifier="bench-echo") as echo,
        aiomqtt.Client(address.host, address.port, identifier="bench-client") as client,
    ):
        await echo.subscribe("bench/req", qos=1)
        await client.subscribe("bench/rep", qos=1)

        async def echoing() -> None:
            async for message in echo.messages:
                await echo.publish("bench/rep", message.payload, qos=1)

        echo_task = asyncio.create_task(echoing())
        credit = asyncio.Semaphore(window)
        start = time.perf_counter()

        async def receive() -> None:
            async for message in client.messages:
                seq = msgpack.unpackb(message.payload)["seq"]
                latencies.append(time.perf_counter() - sent.pop(seq))
                credit.release()
                if len(latencies) == count:
                    return

        receiver = asyncio.create_task(receive())
        for seq in range(count):
            await credit.acquire()
            sent[seq] = time.perf_counter()
            await client.publish("bench/req", msgpack.packb({"seq": seq, "op": "noop"}), qos=1)
        await receiver
        elapsed = time.perf_counter() - start
        echo_task.cancel()
    return count / elapsed, latencies


async def testbed_dispatch(agents: int, tasks: int, broker: str, out: Path) -> tuple[float, list[float]]:
    scenario = parse_scenario(
        {
            "name": "dispatch",
            "broker": broker,
            "cluster": {
                "reserved": 2,
                "transient": {"count": agents - 2, "slots": 4},
                "warm_workers": False,
                "heartbeat_interval": 1,
                "heartbeat_timeout": 30,
            },
            "jobs": [{"workload": "noop", "tasks": tasks}],
            "timeout": 900,
        }
    )
    await run_scenario(scenario, out)
    job = next(csv.DictReader((out / "jobs.csv").open()))
    rows = list(csv.DictReader((out / "tasks.csv").open()))
    latencies = [float(r["end_s"]) - float(r["start_s"]) for r in rows]
    return tasks / float(job["jct_s"]), latencies


async def main(args: argparse.Namespace) -> None:
    broker = EmbeddedBroker() if args.broker == "embedded" else None
    if broker:
        await broker.start()
    url = broker.url if broker else args.broker
    try:
        peer_rate, peer_lat = await bare_round_trips(url, args.tasks)
    finally:
        if broker:
            await broker.stop()
    with tempfile.TemporaryDirectory() as tmp:
        rate, lat = await testbed_dispatch(args.agents, args.tasks, args.broker, Path(tmp))
    for name, r, ls in (
        (f"testbed, {args.agents} agents, empty tasks", rate, lat),
        ("peer: bare MQTT request/reply", peer_rate, peer_lat),
    ):
        print(
            f"{name:40s} {r:8.0f} tasks/s  latency p50 {1000 * statistics.median(ls):7.1f} ms  "
            f"p99 {1000 * percentile(ls, 99):7.1f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--broker", default="embedded", help="embedded, or mqtt://HOST:PORT (e.g. Mosquitto)")
    asyncio.run(main(parser.parse_args()))
