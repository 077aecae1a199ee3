"""The shell's side of the core's I/O commands that every shell carries out alike.

``Planner.plan`` answers ``PlanJob``: it sizes the job's inputs (reading them) and its stages' memory,
which the core, reading no file, cannot do, and, for a scheduler that reads the tasks'
exposure, each stage's prior duration (``master.stage_prior``). ``say`` carries out ``Log`` on
the ``master`` logger the console shows. The real master (``master.shell.master``), the
simulator's shell and the test driver (``testbed.testing.recording``) use both.
"""

from __future__ import annotations

import logging

from master.core import commands as cmd
from master.core.events import JobPlanFailed, JobPlanned
from master.profiles import stage_memory
from master.stage_prior import StagePrior
from testbed.arrivals.generate import is_long
from testbed.settings.run_settings import RunSettings
from testbed.workloads.catalog import plan_job

log = logging.getLogger("master")
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class Planner:
    """One shell's answers to ``PlanJob`` for one run: its ``StagePrior`` (the execution model,
    built on the first job that needs it) lives as long as the shell."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.ideal_memory_mb = stage_memory(settings.profiles)
        self._prior: StagePrior | None = None

    def plan(self, command: cmd.PlanJob) -> JobPlanned | JobPlanFailed:
        """The answer to ``command``: the job's plan, or why it cannot be planned (e.g. its
        input changed since validation: the job fails, not the run)."""
        spec, settings = command.spec, self.settings
        try:
            job_plan = plan_job(spec, command.seed, settings.scenario)
            memory = tuple(self.ideal_memory_mb(spec, stage) for stage in range(len(job_plan.stages)))
        except Exception as exc:  # the job's own failure, journaled and failed by the core
            return JobPlanFailed(command.ordinal, str(exc))
        prior = self.stage_prior().of(job_plan, memory) if settings.policies.scheduler.needs_exposure else ()
        if spec.workload != "sleep":
            return JobPlanned(command.ordinal, job_plan, memory, stage_prior_s=prior)
        scenario = settings.scenario
        long = is_long(spec.estimate_s, scenario.long_cutoff)
        return JobPlanned(command.ordinal, job_plan, memory, scenario.trace(spec.estimate_s), long, prior)

    def stage_prior(self) -> StagePrior:
        """The run's ``StagePrior``, built once."""
        if self._prior is None:
            self._prior = StagePrior(self.settings)
        return self._prior


def plan(command: cmd.PlanJob, settings: RunSettings) -> JobPlanned | JobPlanFailed:
    """``command``'s answer from a planner of its own (one job, as the tests ask)."""
    return Planner(settings).plan(command)


def say(command: cmd.Log) -> None:
    log.log(LEVELS[command.level], "%s", command.message)
