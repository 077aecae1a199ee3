"""A scheduler's placements are checked against the node classes a task may run on
(``PendingTask.allowed_classes``, which the recovery strategy sets: Pado keeps a job's
reduces on reserved nodes): an ``Assign`` or a ``Migrate`` to a node of another class is
refused and the task waits, as one to a full or excluded node is."""

from __future__ import annotations

from master.core.events import Round
from testbed.api.policy import Assign, ClusterSnapshot, Decision, Migrate, Scheduler
from tests.support.driver import Driver, launches
from tests.support.scenarios import make_scenario


class AnyFreeNode(Scheduler):
    """Places every pending task on the first node of ``only`` (default: any class the task
    may run on) with a free slot, whatever the task's classes; then gives the decisions a
    test puts in ``then`` (first)."""

    needs_all_pending = True

    def __init__(self, only: str | None = None) -> None:
        self.only = only
        self.then: list[Decision] = []

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        free = {n.node_id: n.free_slots for n in snapshot.nodes if n.node_class == (self.only or "reserved")}
        if self.only is None:
            free |= {n.node_id: n.free_slots for n in snapshot.nodes if n.node_class != "reserved"}
        decisions: list[Decision] = []
        for job in snapshot.jobs:
            for task in job.pending:
                fits = [n for n, slots in free.items() if slots > 0]
                if self.only is None:
                    classes = {n.node_id: n.node_class for n in snapshot.nodes}
                    fits = [n for n in fits if classes[n] in task.allowed_classes]
                node = next(iter(fits), None)
                if node is not None:
                    free[node] -= 1
                    decisions.append(Assign(task.task_id, node, task.ideal_memory_mb))
        extra, self.then = self.then, []
        return [*extra, *decisions]


def pado_driver(scheduler: AnyFreeNode) -> Driver:
    scenario = make_scenario(
        policy={"strategy": "pado"},
        cluster={"reserved": 1, "transient": 4},
        jobs=[{"workload": "wordcount", "size_mb": 4, "maps": 2, "reduces": 2}],
    )
    driver = Driver(scenario, scheduler=scheduler)
    driver.boot()
    return driver


def placed(driver: Driver) -> dict[str, str]:
    return {spec.task_id: node for node, spec in launches(driver.log)}


def test_an_assign_to_a_class_the_task_may_not_run_on_is_refused() -> None:
    driver = pado_driver(AnyFreeNode(only="transient"))
    driver.do(Round())
    driver.do(Round(), at=1.0)
    maps = {t: n for t, n in placed(driver).items() if ".s0." in t}
    assert len(maps) == 2 and all(n.startswith("transient") for n in maps.values())
    reduces = [t for t in placed(driver) if ".s1." in t]
    assert reduces == []  # Pado's reduces may run on reserved nodes only: refused on transient ones
    assert all(driver.core.jobs["j000"].tasks[(1, i)].status == "pending" for i in range(2))


def test_a_migration_keeps_its_task_to_the_classes_of_its_placement() -> None:
    scheduler = AnyFreeNode()
    backlog = [{"workload": "wordcount", "size_mb": 4, "maps": 24}]  # pending tasks: each round asks
    driver = Driver(make_scenario(cluster={"reserved": 2, "transient": 2}, jobs=backlog), scheduler=scheduler)
    driver.boot()
    driver.do(Round())
    job = driver.core.jobs["j000"]
    record = job.tasks[(0, 0)]
    assert (record.status, record.node, record.allowed_classes) == (
        "running", "reserved-0", frozenset({"reserved", "transient"})
    )  # fmt: skip
    record.allowed_classes = frozenset({"reserved"})  # as a strategy keeping it on reserved nodes placed it
    scheduler.then = [Migrate("j000.s0.t0", "transient-0", "test")]
    driver.do(Round(), at=1.0)
    assert (record.status, record.node) == ("running", "reserved-0")  # refused: not one of its classes
    node, spec = next((n, s) for n, s in launches(driver.log) if n == "reserved-1")
    driver.finish(node, spec)  # a slot free on reserved-1
    scheduler.then = [Migrate("j000.s0.t0", "reserved-1", "test")]
    driver.do(Round(), at=2.0)
    assert (record.status, record.node) == ("running", "reserved-1")
    assert record.allowed_classes == frozenset({"reserved"})  # kept across the move
