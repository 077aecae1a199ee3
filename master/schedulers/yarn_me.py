"""``scheduler: yarn-me``: YARN with memory-elastic allocations that never make a straggler.

The decision process is our reading of the YARN-ME paper's Algorithm 1 (its
text is garbled; see docs/yarn-me.md). For each node, in heartbeat order, the
job at the head of the queue (or the job the node is reserved for) gets:

1. a regular allocation if its next task's ideal memory and a core fit;
2. else an elastic one, if at least ``min_fraction`` of the ideal memory
   (rounded up to the increment) and a core are free: the smallest amount
   giving the lowest penalized runtime among those that fit, and only if the
   disk bandwidth it needs (its expected spill over its penalized runtime)
   fits in what the node's elastic tasks leave of ``elastic_disk_mb_s``, and
   ``now + penalized runtime`` does not pass the job's estimated completion
   time from the timeline generator;
3. else the node is reserved for the job. Other jobs may still use a reserved
   node, but only with tasks predicted to end before the reserving job's next
   task could start there regularly (EASY-style backfilling), so the
   reserving job is never delayed by them.

The timeline generator (:class:`RegularTimeline`, in ``yarn_me_timeline``) estimates when each job
would finish if its pending tasks ran regularly, under YARN's own rules
(queue order, reservations): a discrete-event walk over every node's running
tasks (their expected ends) and the pending tasks that would follow them.
It runs lazily: a straggler check only advances it as far as it must.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Any

from master.options import PolicyOptions, validated
from master.profiles import profile_models
from master.schedulers.yarn import (
    Demand,
    JobState,
    ModelLookup,
    ModelSource,
    NodeState,
    Ordering,
    Round,
    round_up,
)
from master.schedulers.yarn_me_timeline import RegularTimeline
from testbed.api.policy import ClusterSnapshot, Decision, Scheduler
from testbed.scenario.schema import Scenario
from testbed.workloads.task_model import TaskModel

DEFAULT_ELASTIC_DISK_MB_S = 100.0
"""Per node; how it was chosen (a measurement of this testbed's spill path) is in docs/yarn-me.md."""


# ------------------------------------------------------------ elastic amounts


@dataclass(frozen=True, slots=True)
class ElasticChoices:
    """For each memory cap, the smallest elastic amount with the lowest penalized runtime."""

    floor_mb: int
    increment_mb: int
    best: tuple[tuple[int, float], ...]
    """``best[k]``: (memory, runtime) for a cap of ``floor_mb + k * increment_mb``."""

    def within(self, free_memory_mb: int) -> tuple[int, float] | None:
        if not self.best or free_memory_mb < self.floor_mb:
            return None
        index = min((free_memory_mb - self.floor_mb) // self.increment_mb, len(self.best) - 1)
        return self.best[index]


@lru_cache(maxsize=4096)
def elastic_choices(model: TaskModel, increment_mb: int, min_fraction: float) -> ElasticChoices:
    """All elastic amounts of ``model``: multiples of the increment below its regular allocation.

    The curve is not monotone, so the best amount under a cap is a running
    minimum; equal runtimes keep the smaller amount (it leaves more memory).
    """
    floor = round_up(min_fraction * model.ideal_memory_mb, increment_mb)
    regular = round_up(model.ideal_memory_mb, increment_mb)
    best: list[tuple[int, float]] = []
    for memory in range(floor, regular, increment_mb):
        runtime = model.penalized_duration(memory)
        if not best or runtime < best[-1][1] * (1 - 1e-9):
            best.append((memory, runtime))
        else:
            best.append(best[-1])
    return ElasticChoices(floor, increment_mb, tuple(best))


# ------------------------------------------------------------------ the scheduler


class ElasticRound(Round):
    """A round that can ask the timeline generator (built on first use)."""

    def __init__(self, snapshot: ClusterSnapshot, lookup: ModelLookup, ordering: Ordering) -> None:
        super().__init__(snapshot, lookup, ordering)
        self._timeline: RegularTimeline | None = None
        self._choices: dict[int, ElasticChoices] = {}
        self.options: dict[tuple[int, int], _Option | None] = {}
        """(id of a demand, a node's free memory) -> what such a node can offer it this round."""

    def elastic_choices(self, demand: Demand, min_fraction: float) -> ElasticChoices | None:
        """The demand's elastic amounts (memoised by identity: demands live for the round)."""
        if demand.model is None:
            return None
        found = self._choices.get(id(demand))
        if found is None:
            found = elastic_choices(demand.model, self.increment, min_fraction)
            self._choices[id(demand)] = found
        return found

    def finishes_by(self, job: JobState, end: float) -> tuple[bool, float]:
        """Would the job, as estimated now, finish at ``end`` or later anyway?

        Its estimate covers its running tasks, the tasks placed this round, and
        its other pending tasks run regularly (including the candidate itself).
        Returns the answer and the estimate that decided it.
        """
        if job.latest_end >= end:
            return True, job.latest_end
        if self._timeline is None:
            self._timeline = RegularTimeline(self.snapshot, self.jobs.values(), self.ordering)
        running_end = self._timeline.running_end.get(job.view.job_id, -math.inf)
        if running_end >= end:
            return True, running_end
        reaches, evidence = self._timeline.pending_end_reaches(job.view.job_id, end, job.placed)
        return reaches, max(evidence, running_end, job.latest_end)


@dataclass(frozen=True, slots=True)
class _Option:
    memory_mb: int
    runtime_s: float
    elastic: bool
    disk_mb_s: float = 0.0


class YarnMeScheduler(Scheduler):
    """``scheduler: yarn-me``.

    ``models`` give each job stage's ideal memory, ideal duration, penalty
    curve and spill; tasks without a model are only ever allocated regularly.
    ``elastic_disk_mb_s`` is each node's disk-bandwidth budget for elastic
    tasks (MB/s): the bandwidths of the elastic tasks on a node (expected
    spill over penalized runtime) may not add up to more. A task whose spill
    its model does not know is charged the whole budget. ``min_fraction`` is
    the smallest share of the ideal memory an elastic task may get.
    ``backfill_depth`` is how many jobs, in queue order, may be tried on a
    reserved node.
    """

    needs_exposure = False

    class Options(PolicyOptions):
        """``policy.options.yarn-me``."""

        ordering: Ordering = "fair"
        elastic_disk_mb_s: float = DEFAULT_ELASTIC_DISK_MB_S
        min_fraction: float = 0.1
        backfill_depth: int = 8

    def __init__(
        self,
        ordering: Ordering = "fair",
        models: ModelSource | None = None,
        *,
        elastic_disk_mb_s: float = DEFAULT_ELASTIC_DISK_MB_S,
        min_fraction: float = 0.1,
        backfill_depth: int = 8,
    ) -> None:
        if ordering not in ("fair", "fifo"):
            raise ValueError(f"ordering must be 'fair' or 'fifo', got {ordering!r}")
        if isinstance(elastic_disk_mb_s, bool) or not isinstance(elastic_disk_mb_s, int | float):
            raise ValueError(f"elastic_disk_mb_s must be a number (MB/s), got {elastic_disk_mb_s!r}")
        if not elastic_disk_mb_s > 0:
            raise ValueError(f"elastic_disk_mb_s must be > 0 (MB/s), got {elastic_disk_mb_s!r}")
        if backfill_depth < 0:
            raise ValueError("backfill_depth must be >= 0")
        if not 0.0 < min_fraction <= 1.0:
            raise ValueError("min_fraction must be in (0, 1]")
        self.ordering: Ordering = ordering
        self.lookup = ModelLookup(models)
        self.elastic_disk_mb_s = float(elastic_disk_mb_s)
        self.min_fraction = min_fraction
        self.backfill_depth = backfill_depth

    @classmethod
    def from_options(cls, options: Mapping[str, Any], models: ModelSource | None = None) -> YarnMeScheduler:
        """Build from a scenario's ``policy.options``."""
        return cls(models=models, **validated(cls.Options, options))

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> YarnMeScheduler:
        """``policy.options.yarn-me`` (its disk budget under the scenario's time dilation),
        with the task models of the scenario's profiles."""
        budget = dilated_disk_budget(options, scenario.fidelity.factor)
        return cls.from_options(budget, profile_models(scenario))

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        rnd = ElasticRound(snapshot, self.lookup, self.ordering)
        for view in snapshot.nodes:
            if view.draining or (view.free_slots <= 0 and view.reserved_for is None):
                continue
            self._serve(rnd, NodeState(view))
        return rnd.decisions

    def _serve(self, rnd: ElasticRound, node: NodeState) -> None:
        """Allocate on one node until it is full, reserved, or nobody can use it."""
        while True:
            rnd.lift_if_stale(node)
            if not rnd.can_allocate(node):
                return
            reserving = rnd.pending_job(node.reserved_for)
            if reserving is not None:
                changed = self._serve_reserving_job(rnd, node, reserving)
            else:
                changed = self._serve_queue(rnd, node)
            if not changed:
                return

    def _serve_reserving_job(self, rnd: ElasticRound, node: NodeState, job: JobState) -> bool:
        """True if the node changed: a task placed or a pointless reservation lifted."""
        position = job.next_task(node.view.node_class)
        if position is None or not rnd.could_ever_fit(node, job, position):
            rnd.lift(node)
            return True
        if not self._allocate(rnd, node, job, position):
            self._backfill(rnd, node, job, position)
            return False
        rnd.lift(node)
        return True

    def _serve_queue(self, rnd: ElasticRound, node: NodeState) -> bool:
        """True if a task was placed; reserves the node for the first job that could use it."""
        for job in rnd.queue.in_order():
            position = job.next_task(node.view.node_class)
            if position is None:
                continue
            if self._allocate(rnd, node, job, position):
                return True
            if rnd.could_ever_fit(node, job, position):
                rnd.reserve(node, job, position)
                self._backfill(rnd, node, job, position)
                return False
        return False

    def _allocate(self, rnd: ElasticRound, node: NodeState, job: JobState, position: int) -> bool:
        """Steps 1 and 2 for the job's own turn: regular, else elastic; False if neither."""
        option = self._option(rnd, node, job.demand(position))
        if option is None:
            return False
        return self._place(rnd, node, job, position, option, own_turn=True)

    def _backfill(self, rnd: ElasticRound, node: NodeState, reserving: JobState, position: int) -> None:
        """Let other jobs use a reserved node, with tasks predicted to end before the
        reserving job's next task could start there regularly: they never delay it."""
        deadline: float | None = None
        while rnd.can_allocate(node):
            for job, candidate, option in self._backfill_options(rnd, node, reserving):
                if deadline is None:
                    deadline = node.earliest_start(reserving.demand(position).memory_mb, rnd.now)
                if rnd.now + option.runtime_s > deadline:
                    continue
                if self._place(rnd, node, job, candidate, option, own_turn=False):
                    break
            else:
                return

    def _backfill_options(
        self, rnd: ElasticRound, node: NodeState, reserving: JobState
    ) -> Iterator[tuple[JobState, int, _Option]]:
        """The first ``backfill_depth`` other jobs in queue order, with what the node could
        give their next task. Stop iterating once a task is placed: the queue changes."""
        others = (job for job in rnd.queue.in_order() if job is not reserving)
        for job in islice(others, self.backfill_depth):
            candidate = job.next_task(node.view.node_class)
            option = None if candidate is None else self._option(rnd, node, job.demand(candidate))
            if candidate is not None and option is not None:
                yield job, candidate, option

    def _place(
        self,
        rnd: ElasticRound,
        node: NodeState,
        job: JobState,
        position: int,
        option: _Option,
        own_turn: bool,
    ) -> bool:
        """Assign the option; an elastic one only if it does not make the job's straggler."""
        extra = {} if own_turn else {"backfill": 1.0}
        if option.elastic:
            bound = self._elastic_allowed(rnd, node, job, position, option, own_turn)
            if bound is None:
                return False
            extra |= {"job_completion_bound": bound, "disk_mb_s": option.disk_mb_s}
        rnd.assign(
            node,
            job,
            position,
            option.memory_mb,
            option.runtime_s,
            elastic=option.elastic,
            disk_mb_s=option.disk_mb_s,
            extra=extra,
        )
        return True

    def _option(self, rnd: ElasticRound, node: NodeState, demand: Demand) -> _Option | None:
        """The allocation the node can offer: regular if it fits, else the best elastic one.
        Memoised for the round: reserved nodes ask it of the same few demands again and again."""
        key = (id(demand), node.free_memory_mb)
        if key not in rnd.options:
            rnd.options[key] = self._best_option(rnd, node.free_memory_mb, demand)
        return rnd.options[key]

    def _best_option(self, rnd: ElasticRound, free_memory_mb: int, demand: Demand) -> _Option | None:
        if demand.memory_mb <= free_memory_mb:
            return _Option(demand.memory_mb, demand.duration_s, False)
        choices = rnd.elastic_choices(demand, self.min_fraction)
        choice = choices.within(free_memory_mb) if choices is not None else None
        if choice is None or demand.model is None:
            return None
        memory, runtime = choice
        bandwidth = demand.model.disk_bandwidth_mb_s(memory)
        return _Option(memory, runtime, True, self.elastic_disk_mb_s if bandwidth is None else bandwidth)

    def _elastic_allowed(
        self,
        rnd: ElasticRound,
        node: NodeState,
        job: JobState,
        position: int,
        option: _Option,
        log: bool,
    ) -> float | None:
        """The disk budget and the straggler rule: the job's completion estimate that allows
        the elastic task, or None. Refusals are logged on the job's own turn (``log``), not
        when it is only tried as a backfill."""
        detail = {"memory_mb": float(option.memory_mb), "predicted_duration_s": option.runtime_s}
        in_use = node.elastic_disk_mb_s
        if in_use + option.disk_mb_s > self.elastic_disk_mb_s * (1 + 1e-9):
            if log:
                detail |= {"disk_mb_s": option.disk_mb_s, "elastic_disk_in_use_mb_s": in_use}
                rnd.log(node, job, position, "elastic_rejected_disk", detail)
            return None
        end = rnd.now + option.runtime_s
        in_time, estimate = rnd.finishes_by(job, end)
        if in_time:
            return estimate
        if log:
            detail |= {"predicted_end": end, "job_completion_estimate": estimate}
            rnd.log(node, job, position, "elastic_rejected_straggler", detail)
        return None


def dilated_disk_budget(options: Mapping[str, Any], dilation: float) -> Mapping[str, Any]:
    """YARN-ME's per-node disk budget under time dilation: divided by it, as the nodes' disks
    and the task models' disk rates are."""
    budget = options.get("elastic_disk_mb_s", DEFAULT_ELASTIC_DISK_MB_S)
    if dilation == 1.0 or isinstance(budget, bool) or not isinstance(budget, int | float):
        return options
    return {**options, "elastic_disk_mb_s": budget / dilation}
