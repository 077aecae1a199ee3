"""The CloudCoaster transient manager and copy rule on hand-built snapshots with a virtual clock.

The cluster of most tests: general on-demand nodes g0..g7 (all running long
tasks unless said otherwise), the short-only on-demand node s0 kept, and
transient servers t*. N = 2 short-only on-demand servers, p = 0.5 (s1 is the
replaced one), r = 3: the budget is K = floor(3 * 2 * 0.5) = 3.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import pytest

from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from master.autoscalers.revocation import RevocationOutcome, revocation_outcome
from master.autoscalers.static import StaticAutoscaler
from master.schedulers.eagle import EagleScheduler, split_partitions
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    Dequeue,
    Drain,
    Enqueue,
    JobView,
    Launch,
    NodeView,
    PendingTask,
    Release,
    RunningTask,
    ScaleDecision,
    Undrain,
)
from testbed.arrivals.generate import ArrivingJob

DELAY = 120.0
LAUNCH = Launch("transient", "long-load ratio above threshold", partition="short")


def autoscaler(threshold: float = 0.8, r: float = 3, p: float = 0.5, n: int = 2):
    return CloudCoasterAutoscaler(
        threshold=threshold, r=r, p=p, provisioning_delay_s=DELAY, short_on_demand=n
    )


def running(task_id: str, long: bool = False, until: float = 1000.0) -> RunningTask:
    return RunningTask(task_id, "job", 64, started=0.0, expected_end=until, long=long)


def general(i: int, long: bool = True) -> NodeView:
    tasks = (running(f"long-{i}", long=True),) if long else ()
    return NodeView(f"g{i}", "reserved", 1, 1024, running=tasks)


def short_reserved(i: int, **fields) -> NodeView:
    return NodeView(f"s{i}", "reserved", 1, 1024, partition="short", **fields)


def transient(i: int, launched: float = 0.0, **fields) -> NodeView:
    return NodeView(f"t{i}", "transient", 1, 1024, partition="short", launched=launched, **fields)


def cluster(*extra: NodeView, long: int = 8, idle: int = 0, now: float = 1000.0, jobs=()) -> ClusterSnapshot:
    nodes = [general(i) for i in range(long)]
    nodes += [general(long + i, long=False) for i in range(idle)]
    return ClusterSnapshot(now, (*nodes, short_reserved(0), *extra), tuple(jobs))


# ----------------------------------------------------------------- the ratio


def test_long_load_counts_servers_with_long_tasks_over_servers_taking_work() -> None:
    queued_long = JobView("L", 0.0, (PendingTask("L0", "L", 0, 0, 64, long=True),))
    snapshot = cluster(
        transient(0, queued=("L0",)),
        transient(1, draining=True, running=(running("x", long=True),)),
        long=3,
        idle=2,
        jobs=[queued_long],
    )
    load = autoscaler().long_load(snapshot)
    # g0-g2 run long, t0 queues a long task; t1 is draining, so it is not counted at all
    assert (load.long_servers, load.total_servers) == (4, 7)
    assert load.ratio == pytest.approx(4 / 7)


def test_budget_is_r_n_p_as_in_the_paper() -> None:
    budgets = [autoscaler(r=r, n=80).budget for r in (1, 2, 3)]
    assert budgets == [40, 80, 120]
    assert autoscaler(r=3, p=0.5, n=5).budget == 7  # floor(7.5)
    assert autoscaler(p=0.5, n=5).replaced == 3  # ceil(2.5): the cost never exceeds N


# ------------------------------------------------------- adding and removing


def test_adds_a_transient_server_above_the_threshold() -> None:
    # l_r = 8 / 9 = 0.89 > 0.8; one more server gives 8 / 10 = 0.8: meets the threshold
    assert autoscaler().decide(cluster(), provisioning=0) == [LAUNCH]


def test_adds_every_missing_server_at_once_up_to_the_budget() -> None:
    # l_r <= 0.5 needs 16 servers: 7 transient ones, but the budget is 3
    assert autoscaler(threshold=0.5).decide(cluster(), provisioning=0) == [LAUNCH] * 3


def test_nothing_changes_when_the_ratio_meets_the_threshold() -> None:
    # 8 long servers out of 10 (g0-g8, s0): exactly 0.8
    snapshot = cluster(long=8, idle=1)
    assert autoscaler().long_load(snapshot).ratio == 0.8
    assert autoscaler().decide(snapshot, provisioning=0) == []


def test_the_budget_counts_live_draining_and_provisioning_servers() -> None:
    snapshot = cluster(transient(0), transient(1, draining=True, queued=("q",)))
    # target 3 (capped); planned = 1 active + 1 provisioning: undrain t1 first, then the
    # budget (3) is spent by t0, t1 and the launch in flight
    decisions = autoscaler(threshold=0.5).decide(snapshot, provisioning=1)
    assert decisions == [Undrain("t1", "long-load ratio above threshold")]


def test_a_launch_in_flight_is_not_repeated_during_the_provisioning_delay() -> None:
    # the target is one server; its launch was decided at t=1000 and is provisioning
    scaler = autoscaler()
    for now in (1000.0, 1060.0, 1000.0 + DELAY - 1):
        assert scaler.decide(cluster(now=now), provisioning=1) == []
    # it joined: still nothing to do
    assert scaler.decide(cluster(transient(0, launched=1120.0), now=1120.0), provisioning=0) == []


def test_provisioning_launches_count_as_servers_already_added() -> None:
    scaler = autoscaler(threshold=0.5)
    assert scaler.decide(cluster(), provisioning=2) == [LAUNCH]
    assert scaler.decide(cluster(), provisioning=3) == []


def test_a_draining_server_is_taken_back_before_launching() -> None:
    snapshot = cluster(transient(0, draining=True, running=(running("a"),)))
    assert autoscaler().decide(snapshot, provisioning=0) == [Undrain("t0", "long-load ratio above threshold")]


def test_removes_one_server_per_decision_below_the_threshold() -> None:
    # no long task anywhere: the target is 0; the idlest transient server drains first
    snapshot = cluster(transient(0, running=(running("a"),)), transient(1), transient(2), long=0)
    assert autoscaler().decide(snapshot, provisioning=0) == [Drain("t2", "long-load ratio below threshold")]


def test_a_server_younger_than_the_provisioning_delay_is_not_removed() -> None:
    young = cluster(transient(0, launched=950.0), long=0, now=1000.0)
    assert autoscaler().decide(young, provisioning=0) == []
    later = cluster(transient(0, launched=950.0), long=0, now=950.0 + DELAY)
    assert autoscaler().decide(later, provisioning=0) == [Drain("t0", "long-load ratio below threshold")]


def test_wake_at_names_the_time_a_pending_removal_becomes_possible() -> None:
    scaler = autoscaler()
    snapshot = cluster(transient(0, launched=950.0), transient(1, launched=990.0), long=0)
    assert scaler.decide(snapshot, provisioning=0) == []
    assert scaler.wake_at(snapshot, provisioning=0) == 950.0 + DELAY
    assert scaler.wake_at(cluster(transient(0, launched=950.0)), provisioning=0) is None


def test_drain_before_release() -> None:
    scaler = autoscaler()
    with_queue = cluster(transient(0, draining=True, queued=("q",)), long=0)
    with_task = cluster(transient(0, draining=True, running=(running("a"),)), long=0)
    empty = cluster(transient(0, draining=True), long=0)
    assert scaler.decide(with_queue, provisioning=0) == []
    assert scaler.decide(with_task, provisioning=0) == []
    assert scaler.decide(empty, provisioning=0) == [Release("t0", "drained")]


def test_the_replaced_on_demand_servers_are_drained_then_released() -> None:
    scaler = autoscaler(n=4)
    nodes = [short_reserved(i) for i in range(1, 4)]
    first = ClusterSnapshot(0.0, (general(0, long=False), short_reserved(0), *nodes), ())
    reason = "on-demand server replaced by transient budget"
    assert scaler.decide(first, provisioning=0) == [Drain("s2", reason), Drain("s3", reason)]
    later = ClusterSnapshot(
        5.0,
        (
            general(0, long=False),
            short_reserved(0),
            short_reserved(1),
            short_reserved(2, draining=True),
            short_reserved(3, draining=True, queued=("q",)),
        ),
        (),
    )
    assert scaler.decide(later, provisioning=0) == [Release("s2", "drained")]


def test_only_the_n_declared_short_on_demand_servers_are_candidates_for_replacement() -> None:
    snapshot = ClusterSnapshot(0.0, (general(0, long=False), *map(short_reserved, range(3))), ())
    replaced = {d.node_id for d in autoscaler(p=1.0, n=2).decide(snapshot, 0)}
    assert replaced == {"s0", "s1"}
    assert autoscaler(p=0.0, n=2).decide(snapshot, 0) == []


def test_replaced_servers_do_not_count_in_the_ratio() -> None:
    # s1 is being replaced: 8 long of g0-g7 + s0 = 9 servers, so one transient is needed
    snapshot = cluster(short_reserved(1))
    decisions = autoscaler().decide(snapshot, provisioning=0)
    assert decisions == [Drain("s1", "on-demand server replaced by transient budget"), LAUNCH]


def test_a_revoked_transient_server_is_replaced_when_still_needed() -> None:
    # t0 of the target 1 was revoked: it is gone from the snapshot
    assert autoscaler().decide(cluster(), provisioning=0) == [LAUNCH]
    assert autoscaler().decide(cluster(transient(0)), provisioning=0) == []


def test_decide_is_idempotent() -> None:
    snapshot = cluster(short_reserved(1), transient(0, draining=True), long=8)
    scaler = autoscaler(threshold=0.5)
    assert scaler.decide(snapshot, provisioning=1) == scaler.decide(snapshot, provisioning=1)


@pytest.mark.parametrize(
    ("field", "value"),
    [("threshold", 0.0), ("threshold", 1.5), ("r", 0.0), ("p", 1.2), ("short_on_demand", -1)],
)
def test_bad_parameters_are_refused(field: str, value: float) -> None:
    params = {"threshold": 0.95, "r": 3, "p": 0.5, "provisioning_delay_s": 120.0}
    params["short_on_demand"] = 80
    params[field] = value
    with pytest.raises(ValueError, match=field):
        CloudCoasterAutoscaler(**params)


def test_the_static_autoscaler_decides_nothing() -> None:
    assert StaticAutoscaler().decide(cluster(), provisioning=0) == []


# ------------------------------------------------------------ the copy rule


def short_job(*task_ids: str) -> JobView:
    tasks = tuple(PendingTask(t, "S", 0, 0, 64, est_duration_s=1.0) for t in task_ids)
    return JobView("S", 0.0, tasks)


def copy_cluster(*, s0_busy_until: float, queues: dict[str, tuple[str, ...]]) -> ClusterSnapshot:
    """g0 runs long; s0 (on-demand, short-only) and t0 (transient) run short tasks."""
    s0_task = running("s", until=s0_busy_until)
    nodes = (
        general(0),
        short_reserved(0, running=(s0_task,), queued=queues.get("s0", ())),
        transient(0, running=(running("t", until=2.0),), queued=queues.get("t0", ())),
    )
    return ClusterSnapshot(0.0, nodes, (short_job("S0"),))


def test_a_short_task_queued_on_a_transient_server_gets_an_on_demand_copy() -> None:
    snapshot = copy_cluster(s0_busy_until=50.0, queues={})
    decisions = EagleScheduler(probes=3).schedule(snapshot)
    assert decisions == [Enqueue("S0", "t0"), Enqueue("S0", "s0", copy=True)]


def test_no_copy_when_the_on_demand_copy_could_start_at_once() -> None:
    nodes = (general(0), short_reserved(0), transient(0, running=(running("t", until=2.0),)))
    snapshot = ClusterSnapshot(0.0, nodes, (short_job("S0"),))
    # with one probe, some seeds sample only t0 (busy) for S0: it would queue there,
    # but the idle on-demand copy target runs it at once instead
    for seed in range(5):
        decisions = EagleScheduler(probes=1, seed=seed).schedule(snapshot)
        assert decisions == [Assign("S0", "s0", 64, predicted_duration_s=1.0)]


def test_without_the_copy_rule_the_task_is_queued_on_the_transient_server_only() -> None:
    snapshot = copy_cluster(s0_busy_until=50.0, queues={})
    decisions = EagleScheduler(probes=3, on_demand_copies=False).schedule(snapshot)
    assert decisions == [Enqueue("S0", "t0")]


def test_a_revoked_transient_server_loses_no_queued_short_task() -> None:
    before = copy_cluster(s0_busy_until=50.0, queues={"t0": ("S0",), "s0": ("S0",)})
    assert revocation_outcome(before, "t0") == RevocationOutcome(
        surviving=(("S0", "s0"),), requeue=(), rerun=("t",)
    )
    # t0 is gone; when s0's slot frees, the surviving copy runs there, nothing is re-placed
    after = ClusterSnapshot(60.0, (general(0), short_reserved(0, queued=("S0",))), (short_job("S0"),))
    assert EagleScheduler().schedule(after) == [Assign("S0", "s0", 64, predicted_duration_s=1.0)]


def test_a_task_queued_only_on_a_revoked_server_goes_back_to_the_scheduler() -> None:
    before = copy_cluster(s0_busy_until=50.0, queues={"t0": ("S0",)})
    assert revocation_outcome(before, "t0").requeue == ("S0",)


def test_revocation_outcome_of_an_unknown_node_is_an_error() -> None:
    with pytest.raises(ValueError, match="'t9' is not in the snapshot"):
        revocation_outcome(cluster(), "t9")


def test_the_first_copy_to_start_cancels_the_others() -> None:
    queues = {"t0": ("S0",), "s0": ("S0",)}
    snapshot = copy_cluster(s0_busy_until=50.0, queues=queues)
    freed = ClusterSnapshot(
        3.0, (snapshot.nodes[0], snapshot.nodes[1], transient(0, queued=("S0",))), snapshot.jobs
    )
    assert EagleScheduler().schedule(freed) == [
        Assign("S0", "t0", 64, predicted_duration_s=1.0),
        Dequeue("S0", "s0", "copy started on t0"),
    ]


# ------------------------------------------------ closed loop on a virtual clock


@dataclass
class _Server:
    node_class: str
    partition: str
    launched: float = 0.0
    running: dict[str, RunningTask] = field(default_factory=dict)
    queue: list[str] = field(default_factory=list)
    draining: bool = False

    def view(self, node_id: str) -> NodeView:
        running = tuple(self.running.values())
        return NodeView(
            node_id, self.node_class, 2, 4096, running, self.draining, self.launched,  # type: ignore[arg-type]
            partition=self.partition, queued=tuple(self.queue),  # type: ignore[arg-type]
        )  # fmt: skip


class _VirtualShell:
    """A minimal shell applying decisions literally, as docs/cloudcoaster.md asks of the master."""

    def __init__(self, scaler: CloudCoasterAutoscaler, partitions: dict[str, str]) -> None:
        self.scheduler = EagleScheduler(seed=1)
        self.scaler = scaler
        self.servers = {i: _Server("reserved", p) for i, p in partitions.items()}
        self.pending: dict[str, PendingTask] = {}
        self.tasks: dict[str, PendingTask] = {}
        self.durations: dict[str, float] = {}
        self.submitted: dict[str, float] = {}
        self.events: list[tuple[float, int, str, str]] = []
        self.now, self.sequence, self.provisioning, self.joined = 0.0, 0, 0, 0
        self.survived = self.rerun = 0

    def at(self, time: float, kind: str, what: str = "") -> None:
        self.sequence += 1
        heapq.heappush(self.events, (time, self.sequence, kind, what))

    def snapshot(self) -> ClusterSnapshot:
        nodes = tuple(s.view(i) for i, s in self.servers.items())
        by_job: dict[str, list[PendingTask]] = {}
        for t in self.pending.values():
            by_job.setdefault(t.job_id, []).append(t)
        jobs = tuple(JobView(j, self.submitted[j], tuple(ts)) for j, ts in by_job.items())
        return ClusterSnapshot(self.now, nodes, jobs)

    def handle(self, kind: str, what: str) -> None:
        if kind == "end":
            node_id, task_id = what.split("|")
            if node_id in self.servers:
                self.servers[node_id].running.pop(task_id, None)
        elif kind == "join":
            self.provisioning -= 1
            self.joined += 1
            self.servers[f"t{self.joined}"] = _Server("transient", "short", launched=self.now)
        elif kind == "revoke":
            self.revoke_one()

    def revoke_one(self) -> None:
        victim = next((i for i, s in self.servers.items() if s.node_class == "transient"), None)
        if victim is None:
            return
        outcome = revocation_outcome(self.snapshot(), victim)
        assert outcome.requeue == ()  # the copy rule: nothing was queued only there
        self.survived += len(outcome.surviving)
        self.rerun += len(outcome.rerun)
        for task_id in outcome.rerun:
            self.pending[task_id] = self.tasks[task_id]
        del self.servers[victim]

    def settle(self) -> None:
        """Schedule and scale until neither has anything to say."""
        while True:
            decisions = self.scheduler.schedule(self.snapshot())
            for d in decisions:
                self.apply(d)
            scaling = self.scaler.decide(self.snapshot(), self.provisioning)
            for d in scaling:
                self.apply(d)
            transients = sum(s.node_class == "transient" for s in self.servers.values())
            assert transients + self.provisioning <= self.scaler.budget
            if not decisions and not scaling:
                break
        wake = self.scaler.wake_at(self.snapshot(), self.provisioning)
        if wake is not None:
            self.at(wake, "tick")

    def apply(self, d: Decision | ScaleDecision) -> None:
        if isinstance(d, Assign):
            task, server = self.pending.pop(d.task_id), self.servers[d.node_id]
            if d.task_id in server.queue:
                server.queue.remove(d.task_id)
            end = self.now + self.durations[d.task_id]
            server.running[d.task_id] = RunningTask(d.task_id, task.job_id, 64, self.now, end, long=task.long)
            assert len(server.running) <= 2
            self.at(end, "end", f"{d.node_id}|{d.task_id}")
        elif isinstance(d, Enqueue):
            self.servers[d.node_id].queue.append(d.task_id)
        elif isinstance(d, Dequeue):
            self.servers[d.node_id].queue.remove(d.task_id)
        elif isinstance(d, Launch):
            self.provisioning += 1
            self.at(self.now + DELAY, "join")
        elif isinstance(d, Drain | Undrain):
            self.servers[d.node_id].draining = isinstance(d, Drain)
        elif isinstance(d, Release):
            server = self.servers.pop(d.node_id)
            assert not server.running and not server.queue  # drained before release

    def run(self, jobs: list[ArrivingJob], revocations: list[float]) -> None:
        for k, job in enumerate(jobs):
            self.at(job.submit_s, "arrive", str(k))
        for time in revocations:
            self.at(time, "revoke")
        while self.events:
            self.now, _, kind, what = heapq.heappop(self.events)
            if kind == "arrive":
                self.arrive(f"j{what}", jobs[int(what)])
            else:
                self.handle(kind, what)
            self.settle()

    def arrive(self, job_id: str, job: ArrivingJob) -> None:
        self.submitted[job_id] = job.submit_s
        for i, duration in enumerate(job.task_durations):
            task_id = f"{job_id}.{i}"
            self.durations[task_id] = duration
            self.tasks[task_id] = self.pending[task_id] = PendingTask(
                task_id, job_id, 0, i, 64, est_duration_s=job.est_duration_s, long=job.long
            )


def test_closed_loop_with_revocations_loses_nothing_and_stays_within_budget() -> None:
    """Long jobs fill the general partition, transient servers come, a short burst
    queues on them, two of them are revoked mid-burst, the long jobs end, they go."""
    partitions = split_partitions([f"r{i}" for i in range(6)], 2 / 6)  # r4, r5 short-only
    scaler = CloudCoasterAutoscaler(threshold=0.5, r=3, p=0.5, provisioning_delay_s=DELAY, short_on_demand=2)
    jobs = [
        ArrivingJob(0.0, (400.0,) * 8, long=True),
        ArrivingJob(200.0, (5.0,) * 40, long=False),
        ArrivingJob(230.0, (5.0,) * 10, long=False),
    ]
    shell = _VirtualShell(scaler, partitions)
    shell.run(jobs, revocations=[201.0, 206.0])
    assert shell.joined == 3 + 2  # K = 3 came, and the 2 revoked ones were replaced
    assert shell.survived > 0  # revoked servers had queued tasks: their copies survived
    assert shell.rerun > 0  # and running tasks, which ran again
    assert shell.pending == {}  # every task ran
    assert all(not s.running and not s.queue for s in shell.servers.values())
    assert sorted(shell.servers) == ["r0", "r1", "r2", "r3", "r4"]  # transients and r5 gone
