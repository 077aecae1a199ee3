"""One run of a scenario on any backend (``run``): run directory, the backend's nodes (a
broker, a node provider and the master; or the simulator), summary.

Everything the run starts (broker, agents, their task workers) is stopped in
``finally`` blocks, so a failure or Ctrl-C leaves no process and no port behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from master.policy_setup import policy_plugins
from master.providers.local import python_command
from master.shell.backends import broker_credentials, open_backend, run_id_for, run_token
from master.shell.broker_keeper import BrokerKeeper
from master.shell.fidelity_monitor import FIDELITY_FILE, Sampler, write_assessment
from master.shell.master import Master
from master.shell.resume_run import Recovered, check_resumable
from master.shell.run_dir import chained_outputs, check_inputs, owning, record_inputs, tidy
from master.shell.scale_model import class_flags, docker_isolation, local_isolation
from master.shell.secure_dir import RunDirError, secure_run_dir
from master.summary.checkpoint_copies import checkpoint_summary
from master.summary.cluster import cluster_summary, run_events
from master.summary.coaster import job_class_summary, percentile
from master.summary.resumes import last_segment_only, resume_summary
from master.summary.speculation import speculation_summary
from testbed.app.progress import show_live_view, show_progress
from testbed.journal.tables import JOB_TOTALS, measured_rows
from testbed.node.cgroups import control_plane
from testbed.node.processes import RunTerminated
from testbed.scenario.fidelity import PER_WORKLOAD_JCT, emulated, is_duration_key, wall_name
from testbed.scenario.schema import Scenario, input_files, load_scenario, to_yaml
from testbed.settings.resolve import refuse_named_classes
from testbed.settings.run_settings import RunSettings
from testbed.wire.broker import (
    AGENT_SECRET_ENV,
    ManagedBroker,
    agent_env,
    agent_password,
    make_broker,
    master_address,
)
from testbed.wire.mqtt import BrokerAddress

if TYPE_CHECKING:
    from master.core.machine import MasterCore
    from master.summary.latency import RoundTimes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    ok: bool
    summary: dict[str, Any]


def prepare_run_dir(scenario: Scenario, run_dir: Path) -> None:
    """The resolved scenario (input paths absolute) and its input files' fingerprints; a
    ``RunDirError`` (one line) if the directory takes neither."""
    try:
        (run_dir / "scenario.yaml").write_text(to_yaml(scenario), encoding="utf-8")
        record_inputs(run_dir, scenario)
    except OSError as exc:
        raise RunDirError(f"{run_dir}: cannot record the scenario and its inputs: {exc}") from None


class RoundShell(Protocol):
    """What ``round_summary`` reads of a run's shell: the real ``Master`` or the ``SimShell``."""

    times: RoundTimes
    core: MasterCore


class RunBackend(Protocol):
    """Where a run's nodes are: ``RealBackend`` (local, docker, attach) or the simulator's
    ``master.sim.run.SimBackend`` (its provider being its model agents)."""

    name: str

    @property
    def resuming(self) -> bool:
        """Whether the run continues a crashed one (its run directory is prepared already)."""
        ...

    async def drive(self, settings: RunSettings, run_dir: Path) -> tuple[RoundShell, bool, dict[str, Any]]:
        """Run the scenario into the owned ``run_dir`` to its end: the shell that ran it, whether
        every job succeeded, and the summary's fields only this backend has (after the rest)."""
        ...


