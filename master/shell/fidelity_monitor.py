"""The fidelity monitor: did the run's nodes get what the scale model promised?

During the run (Mininet-HiFi's idea) a sampler in the master records, every half second,
the host's CPU saturation and steal (``/proc/stat``) and the master's event-loop lag; the
master records each launch's acknowledgement latency (command sent -> the agent's
``running``). After the run ``assess`` turns these, the tasks' CPU times and the nodes'
cgroup throttling counters into summary.json's ``fidelity`` block: a pure function of
its inputs, unit-tested on hand-made samples.

A run is *distorted* when more than ``SATURATED_TASK_SHARE`` of its task time ran while
the host was saturated (tasks then got less than their share, whatever the quotas said),
when the host lost more than ``STEAL_LIMIT`` of its time to steal, or when the master's
loop lagged by more than ``LAG_LIMIT_S`` at the 95th percentile.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import resource
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from master.shell.scale_model import NodeShares, node_slowdown
from master.summary.coaster import percentile, round4
from testbed.chaosmodels.slowdown import SlowSpan, effective_factor, episode_spans
from testbed.journal.tables import measured_rows
from testbed.node.cgroups import CpuStats
from testbed.scenario.schema import Scenario
from testbed.settings.run_settings import host_cores

SAMPLE_S = 0.5
SATURATED_BUSY = 0.95
"""A host sample is saturated when its cores were busy at least this share of the time."""
SATURATED_TASK_SHARE = 0.10
STEAL_LIMIT = 0.05
LAG_LIMIT_S = 0.1
FIDELITY_FILE = "fidelity.json"


@dataclass(frozen=True)
class HostSample:
    t: float  # the end of the sample, in run time
    span_s: float
    busy: float  # share of all cores' time not idle (steal included)
    steal: float


@dataclass(frozen=True)
class TaskTime:
    start_s: float
    end_s: float
    cpu_s: float
    node_class: str
    slowdown: float = 1.0
    """The ``chaos.slowdown`` factor it ran under: its quota was its class's divided by it (its
    node's own, with its node's episodes averaged over its time: ``effective_factor``)."""


@dataclass
class Observations:
    samples: list[HostSample] = field(default_factory=list)
    loop_lag_s: list[float] = field(default_factory=list)
    launch_ack_s: list[float] = field(default_factory=list)
    control_plane_cpu_s: float = 0.0
    wall_s: float = 0.0


def read_cpu_times(stat: Path = Path("/proc/stat")) -> tuple[int, int, int]:
    """(total, idle, steal) jiffies of all cores."""
    fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    total = user + nice + system + idle + iowait + irq + softirq + steal
    return total, idle + iowait, steal


def host_sample(
    t: float, span_s: float, before: tuple[int, int, int], after: tuple[int, int, int]
) -> HostSample:
    total = max(1, after[0] - before[0])
    return HostSample(t, span_s, 1 - (after[1] - before[1]) / total, (after[2] - before[2]) / total)


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a live process, 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler:
    """Host and master-loop samples while the run goes; ``stop`` returns them."""

    def __init__(self, now: Callable[[], float], broker_pid: Callable[[], int | None]) -> None:
        self.now = now
        self.broker_pid = broker_pid
        self.observations = Observations()
        self._task: asyncio.Task[None] | None = None
        self._started = time.monotonic()
        self._cpu0 = self._own_cpu_s()
        self._broker_cpu: dict[int, float] = {}
        """CPU seconds of each broker process seen (a restarted broker is a new process)."""

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._sample())

    async def stop(self) -> Observations:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        obs = self.observations
        # Samples were stamped on the monotonic clock: the run's clock may have been reset
        # since (the run starts once its nodes are up), so convert them with today's offset.
        offset = self.now() - time.monotonic()
        obs.samples = [replace(s, t=s.t + offset) for s in obs.samples]
        obs.wall_s = time.monotonic() - self._started
        obs.control_plane_cpu_s = self._own_cpu_s() - self._cpu0 + sum(self._broker_cpu.values())
        return obs

    @staticmethod
    def _own_cpu_s() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    async def _sample(self) -> None:
        before, last = read_cpu_times(), time.monotonic()
        while True:
            await asyncio.sleep(SAMPLE_S)
            woke = time.monotonic()
            self.observations.loop_lag_s.append(max(0.0, woke - last - SAMPLE_S))
            after = read_cpu_times()
            self.observations.samples.append(host_sample(woke, woke - last, before, after))
            pid = self.broker_pid()
            if pid is not None:
                self._broker_cpu[pid] = max(self._broker_cpu.get(pid, 0.0), process_cpu_s(pid))
            before, last = after, woke


def saturated_overlap(task: TaskTime, samples: Sequence[HostSample]) -> float:
    """Seconds of ``task`` that fell in saturated host samples."""
    overlap = 0.0
    for sample in samples:
        if sample.busy >= SATURATED_BUSY:
            start = max(task.start_s, sample.t - sample.span_s)
            overlap += max(0.0, min(task.end_s, sample.t) - start)
    return overlap


def assess(
    obs: Observations,
    tasks: Sequence[TaskTime],
    quotas: dict[str, float],
    throttling: dict[str, CpuStats],
    host_cores: float,
    slot_throttling: dict[str, CpuStats] | None = None,
) -> dict[str, Any]:
    """summary.json's ``fidelity`` block. ``quotas``: each node class's cores per task slot
    under the scale model (absent: unisolated); ``throttling``, ``slot_throttling``: each
    node's CPU counters, and its slots' (totalled); times are wall seconds."""
    task_time = sum(t.end_s - t.start_s for t in tasks)
    saturated = sum(saturated_overlap(t, obs.samples) for t in tasks)
    spans = sum(s.span_s for s in obs.samples)
    steal = sum(s.steal * s.span_s for s in obs.samples) / spans if spans else 0.0
    block: dict[str, Any] = {
        "host_cores": host_cores,
        "host_samples": len(obs.samples),
        "host_busy_mean": round4(sum(s.busy * s.span_s for s in obs.samples) / spans if spans else None),
        "host_saturated_share": round4(
            sum(s.span_s for s in obs.samples if s.busy >= SATURATED_BUSY) / spans if spans else None
        ),
        "host_steal_share": round4(steal),
        "task_time_s": round4(task_time),
        "task_time_saturated_share": round4(saturated / task_time if task_time else 0.0),
        "task_cpu_s": round4(sum(t.cpu_s for t in tasks)),
        **_quota_use(tasks, quotas),
        **_throttling(throttling, "nodes"),
        **_throttling(slot_throttling or {}, "slots"),
        "master_loop_lag_p95_s": round4(percentile(sorted(obs.loop_lag_s), 95)),
        "master_loop_lag_max_s": round4(max(obs.loop_lag_s, default=0.0)),
        "launch_ack_mean_s": round4(statistics.fmean(obs.launch_ack_s) if obs.launch_ack_s else None),
        "launch_ack_p95_s": round4(percentile(sorted(obs.launch_ack_s), 95)),
        "control_plane_cores": round4(obs.control_plane_cpu_s / obs.wall_s if obs.wall_s else None),
    }
    block["problems"] = problems(block)
    block["distorted"] = bool(block["problems"])
    return block


def _quota_use(tasks: Sequence[TaskTime], quotas: dict[str, float]) -> dict[str, Any]:
    """How much of its slot's CPU quota each task used, averaged over task time (a task that
    waits on I/O uses less; one held back by a saturated host, less than it could)."""
    limited = [t for t in tasks if t.node_class in quotas and t.end_s > t.start_s]
    if not limited:
        return {"task_cpu_per_quota": None}
    used = sum(t.cpu_s for t in limited)
    allowed = _allowed_cpu_s(limited, quotas)
    return {
        "task_cpu_per_quota": round4(used / allowed if allowed else None),
        **_slowed_share([t for t in limited if t.slowdown > 1], quotas),
    }


def _slowed_share(slowed: Sequence[TaskTime], quotas: dict[str, float]) -> dict[str, Any]:
    """The CPU the tasks of slowed nodes got, as a share of their class's full-speed slot quota
    (``slowed_task_cpu_share``), beside the share their factors allow (1/f, weighted by task
    time): a slowed node's CPU-bound tasks get no more than the second. Absent without slowed
    tasks."""
    if not slowed:
        return {}
    full = sum((t.end_s - t.start_s) * quotas[t.node_class] for t in slowed)
    return {
        "slowed_task_cpu_share": round4(sum(t.cpu_s for t in slowed) / full),
        "slowed_task_allowed_share": round4(_allowed_cpu_s(slowed, quotas) / full),
    }


def _allowed_cpu_s(tasks: Sequence[TaskTime], quotas: dict[str, float]) -> float:
    """The CPU seconds the tasks' slot quotas allowed them: each its class's, divided by its node's factor."""
    return sum((t.end_s - t.start_s) * quotas[t.node_class] / t.slowdown for t in tasks)


