"""How long one YARN-ME scheduling decision takes on a large, busy cluster.

Builds seeded snapshots (default: 1,000 nodes, 10,000 pending tasks in 100
jobs) and times ``schedule()`` of yarn-me next to its peers on the very same
snapshot, in the same run: yarn (same round machinery, no elasticity), fifo
(the reference scheduler), and the timeline generator run to its end (what an
eager, non-lazy straggler check would cost). Two cluster states:

- steady: every node is filled with running tasks as far as cores and memory
  allow, and 5% of the nodes just had one to three tasks end (one heartbeat's
  worth of churn on a busy cluster);
- burst: 90% of the nodes have that room (e.g. right after a wave of tasks ends).

    python benchmarks/yarn_me_decision.py [--scales 100:1000:20,1000:10000:100] [--repeat 20]

After each state, where one yarn-me round's time goes: the timeline's set-up,
its walk (how many events, CPU per event) and the rest of the round.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.schedulers.fifo import FifoScheduler
from master.schedulers.yarn import YarnScheduler
from master.schedulers.yarn_me import DEFAULT_ELASTIC_DISK_MB_S, YarnMeScheduler
from master.schedulers.yarn_me_timeline import RegularTimeline, estimate_completion_times
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    JobView,
    LogDecision,
    NodeView,
    PendingTask,
    Reserve,
    RunningTask,
)
from testbed.workloads.task_model import PenaltyCurve, ReducerSpillModel, TaskModel

NOW = 1_000.0


def build(nodes: int, tasks: int, jobs: int, seed: int, room: float) -> tuple[ClusterSnapshot, dict]:
    """A snapshot where a fraction ``room`` of the nodes has some free cores and memory."""
    rng = random.Random(seed)
    models = {f"job{j}": _model(rng) for j in range(jobs)}
    job_ids = list(models)
    node_views = [_node(rng, i, job_ids, models, room) for i in range(nodes)]
    running = Counter(t.job_id for n in node_views for t in n.running)
    per_job = [tasks // jobs + (1 if j < tasks % jobs else 0) for j in range(jobs)]
    job_views = tuple(
        JobView(
            job_id,
            submitted=rng.uniform(0, NOW),
            pending=tuple(
                PendingTask(f"{job_id}/t{i}", job_id, 0, i, models[job_id].ideal_memory_mb)
                for i in range(count)
            ),
            running=running[job_id],
        )
        for job_id, count in zip(job_ids, per_job, strict=True)
    )
    return ClusterSnapshot(NOW, tuple(node_views), job_views, 100), models


def _model(rng: random.Random) -> TaskModel:
    ideal_mb = rng.choice([1_000, 2_000, 3_000, 4_000, 6_000, 8_000])
    duration = rng.uniform(10, 120)
    if rng.random() < 0.5:
        return TaskModel(ideal_mb, duration, PenaltyCurve.step(rng.uniform(1.1, 1.6)))
    spill = ReducerSpillModel(ideal_mb, duration, disk_rate_mb_s=rng.uniform(50, 200))
    return spill.task_model(step=0.05)


def _node(rng: random.Random, i: int, job_ids: list[str], models: dict, room: float) -> NodeView:
    slots, memory = 8, rng.choice([16_000, 32_000, 64_000])
    running: list[RunningTask] = []
    used, disk = 0, 0.0
    for k in range(slots):
        job_id = rng.choice(job_ids)
        need = ideal = models[job_id].ideal_memory_mb
        bandwidth = 0.0
        if used + need > memory:  # as yarn-me would: an elastic task, while the disk budget lasts
            need = (memory - used) // 100 * 100
            bandwidth = models[job_id].disk_bandwidth_mb_s(need) or DEFAULT_ELASTIC_DISK_MB_S
            if need < ideal // 10 or disk + bandwidth > DEFAULT_ELASTIC_DISK_MB_S:
                break
            disk += bandwidth
        used += need
        runtime = models[job_id].penalized_duration(need)
        started = NOW - rng.uniform(0, runtime)
        end = started + runtime
        running.append(
            RunningTask(f"n{i}/r{k}", job_id, need, started, end, need < ideal, disk_mb_s=bandwidth)
        )
    if rng.random() < room:
        del running[: rng.randint(1, 3)]
    reserved = rng.choice(job_ids) if rng.random() < 0.1 else None
    return NodeView(f"n{i}", "reserved", slots, memory, tuple(running), reserved_for=reserved)


def timed(call: Callable[[], object], repeat: int) -> tuple[list[float], list[float], object]:
    """CPU and wall milliseconds of each call (CPU time is robust to a busy machine)."""
    cpu, wall, result = [], [], None
    for _ in range(repeat):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        result = call()
        cpu.append((time.process_time() - cpu_start) * 1000)
        wall.append((time.perf_counter() - wall_start) * 1000)
    return cpu, wall, result


def describe(decisions: object) -> str:
    if not isinstance(decisions, list):
        return ""
    assigns = [d for d in decisions if isinstance(d, Assign)]
    elastic = sum(a.elastic for a in assigns)
    reserves = sum(1 for d in decisions if isinstance(d, Reserve) and d.job_id)
    logs = Counter(d.decision for d in decisions if isinstance(d, LogDecision))
    rejected = logs["elastic_rejected_straggler"] + logs["elastic_rejected_disk"]
    return f"{len(assigns)} assigned ({elastic} elastic), {reserves} reserved, {rejected} refused"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scales",
        default="1000:10000:100",
        help="comma-separated nodes:pending_tasks:jobs, e.g. 100:1000:20,1000:10000:100",
    )
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for scale in args.scales.split(","):
        nodes, tasks, jobs = (int(part) for part in scale.split(":"))
        for name, room in (("steady", 0.05), ("burst", 0.9)):
            snapshot, models = build(nodes, tasks, jobs, args.seed, room)
            run_scenario(name, snapshot, models, args.repeat)


def run_scenario(name: str, snapshot: ClusterSnapshot, models: dict, repeat: int) -> None:
    with_room = sum(1 for n in snapshot.nodes if n.free_slots > 0)
    print(
        f"\n{name}: {len(snapshot.nodes)} nodes ({with_room} with a free core), "
        f"{sum(len(j.pending) for j in snapshot.jobs)} pending tasks in {len(snapshot.jobs)} jobs, "
        f"{sum(len(n.running) for n in snapshot.nodes)} running tasks"
    )
    candidates = {
        "yarn-me schedule()": lambda: YarnMeScheduler(models=models).schedule(snapshot),
        "yarn schedule()": lambda: YarnScheduler(models=models).schedule(snapshot),
        "fifo schedule()": lambda: FifoScheduler().schedule(snapshot),
        "timeline, run to the end": lambda: estimate_completion_times(snapshot, models),
    }
    print(f"{'':26}{'cpu median':>11}{'cpu min':>9}{'wall median':>12}  runs  decisions")
    for label, call in candidates.items():
        runs = max(1, repeat // 10) if label.startswith("fifo") else repeat
        cpu, wall, result = timed(call, runs)
        print(
            f"{label:26}{statistics.median(cpu):9.1f}ms{min(cpu):7.1f}ms"
            f"{statistics.median(wall):10.1f}ms  {runs:4}  {describe(result)}"
        )
    print(breakdown(snapshot, models, repeat))


class _TimedTimeline(RegularTimeline):
    """The timeline with its set-up and walk timed (CPU), and its events counted."""

    setup_s = walk_s = 0.0
    events = 0

    def __init__(self, *args: object) -> None:
        start = time.process_time()
        super().__init__(*args)  # type: ignore[arg-type]
        _TimedTimeline.setup_s += time.process_time() - start
        self._initial_events = len(self._events)

    def _walk(self, watched: int, known: int, horizon: float) -> int:
        start, released, pushed = time.process_time(), self._released, self._seq
        heap_before = len(self._events)
        try:
            return super()._walk(watched, known, horizon)
        finally:
            _TimedTimeline.walk_s += time.process_time() - start
            popped = heap_before + (self._seq - pushed) - len(self._events)
            _TimedTimeline.events += self._released - released + popped


def breakdown(snapshot: ClusterSnapshot, models: dict, repeat: int) -> str:
    """Median round's split: timeline set-up, walk (events, CPU per event), the rest."""
    import master.schedulers.yarn_me as yarn_me_module

    rows = []
    original = yarn_me_module.RegularTimeline
    yarn_me_module.RegularTimeline = _TimedTimeline  # type: ignore[misc]
    try:
        for _ in range(repeat):
            _TimedTimeline.setup_s = _TimedTimeline.walk_s = 0.0
            _TimedTimeline.events = 0
            start = time.process_time()
            YarnMeScheduler(models=models).schedule(snapshot)
            total = time.process_time() - start
            rows.append((total, _TimedTimeline.setup_s, _TimedTimeline.walk_s, _TimedTimeline.events))
    finally:
        yarn_me_module.RegularTimeline = original  # type: ignore[misc]
    total, setup, walk, events = sorted(rows)[len(rows) // 2]
    per_event = f"{1e6 * walk / events:.2f} us/event" if events else "no walk"
    return (
        f"yarn-me round {1000 * total:.1f} ms cpu: timeline set-up {1000 * setup:.1f} ms, "
        f"walk {1000 * walk:.1f} ms ({events} events, {per_event}), "
        f"rest {1000 * (total - setup - walk):.1f} ms"
    )


if __name__ == "__main__":
    main()