async def run(settings: RunSettings, run_dir: Path, backend: RunBackend) -> RunResult:
    """Run a scenario, compiled for its backend (``testbed.settings.resolve``, or the simulator's
    ``sim_settings``), to its end: the one pipeline of every backend. It owns ``run_dir`` while
    it runs (``master.shell.run_dir.owning``), writes ``scenario.yaml`` and ``inputs.json`` (a
    new run's), and ``summary.json`` from the journal's tables once the backend is done."""
    scenario = settings.scenario
    refuse_named_classes(scenario, backend.name, None)
    secure_run_dir(run_dir)
    with owning(run_dir):
        if not backend.resuming:
            prepare_run_dir(scenario, run_dir)
        plugins = policy_plugins(scenario)  # their versions as the run starts (a source may change)
        shell, ok, extra = await backend.drive(settings, run_dir)
        summary = {**summarize(run_dir, scenario, plugins), **round_summary(shell, scenario), **extra}
        try:
            (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:  # a disk full even after the journal gave its reserve back
            log.error("cannot write %s: %s", run_dir / "summary.json", exc.strerror)
        tidy(run_dir)
    return RunResult(run_dir, ok, summary)


async def run_scenario(
    settings: RunSettings,
    run_dir: Path,
    backend: str = "local",
    on_event: Callable[[Master, dict[str, Any]], None] | None = None,
    progress: bool = False,
    broker: ManagedBroker | None = None,
    recovered: Recovered | None = None,
) -> RunResult:
    """``run`` on a real backend (``RealBackend`` says what each argument does)."""
    return await run(settings, run_dir, RealBackend(backend, on_event, progress, broker, recovered))


@dataclass(frozen=True)
class RealBackend:
    """A real backend (``local``, ``docker``, ``attach``): its provider's nodes run agents.
    ``on_event(master, record)`` sees every journal event as it happens.

    The run starts the broker the scenario names (``embedded``, ``mosquitto``) with fresh
    credentials, unless ``broker`` hands it one (not yet started) to use instead, e.g. one a
    test restarts mid-run. With ``recovered`` (what the journal of a crashed run says) it
    continues that run instead."""

    name: str = "local"
    on_event: Callable[[Master, dict[str, Any]], None] | None = None
    progress: bool = False
    broker: ManagedBroker | None = None
    recovered: Recovered | None = None

    @property
    def resuming(self) -> bool:
        return self.recovered is not None

    async def drive(self, settings: RunSettings, run_dir: Path) -> tuple[Master, bool, dict[str, Any]]:
        main = asyncio.current_task()
        if main is not None:  # SIGTERM cancels the run, so every finally block still cleans up
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, _terminate, main)
        scenario = settings.scenario
        run_id = run_id_for(scenario.name)
        isolation = {"local": local_isolation, "docker": docker_isolation}.get(self.name)
        cgroups = isolation(scenario) if isolation is not None else None
        mounted = [*input_files(scenario), *chained_outputs(scenario, run_dir)]
        plugin_path = scenario.policy.plugin_path
        backend_ = await open_backend(self.name, run_id, run_dir, mounted, cgroups, plugin_path)
        provider = backend_.provider
        broker_url = backend_.broker_url or scenario.broker
        owned = self.broker is None  # a broker handed in is the caller's to restart
        broker = self.broker or make_broker(broker_url, backend_.host, run_dir / "logs" / "broker.log")
        address = master_address(broker) if broker else BrokerAddress.parse(broker_url)
        priority = (
            control_plane(cgroups, run_id)
            if cgroups is not None and scenario.fidelity.priority
            else contextlib.nullcontext(False)
        )
        with priority as prioritised:
            try:
                if broker is not None:
                    await broker.start()
                master = Master(
                    settings,
                    run_id,
                    run_dir,
                    provider,
                    address,
                    run_token(),
                    lambda node_id, node_class: agent_command(
                        scenario, run_id, address, node_id, node_class, backend_.agent_prefix
                    ),
                    http_host=backend_.host,
                    advertise=backend_.advertise,
                    attach=backend_.attach,
                    agent_env=backend_.agent_env,
                    node_env=partial(agent_env, broker) if broker else external_login,
                    recovered=self.recovered,
                )
                if self.progress:
                    master.api.announce = show_live_view
                if self.on_event is not None:
                    on_event = self.on_event
                    master.journal.listeners.append(lambda record: on_event(master, record))
                if broker is not None:
                    keeper = BrokerKeeper(broker, master.journal.event, master.abort, master.journal.now)
                    keeper.start(restart=owned)
                    master.stoppers.append(keeper.stop)
                shown = asyncio.create_task(show_progress(master.api.status)) if self.progress else None
                sampler = Sampler(
                    master.journal.now, lambda: broker.process.pid if broker and broker.process else None
                )
                sampler.start()
                try:
                    ok = await master.run()
                finally:
                    observations = await sampler.stop()
                    if shown is not None:
                        shown.cancel()
                        await asyncio.gather(shown, return_exceptions=True)
            finally:
                try:
                    await provider.close()
                finally:
                    if broker is not None:
                        await broker.close()
        observations.launch_ack_s = list(master.core.launch_acks.values())
        node_stats = getattr(provider, "node_cpu_stats", dict)  # nodes in CPU groups (local, Docker)
        slot_stats = getattr(provider, "slot_cpu_stats", dict)
        write_assessment(
            run_dir,
            scenario,
            observations,
            node_stats(),
            enforced=not backend_.attach,
            prioritised=prioritised,
            slot_throttling=slot_stats(),
        )
        return master, ok, {}


