"""How long a task's output stays needed where it runs, and what losing it then costs: the
core's estimate for the scheduler's task view (``PendingTask.exposed_s``, ``loss_s``).

A map's output lives on the node that computed it until the tasks of the later stage that
read it (its job's reduces) have read it: a node evicted before then loses it, and the
strategy computes it again (and Spark relaunches the reduce that failed on its fetch). The
estimate, from what the run has seen (no file, no clock: the core's own time):

- a stage's task takes the mean of the successful attempts of that stage of the same
  workload so far in the run (``StageDurations``; a resumed run's include those its journal
  recorded before the crash: ``Recovered.durations``); before any, the job's prior for the stage
  (``JobRuntime.stage_prior_s``: the shell's, from the testbed's cost model of its tasks,
  ``master.stage_prior``), else the job's ``est_duration_s``;
- the rest of the task's own stage: at least the task's own run, and, once some of the stage's
  outputs are available, the time the stage has taken so far per available output, times
  the outputs still missing (its rate so far);
- then the consuming stage's run (the longest of the stages that read it);
- the work lost: recomputing the task, and the run of every reader task that reads the output
  (each task of a stage reading it through a shuffle or a broadcast, one through a narrow
  dependency), as when all of them were reading it: each fails on its fetch and runs again.

A task whose output no later stage reads (a final stage's) has neither: 0 and 0. Every task
has its own run's estimate (``Exposure.run_s``, ``PendingTask.expected_run_s``): the job's own
estimate where it gives one (a sleep job's, from its trace), else its stage's mean as above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from master.core.jobs import JobRuntime

EXPOSURE_STEPS_PER_OCTAVE = 4
"""Estimates are rounded to a quarter octave (2^(1/4), 19%): a task's view changes only when its
estimate moves that much, not in every round (the round reuses a view that shows the same)."""


@dataclass(frozen=True, slots=True)
class Exposure:
    exposed_s: float = 0.0
    """Seconds from now until the later tasks reading the output have read it (0: none reads it)."""
    loss_s: float = 0.0
    """Seconds of work lost if the node goes before then (0: none reads it)."""
    run_s: float = 0.0
    """Seconds the task itself is expected to run (``StageDurations.run``; 0: not estimated)."""


NONE = Exposure()


@dataclass
class StageDurations:
    """The mean successful attempt of each stage of each workload so far in the run (wall seconds)."""

    totals: dict[tuple[str, int], tuple[float, int]] = field(default_factory=dict)

    def observed(self, workload: str, stage: int, seconds: float) -> None:
        """An attempt of ``stage`` of a job of ``workload`` succeeded after ``seconds``
        (``attempt_seconds``). The live core calls it as each attempt succeeds
        (``master.core.tasks``), a resumed one for each success its journal recorded
        (``master.shell.resume_run.recover``), so the means go on across a crash."""
        key = (workload, stage)
        total, count = self.totals.get(key, (0.0, 0))
        self.totals[key] = (total + max(0.0, seconds), count + 1)

    def mean(self, job: JobRuntime, stage: int) -> float:
        """The stage's mean so far; before any attempt succeeded, the job's prior for the stage
        (``JobRuntime.stage_prior_s``), else its own estimate."""
        total, count = self.totals.get((job.workload, stage), (0.0, 0))
        if count:
            return total / count
        return job.stage_prior_s[stage] if stage < len(job.stage_prior_s) else job.est_duration_s

    def run(self, job: JobRuntime, stage: int) -> float:
        """A task of the job's ``stage``'s own expected run: the job's own estimate where it
        gives one (``JobRuntime.estimated``: one job's, where the stage's mean mixes every job
        of its workload), else the stage's ``mean`` to a quarter octave."""
        return job.est_duration_s if job.estimated else rounded(self.mean(job, stage))


def attempt_seconds(started: float | None, ended: float) -> float:
    """A successful attempt's duration for ``StageDurations.observed``: from its launch (its
    record's ``started``, its ``task_finished``'s ``start_s``) to its success (0: no launch
    time). A launch at time 0 is a launch time: ``started or ended`` took it for none."""
    return ended - (ended if started is None else started)


def exposure(job: JobRuntime, stage: int, durations: StageDurations, now: float) -> Exposure:
    """The estimate of the module's docstring for a task of the job's ``stage``, now."""
    run = durations.run(job, stage)
    readers = job.readers[stage]
    if not readers:
        return Exposure(run_s=run)
    own = durations.mean(job, stage)
    consumer = max(durations.mean(job, s) for s in readers)
    lost = own + sum(reader_tasks(job, stage, s) * durations.mean(job, s) for s in readers)
    return Exposure(rounded(_rest_of_stage(job, stage, own, now) + consumer), rounded(lost), run)


def reader_tasks(job: JobRuntime, stage: int, reader: int) -> int:
    """How many tasks of the job's ``reader`` stage read one output of ``stage``: all of them
    through a shuffle (each reads its partition of every output) or a broadcast, one through a
    narrow dependency (task i reads task i's output)."""
    plan = job.plan.stages[reader]
    kinds = {dep.kind for dep in plan.deps if dep.stage == stage}
    return 1 if kinds == {"narrow"} else plan.tasks


def _rest_of_stage(job: JobRuntime, stage: int, own: float, now: float) -> float:
    """Until the stage's last output is available: its rate so far times the outputs missing,
    and at least the task's own run."""
    available = job.progress.available[stage]
    began = job.stage_first_start.get(stage)
    if not available or began is None:
        return own
    missing = job.plan.stages[stage].tasks - available
    return max(own, (now - began) / available * missing)


def rounded(seconds: float) -> float:
    """``seconds`` to a quarter octave (0 and below: 0)."""
    if seconds <= 0:
        return 0.0
    return 2.0 ** (round(EXPOSURE_STEPS_PER_OCTAVE * math.log2(seconds)) / EXPOSURE_STEPS_PER_OCTAVE)
