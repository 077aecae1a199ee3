"""The built-in speculators: Hadoop 0.20's rule, LATE, and Spark's (with its decommission rule).

Each is a pure function of a ``SpeculationSnapshot``; times are wall seconds (a threshold
given in trace time is converted once by ``master.policy_setup``). Sources:

- ``hadoop``: Hadoop 0.20's ``TaskInProgress`` (``SPECULATIVE_GAP = 0.2``,
  ``SPECULATIVE_LAG = 60 s``, ``MAX_TASK_EXECS = 1``): a task whose progress is below its
  category's average minus 0.2, running at least 60 s, gets one copy once no task of its
  category waits to start.
- ``late``: Zaharia et al., OSDI'08, section 4: rank the tasks by estimated time left,
  (1 - score) / rate; copy only tasks running at least 60 s whose rate is below the
  SlowTaskThreshold (25th percentile of their group's rates, running and finished), at most
  SpeculativeCap (10% of the slots) copies at once, never on a slow node (below the
  SlowNodeThreshold, the 25th percentile of the nodes' speeds, each node's from its
  succeeded and running attempts).
- ``spark``: ``TaskSetManager.checkSpeculatableTasks``: once ``quantile`` (0.9) of a task
  set has finished, a task running longer than ``multiplier`` (3, ``spark.speculation.
  multiplier``'s default in ``config/package.scala``; 1.5 in Spark before 3.0) times the
  median of the finished durations, and at least ``min_runtime`` (100 ms), is copied; and
  its decommission rule: a task on a node under eviction notice that would not finish
  before the kill is copied at once.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from testbed.api.speculation import AttemptView, Speculate, SpeculationNode, SpeculationSnapshot
from testbed.scenario.base import Duration

Fraction = float
"""A number in (0, 1]."""


def _fraction(default: float) -> Any:
    return Field(default=default, gt=0, le=1)


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` by linear interpolation (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class _Slots:
    """The free room of the nodes that may take a copy, used up as copies are placed."""

    def __init__(self, nodes: Iterable[SpeculationNode]) -> None:
        self.free = {n.node_id: [n.free_slots, n.free_memory_mb] for n in nodes if n.free_slots > 0}

    def take(self, attempt: AttemptView, avoid: frozenset[str] = frozenset()) -> str | None:
        """A node for a copy of ``attempt``: not its own, with a slot and its memory free."""
        for node_id, room in self.free.items():
            if node_id == attempt.node_id or node_id in avoid:
                continue
            if room[0] > 0 and room[1] >= attempt.memory_mb:
                room[0] -= 1
                room[1] -= attempt.memory_mb
                return node_id
        return None


def _hosts(snapshot: SpeculationSnapshot) -> list[SpeculationNode]:
    """Nodes a copy may go to: up, not draining, under no eviction notice."""
    return [n for n in snapshot.nodes if not n.draining and n.kill_at is None]


def _single(snapshot: SpeculationSnapshot) -> Iterator[AttemptView]:
    """Attempts of tasks that run once (a task has at most two attempts at once)."""
    return (a for a in snapshot.attempts if a.copies == 1 and not a.speculative)


def _place(
    candidates: Iterable[AttemptView], slots: _Slots, reason: str, limit: int | None = None
) -> list[Speculate]:
    decisions: list[Speculate] = []
    for attempt in candidates:
        if limit is not None and len(decisions) >= limit:
            break
        node = slots.take(attempt)
        if node is not None:
            decisions.append(Speculate(attempt.task_id, node, reason))
    return decisions


@dataclass(frozen=True)
class HadoopSpeculator:
    gap: float = 0.2
    lag_s: float = 60.0
    name: str = "hadoop"

    class Options(BaseModel, extra="forbid"):
        """``policy.options.speculation`` under ``hadoop``: ``gap`` below the category's average
        progress, after ``lag`` (trace time)."""

        gap: Fraction = _fraction(0.2)
        lag: Duration = 60.0

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Any) -> HadoopSpeculator:
        return cls(gap=options["gap"], lag_s=scenario.trace(options["lag"]))

    def speculate(self, snapshot: SpeculationSnapshot) -> list[Speculate]:
        now, chosen = snapshot.now, []
        averages = _average_progress(snapshot)
        for attempt in _single(snapshot):
            group = snapshot.group(attempt.job_id, attempt.stage)
            if group is None or group.pending or now - attempt.started < self.lag_s:
                continue
            if attempt.score < averages[(attempt.job_id, attempt.stage)] - self.gap:
                chosen.append(attempt)
        chosen.sort(key=lambda a: (a.job_id, a.stage, a.index))
        return _place(chosen, _Slots(_hosts(snapshot)), "progress below its category's average - gap")


def _average_progress(snapshot: SpeculationSnapshot) -> dict[tuple[str, int], float]:
    """Each group's average progress: finished tasks count 1, running ones their best score."""
    best: dict[tuple[str, int, int], float] = {}
    for a in snapshot.attempts:
        key = (a.job_id, a.stage, a.index)
        best[key] = max(best.get(key, 0.0), a.score)
    sums: dict[tuple[str, int], float] = {}
    for (job, stage, _), score in best.items():
        sums[(job, stage)] = sums.get((job, stage), 0.0) + score
    return {
        (g.job_id, g.stage): (sums.get((g.job_id, g.stage), 0.0) + len(g.finished_s)) / max(1, g.tasks)
        for g in snapshot.groups
    }