def round_summary(shell: RoundShell, scenario: Scenario) -> dict[str, Any]:
    """summary.json's placement latency (emulated seconds, as the run's other times), its
    rounds' CPU seconds (the master's host's, not dilated) and, where a job replicates its
    input, where its maps read it as their workers reported (``input_local_fraction``). A
    resumed master's samples are its own segment's (``last_segment_only``)."""
    fields = shell.times.summary(shell.core.round.turns.latencies)
    latency = {key: value for key, value in fields.items() if key.startswith("placement_latency")}
    segment = last_segment_only(fields) if shell.core.resume is not None else {}
    inputs = shell.core.inputs.summary()
    return {**fields, **emulated(latency, scenario.fidelity.factor), **inputs, **segment}


async def external_login(node_id: str) -> dict[str, str]:
    """An agent's login to a broker the run did not start: the node's own when we hold the
    secret its passwords derive from (``TESTBED_AGENT_SECRET``: a compose or Swarm run's
    broker, ``testbed compose``), else the operator's, from our environment."""
    agent_secret = os.environ.get(AGENT_SECRET_ENV)
    if agent_secret:
        return {
            "TESTBED_MQTT_USERNAME": node_id,
            "TESTBED_MQTT_PASSWORD": agent_password(agent_secret, node_id),
        }
    return broker_credentials()


def agent_command(
    scenario: Scenario,
    run_id: str,
    broker: BrokerAddress,
    node_id: str,
    node_class: str,
    prefix: list[str] | None = None,
) -> list[str]:
    return [
        *(python_command() if prefix is None else prefix),
        "--run",
        run_id,
        "--node-id",
        node_id,
        *class_flags(scenario, node_class, broker.url, node_id),
    ]


def summarize(run_dir: Path, scenario: Scenario, plugins: dict[str, Any]) -> dict[str, Any]:
    """summary.json from the journal's tables (so a resumed or crashed run gets the same).

    Times are emulated seconds (wall seconds / the run's dilation, named ``_s``); ``wall``
    keeps each time as measured, named ``_wall_s``. ``plugins``: the plugin policies'
    provenance, taken as the run started."""
    measured = measured_summary(run_dir, scenario)
    dilation = scenario.fidelity.factor
    assessed = run_dir / FIDELITY_FILE
    return {
        **emulated(measured, dilation),
        **({"plugins": plugins} if plugins else {}),
        "fidelity_mode": scenario.fidelity.mode,
        "dilation": dilation,
        "wall": {wall_name(key): value for key, value in measured.items() if is_duration_key(key)},
        **({"fidelity": json.loads(assessed.read_text(encoding="utf-8"))} if assessed.exists() else {}),
    }


def measured_summary(run_dir: Path, scenario: Scenario) -> dict[str, Any]:
    """The summary's figures with times in wall seconds."""
    jobs = measured_rows(run_dir / "jobs.csv")
    tasks = measured_rows(run_dir / "tasks.csv")
    evictions = len(measured_rows(run_dir / "evictions.csv"))
    failures = Counter(t["failure"] for t in tasks if t["status"] == "failed" and t["failure"])
    jcts = sorted(float(j["jct_s"]) for j in jobs if j["status"] == "succeeded")
    finishes = [float(j["finish_s"]) for j in jobs if j["finish_s"]]
    submits = [float(j["submit_s"]) for j in jobs if j["submit_s"]]
    relaunched = sum(int(j["relaunched_tasks"] or 0) for j in jobs)
    total_tasks = sum(int(j["tasks"] or 0) for j in jobs)
    events = run_events(run_dir)
    return {
        "name": scenario.name,
        "seed": scenario.seed,
        "time_scale": scenario.time_scale,
        "policy": scenario.policy.model_dump(exclude={"options"}),
        "jobs": len(jobs),
        "succeeded": sum(1 for j in jobs if j["status"] == "succeeded"),
        "failed": sum(1 for j in jobs if j["status"] != "succeeded"),
        "errors": {j["job_id"]: j["error"] for j in jobs if j.get("error")},
        "mean_jct_s": _round(statistics.fmean(jcts)) if jcts else None,
        "p50_jct_s": _round(percentile(jcts, 50)),
        "p95_jct_s": _round(percentile(jcts, 95)),
        "max_jct_s": _round(max(jcts)) if jcts else None,
        "makespan_s": _round(max(finishes) - min(submits)) if finishes and submits else None,
        "evictions": evictions,
        "relaunched_tasks": relaunched,
        "relaunched_ratio": _round(relaunched / total_tasks) if total_tasks else 0.0,
        "error_relaunches": sum(int(j.get("error_relaunches") or 0) for j in jobs),
        **{key: sum(int(j.get(key) or 0) for j in jobs) for key in JOB_TOTALS},
        **per_workload(jobs),
        "task_attempts": len(tasks),
        "oom_failures": failures["oom"],
        "enospc_failures": failures["enospc"],
        "task_failures": dict(sorted(failures.items())),
        "spill_bytes": sum(int(t["spill_bytes"] or 0) for t in tasks),
        "shuffle_bytes": sum(int(t["bytes_out"] or 0) for t in tasks),
        **elastic_summary(tasks),
        **job_class_summary(run_dir, scenario, events),
        **checkpoint_summary(events),
        **cluster_summary(events, scenario),
        **resume_summary(events),
        **speculation_summary(jobs),
    }


