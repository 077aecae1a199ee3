"""Firmament's network kept from round to round against a fresh build of every round's snapshot.

The histories are the master's way of handing snapshots: a node's view and a task's view are
the same objects from one round to the next unless something of them changed, so the kept
network reuses what it priced and must still hand the solver what a fresh build gives."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from master.schedulers.firmament import FirmamentScheduler, cost_model
from master.schedulers.firmament.costs import EvictionRisk
from master.schedulers.firmament.network import FlowNetwork, MaintainedNetwork, build
from testbed.api.policy import Assign, ClusterSnapshot, JobView, NodeView, PendingTask, RunningTask
from testbed.chaosmodels.lifetimes import parse_lifetime

RISK = EvictionRisk({("transient", None): parse_lifetime({"exponential": {"mean": "2m"}})})
FIELDS = ("kinds", "labels", "supplies", "tails", "heads", "capacities", "costs")
OPS = ("arrive", "place", "finish", "join", "lose", "drain", "exclude", "wait")


class History:
    """A cluster changed one step at a time, each step replacing only the views it changes."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.now = 100.0
        self.nodes: dict[str, NodeView] = {}
        self.pending: dict[str, dict[str, PendingTask]] = {"j0": {}, "j1": {}}
        self.made = 0
        for _ in range(draw(st.integers(1, 4))):
            self.join()
        for _ in range(draw(st.integers(0, 5))):
            self.arrive()

    def snapshot(self) -> ClusterSnapshot:
        jobs = tuple(JobView(j, float(i), tuple(p.values())) for i, (j, p) in enumerate(self.pending.items()))
        return ClusterSnapshot(self.now, tuple(self.nodes.values()), jobs)

    def tasks(self) -> list[PendingTask]:
        return [task for pending in self.pending.values() for task in pending.values()]

    def step(self, op: str) -> None:
        getattr(self, op)()

    def arrive(self) -> None:
        draw, ids = self.draw, list(self.nodes)
        job = draw(st.sampled_from(sorted(self.pending)))
        self.made += 1
        holders = draw(st.lists(st.sampled_from(ids), max_size=2, unique=True)) if ids else []
        size = draw(st.sampled_from([0, 2**30]))
        self.pending[job][f"{job}/t{self.made}"] = PendingTask(
            f"{job}/t{self.made}",
            job,
            0,
            self.made,
            draw(st.sampled_from([100, 400, 700])),
            draw(st.sampled_from([1.0, 10.0, 60.0])),
            preferred_nodes=tuple(draw(st.lists(st.sampled_from(ids), max_size=2, unique=True)))
            if ids
            else (),
            allowed_classes=draw(
                st.sampled_from([frozenset({"reserved", "transient"}), frozenset({"transient"})])
            ),
            input_bytes=size,
            input_on_node=tuple((n, size) for n in holders) if size else (),
            exposed_s=draw(st.sampled_from([0.0, 120.0])),
            loss_s=30.0,
        )

    def place(self) -> None:
        tasks = self.tasks()
        room = [v for v in self.nodes.values() if v.free_slots > 0]
        if not tasks or not room:
            return
        task, view = self.draw(st.sampled_from(tasks)), self.draw(st.sampled_from(room))
        del self.pending[task.job_id][task.task_id]
        ran = RunningTask(task.task_id, task.job_id, task.ideal_memory_mb, self.now, self.now + 30.0)
        self.nodes[view.node_id] = replace(view, running=(*view.running, ran))

    def finish(self) -> None:
        busy = [v for v in self.nodes.values() if v.running]
        if busy:
            view = self.draw(st.sampled_from(busy))
            self.nodes[view.node_id] = replace(view, running=view.running[1:])

    def join(self) -> None:
        draw = self.draw
        self.made += 1
        node_id = f"n{self.made}"
        self.nodes[node_id] = NodeView(
            node_id,
            draw(st.sampled_from(["reserved", "transient"])),
            draw(st.integers(1, 3)),
            draw(st.sampled_from([500, 1000, 2000])),
            launched=self.now,
            rebalance=draw(st.booleans()),
            zone=draw(st.sampled_from([None, "a", "b"])),
        )

    def lose(self) -> None:
        if self.nodes:
            del self.nodes[self.draw(st.sampled_from(list(self.nodes)))]

    def drain(self) -> None:
        if self.nodes:
            view = self.nodes[self.draw(st.sampled_from(list(self.nodes)))]
            self.nodes[view.node_id] = replace(view, draining=True)

    def exclude(self) -> None:
        tasks = self.tasks()
        if tasks and self.nodes:
            task = self.draw(st.sampled_from(tasks))
            excluded = frozenset({self.draw(st.sampled_from(list(self.nodes)))})
            self.pending[task.job_id][task.task_id] = replace(task, excluded_nodes=excluded)

    def wait(self) -> None:
        self.now += self.draw(st.sampled_from([1.0, 30.0, 600.0]))


def arrays(net: FlowNetwork) -> dict[str, list]:
    return {name: getattr(net, name) for name in FIELDS}


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(["trivial", "octopus", "quincy", "transient"]),
    preemption=st.booleans(),
)
def test_the_kept_network_is_a_fresh_build_of_every_round(
    data: st.DataObject, name: str, preemption: bool
) -> None:
    history = History(data.draw)
    model = cost_model({"cost_model": name}, RISK)
    kept = MaintainedNetwork(model, preemption)
    seen: dict[str, float] = {}
    for op in data.draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=12)):
        history.step(op)
        snapshot, tasks = history.snapshot(), history.tasks()
        seen = {t.task_id: seen.get(t.task_id, snapshot.now) for t in tasks}
        waited = {task_id: snapshot.now - since for task_id, since in seen.items()}
        fresh = build(snapshot, cost_model({"cost_model": name}, RISK), waited, tasks, preemption)
        assert arrays(kept.update(snapshot, waited, tasks)) == arrays(fresh), op


def test_the_scheduler_keeps_its_network_across_rounds() -> None:
    """A node's view unchanged from one round to the next keeps its row; one placed on gets a new one."""
    scheduler = FirmamentScheduler()
    first, second = NodeView("n0", "reserved", 2, 1000), NodeView("n1", "reserved", 2, 1000)
    tasks = tuple(PendingTask(f"j0/t{i}", "j0", 0, i, 100) for i in range(2))
    decisions = scheduler.schedule(ClusterSnapshot(0.0, (first, second), (JobView("j0", 0.0, tasks),)))
    assert all(isinstance(d, Assign) for d in decisions)
    kept = scheduler.network.columns
    assert kept.views == (first, second)
    later = replace(first, running=(RunningTask("j0/t0", "j0", 100, 0.0, 10.0),))
    scheduler.schedule(ClusterSnapshot(1.0, (later, second), (JobView("j0", 0.0, tasks[1:]),)))
    assert kept.views == (later, second) and kept.busy.tolist() == [1, 0]
