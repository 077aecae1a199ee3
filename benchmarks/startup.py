"""Start-up at scale: how long N local agents take to come up, and how many healthy nodes are lost.

Ours: ``testbed run`` of 1 reserved + N-1 transient nodes (local backend, the
run's own broker, default heartbeats: 0.5 s interval, 3 s timeout) with paced
start-up (``cluster.start_window`` default: 32 nodes starting per core). Peer,
in the same invocation: the same build with ``start_window: 0``, every node
launched at once as before pacing. Each run then runs one sleep task per node
(2 s), so every node is used once it is up.

Reported per run: wall seconds from the run's start until its cluster was up
(time 0), nodes that did not come up, nodes lost that nobody evicted (all of
them healthy here), and whether the job succeeded.

    python benchmarks/startup.py [--nodes 50,100,200] [--peer-up-to 100] [--lazy]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.shell.run import run_scenario
from testbed.scenario.schema import parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host


def scenario(nodes: int, window: int | None, lazy: bool) -> Any:
    cluster: dict[str, Any] = {"reserved": 1, "transient": nodes - 1, "warm_workers": not lazy}
    if window is not None:
        cluster["start_window"] = window
    return parse_scenario(
        {
            "name": f"startup-{nodes}",
            "cluster": cluster,
            "jobs": [{"workload": "sleep", "tasks": nodes, "duration": "2s"}],
            "timeout": "15m",
        }
    )


async def measure(nodes: int, window: int | None, lazy: bool) -> dict[str, Any]:
    began = time.monotonic()
    marks: dict[str, float] = {}

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "run_started":
            marks["up"] = time.monotonic() - began

    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        settings = resolve(scenario(nodes, window, lazy), Host.this_machine())
        result = await run_scenario(settings, Path(tmp), on_event=on_event)
    cluster = result.summary["cluster"]
    if not result.ok:  # why, for the record
        failures = result.summary["task_failures"]
        print(f"failed run at {nodes} nodes: task failures {failures}", file=sys.stderr)
    return {
        "up_s": marks.get("up"),
        "start_failures": cluster["start_failures"],
        "lost": sum(cluster["unplanned_losses"].values()),
        "ok": result.ok,
        "total_s": time.monotonic() - began,
    }


def row(label: str, nodes: int, found: dict[str, Any]) -> str:
    up = f"{found['up_s']:.1f} s" if found["up_s"] is not None else "never"
    return (
        f"| {label} | {nodes} | {up} | {found['start_failures']} | {found['lost']} | "
        f"{'yes' if found['ok'] else 'no'} | {found['total_s']:.0f} s |"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", default="50,100,200", help="cluster sizes, comma-separated")
    parser.add_argument("--peer-up-to", type=int, default=100, help="run the peer at sizes up to this")
    parser.add_argument("--lazy", action="store_true", help="cluster.warm_workers: false (less memory)")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}, lazy workers: {args.lazy}")
    print("| start-up | nodes | cluster up after | did not come up | healthy nodes lost | job ok | run |")
    print("|---|---|---|---|---|---|---|")
    for nodes in (int(n) for n in args.nodes.split(",")):
        print(row("paced (ours)", nodes, await measure(nodes, None, args.lazy)), flush=True)
        if nodes <= args.peer_up_to:
            print(row("all at once (peer)", nodes, await measure(nodes, 0, args.lazy)), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
