"""JobRuntime's incremental counters and ready index against a plain scan of every task.

Random plans (narrow and shuffle dependencies, one or more final stages) go
through random sequences of the transitions the master applies (launch,
success, push and commit, failure, lost blocks, lost nodes, reopening, a
resumed run's direct writes); after every step, what the job reports (its counts,
ready tasks, the tasks each node holds) must equal what a scan of all its records says.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from master.core.jobs import JobRuntime, TaskKey
from testbed.plan import Dependency, JobPlan, StagePlan

NODES = ("n0", "n1", "n2")


def reference_ready(job: JobRuntime) -> list[TaskKey]:
    """The definition: pending tasks whose every input is available, stage then index order."""
    stages = job.plan.stages
    whole = [all(job.tasks[(s, i)].available for i in range(st.tasks)) for s, st in enumerate(stages)]
    return [
        key
        for key, record in job.tasks.items()
        if record.status == "pending"
        and all(
            job.tasks[(d.stage, key[1])].available if d.kind == "narrow" else whole[d.stage]
            for d in stages[key[0]].deps
        )
    ]


def random_plan(rng: random.Random) -> JobPlan:
    stages: list[StagePlan] = []
    for s in range(rng.randint(1, 4)):
        tasks = rng.randint(1, 12)
        deps: list[Dependency] = []
        if s:
            parent = rng.randrange(s)
            narrow = stages[parent].tasks >= tasks and rng.random() < 0.5
            deps.append(Dependency(parent, "narrow" if narrow else "shuffle"))
            if rng.random() < 0.3 and parent != s - 1:
                deps.append(Dependency(s - 1, "shuffle"))
        stages.append(StagePlan(f"op{s}", tasks, partitions=tasks, deps=tuple(deps)))
    last = len(stages) - 1
    stages = [
        StagePlan(st.op, st.tasks, st.partitions, st.deps, final=s == last or rng.random() < 0.2)
        for s, st in enumerate(stages)
    ]
    return JobPlan("test", tuple(stages))


def random_step(job: JobRuntime, rng: random.Random) -> None:
    """One transition the master could apply now (or a stale one, which must change nothing)."""
    keys = list(job.tasks)
    key = rng.choice(keys)
    record = job.tasks[key]
    node = rng.choice(NODES)
    url = f"http://{node}"
    action = rng.random()
    if action < 0.3:
        ready = list(job.ready())
        if ready:
            job.launched(rng.choice(ready), node, 100, 0.0)
    elif action < 0.55 and record.status == "running":
        parts = tuple(rng.randint(0, 3) for _ in range(job.plan.stages[key[0]].partitions))
        block = f"{job.task_id(key)}.a{record.attempt}"
        job.succeeded(
            key,
            record.attempt,
            url if record.node is None else f"http://{record.node}",
            block,
            parts,
            pushing=rng.random() < 0.3,
        )
    elif action < 0.62 and record.status == "pushing":
        if rng.random() < 0.7:
            job.committed(key, record.attempt, (url,))
        else:
            job.abandon_push(key, record.attempt)
    elif action < 0.7 and record.status == "running":
        job.failed(key, record.attempt, counts_as_failure=rng.random() < 0.5)
    elif action < 0.75:
        held = [k for k, r in job.tasks.items() if r.node == node and r.status in ("running", "pushing")]
        assert job.node_lost(node, url) == held  # found through the index, in the tasks' order
    elif action < 0.8 and record.block is not None:
        job.lose_blocks({record.block})
    elif action < 0.85:
        job.reopen(key)
    elif action < 0.9 and record.block is not None:
        job.add_replica(key, record.block, "http://replica")
    elif action < 0.95:
        job.succeeded(key, record.attempt - 1, url, "stale", ())  # stale: must be ignored
    elif job.is_final(record):  # what a resumed run writes for a committed partition
        record.status, record.available = "done", True


def assert_consistent(job: JobRuntime) -> None:
    records = list(job.tasks.values())
    assert list(job.ready()) == reference_ready(job)
    assert job.running_count == sum(r.status == "running" for r in records)
    assert job.done_count == sum(r.status == "done" for r in records)
    assert job.complete == all(r.status == "done" for r in records if job.is_final(r))
    held: dict[str, set[TaskKey]] = {}
    for key, record in job.tasks.items():
        if record.node is not None and record.status in ("running", "pushing"):
            held.setdefault(record.node, set()).add(key)
    assert job.progress.on_node == held


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_incremental_progress_equals_a_full_scan_after_every_transition(seed: int) -> None:
    rng = random.Random(seed)
    job = JobRuntime("j000", "t", "test", random_plan(rng), 0.0, 100)
    assert_consistent(job)
    for _ in range(150):
        random_step(job, rng)
        assert_consistent(job)


def test_ready_follows_a_shuffle_barrier_and_narrow_parents() -> None:
    plan = JobPlan(
        "test",
        (
            StagePlan("map", 3, partitions=2),
            StagePlan("narrow", 3, deps=(Dependency(0, "narrow"),)),
            StagePlan("reduce", 2, deps=(Dependency(0, "shuffle"),), final=True),
        ),
    )
    job = JobRuntime("j000", "t", "test", plan, 0.0, 100)
    assert list(job.ready()) == [(0, 0), (0, 1), (0, 2)]
    job.launched((0, 1), "n0", 100, 0.0)
    job.succeeded((0, 1), 0, "http://n0", "b", (1, 1))
    assert list(job.ready()) == [(0, 0), (0, 2), (1, 1)]
    for index in (0, 2):
        job.launched((0, index), "n0", 100, 0.0)
        job.succeeded((0, index), 0, "http://n0", "b", (1, 1))
    assert list(job.ready()) == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)]
    job.node_lost("n0", "http://n0")  # every map output is gone: recompute them first
    assert list(job.ready()) == [(0, 0), (0, 1), (0, 2)]
    assert (job.running_count, job.done_count, job.complete) == (0, 0, False)


@pytest.mark.parametrize("sparse", [False, True])
def test_pending_order_holds_for_dense_and_sparse_pending_sets(sparse: bool) -> None:
    job = JobRuntime("j000", "t", "test", JobPlan("test", (StagePlan("noop", 100, final=True),)), 0.0, 1)
    for index in range(100):
        job.launched((0, index), "n0", 1, 0.0)
    kept = range(0, 100, 37) if sparse else range(40, 100)
    for index in reversed(kept):
        job.failed((0, index), 0, counts_as_failure=False)
    assert list(job.ready()) == [(0, i) for i in kept]
