"""Resuming a run whose master crashed, from what its journal recorded.

The journal is the run's replicated progress metadata (Pado, section 3.2.6):
every event and table row is flushed as it happens, and each committed final
output partition has its own ``output_committed`` event. ``testbed run
--resume RUN_DIR`` reads it back (``recover``) and a master whose core is given it
(``master.core.resume``) continues the same scenario in the same directory:

- finished jobs are not run again;
- a job that was running keeps the final partitions it had committed, and
  everything else of it is launched again (intermediate outputs lived on the
  old agents, which died with the master);
- jobs not yet submitted arrive at their scheduled times;
- the clock continues from the last recorded time, so the downtime is not
  counted (it says nothing about the policy under test);
- task attempts that were running when the master died are recorded as
  ``lost`` (failure ``master_crashed``), nodes that were up as ended by
  ``master_crashed``; attempt numbers and node ordinals continue, so no block
  id, output name or node id is reused;
- what runs again because of the crash is a restart, not a relaunch (which an
  eviction or lost data causes): ``relaunched_tasks`` does not count it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from master.core.exposure import attempt_seconds
from master.core.resume import NODE_ID, Recovered
from testbed.journal.schema import TaskStarted, read_events


class ResumeError(Exception):
    """The directory cannot be resumed; the message says why and what to do."""


def check_resumable(run_dir: Path) -> None:
    """Refuse directories that are not a crashed run: a finished run, not a run. (A live one is
    refused by its lock: see ``master.shell.run_dir.owning``.)"""
    if not (run_dir / "events.jsonl").is_file() or not (run_dir / "scenario.yaml").is_file():
        raise ResumeError(f"{run_dir}: not a run directory (events.jsonl and scenario.yaml are needed)")
    if (run_dir / "summary.json").is_file():
        raise ResumeError(f"{run_dir}: the run finished (it has a summary.json): nothing to resume")


def recover(run_dir: Path) -> Recovered:
    """Read the journal back.

    Each segment of the run (the first, then one per resume) begins with a
    setup phase: its cluster comes up before ``run_started``/``run_resumed``,
    on a clock that does not count (nodes that join then count from the
    segment's start, as the master itself counts them).
    """
    events = read_events(run_dir / "events.jsonl").events
    found = Recovered()
    setting_up, joining = True, []
    for event in events:
        name = event["event"]
        if name == "resuming":
            setting_up, joining = True, []
        elif name in ("run_started", "run_resumed"):
            setting_up = False
            found.nodes_up.update({node_id: float(event["t"]) for node_id in joining})
        if setting_up and name == "node_up":
            joining.append(event["node"])
            continue
        if not setting_up or name == "resuming":
            found.crashed_at = max(found.crashed_at, float(event.get("t", 0.0)))
        _apply(found, event)
    found.restarting |= _cut_short(found)
    for job in found.finished_jobs:
        found.submitted.pop(job, None)
        found.committed.pop(job, None)
    for node_id in _known_node_ids(run_dir, events):
        match = NODE_ID.fullmatch(node_id)
        if match:
            node_class, ordinal = match.group(1), int(match.group(2))
            found.ordinals[node_class] = max(found.ordinals.get(node_class, 0), ordinal + 1)
    return found


def _apply(found: Recovered, event: dict[str, Any]) -> None:
    name = event["event"]
    if name == "resuming":  # before the crash's own events: what ran or had succeeded restarts
        found.restarting |= _cut_short(found)
    elif name == "job_submitted":
        found.submitted[event["job"]] = float(event["t"])
        found.workloads[event["job"]] = event["workload"]
    elif name == "job_finished":
        found.finished_jobs.add(event["job"])
    elif name == "output_committed":
        found.committed.setdefault(event["job"], {})[int(event["index"])] = int(event["attempt"])
    elif name == "task_started":
        task, attempt = event["task"], int(event["attempt"])
        found.attempts[task] = max(found.attempts.get(task, -1), attempt)
        found.launches[task] += 1
        found.in_flight[(task, attempt)] = cast(TaskStarted, event)
        found.job_started.setdefault(event["job"], float(event["t"]))
        found.succeeded.discard(task)
        if task in found.restarting:
            found.restarting.discard(task)
            found.restarts[task] += 1
    elif name == "task_finished":
        found.in_flight.pop((event["task"], int(event["attempt"])), None)
        if event.get("status") == "succeeded":
            found.succeeded.add(event["task"])
            _observed(found, event)
        if "input_reads" in event:
            found.input_reads.append((event["job"], event["input_reads"]))
        if event.get("status") == "failed" and event.get("failure") not in (None, "fetch", "cancelled"):
            found.failures[event["task"]] += 1
    elif name == "node_up":
        found.nodes_up[event["node"]] = float(event["t"])
    elif name in ("node_lost", "node_ended"):
        found.nodes_up.pop(event["node"], None)


def _observed(found: Recovered, event: dict[str, Any]) -> None:
    """A success the live core counted in its stage means (``master.core.tasks``): counted again,
    to the journal's tenth of a millisecond (``t`` is rounded to it, ``start_s`` is not)."""
    workload = found.workloads.get(event["job"])
    if workload is not None:
        start = event.get("start_s")
        found.durations.observed(workload, int(event["stage"]), attempt_seconds(start, float(event["t"])))


def _cut_short(found: Recovered) -> set[str]:
    """The tasks a crash now cuts short: those running, and those whose last attempt succeeded."""
    return {task for task, _ in found.in_flight} | found.succeeded


def _known_node_ids(run_dir: Path, events: list[dict[str, Any]]) -> set[str]:
    """Every node id the run used: in events, and the log file of each node it launched."""
    ids = {str(e["node"]) for e in events if "node" in e}
    logs = run_dir / "logs"
    if logs.is_dir():
        ids |= {p.stem for p in logs.glob("*.log")}
    return ids


def prepare_restored_outputs(directory: Path, kept: set[int]) -> None:
    """Staged uploads of attempts that died, and any part file without a commit event."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.iterdir():
        match = re.fullmatch(r"part-(\d+)", path.name)
        if match is None or int(match.group(1)) not in kept:
            path.unlink()
