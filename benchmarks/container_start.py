"""Container start latency and idle memory of the testbed image.

Start latency, p50/p99 over N starts each, every row measured the same way through the
Docker SDK (create, start, wait for exit, remove; `docker run --rm`):
- peer: `true` in the bare base image (what any container costs on this engine);
- ours: `true` in the testbed image (adds tini and the entrypoint script);
- ours: the agent's imports (asyncio, aiohttp, aiomqtt, msgpack, numpy) in the testbed
  image: the time until an agent process could start serving;
- ours: DockerProvider.launch() of a node until that node has done the agent's imports
  (what the master waits for, the run's network already existing).

Idle memory (`docker stats`, computed as the docker CLI does: usage minus inactive file
cache), median of a few containers each:
- ours: the agent's imports then an idle asyncio loop;
- ours: a real idle agent connected to a Mosquitto broker container;
- peer: `sleep infinity` in the base image.
and from these, how many idle agents fit in this machine's memory.

    python benchmarks/container_start.py [--starts 20] [--image transient-testbed:latest]
        [--base-image transient-testbed/base:bookworm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
from docker.models.containers import Container

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.providers.base import NodeSpec
from master.providers.docker import DockerProvider
from master.providers.node_container import LABEL_RUN

IMPORTS = "import asyncio, aiohttp, aiomqtt, msgpack, numpy"
IDLE_AGENT_IMPORTS = f"{IMPORTS}; print('ready', flush=True); asyncio.run(asyncio.sleep(3600))"
MEMORY_SAMPLES = 3
MiB = 1024 * 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def timed(action: Callable[[], object], starts: int) -> list[float]:
    durations = []
    for _ in range(starts):
        began = time.perf_counter()
        action()
        durations.append(time.perf_counter() - began)
    return durations


def wait_for_line(container: Container, text: str) -> None:
    for line in container.logs(stream=True, follow=True):
        if text in line.decode():
            return
    raise RuntimeError(f"{container.name} exited before printing {text!r}")


def provider_launch_times(image: str, starts: int) -> list[float]:
    client = docker.from_env()

    async def measure() -> list[float]:
        provider = DockerProvider(f"bench-start-{os.getpid()}", image)
        durations = []
        try:
            await provider.host_address()  # creates the run's network outside the timing
            for index in range(starts):
                node_id = f"t{index:03d}"
                began = time.perf_counter()
                await provider.launch(
                    NodeSpec(node_id, "transient", 1, 128, None, ("python3", "-c", IDLE_AGENT_IMPORTS))
                )
                (container,) = client.containers.list(
                    filters={"label": [f"{LABEL_RUN}={provider.run_id}", f"testbed.node={node_id}"]}
                )
                await asyncio.to_thread(wait_for_line, container, "ready")
                durations.append(time.perf_counter() - began)
                await provider.evict(node_id)
        finally:
            await provider.close()
        return durations

    return asyncio.run(measure())


def memory_in_use(container: Container) -> int:
    """Bytes in use as `docker stats` shows them (usage minus inactive file cache)."""
    stats = container.stats(stream=False)["memory_stats"]
    details = stats.get("stats", {})
    cache = details.get("total_inactive_file", details.get("inactive_file", 0))
    return stats["usage"] - cache


@contextmanager
def labelled_run(client: docker.DockerClient) -> Iterator[str]:
    run_id = f"bench-mem-{os.getpid()}"
    try:
        yield run_id
    finally:
        for container in client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"}):
            container.remove(force=True, v=True)
        for network in client.networks.list(filters={"label": f"{LABEL_RUN}={run_id}"}):
            network.remove()


def idle_memory(
    client: docker.DockerClient, image: str, command: list[str], ready: str | None, **options
) -> float:
    """Median MiB in use over a few idle containers of `command`."""
    samples = []
    with labelled_run(client) as run_id:
        for _ in range(MEMORY_SAMPLES):
            container = client.containers.run(
                image, command, labels={LABEL_RUN: run_id}, detach=True, **options
            )
            if ready is not None:
                wait_for_line(container, ready)
            samples.append(memory_in_use(container) / MiB)
            container.remove(force=True, v=True)
    return statistics.median(samples)


def idle_agent_memory(client: docker.DockerClient, image: str) -> float:
    """Median MiB in use by real idle agents, each connected to a Mosquitto container."""
    with labelled_run(client) as run_id:
        network = client.networks.create(run_id, labels={LABEL_RUN: run_id})
        labels = {LABEL_RUN: run_id}
        client.containers.run(
            image, ["broker"], name=f"{run_id}-broker", network=network.name, labels=labels, detach=True
        )
        samples = []
        for index in range(MEMORY_SAMPLES):
            node_id = f"t{index:03d}"
            agent = client.containers.run(
                image,
                [
                    *("agent", "--run", run_id, "--node-id", node_id, "--node-class", "transient"),
                    *("--broker", f"mqtt://{run_id}-broker:1883", "--slots", "2", "--memory-mb", "256"),
                    *("--data-dir", "/data", "--listen", "0.0.0.0", "--advertise", node_id, "--port", "7070"),
                ],
                network=network.name,
                labels=labels,
                detach=True,
            )
            wait_healthy(client, agent)
            samples.append(memory_in_use(agent) / MiB)
        return statistics.median(samples)


def wait_healthy(client: docker.DockerClient, container: Container, timeout_s: int = 60) -> None:
    since = int(time.time()) - 5
    events = client.events(
        since=since,
        until=int(time.time()) + timeout_s,
        decode=True,
        filters={"container": container.id, "event": "health_status"},
    )
    if not any(event["Action"] == "health_status: healthy" for event in events):
        raise RuntimeError(f"{container.name} did not become healthy")


def summary(durations: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(durations, 50) * 1000),
        "p99_ms": round(percentile(durations, 99) * 1000),
        "mean_ms": round(statistics.fmean(durations) * 1000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--image", default="transient-testbed:latest")
    parser.add_argument("--base-image", default="transient-testbed/base:bookworm")
    args = parser.parse_args()
    client = docker.from_env()

    def run(image: str, command: list[str]) -> Callable[[], object]:
        return lambda: client.containers.run(image, command, remove=True)

    starts = {
        "peer: `true` in the base image": timed(run(args.base_image, ["true"]), args.starts),
        "ours: `true` in the testbed image": timed(run(args.image, ["true"]), args.starts),
        "ours: agent imports in the testbed image": timed(
            run(args.image, ["python3", "-c", IMPORTS]), args.starts
        ),
        "ours: provider launch until the imports are done": provider_launch_times(args.image, args.starts),
    }
    idle_imports = idle_memory(client, args.image, ["python3", "-c", IDLE_AGENT_IMPORTS], "ready")
    idle_agent = idle_agent_memory(client, args.image)
    idle_sleep = idle_memory(client, args.base_image, ["sleep", "infinity"], None)
    total_mib = client.info()["MemTotal"] / MiB
    result = {
        "starts": args.starts,
        "load_average_1m": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
        "start_latency": {name: summary(durations) for name, durations in starts.items()},
        "idle_memory_mib": {
            "ours: agent imports + idle asyncio loop": round(idle_imports, 1),
            "ours: real idle agent (connected to a broker)": round(idle_agent, 1),
            "peer: `sleep infinity` in the base image": round(idle_sleep, 1),
        },
        "memory_total_mib": round(total_mib),
        "idle_agents_that_fit": int(total_mib // idle_agent),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
