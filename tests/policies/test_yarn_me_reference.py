"""yarn-me's optimised timeline walk against a straightforward reference of the same rules.

``ReferenceTimeline`` is the timeline generator written for clarity, not speed:
one event list scanned for its earliest event, the queue sorted afresh for
every offer, one task placement per check of the demand. Plugged into the
scheduler in place of ``RegularTimeline``, it must give exactly the same
decisions (including every logged estimate) on random hand-built snapshots,
and the same completion estimates and straggler answers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Set

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from master.schedulers import yarn_me
from master.schedulers.yarn import Demand, JobState, ModelLookup, Ordering, queue_key
from master.schedulers.yarn_me import YarnMeScheduler
from master.schedulers.yarn_me_timeline import RegularTimeline, estimate_completion_times
from testbed.api.policy import ClusterSnapshot, JobView, NodeView, PendingTask, RunningTask
from testbed.workloads.task_model import PenaltyCurve, TaskModel


class ReferenceTimeline:
    """The rules of ``RegularTimeline``, one event and one offer at a time.

    Events: the snapshot's running tasks end at their expected ends (overdue:
    now), in order of their ends, before any walk event at the same time; the
    walk's own events (its tasks' ends, nodes woken when a reservation is
    lifted) in time order, then in the order they were created.
    """

    def __init__(self, snapshot: ClusterSnapshot, jobs: Iterable[JobState], ordering: Ordering) -> None:
        self.now = self.time = snapshot.now
        self.ordering = ordering
        self.jobs = [job for job in jobs if job.view.pending]
        self.started = {job.view.job_id: 0 for job in self.jobs}
        self.running = {job.view.job_id: job.view.running for job in self.jobs}
        self.batches: dict[str, list[tuple[int, int, float]]] = {job.view.job_id: [] for job in self.jobs}
        self.reserving: dict[str, list[str]] = {job.view.job_id: [] for job in self.jobs}
        self.nodes = {n.node_id: n for n in snapshot.nodes}
        self.free_memory = {
            n.node_id: n.memory_mb - sum(t.memory_mb for t in n.running) for n in snapshot.nodes
        }
        self.free_slots = {n.node_id: n.free_slots for n in snapshot.nodes}
        self.reserved: dict[str, str | None] = {}
        for n in snapshot.nodes:
            known = n.reserved_for in self.started
            self.reserved[n.node_id] = n.reserved_for if known else None
            if known:
                self.reserving[n.reserved_for].append(n.node_id)  # type: ignore[index]
        running = [(t, n.node_id) for n in snapshot.nodes for t in n.running]
        running.sort(key=lambda pair: pair[0].expected_end)
        self.running_end = {t.job_id: t.expected_end for t, _ in running}
        # (time, 0 for a snapshot task's end / 1 for a walk event, order, node, memory, slots, job)
        self.events: list[tuple[float, int, int, str, int, int, str | None]] = [
            (max(t.expected_end, self.now), 0, i, node_id, t.memory_mb, 1, t.job_id)
            for i, (t, node_id) in enumerate(running)
        ]
        self.events += [
            (self.now, 1, i, n.node_id, 0, 0, None)
            for i, n in enumerate(snapshot.nodes)
            if n.free_slots > 0 and not n.draining
        ]
        self.created = len(snapshot.nodes)

    def job(self, job_id: str) -> JobState:
        return next(j for j in self.jobs if j.view.job_id == job_id)

    def unstarted(self, job: JobState) -> bool:
        return self.started[job.view.job_id] < len(job.view.pending)

    def head(self, job: JobState) -> Demand:
        return job.demand(self.started[job.view.job_id])

    def queue(self) -> list[JobState]:
        queued = [job for job in self.jobs if self.unstarted(job)]
        return sorted(queued, key=lambda j: queue_key(self.ordering, self.running[j.view.job_id], j.view))

    def step(self) -> bool:
        if not self.events:
            return False
        event = min(self.events)
        self.events.remove(event)
        self.time, _, _, node_id, memory, slots, job_id = event
        if job_id in self.running and slots:
            self.running[job_id] = max(0, self.running[job_id] - slots)
        if not self.nodes[node_id].draining:
            self.free_memory[node_id] += memory
            self.free_slots[node_id] += slots
            self.fill(node_id)
        return True

    def offer(self, node_id: str) -> JobState | None:
        total = self.nodes[node_id].memory_mb
        reserved = self.reserved[node_id]
        if reserved is not None:
            job = self.job(reserved)
            if self.unstarted(job) and self.head(job).memory_mb <= total:
                return job
            self.reserved[node_id] = None
        return next((job for job in self.queue() if self.head(job).memory_mb <= total), None)

    def fill(self, node_id: str) -> None:
        while self.free_slots[node_id] > 0:
            job = self.offer(node_id)
            if job is None:
                return
            job_id, demand = job.view.job_id, self.head(job)
            if demand.memory_mb > self.free_memory[node_id]:
                if self.reserved[node_id] is None:
                    self.reserved[node_id] = job_id
                    self.reserving[job_id].append(node_id)
                return
            first = count = self.started[job_id]
            while (
                count < len(job.view.pending)
                and job.demand(count) is demand
                and self.free_slots[node_id] > 0
                and self.free_memory[node_id] >= demand.memory_mb
            ):
                self.free_slots[node_id] -= 1
                self.free_memory[node_id] -= demand.memory_mb
                count += 1
            count -= first
            end = self.time + demand.duration_s
            self.events.append((end, 1, self.created, node_id, count * demand.memory_mb, count, job_id))
            self.created += 1
            self.batches[job_id].append((first, count, end))
            self.started[job_id] += count
            self.running[job_id] += count
            if self.reserved[node_id] == job_id:
                self.reserved[node_id] = None
            if not self.unstarted(job):
                self.wake_reserved_nodes(job_id)

    def wake_reserved_nodes(self, job_id: str) -> None:
        for node_id in self.reserving[job_id]:
            if self.reserved[node_id] == job_id:
                self.reserved[node_id] = None
                self.events.append((self.time, 1, self.created, node_id, 0, 0, None))
                self.created += 1
        self.reserving[job_id].clear()

    def completion_times(self) -> dict[str, float]:
        while self.step():
            pass
        return {
            job.view.job_id: math.inf
            if self.unstarted(job)
            else max(
                self.running_end.get(job.view.job_id, -math.inf),
                *(e for *_, e in self.batches[job.view.job_id]),
            )
            for job in self.jobs
        }

    def pending_end_reaches(self, job_id: str, threshold: float, excluded: Set[int]) -> tuple[bool, float]:
        job = self.job(job_id)
        shortest = min(job.demand(p).duration_s for p in range(len(job.view.pending)))
        latest, checked = -math.inf, 0
        while True:
            for start, count, end in self.batches[job_id][checked:]:
                if any(p not in excluded for p in range(start, start + count)):
                    if end >= threshold:
                        return True, end
                    latest = max(latest, end)
            checked = len(self.batches[job_id])
            unstarted = [p for p in range(self.started[job_id], len(job.view.pending)) if p not in excluded]
            if not unstarted:
                return False, latest
            while len(self.batches[job_id]) == checked:
                if self.time >= threshold - shortest:  # any task still to start ends too late
                    return True, self.time + shortest
                if not self.step():
                    return True, math.inf


MODELS_PER_JOB = 2


def random_cluster(seed: int) -> tuple[ClusterSnapshot, dict]:
    """Up to 12 nodes and 6 jobs: step and sawtooth curves, two stages with different demands,
    draining nodes, reservations (some for jobs with nothing pending), overdue tasks."""
    rng = random.Random(seed)
    now = 50.0
    models: dict = {}
    jobs = []
    for j in range(rng.randint(1, 6)):
        job_id = f"j{j}"
        pending: list[PendingTask] = []
        for stage in range(rng.randint(1, MODELS_PER_JOB)):
            curve = PenaltyCurve.step(rng.uniform(1.1, 2.0))
            if rng.random() < 0.4:
                curve = PenaltyCurve(
                    ((0.1, 1.6), (0.25, 1.2), (0.5, 1.9), (0.75, 1.3), (0.99, 1.9), (1.0, 1.0))
                )
            disk_rate = rng.choice([None, 5.0, 50.0])  # None: spill unknown
            models[(job_id, stage)] = TaskModel(
                rng.randrange(300, 6_000, 100), float(rng.randint(1, 60)), curve, disk_rate_mb_s=disk_rate
            )
            pending += [
                PendingTask(f"{job_id}/{stage}/{i}", job_id, stage, i, 0) for i in range(rng.randint(1, 12))
            ]
        jobs.append(
            JobView(
                job_id,
                rng.uniform(0, now),
                tuple(pending),
                rng.randint(0, 4),
                weight=rng.choice([1.0, 1.0, 2.0, 0.5]),
            )
        )
    job_ids = [j.job_id for j in jobs]
    nodes = []
    for n in range(rng.randint(1, 12)):
        slots, memory = rng.randint(1, 6), rng.randrange(2_000, 16_001, 500)
        running, used = [], 0
        for k in range(rng.randint(0, slots)):
            need = rng.randrange(100, 4_000, 100)
            if used + need > memory:
                break
            used += need
            started = now - rng.uniform(0, 40)
            elastic = rng.random() < 0.2
            running.append(
                RunningTask(
                    f"n{n}/r{k}",
                    rng.choice([*job_ids, "other"]),
                    need,
                    started,
                    started + rng.uniform(1, 80),
                    elastic,
                    disk_mb_s=rng.uniform(0, 60) if elastic else 0.0,
                )
            )
        reserved = rng.choice([None, None, None, "gone", *job_ids])
        nodes.append(
            NodeView(
                f"n{n}",
                "reserved",
                slots,
                memory,
                tuple(running),
                draining=rng.random() < 0.1,
                reserved_for=reserved,
            )
        )
    return ClusterSnapshot(now, tuple(nodes), tuple(jobs), 100), models


def job_states(snapshot: ClusterSnapshot, models: dict) -> list[JobState]:
    lookup = ModelLookup(models)
    return [JobState(job, lookup, snapshot.memory_increment_mb) for job in snapshot.jobs]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**32 - 1), ordering=st.sampled_from(["fair", "fifo"]))
def test_decisions_equal_those_with_the_reference_timeline(seed: int, ordering: Ordering) -> None:
    snapshot, models = random_cluster(seed)
    options = {
        "elastic_disk_mb_s": (20.0, 100.0, math.inf)[seed % 3],
        "min_fraction": (0.1, 0.3, 0.6)[seed % 3],
    }
    optimised = YarnMeScheduler(ordering, models, **options).schedule(snapshot)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(yarn_me, "RegularTimeline", ReferenceTimeline)
        reference = YarnMeScheduler(ordering, models, **options).schedule(snapshot)
    assert optimised == reference


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**32 - 1), ordering=st.sampled_from(["fair", "fifo"]))
def test_estimates_and_straggler_answers_equal_the_reference(seed: int, ordering: Ordering) -> None:
    snapshot, models = random_cluster(seed)
    reference = ReferenceTimeline(snapshot, job_states(snapshot, models), ordering)
    assert estimate_completion_times(snapshot, models, ordering) == reference.completion_times()
    rng = random.Random(seed)
    lazy = RegularTimeline(snapshot, job_states(snapshot, models), ordering)
    lazy_reference = ReferenceTimeline(snapshot, job_states(snapshot, models), ordering)
    for _ in range(8):
        job = rng.choice(snapshot.jobs)
        excluded = {p for p in range(len(job.pending)) if rng.random() < 0.2}
        threshold = snapshot.now + rng.uniform(0, 150)
        expected = lazy_reference.pending_end_reaches(job.job_id, threshold, excluded)
        assert lazy.pending_end_reaches(job.job_id, threshold, excluded) == expected


def test_the_reference_sees_a_reservation_hold_a_node_back() -> None:
    """The reference itself, on a case worked by hand: a 3 GB task reserves the only node,
    so a 1 GB task of a later job, which would fit at once, starts only with it at 5 s."""
    big = TaskModel(3_000, 10.0)
    small = TaskModel(1_000, 10.0)
    node = NodeView("n", "reserved", 2, 4_000, (RunningTask("r", "x", 2_000, 0.0, 5.0),))
    jobs = (
        JobView("a", 0.0, (PendingTask("a/0", "a", 0, 0, 0),)),
        JobView("b", 1.0, (PendingTask("b/0", "b", 0, 0, 0),)),
    )
    snapshot = ClusterSnapshot(0.0, (node,), jobs, 100)
    models = {"a": big, "b": small}
    reference = ReferenceTimeline(snapshot, job_states(snapshot, models), "fair")
    assert reference.completion_times() == {"a": 15.0, "b": 15.0}
    assert estimate_completion_times(snapshot, models) == {"a": 15.0, "b": 15.0}