def _throttling(stats: dict[str, CpuStats], of: str) -> dict[str, Any]:
    if not stats:
        return {f"{of}_throttled_share": None, f"{of}_throttled_s": None}
    periods = sum(s.periods for s in stats.values())
    return {
        f"{of}_throttled_share": round4(
            sum(s.throttled_periods for s in stats.values()) / periods if periods else 0.0
        ),
        f"{of}_throttled_s": round4(sum(s.throttled_s for s in stats.values())),
    }


def problems(block: dict[str, Any]) -> list[str]:
    found = []
    if block["task_time_saturated_share"] > SATURATED_TASK_SHARE:
        found.append(
            f"{block['task_time_saturated_share']:.0%} of task time ran on a saturated host "
            f"(cores >= {SATURATED_BUSY:.0%} busy)"
        )
    if block["host_steal_share"] > STEAL_LIMIT:
        found.append(f"the host lost {block['host_steal_share']:.0%} of its CPU time to steal")
    lag = block["master_loop_lag_p95_s"]
    if lag is not None and lag > LAG_LIMIT_S:
        found.append(f"the master's event loop lagged {lag * 1000:.0f} ms at the 95th percentile")
    return found


def task_times(
    tasks: list[dict[str, str]],
    slowdown: Callable[[str, str, float, float], float] = lambda node, node_class, start, end: 1.0,
) -> list[TaskTime]:
    """The finished attempts of tasks.csv (wall seconds); ``slowdown``: the factor a task ran
    under, from its node's id and class and its start and end."""
    return [
        TaskTime(
            float(t["start_s"]),
            float(t["end_s"]),
            float(t.get("cpu_s") or 0.0),
            t["node_class"],
            slowdown(t["node_id"], t["node_class"], float(t["start_s"]), float(t["end_s"])),
        )
        for t in tasks
        if t.get("start_s") and t.get("end_s")
    ]


