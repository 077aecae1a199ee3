"""Eviction detection latency: SIGKILL of an agent -> the master marks the node lost.

Our figure: 100 evictions by the chaos controller (SIGKILL of the agent's
process group); the master learns of each through the broker's Last Will.
Peer, measured in the same run: the heartbeat-timeout path, for agents frozen
with SIGSTOP (the TCP connection stays open, so no Last Will ever comes), with
the scenario's heartbeat interval and timeout. For scale: Spark declares a
silent executor lost only after its 120 s network timeout.

    python benchmarks/eviction_detection.py [--evictions 100] [--freezes 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.shell.run import run_scenario
from testbed.scenario.schema import parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def measure(evictions: int, freezes: int, out: Path) -> dict[str, Any]:
    scenario = parse_scenario(
        {
            "name": "detect",
            "cluster": {"reserved": 1, "transient": 10, "heartbeat_interval": 0.25, "heartbeat_timeout": 1.0},
            "chaos": {
                "transient": {"replace": True},
                "storms": [{"at": "2s", "every": "0.8s", "times": evictions, "evict": {"count": 1}}],
            },
            "jobs": [{"workload": "sleep", "tasks": 1, "duration": 4.0 + 0.8 * evictions + 3.0 * freezes}],
            "timeout": 600,
        }
    )
    frozen: dict[str, float] = {}

    def on_event(master: Any, record: dict[str, Any]) -> None:
        # After the storms, freeze one node every 3 s: only missed heartbeats can reveal it.
        if record["event"] == "storm" and record["firing"] == evictions - 1:
            for k in range(freezes):
                asyncio.get_running_loop().call_later(1.0 + 3.0 * k, freeze, master)

    def freeze(master: Any) -> None:
        for node in master.nodes.values():
            if node.status == "up" and node.node_class == "transient" and node.node_id not in frozen:
                os.killpg(master.provider.pid(node.node_id), signal.SIGSTOP)
                frozen[node.node_id] = master.journal.now()
                return

    await run_scenario(resolve(scenario, Host.this_machine()), out, on_event=on_event)
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    will = [e["detect_s"] for e in events if e["event"] == "node_lost" and e.get("reason") == "evicted"]
    lost_at = {e["node"]: e["t"] for e in events if e["event"] == "node_lost"}
    return {"will": will, "heartbeat": [lost_at[n] - t for n, t in frozen.items() if n in lost_at]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evictions", type=int, default=100)
    parser.add_argument("--freezes", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(measure(args.evictions, args.freezes, Path(tmp)))
    for name, values in (
        ("Last Will (SIGKILL)", result["will"]),
        ("heartbeat timeout 1.0s (SIGSTOP)", result["heartbeat"]),
    ):
        if values:
            print(
                f"{name:34s} n={len(values):3d}  p50 {1000 * statistics.median(values):7.1f} ms  "
                f"p99 {1000 * percentile(values, 99):7.1f} ms  max {1000 * max(values):7.1f} ms"
            )
    print("Spark (spark.network.timeout default)   120000 ms")


if __name__ == "__main__":
    main()
