"""A join then an aggregation, as a stage DAG (``testbed.api.JobDag``): the testbed's own
proof that the core runs general DAGs, shipped as a workload of the plugin API
(``workload: testbed.workloads.join:JoinAggregate``).

The query, over generated tables (deterministic in the job's seed)::

    SELECT c.nation, count(*), sum(o.amount)
    FROM orders o JOIN customers c ON o.customer = c.id
    GROUP BY c.nation

Stages: ``customers`` and ``orders`` (sources regenerating their rows from the seed, as a
stored table is re-read: ``source="read"``, each shuffled by the
customer id) =many-to-many=> ``join`` (reads both shuffled parents: a hash table of its
customers, the orders streamed past it) -one-to-one-> ``partial`` (a narrow stage, no
shuffle: the join task's pairs summed per nation) =many-to-many=> ``total`` (the sums per
nation, the job's part files: ``nation<TAB>count<TAB>sum``). ``reference`` computes the
same from the same rows in one process with plain dicts.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from testbed.api import DagTask, JobDag, JobInputs, StageCost, StageInput, StageSpec, Workload, partition_of

NATIONS = 25
ROW_BYTES = 24
"""About the msgpack bytes of one generated row (the simulator's source size)."""


def customer_rows(split: int, splits: int, customers: int, seed: int) -> Iterator[tuple[int, int]]:
    """Split ``split`` of the customers: (id, nation)."""
    for cid in range(split, customers, splits):
        yield cid, random.Random(f"{seed}/c/{cid}").randrange(NATIONS)


def order_rows(split: int, splits: int, orders: int, customers: int, seed: int) -> Iterator[tuple[int, int]]:
    """Split ``split`` of the orders: (customer id, amount); some customers have none, some
    order ids name no customer (they join nothing)."""
    rng = random.Random(f"{seed}/o/{split}")
    for _ in range(split, orders, splits):
        yield rng.randrange(customers + customers // 10), rng.randrange(1, 10_000)


def customers_task(task: DagTask) -> None:
    a = task.args
    for cid, nation in customer_rows(task.index, task.tasks, a["customers"], a["seed"]):
        task.emit(("c", cid, nation), partition_of(cid, task.partitions))


def orders_task(task: DagTask) -> None:
    a = task.args
    for cid, amount in order_rows(task.index, task.tasks, a["orders"], a["customers"], a["seed"]):
        task.emit(("o", cid, amount), partition_of(cid, task.partitions))


def join_task(task: DagTask) -> None:
    nation_of = {cid: nation for _, cid, nation in task.inputs("customers")}
    for _, cid, amount in task.inputs("orders"):
        if cid in nation_of:
            task.emit((nation_of[cid], amount))


def partial_task(task: DagTask) -> None:
    sums: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for nation, amount in task.inputs("join"):
        sums[nation][0] += 1
        sums[nation][1] += amount
    for nation in sorted(sums):
        task.emit((nation, *sums[nation]), partition_of(nation, task.partitions))


def total_task(task: DagTask) -> None:
    sums: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for nation, count, amount in task.inputs("partial"):
        sums[nation][0] += count
        sums[nation][1] += amount
    for nation in sorted(sums):
        task.write_line(f"{nation}\t{sums[nation][0]}\t{sums[nation][1]}")


class JoinAggregate(Workload):
    """Orders joined with customers, counted and summed per nation (the module docstring)."""

    class Options(BaseModel, extra="forbid"):
        customers: int = Field(2_000, ge=1)
        orders: int = Field(20_000, ge=0)
        customer_tasks: int = Field(2, ge=1)
        order_tasks: int = Field(3, ge=1)

    def __init__(
        self, customers: int = 2_000, orders: int = 20_000, customer_tasks: int = 2, order_tasks: int = 3
    ):
        self.customers, self.orders = customers, orders
        self.customer_tasks, self.order_tasks = customer_tasks, order_tasks

    def dag(self, job: JobInputs) -> JobDag:
        rows = {"customers": self.customers, "orders": self.orders, "seed": job.seed}
        parts, nations = job.reduces, min(job.reduces, NATIONS)
        me = "testbed.workloads.join"
        return JobDag(
            (
                StageSpec("customers", f"{me}:customers_task", self.customer_tasks, parts, args=rows,
                          source="read", cost=self._source_cost(self.customers, self.customer_tasks)),
                StageSpec("orders", f"{me}:orders_task", self.order_tasks, parts, args=rows,
                          source="read", cost=self._source_cost(self.orders, self.order_tasks)),
                StageSpec("join", f"{me}:join_task", parts, 1,
                          (StageInput("customers"), StageInput("orders")), cost=StageCost(0.5, 0.5)),
                StageSpec("partial", f"{me}:partial_task", parts, nations,
                          (StageInput("join", "one-to-one"),), commutative_associative=True,
                          cost=StageCost(0.3, 0.01)),
                StageSpec("total", f"{me}:total_task", nations, 1, (StageInput("partial"),),
                          commutative_associative=True, cost=StageCost(0.3, 1.0)),
            )
        )  # fmt: skip

    @staticmethod
    def _source_cost(rows: int, tasks: int) -> StageCost:
        return StageCost(s_per_mb=0.4, output_ratio=1.0, source_mb=rows * ROW_BYTES / tasks / 2**20)

    def reference(self, job: Any) -> Iterator[str]:
        """The query in one process: every row of both tables in dicts."""
        seed = job.seed
        nation_of = dict(
            row
            for s in range(self.customer_tasks)
            for row in customer_rows(s, self.customer_tasks, self.customers, seed)
        )
        sums: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for s in range(self.order_tasks):
            for cid, amount in order_rows(s, self.order_tasks, self.orders, self.customers, seed):
                if cid in nation_of:
                    sums[nation_of[cid]][0] += 1
                    sums[nation_of[cid]][1] += amount
        return (f"{n}\t{c}\t{a}" for n, (c, a) in sorted(sums.items()))
