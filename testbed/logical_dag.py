"""The logical DAG of a job: operators and the data dependencies between them.

This is the representation both papers reason about. An operator is one
transformation expanded into ``parallelism`` parallel tasks; an edge says how the
tasks of the child operator depend on the tasks of the parent. The Pado paper
(section 2.2) defines four dependency types:

- one-to-one: "each of the parent tasks only has a single child task and vice versa";
- one-to-many: "the results of the parent tasks are transferred to all tasks of the
  child operator" (a broadcast);
- many-to-one: "the results of the parent tasks are collected in a task of the child
  operator" (a gather);
- many-to-many: "parent tasks and their children tasks are co-related to each other"
  (a shuffle).

A source operator has no incoming edge and either reads its data from storage
(``source="read"``) or creates it in memory (``source="create"``); Pado's
Algorithm 1 places the two kinds differently.

A DAG is validated when it is built, so an invalid one never exists: operator ids
are unique, edges name known operators, the graph is acyclic, sources and only
sources say how their data comes in, and one-to-one edges join operators of equal
parallelism.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

Source = Literal["read", "create"]


class DagError(ValueError):
    """A logical DAG that breaks one of the model's rules."""


class Dependency(StrEnum):
    ONE_TO_ONE = "one-to-one"
    ONE_TO_MANY = "one-to-many"
    MANY_TO_ONE = "many-to-one"
    MANY_TO_MANY = "many-to-many"


@dataclass(frozen=True, slots=True)
class Operator:
    """One logical operator.

    ``commutative_associative`` marks an operator whose function may be applied to
    partial inputs and again to the partial results (a sum, a count, a max): the
    outputs heading to it may then be partially aggregated before they arrive
    (Pado section 3.2.7; the combiner of MapReduce).

    ``driver`` marks an operator Spark runs in its driver program, not in an executor: the
    result of an action collected there and used by the program (MLlib's model update after
    its tree aggregation: "the 22 aggregated vectors are sent to the master process, which
    uses them to update its model. As the master process is never evicted, the critical
    chain does not exceed the current iteration", Pado section 5.2.2). Pado's engines ran
    their master on "an additional reserved container" (section 5.2): our spark baselines run
    a driver operator on a reserved node (``master.recovery.lineage.executor_classes``).
    """

    op_id: str
    name: str
    parallelism: int
    source: Source | None = None
    commutative_associative: bool = False
    driver: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.op_id,
            "name": self.name,
            "parallelism": self.parallelism,
            "source": self.source,
            "commutative_associative": self.commutative_associative,
            "driver": self.driver,
        }


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    dependency: Dependency

    def to_dict(self) -> dict[str, str]:
        return {"src": self.src, "dst": self.dst, "dependency": self.dependency.value}


@dataclass(frozen=True)
class LogicalDag:
    name: str
    operators: tuple[Operator, ...]
    edges: tuple[Edge, ...]
    _by_id: dict[str, Operator] = field(init=False, repr=False, compare=False)
    _order: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id = _index_operators(self.operators)
        _check_edges(self.edges, by_id)
        order = _topological_order(self.operators, self.edges)
        _check_sources(self.operators, self.edges)
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_order", order)

    # ------------------------------------------------------------------ queries

    def operator(self, op_id: str) -> Operator:
        try:
            return self._by_id[op_id]
        except KeyError:
            raise DagError(f"dag {self.name!r}: no operator {op_id!r}") from None

    def topological_order(self) -> tuple[str, ...]:
        """Operator ids, parents before children; ties keep declaration order."""
        return self._order

    def in_edges(self, op_id: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.dst == op_id)

    def out_edges(self, op_id: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.src == op_id)

    def sinks(self) -> tuple[str, ...]:
        return tuple(op for op in self._order if not self.out_edges(op))

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "operators": [op.to_dict() for op in self.operators],
            "edges": [e.to_dict() for e in self.edges],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LogicalDag:
        try:
            operators = tuple(
                Operator(
                    op_id=o["id"],
                    name=o["name"],
                    parallelism=o["parallelism"],
                    source=o.get("source"),
                    commutative_associative=o.get("commutative_associative", False),
                    driver=o.get("driver", False),
                )
                for o in data["operators"]
            )
            edges = tuple(Edge(e["src"], e["dst"], Dependency(e["dependency"])) for e in data["edges"])
            name = data["name"]
        except (KeyError, TypeError, ValueError) as exc:
            raise DagError(f"malformed dag document: {exc!r}") from None
        return cls(name, operators, edges)

    @classmethod
    def from_json(cls, text: str) -> LogicalDag:
        return cls.from_dict(json.loads(text))