@dataclass(frozen=True)
class LateSpeculator:
    cap: float = 0.1
    """SpeculativeCap: copies running at once, as a fraction of the slots (0, 1]."""
    slow_node: float = 0.25
    """SlowNodeThreshold: nodes below this percentile of the nodes' speeds take no copy."""
    slow_task: float = 0.25
    """SlowTaskThreshold: only tasks below this percentile of their group's rates are copied."""
    min_runtime_s: float = 60.0
    name: str = "late"

    class Options(BaseModel, extra="forbid"):
        """``policy.options.speculation`` under ``late``: the paper's SpeculativeCap, SlowNodeThreshold and
        SlowTaskThreshold, and the least time a task runs before it may be copied (trace time)."""

        cap: Fraction = _fraction(0.1)
        slow_node: Fraction = _fraction(0.25)
        slow_task: Fraction = _fraction(0.25)
        min_runtime: Duration = 60.0

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Any) -> LateSpeculator:
        knobs = {key: options[key] for key in ("cap", "slow_node", "slow_task")}
        return cls(**knobs, min_runtime_s=scenario.trace(options["min_runtime"]))

    def speculate(self, snapshot: SpeculationSnapshot) -> list[Speculate]:
        running_copies = sum(a.speculative for a in snapshot.attempts)
        room = max(1, math.floor(self.cap * snapshot.total_slots)) - running_copies
        if room <= 0:
            return []
        thresholds = self._slow_task_rates(snapshot)
        now = snapshot.now
        candidates = [
            a
            for a in _single(snapshot)
            if now - a.started >= self.min_runtime_s
            and a.rate < thresholds.get((a.job_id, a.stage), 0.0)
            and a.score < 1.0
        ]
        candidates.sort(key=lambda a: (-a.time_left(), a.task_id))
        slow = self.slow_nodes(snapshot)
        hosts = [n for n in _hosts(snapshot) if n.node_id not in slow]
        return _place(candidates, _Slots(hosts), "longest estimated time left", limit=room)

    def _slow_task_rates(self, snapshot: SpeculationSnapshot) -> dict[tuple[str, int], float]:
        """Each group's SlowTaskThreshold: the percentile of its tasks' progress rates, running
        (score per second) and finished (1 / duration): a straggler left alone among tasks done
        is still slow."""
        rates: dict[tuple[str, int], list[float]] = {}
        for a in snapshot.attempts:
            rates.setdefault((a.job_id, a.stage), []).append(a.rate)
        for g in snapshot.groups:
            done = [1.0 / seconds for seconds in g.finished_s if seconds > 0]
            if done and (g.job_id, g.stage) in rates:
                rates[(g.job_id, g.stage)].extend(done)
        return {group: percentile(values, self.slow_task) for group, values in rates.items()}

    def slow_nodes(self, snapshot: SpeculationSnapshot) -> frozenset[str]:
        """Nodes whose speed is below the SlowNodeThreshold percentile of the nodes' speeds.
        A node's speed is the mean progress rate of the attempts that succeeded on it (1 /
        duration) and of those running there (score per second): LATE judges a node by the
        work it performed, finished and running, so a node known slow stays slow while it runs
        nothing; a node with neither is not judged (not slow)."""
        totals: dict[str, list[float]] = {
            n.node_id: [n.finished_tasks, n.finished_rate * n.finished_tasks] for n in snapshot.nodes
        }
        for a in snapshot.attempts:
            total = totals.setdefault(a.node_id, [0, 0.0])
            total[0] += 1
            total[1] += a.rate
        mean = {node: rates / count for node, (count, rates) in totals.items() if count}
        if len(mean) < 2:
            return frozenset()
        bound = percentile(list(mean.values()), self.slow_node)
        return frozenset(node for node, speed in mean.items() if speed < bound)


