"""The shell's side of the core's I/O commands that every shell carries out alike.

``plan`` answers ``PlanJob``: it sizes the job's inputs (reading them) and its stages' memory,
which the core, reading no file, cannot do. ``say`` carries out ``Log`` on the ``master`` logger
the console shows. The real master (``master.shell.master``), the simulator's shell and the test
driver (``testbed.testing.recording``) use both.
"""

from __future__ import annotations

import logging

from master.core import commands as cmd
from master.core.events import JobPlanFailed, JobPlanned
from master.profiles import stage_memory
from testbed.arrivals.generate import is_long
from testbed.settings.run_settings import RunSettings
from testbed.workloads.catalog import plan_job

log = logging.getLogger("master")
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def plan(command: cmd.PlanJob, settings: RunSettings) -> JobPlanned | JobPlanFailed:
    """The answer to ``command``: the job's plan, or why it cannot be planned (e.g. its input
    changed since validation: the job fails, not the run)."""
    spec, scenario = command.spec, settings.scenario
    try:
        job_plan = plan_job(spec, command.seed, scenario)
        ideal = stage_memory(settings.profiles)
        memory = tuple(ideal(spec, stage) for stage in range(len(job_plan.stages)))
    except Exception as exc:  # the job's own failure, journaled and failed by the core
        return JobPlanFailed(command.ordinal, str(exc))
    if spec.workload != "sleep":
        return JobPlanned(command.ordinal, job_plan, memory)
    long = is_long(spec.estimate_s, scenario.long_cutoff)
    return JobPlanned(command.ordinal, job_plan, memory, scenario.trace(spec.estimate_s), long)


def say(command: cmd.Log) -> None:
    log.log(LEVELS[command.level], "%s", command.message)
