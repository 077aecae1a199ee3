"""Live progress of a run: jobs done/total, tasks running per node class, evictions, elapsed.

On a terminal it is a line redrawn in place (rich); otherwise a plain log line
every few seconds, so CI logs and ``nohup`` output stay readable.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from typing import Any


def progress_line(status: dict[str, Any]) -> str:
    return _clock(status) + " " + progress_counts(status)


def progress_counts(status: dict[str, Any]) -> str:
    """Jobs done, tasks running per class, nodes up, evictions (a ``/status`` dict)."""
    jobs = status["jobs"]
    done = sum(1 for j in jobs if j["status"] in ("succeeded", "failed"))
    failed = sum(1 for j in jobs if j["status"] == "failed")
    running: Counter[str] = Counter()
    alive: Counter[str] = Counter()
    for node in status["nodes"]:  # ``class``: its class's name (the shorthand's: its kind)
        if node["status"] in ("up", "draining"):
            alive[node["class"]] += 1
            running[node["class"]] += len(node["running"])
    head = f"jobs {done}/{status['expected_jobs']}" + (f" ({failed} failed)" if failed else "")
    if set(alive) <= {"reserved", "transient"}:
        tasks = f"reserved {running['reserved']}, transient {running['transient']}"
        up = f"{alive['reserved']}r {alive['transient']}t"
    else:
        tasks = ", ".join(f"{c} {running[c]}" for c in alive)
        up = ", ".join(f"{c} {n}" for c, n in alive.items())
    return f"{head} | running tasks: {tasks} | nodes up: {up} | evictions {status['evictions']}"


def sim_progress_line(status: dict[str, Any], trace_s: float, events: int, wall_s: float) -> str:
    """A simulated run's progress: its simulated (trace) time, the events it handled and their
    rate, what ``testbed run`` shows for a real run, and an estimate of the wall time left from
    the share of the jobs done so far (none before the first ends)."""
    done = sum(1 for j in status["jobs"] if j["status"] in ("succeeded", "failed"))
    rate = events / wall_s if wall_s > 0 else 0.0
    left = wall_s * (status["expected_jobs"] - done) / done if done else None
    eta = "ETA --" if left is None else f"ETA ~{format_wall(left)} (from the jobs done)"
    clock = f"[sim {format_wall(trace_s)} trace, {events:,} events, {rate:,.0f}/s, {eta}]"
    return f"{clock} {progress_counts(status)}"


def format_wall(seconds: float) -> str:
    """``42.0s``, ``3m07s``, ``2h05m``."""
    if seconds < 59.95:  # not 60.0s
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def _clock(status: dict[str, Any]) -> str:
    """Wall seconds since the run started (time 0 of the report), or, while the initial
    cluster is still launching, since the master started (a different origin, so said)."""
    if status.get("started", True):
        return f"[run {status['t']:7.1f}s wall]"
    return f"[launching nodes {status['t']:5.1f}s wall]"


def show_live_view(url: str) -> None:
    """The live view's address (docs/live-view.md), once, under the run directory's line."""
    print(f"live view: {url}", file=sys.stderr, flush=True)


async def show_progress(status: Any, interactive: bool | None = None) -> None:
    """Render ``status()`` until cancelled."""
    from rich.console import Console  # here: the simulator's progress line imports none of it
    from rich.live import Live
    from rich.text import Text

    console = Console(stderr=True)
    interactive = console.is_terminal if interactive is None else interactive
    if not interactive:
        while True:
            await asyncio.sleep(5)
            print(progress_line(status()), file=sys.stderr, flush=True)
    with Live(Text(""), console=console, refresh_per_second=4, transient=True) as live:
        while True:
            live.update(Text(progress_line(status())))
            await asyncio.sleep(0.25)