@dataclass(frozen=True)
class SparkSpeculator:
    multiplier: float = 3.0
    quantile: float = 0.9
    min_runtime_s: float = 0.1
    decommission: bool = True
    name: str = "spark"

    class Options(BaseModel, extra="forbid"):
        """``policy.options.speculation`` under ``spark``: ``spark.speculation.multiplier``, ``.quantile`` and
        ``.minTaskRuntime`` (trace time), and whether its decommission rule copies the tasks of a
        node under eviction notice."""

        multiplier: float = Field(default=3.0, gt=0)
        quantile: Fraction = _fraction(0.9)
        min_runtime: Duration = 0.1
        decommission: bool = True

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Any) -> SparkSpeculator:
        return cls(
            multiplier=options["multiplier"],
            quantile=options["quantile"],
            min_runtime_s=scenario.trace(options["min_runtime"]),
            decommission=options["decommission"],
        )

    def speculate(self, snapshot: SpeculationSnapshot) -> list[Speculate]:
        medians = self._medians(snapshot)
        now, slots = snapshot.now, _Slots(_hosts(snapshot))
        notices = {n.node_id: n.kill_at for n in snapshot.nodes if n.kill_at is not None}
        decisions = []
        for attempt in sorted(_single(snapshot), key=lambda a: (a.job_id, a.stage, a.index)):
            median = medians.get((attempt.job_id, attempt.stage))
            kill_at = notices.get(attempt.node_id)
            if self.decommission and kill_at is not None and _ends_after(attempt, median, now, kill_at):
                reason = "its node is killed before it would finish"
            elif median is not None and now - attempt.started > self._threshold(median):
                reason = "running longer than multiplier x the median"
            else:
                continue
            node = slots.take(attempt)
            if node is not None:
                decisions.append(Speculate(attempt.task_id, node, reason))
        return decisions

    def _threshold(self, median: float) -> float:
        return max(self.multiplier * median, self.min_runtime_s)

    def _medians(self, snapshot: SpeculationSnapshot) -> dict[tuple[str, int], float]:
        """Each task set's median finished duration, once ``quantile`` of it has finished."""
        medians = {}
        for g in snapshot.groups:
            needed = max(1, math.floor(self.quantile * g.tasks))
            if len(g.finished_s) >= needed:
                medians[(g.job_id, g.stage)] = statistics.median(g.finished_s)
        return medians


def _ends_after(attempt: AttemptView, median: float | None, now: float, kill_at: float) -> bool:
    """Whether the attempt would end after its node's kill: by its own rate once it reports
    one, else by its task set's median duration; unknown (neither): it would."""
    if attempt.rate > 0:
        return now + attempt.time_left() > kill_at
    if median is not None:
        return attempt.started + median > kill_at
    return True
