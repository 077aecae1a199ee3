"""Random event sequences against the core's invariants (hypothesis).

Whatever the nodes report, in whatever order, repeated or stale, with nodes lost
on the way: no task runs twice at once, no final partition is committed twice, no
attempt ends twice (one row of tasks.csv each), and no node holds more tasks than
its slots or more memory than it has; and the nodes a round sees, kept up to date
as they change, are what a full rebuild of them gives.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import example, given, settings
from hypothesis import strategies as st

from master.core import commands as cmd
from master.core.events import EvictRequest, FromNode, ProbeAnswered, Round
from testbed.scenario.chaos import EvictSpec
from tests.support.driver import Driver, up
from tests.support.node_views import check_node_views
from tests.support.scenarios import make_scenario

ACTIONS = (
    "succeed",
    "succeed",
    "succeed",
    "fail",
    "fetch",
    "oom",
    "repeat",
    "round",
    "lose",
    "evict",
    "rejoin",
)


def check_invariants(driver: Driver) -> None:
    core = driver.core
    holders: Counter[str] = Counter()
    for node in core.nodes.values():
        holders.update(list(node.running))
        assert len(node.running) <= node.slots, f"{node.node_id} runs {len(node.running)} > {node.slots}"
        memory = sum(job.tasks[key].memory_mb for job, key in node.running.values())
        assert memory <= node.memory_mb, f"{node.node_id} holds {memory} MB > {node.memory_mb}"
        if not node.alive:
            assert not node.running
    assert all(count == 1 for count in holders.values()), holders
    for job in core.jobs.values():
        if job.status not in ("waiting", "running"):
            continue  # a finished job's last attempts are cancelled, or moot (a Pado job whose
            # receivers all succeeded), and a lost node leaves them as they were
        for key, record in job.tasks.items():
            if record.status == "running":
                assert holders[job.task_id(key)] == 1, job.task_id(key)
    # the jobs a round lists and the run's end counts, kept apart, are those a walk finds
    assert core.live_jobs.jobs() == [j for j in core.jobs.values() if j.status in ("waiting", "running")]
    # a job's end lifts its reservations from the nodes reserved, not from every node
    reserved = {n.node_id for n in core.nodes.values() if n.reserved_for is not None}
    assert all(core.records.reserved.get(n) is core.nodes[n] for n in reserved)
    commits = Counter((c.job_id, c.index) for c in driver.log if isinstance(c, cmd.CommitOutput))
    assert all(count == 1 for count in commits.values()), commits
    ends = Counter((e["task"], e["attempt"]) for e in driver.events("task_finished"))
    assert all(count == 1 for count in ends.values()), [end for end, n in ends.items() if n > 1]
    check_node_views(driver)


@settings(max_examples=60, deadline=None, derandomize=True)
@example(strategy="pado", scheduler="fifo", steps=[("succeed", 157), ("succeed", 669), ("lose", 1)])
@given(
    strategy=st.sampled_from(["spark", "spark-checkpoint", "pado"]),
    scheduler=st.sampled_from(["fifo", "yarn", "yarn-me", "eagle"]),
    steps=st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 1000)), max_size=60),
)
def test_no_event_sequence_breaks_the_invariants(
    strategy: str, scheduler: str, steps: list[tuple[str, int]]
) -> None:
    jobs = [
        {"workload": "wordcount", "size_mb": 1, "maps": 3, "reduces": 2},
        {"workload": "pagerank", "nodes": 50, "edges": 200, "iterations": 2, "maps": 2, "reduces": 2},
    ]
    cluster = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    driver = Driver(
        make_scenario(cluster=cluster, jobs=jobs, policy={"strategy": strategy, "scheduler": scheduler})
    )
    driver.boot()
    reported: list[tuple[str, object]] = []
    for step, (action, pick) in enumerate(steps):
        driver.advance(driver.now + 0.05)
        running = sorted(driver.running().values(), key=lambda item: (item[1].task_id, item[1].attempt))
        alive = sorted(n for n, node in driver.core.nodes.items() if node.status in ("up", "draining"))
        if action == "round":
            driver.do(Round())
        elif action in ("succeed", "fail", "fetch", "oom") and running:
            node_id, spec = running[pick % len(running)]
            failure = {"fail": "error", "fetch": "fetch", "oom": "oom"}.get(action)
            state = "succeeded" if failure is None else "failed"
            out = driver.finish(node_id, spec, state, **({"failure": failure} if failure else {}))
            reported.append((node_id, spec))
            del out
        elif action == "repeat" and reported:
            node_id, spec = reported[pick % len(reported)]
            driver.finish(node_id, spec)  # a redelivery, or an outcome repeated after a resend
        elif action in ("lose", "evict") and len(alive) > 1:
            node_id = alive[pick % len(alive)]
            node = driver.core.nodes[node_id]
            if action == "evict":
                driver.do(EvictRequest(EvictSpec(count=1), (node_id,)))
            will = up(node_id, node.node_class, driver.core).model_copy(update={"state": "lost"})
            out = driver.do(FromNode(node_id, will))
            for probe in (c for c in out if isinstance(c, cmd.Probe)):
                driver.do(ProbeAnswered(probe.node_id, probe.purpose, "refused", probe.session))
        elif action == "rejoin" and alive:
            node_id = alive[pick % len(alive)]
            node = driver.core.nodes[node_id]
            driver.do(FromNode(node_id, up(node_id, node.node_class, driver.core, session=node.session + 1)))
        check_invariants(driver)
        del step
