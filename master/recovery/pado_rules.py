"""Pado's runtime rules (EuroSys'17, section 3.2) that ``master.recovery.pado`` applies.

Bookkeeping and pure functions, no I/O and no clock: exactly-once commits of pushed
outputs (``CommitLedger``, section 3.2.5), the cache-aware choice of a transient
executor (``choose_executor``, section 3.2.3) and when a partial aggregate held on a
transient node is pushed (``should_flush``, section 3.2.7). The rest of the runtime
(launch order, what an eviction or a reserved failure relaunches) is the strategy's
own code; ``tests/core/test_pado_order.py`` tests it through the core.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from testbed.node.lru import LruCache

# ---------------------------------------------------------------- runtime: commits

Verdict = Literal["accepted", "duplicate", "superseded", "incomplete"]
Block = tuple[int, str]
"""A pushed block as the reserved side verified it: (bytes, checksum)."""


@dataclass(frozen=True, slots=True)
class Push:
    """One pushed output: a single task attempt's, or the partial aggregate of several
    tasks' outputs held on one transient node (section 3.2.7). ``members`` pairs
    each task id with the attempt whose output the push carries."""

    push_id: str
    members: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, task_id: str, attempt: int) -> Push:
        return cls(f"{task_id}#{attempt}", ((task_id, attempt),))


class CommitLedger:
    """Exactly-once delivery of pushed outputs (section 3.2.5).

    Reserved executors report each block they received whole, with its checksum
    verified (``receive``). A commit names a push and every destination it sent to
    with what it sent (its manifest). It is accepted only when every block it
    names has arrived as sent, and then atomically: each destination processes,
    for each task, the block of exactly one push (``inputs_for``, ``pushes_for``)
    and drops the others. A push whose tasks already reached a destination through
    another push is refused there (``superseded``; if only some of an aggregate's
    tasks did, the whole push is refused and the rest must be relaunched), and a
    redelivered commit is recognised (``duplicate``). When a reserved executor
    fails, ``forget_destination`` reopens what was committed to it, so that reruns
    push there again. Bookkeeping only: no I/O, no clock.
    """

    def __init__(self) -> None:
        self._received: dict[str, dict[str, Block]] = {}
        self._owner: dict[str, dict[str, tuple[str, int]]] = {}
        """Destination -> task -> the push and attempt whose block it processes (by
        destination: a commit's feeding asks for one destination's, 12,100 entries at the
        paper's MLR size)."""
        self._accepted: set[str] = set()
        self._done: set[str] = set()

    def receive(self, push_id: str, destination: str, block: Block) -> None:
        self._received.setdefault(push_id, {})[destination] = block

    def discard(self, push_id: str) -> None:
        """The push's node was evicted before its commit: forget what it sent. What
        it had committed is safe on the reserved executors and stays."""
        self._received.pop(push_id, None)

    def commit(self, push: Push, manifest: Mapping[str, Block]) -> Verdict:
        if push.push_id in self._accepted:
            return "duplicate"
        tasks = [task for task, _ in push.members]
        fresh = []
        for dest in manifest:
            owned = self._owner.get(dest, {})
            reached = sum(task in owned for task in tasks)
            if 0 < reached < len(tasks):
                return "superseded"
            if reached == 0:
                fresh.append(dest)
        if not fresh and (manifest or all(task in self._done for task in tasks)):
            return "superseded"
        received = self._received.get(push.push_id, {})
        if any(received.get(dest) != manifest[dest] for dest in fresh):
            return "incomplete"
        for dest in fresh:
            for task, attempt in push.members:
                self._owner.setdefault(dest, {})[task] = (push.push_id, attempt)
        self._accepted.add(push.push_id)
        self._done.update(tasks)
        self._received.pop(push.push_id, None)
        return "accepted"

    def is_committed(self, task_id: str) -> bool:
        return task_id in self._done

    def inputs_for(self, destination: str) -> dict[str, int]:
        """Task id -> the one attempt whose output ``destination`` processes."""
        return {t: a for t, (_, a) in self._owner.get(destination, {}).items()}

    def owners_for(self, destination: str) -> dict[str, str]:
        """Task id -> the push whose block ``destination`` processes for that task."""
        return {t: p for t, (p, _) in self._owner.get(destination, {}).items()}

    def pushes_for(self, destination: str) -> frozenset[str]:
        """The pushed blocks ``destination`` processes; it drops any other."""
        return frozenset(p for p, _ in self._owner.get(destination, {}).values())

    def forget_destination(self, destination: str) -> frozenset[str]:
        """A reserved task lost what it had received (its node failed): the tasks that
        had committed to it, which must run again and push to it."""
        tasks = frozenset(self._owner.pop(destination, {}))
        self._done -= tasks
        return tasks


# ---------------------------------------------------------------- runtime: input cache


@dataclass(frozen=True, slots=True)
class Executor:
    node: str
    free_slots: int


def choose_executor(
    inputs: Collection[str],
    executors: Sequence[Executor],
    caches: Mapping[str, LruCache],
    cursor: int,
) -> tuple[str | None, int]:
    """Section 3.2.3's default policy: "first tries to pick an executor with the input
    data of the task cached [...] If not applicable, it picks an available executor
    in a round-robin manner, and waits until a task slot becomes available if none
    of the executors are available."

    ``executors`` is the stable round-robin order of the executors of the task's
    class; ``cursor`` is where the round robin resumes. Returns the chosen node
    (None: wait) and the next cursor. Among executors with some of the inputs
    cached, the one with most cached bytes wins; ties go round robin.
    """
    if not executors:
        return None, cursor
    start = cursor % len(executors)
    rotation = [executors[(start + k) % len(executors)] for k in range(len(executors))]
    free = [e for e in rotation if e.free_slots > 0]
    if not free:
        return None, cursor

    def cached(e: Executor) -> int:
        cache = caches.get(e.node)
        return cache.cached_bytes(inputs) if cache is not None else 0

    best = max(free, key=cached)  # max keeps the first of equals: round-robin order
    chosen = best if cached(best) > 0 else free[0]
    return chosen.node, executors.index(chosen) + 1


# ---------------------------------------------------------------- runtime: partial aggregation


@dataclass(frozen=True, slots=True)
class AggregationLimits:
    """Section 3.2.7: "Pado can configure an upper limit for the time and the number of
    aggregated tasks, so that data escapes once it reaches a certain point.\""""

    max_delay_s: float
    max_tasks: int

    def __post_init__(self) -> None:
        if self.max_delay_s < 0 or self.max_tasks < 1:
            raise ValueError(f"aggregation limits need max_delay_s >= 0, max_tasks >= 1: {self}")


def should_flush(
    limits: AggregationLimits, held_for_s: float, tasks_aggregated: int, more_tasks_coming: bool
) -> bool:
    """Push the partial aggregate held on a transient node now?

    ``held_for_s``: time since the oldest output in the aggregate finished;
    ``more_tasks_coming``: whether another task of the stage may still finish on
    this node (if not, waiting gains nothing)."""
    if tasks_aggregated == 0:
        return False
    return not more_tasks_coming or tasks_aggregated >= limits.max_tasks or held_for_s >= limits.max_delay_s
