"""Control-plane throughput and latency: empty tasks end to end through master, broker and agents.

Our figure: a `noop` job of N empty tasks on a cluster of A agents (the agent
completes each at once, without a worker process), so the time is the
master's scheduling, the MQTT round trip and the journal. Throughput = tasks /
(job finish - submission); latency per task = its result's arrival at the
master - its launch (tasks.csv end_s - start_s).

The CPU time each part spends while the job runs (from its submission to its
end; the agents' start-up is excluded) is measured too, per task: a busy,
shared machine stretches the throughput, while CPU per task says what the
control plane costs and so what an idle machine could do (the master is one
process: it can never exceed one core).

Peer, measured in the same run: the broker alone, one client publishing N
QoS-1 messages to another and the other replying to each (a bare MQTT round
trip with aiomqtt and msgpack, no testbed code), both sides pipelined with at
most 200 requests outstanding.

    python benchmarks/dispatch.py [--agents 50] [--tasks 20000] [--broker embedded|mosquitto|mqtt://host:port]

``mosquitto``: the run starts its own Mosquitto (as a scenario's ``broker:
mosquitto``) and the peer gets a private one; ``mqtt://``: both use that broker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt
import msgpack
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.shell.run import run_scenario
from testbed.journal.tables import measured_rows
from testbed.node.processes import child_env
from testbed.scenario.schema import parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host
from testbed.wire.broker import free_port, mosquitto_binary, wait_for_port
from testbed.wire.mqtt import BrokerAddress

WINDOW = 200


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def bare_round_trips(url: str, count: int) -> tuple[float, list[float]]:
    """Requests from one client, echoed by another, at most ``WINDOW`` in flight; neither
    side waits for one acknowledgement before sending the next publication."""
    address = BrokerAddress.parse(url)
    sent: dict[int, float] = {}
    latencies: list[float] = []
    options: dict[str, Any] = {"max_inflight_messages": WINDOW, "max_queued_incoming_messages": 0}
    async with (
        aiomqtt.Client(address.host, address.port, identifier="bench-echo", **options) as echo,
        aiomqtt.Client(address.host, address.port, identifier="bench-client", **options) as client,
    ):
        for side in (echo, client):
            side.pending_calls_threshold = 2 * WINDOW
        await echo.subscribe("bench/req", qos=1)
        await client.subscribe("bench/rep", qos=1)
        publishing: set[asyncio.Task[None]] = set()

        def publish(side: aiomqtt.Client, topic: str, payload: bytes) -> None:
            task = asyncio.create_task(side.publish(topic, payload, qos=1))
            publishing.add(task)
            task.add_done_callback(publishing.discard)

        async def echoing() -> None:
            async for message in echo.messages:
                publish(echo, "bench/rep", message.payload)  # type: ignore[arg-type]

        echo_task = asyncio.create_task(echoing())
        credit = asyncio.Semaphore(WINDOW)
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
            publish(client, "bench/req", msgpack.packb({"seq": seq, "op": "noop"}))
        await receiver
        elapsed = time.perf_counter() - start
        echo_task.cancel()
        await asyncio.gather(echo_task, *publishing, return_exceptions=True)
    return count / elapsed, latencies


class CpuMeter:
    """CPU seconds of the master (this process), the agents and the broker, sampled on demand."""

    def __init__(self, broker_port: int | None) -> None:
        self.me = psutil.Process()
        self.external = _listener(broker_port) if broker_port else None
        """A broker this run did not start (found before the run: the lookup is slow)."""

    def sample(self) -> dict[int, tuple[str, float]]:
        found: dict[int, tuple[str, float]] = {self.me.pid: ("master", _cpu(self.me))}
        for child in self.me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                role = "agents" if "agents" in child.cmdline() else "broker"
                found[child.pid] = (role, _cpu(child))
        if self.external is not None:
            with contextlib.suppress(psutil.Error):
                found[self.external.pid] = ("broker", _cpu(self.external))
        return found

    @staticmethod
    def spent(start: dict[int, tuple[str, float]], end: dict[int, tuple[str, float]]) -> dict[str, float]:
        """CPU seconds per role between two samples (processes present in both)."""
        by_role = {"master": 0.0, "agents": 0.0, "broker": 0.0}
        for pid, (role, cpu) in end.items():
            if pid in start:
                by_role[role] += cpu - start[pid][1]
        return by_role


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _listener(port: int) -> psutil.Process | None:
    with contextlib.suppress(psutil.Error):
        for conn in psutil.net_connections("tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                return psutil.Process(conn.pid)
    return None


async def testbed_dispatch(
    agents: int, tasks: int, broker: str, out: Path
) -> tuple[float, list[float], dict[str, float]]:
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
    meter = CpuMeter(BrokerAddress.parse(broker).port if broker.startswith("mqtt://") else None)
    samples: dict[str, dict[int, tuple[str, float]]] = {}

    def on_event(_master: object, record: dict[str, Any]) -> None:
        if record["event"] in ("job_submitted", "job_finished"):
            samples[record["event"]] = meter.sample()

    await run_scenario(resolve(scenario, Host.this_machine()), out, on_event=on_event)
    job = measured_rows(out / "jobs.csv")[0]  # wall seconds
    rows = measured_rows(out / "tasks.csv")
    latencies = [float(r["end_s"]) - float(r["start_s"]) for r in rows]
    cpu = CpuMeter.spent(samples["job_submitted"], samples["job_finished"])
    return tasks / float(job["jct_s"]), latencies, cpu


@contextlib.asynccontextmanager
async def peer_broker(kind: str) -> AsyncIterator[str]:
    """The broker the peer measures: a private, anonymous embedded broker or Mosquitto (the
    same software as the run's, without its logins), or the given URL."""
    if kind.startswith("mqtt://"):
        yield kind
        return
    port = free_port()
    if kind == "embedded":
        command = [sys.executable, "-m", "testbed.app.cli", "broker", "--host", "127.0.0.1"]
        command += ["--port", str(port)]
    else:
        binary = mosquitto_binary()
        if binary is None:
            raise SystemExit("--broker mosquitto needs Mosquitto installed")
        command = [binary, "-p", str(port)]  # local-only and anonymous
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env=child_env()
    )
    try:
        await wait_for_port("127.0.0.1", port, 15, process)
        yield f"mqtt://127.0.0.1:{port}"
    finally:
        process.terminate()
        await process.wait()