# ---------------------------------------------------------------- validation


def _index_operators(operators: Iterable[Operator]) -> dict[str, Operator]:
    by_id: dict[str, Operator] = {}
    for op in operators:
        if op.op_id in by_id:
            raise DagError(f"duplicate operator id {op.op_id!r}")
        if not isinstance(op.parallelism, int) or op.parallelism < 1:
            raise DagError(
                f"operator {op.op_id!r}: parallelism must be an integer >= 1, got {op.parallelism!r}"
            )
        if op.source not in (None, "read", "create"):
            raise DagError(
                f"operator {op.op_id!r}: source must be 'read', 'create' or null, got {op.source!r}"
            )
        by_id[op.op_id] = op
    return by_id


def _check_edges(edges: Iterable[Edge], by_id: dict[str, Operator]) -> None:
    seen: set[tuple[str, str]] = set()
    for edge in edges:
        for end in (edge.src, edge.dst):
            if end not in by_id:
                raise DagError(f"edge {edge.src!r} -> {edge.dst!r}: unknown operator {end!r}")
        if not isinstance(edge.dependency, Dependency):
            raise DagError(f"edge {edge.src!r} -> {edge.dst!r}: unknown dependency {edge.dependency!r}")
        if (edge.src, edge.dst) in seen:
            raise DagError(f"edge {edge.src!r} -> {edge.dst!r} appears twice")
        seen.add((edge.src, edge.dst))
        src, dst = by_id[edge.src], by_id[edge.dst]
        if edge.dependency is Dependency.ONE_TO_ONE and src.parallelism != dst.parallelism:
            raise DagError(
                f"one-to-one edge {edge.src!r} -> {edge.dst!r} joins parallelism "
                f"{src.parallelism} to {dst.parallelism}; they must be equal"
            )


def _topological_order(operators: tuple[Operator, ...], edges: tuple[Edge, ...]) -> tuple[str, ...]:
    """Kahn's algorithm; among ready operators the earliest declared goes first."""
    position = {op.op_id: i for i, op in enumerate(operators)}
    indegree = dict.fromkeys(position, 0)
    for edge in edges:
        indegree[edge.dst] += 1
    ready = sorted((op for op, d in indegree.items() if d == 0), key=position.__getitem__)
    order: list[str] = []
    while ready:
        op = ready.pop(0)
        order.append(op)
        for edge in edges:
            if edge.src == op:
                indegree[edge.dst] -= 1
                if indegree[edge.dst] == 0:
                    ready.append(edge.dst)
                    ready.sort(key=position.__getitem__)
    if len(order) != len(operators):
        cyclic = sorted(op for op, d in indegree.items() if d > 0)
        raise DagError(f"the dag has a cycle through {', '.join(cyclic)}")
    return tuple(order)


def _check_sources(operators: tuple[Operator, ...], edges: tuple[Edge, ...]) -> None:
    has_input = {e.dst for e in edges}
    for op in operators:
        if op.op_id in has_input and op.source is not None:
            raise DagError(
                f"operator {op.op_id!r} has incoming edges, so it cannot be a {op.source!r} source"
            )
        if op.op_id not in has_input and op.source is None:
            raise DagError(
                f"operator {op.op_id!r} has no incoming edge: say whether it reads "
                "or creates its data (source)"
            )