def per_workload(jobs: list[dict[str, str]]) -> dict[str, float | None]:
    """Mean JCT and relaunched-task ratio of each workload (a mixed run's jobs differ a lot)."""
    numbers: dict[str, float | None] = {}
    for workload in sorted({j["workload"] for j in jobs}):
        mine = [j for j in jobs if j["workload"] == workload]
        jcts = [float(j["jct_s"]) for j in mine if j["status"] == "succeeded"]
        tasks = sum(int(j["tasks"] or 0) for j in mine)
        relaunched = sum(int(j["relaunched_tasks"] or 0) for j in mine)
        numbers[f"{PER_WORKLOAD_JCT}{workload}"] = _round(statistics.fmean(jcts)) if jcts else None
        numbers[f"relaunched_ratio_{workload}"] = _round(relaunched / tasks) if tasks else None
    return numbers


def elastic_summary(tasks: list[dict[str, str]]) -> dict[str, Any]:
    """Memory elasticity (yarn, yarn-me): how many succeeded attempts ran elastically, what they
    spilled, allocation ratios (memory / ideal), and the task model's mean absolute error
    (predicted runtime vs measured end - start) for elastic and for regular attempts.
    Empty when the scheduler predicts no runtimes."""
    done = [t for t in tasks if t["status"] == "succeeded" and t.get("predicted_s")]
    if not done:
        return {}
    elastic = [t for t in done if t.get("elastic") == "1"]
    regular = [t for t in done if t.get("elastic") != "1"]
    ratios = [float(t["memory_mb"]) / float(t["ideal_memory_mb"]) for t in done if t.get("ideal_memory_mb")]
    return {
        "elastic_tasks": len(elastic),
        "elastic_spill_bytes": sum(int(t["spill_bytes"] or 0) for t in elastic),
        "regular_spill_bytes": sum(int(t["spill_bytes"] or 0) for t in regular),
        "mean_allocation_ratio": _round(statistics.fmean(ratios)) if ratios else None,
        "min_allocation_ratio": _round(min(ratios)) if ratios else None,
        "elastic_model_mae_s": _model_error(elastic),
        "regular_model_mae_s": _model_error(regular),
    }


def _model_error(tasks: list[dict[str, str]]) -> float | None:
    """Mean |predicted - measured| runtime in seconds (None without tasks)."""
    errors = [abs(float(t["predicted_s"]) - (float(t["end_s"]) - float(t["start_s"]))) for t in tasks]
    return _round(statistics.fmean(errors)) if errors else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def load_resumable(run_dir: Path) -> Scenario:
    """The scenario of a crashed run, or ``ResumeError``/``RunDirError`` saying why it cannot be
    resumed (call it holding the directory: see ``master.shell.run_dir.owning``)."""
    check_resumable(run_dir)
    secure_run_dir(run_dir)
    scenario = load_scenario(run_dir / "scenario.yaml")
    check_inputs(run_dir, scenario)
    return scenario


def _terminate(main: asyncio.Task[Any]) -> None:
    """The first SIGTERM cancels the run; later ones do not cut its clean-up short."""
    main.get_loop().add_signal_handler(signal.SIGTERM, lambda: None)
    main.cancel(TERMINATED)


TERMINATED = "SIGTERM"


def run_blocking(settings: RunSettings, run_dir: Path, backend: RunBackend) -> RunResult:
    """``run`` on an event loop of its own (uvloop's when installed)."""
    coroutine = run(settings, run_dir, backend)
    try:
        import uvloop
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    try:
        return runner(coroutine)
    except asyncio.CancelledError as exc:
        if exc.args == (TERMINATED,):
            raise RunTerminated() from None
        raise