async def main(args: argparse.Namespace) -> None:
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    async with peer_broker(args.broker) as url:
        peer_rate, peer_lat = await bare_round_trips(url, args.tasks)
    with tempfile.TemporaryDirectory() as tmp:
        rate, lat, cpu = await testbed_dispatch(args.agents, args.tasks, args.broker, Path(tmp))
    for name, r, ls in (
        (f"testbed, {args.agents} agents, empty tasks", rate, lat),
        ("peer: bare MQTT request/reply", peer_rate, peer_lat),
    ):
        print(
            f"{name:40s} {r:8.0f} tasks/s  latency p50 {1000 * statistics.median(ls):7.1f} ms  "
            f"p99 {1000 * percentile(ls, 99):7.1f} ms"
        )
    per_task = {role: 1e6 * seconds / args.tasks for role, seconds in cpu.items()}
    total = sum(per_task.values())
    print(
        "CPU per task while the job ran: "
        + ", ".join(f"{role} {us:.0f} us" for role, us in per_task.items())
        + f", total {total:.0f} us"
    )
    print(
        f"bounds on an idle machine: the master alone {1e6 / per_task['master']:.0f} tasks/s (one core), "
        f"all parts on {os.cpu_count()} cores {os.cpu_count() * 1e6 / total:.0f} tasks/s"
    )
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument(
        "--broker", default="embedded", help="embedded, mosquitto, or mqtt://HOST:PORT (an external broker)"
    )
    asyncio.run(main(parser.parse_args()))