def task_slowdown(
    scenario: Scenario, spans: dict[str, list[SlowSpan]], node: str, node_class: str, start: float, end: float
) -> float:
    """A task's factor: its node's own (``chaos.slowdown``), its node's episodes while it ran
    (``spans``, from the journal) averaged over its time."""
    return effective_factor(node_slowdown(scenario, node, node_class), spans.get(node, []), start, end)


def journaled_spans(run_dir: Path) -> dict[str, list[SlowSpan]]:
    """Each node's slowdown episode spans, as the run journaled them (an open one: to the end)."""
    journal = run_dir / "events.jsonl"
    if not journal.exists():
        return {}
    lines = journal.read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines if '"slowdown_episode"' in line]
    spans: dict[str, list[SlowSpan]] = {}
    for span in episode_spans(events, defaultdict(lambda: math.inf)):
        spans.setdefault(span.node_id, []).append(span)
    return spans


def slot_quotas(scenario: Scenario) -> dict[str, float]:
    """Cores per task slot of each node class (by name, as tasks.csv has it) under the scale
    model (none when unisolated)."""
    if not scenario.fidelity.faithful:
        return {}
    return {
        name: (NodeShares.of(scenario, named.spec).cpus or 0.0) / named.spec.slots
        for name, named in scenario.node_classes.items()
    }


UNENFORCED = "the nodes were started by another deployment (attach): their shares were not enforced"


def write_assessment(
    run_dir: Path,
    scenario: Scenario,
    obs: Observations,
    throttling: dict[str, CpuStats],
    enforced: bool = True,
    prioritised: bool = False,
    slot_throttling: dict[str, CpuStats] | None = None,
) -> dict[str, Any]:
    """Assess the run and keep the verdict beside its journal (``fidelity.json``);
    ``enforced``: whether the run could give a faithful scenario's nodes their shares;
    ``prioritised``: whether its nodes and control plane had CPU priority over the host's
    other processes (``testbed.node.cgroups.control_plane``)."""
    rows = measured_rows(run_dir / "tasks.csv")
    tasks = task_times(rows, partial(task_slowdown, scenario, journaled_spans(run_dir)))
    block = {
        "prioritised": prioritised,
        **assess(obs, tasks, slot_quotas(scenario), throttling, host_cores(), slot_throttling),
    }
    if scenario.fidelity.faithful and not enforced:
        block["problems"].append(UNENFORCED)
        block["distorted"] = True
    (run_dir / FIDELITY_FILE).write_text(json.dumps(block, indent=2) + "\n", encoding="utf-8")
    return block
