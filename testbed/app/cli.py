"""The ``testbed`` command line.

Exit status: 0 success, 1 a job failed, 2 bad input (the message names the
file, the field and the fix; never a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.cli import add_agent_arguments, port_number, run_agent
from testbed.app.compose_commands import add_compose_commands
from testbed.app.host_settings import check_settings, settings_for
from testbed.app.report import add_report_commands
from testbed.app.sim_commands import add_simulator_commands
from testbed.app.sweep.options import add_executor_arguments, executor_of
from testbed.app.ui.command import add_ui_command
from testbed.app.usage import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    UsageError,
)
from testbed.app.workload_args import add_workload_commands
from testbed.durations import parse_duration
from testbed.limits import MAX_DURATION_S, within_max_duration
from testbed.node.processes import RunTerminated, StartupFailed
from testbed.scenario.loading import ScenarioError

if TYPE_CHECKING:
    from master.chaos.plan import PlannedEviction
    from master.shell.run import RunResult
    from testbed.scenario.schema import Scenario
    from testbed.settings.resolve import Resolution
    from testbed.settings.run_settings import RunSettings

BACKENDS = ("local", "docker", "attach", "sim")


def load_scenario(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """``testbed.scenario.schema.load_scenario``, imported when a command loads a scenario
    (pydantic, numpy and the policies' models: ``testbed --help`` needs none of them)."""
    from testbed.scenario.schema import load_scenario as load

    return load(path, overrides)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: status 2, one line
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="testbed", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run a scenario and report job completion times")
    run.add_argument("scenario", type=Path, nargs="?", help="the scenario file (not with --resume)")
    run.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue a run whose master crashed, in its own directory",
    )
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a scenario field, e.g. --set policy.scheduler=yarn (repeatable)",
    )
    run.add_argument("--out", type=Path, help="run directory, new or empty (default runs/<UTC time>-<name>)")
    run.add_argument(
        "--clean", action="store_true", help="delete the run already in --out first (never other files)"
    )
    run.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help="nodes as local processes (default), Docker containers, compose/Swarm agents (attach), "
        "or simulated on a virtual clock (sim); default: the scenario's backend, else local",
    )
    run.add_argument("--dry-run", action="store_true", help="print the planned eviction schedule and stop")
    run.set_defaults(handler=cmd_run)

    validate = sub.add_parser(
        "validate", help="check a scenario file without running it: every check `testbed run` makes first"
    )
    validate.add_argument("scenario", type=Path)
    validate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    validate.add_argument("--backend", choices=BACKENDS, default=None, help="as testbed run --backend")
    validate.set_defaults(handler=cmd_validate)

    add_compose_commands(sub)

    agent = sub.add_parser("agent", help="run one node agent (started by a provider)")
    add_agent_arguments(agent)
    agent.set_defaults(handler=cmd_agent)

    chaos = sub.add_parser("chaos", help="eviction plans and live eviction storms")
    chaos_sub = chaos.add_subparsers(dest="chaos_command", required=True, parser_class=_Parser)
    plan = chaos_sub.add_parser("plan", help="print a scenario's planned eviction schedule")
    plan.add_argument("scenario", type=Path)
    plan.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    plan.add_argument("--horizon", help="how far ahead, trace time (default: the scenario's timeout)")
    plan.set_defaults(handler=cmd_chaos_plan)
    evict = chaos_sub.add_parser("evict", help="evict nodes of a running scenario now")
    evict.add_argument(
        "--run",
        default="runs/latest",
        type=Path,
        help="run directory, or a run's name under runs/ such as latest (default runs/latest)",
    )
    amount = evict.add_mutually_exclusive_group(required=True)
    amount.add_argument("--count", type=int)
    amount.add_argument("--fraction", type=float)
    amount.add_argument("--node", action="append", dest="nodes", help="a node id (repeatable)")
    evict.add_argument("--kind", choices=("transient", "reserved", "any"), default="transient")
    evict.add_argument(
        "--select", choices=("random", "oldest", "youngest", "busiest", "most-data"), default="random"
    )
    evict.add_argument("--zone", help="only nodes of this zone (cluster.<class>.zones)")
    evict.set_defaults(handler=cmd_chaos_evict)
    check = chaos_sub.add_parser("check", help="compare a run's lifetimes and notices with its chaos model")
    check.add_argument(
        "run", nargs="?", default="runs/latest", help="run directory or name (default runs/latest)"
    )
    check.set_defaults(handler=cmd_chaos_check)
    imported = chaos_sub.add_parser(
        "import-trace", help="convert a public interruption trace to the testbed's trace CSV (docs/chaos.md)"
    )
    imported.add_argument("format", choices=("alibaba-spot-gpu",), help="the trace's format")
    imported.add_argument("file", type=Path, help="alibaba-spot-gpu: its job_info_df.csv")
    imported.add_argument("--gpu-model", help="only the spot jobs of this gpu_model")
    imported.add_argument("--out", type=Path, help="write here (default: standard output)")
    imported.set_defaults(handler=cmd_chaos_import_trace)

    add_report_commands(sub)
    add_ui_command(sub, port_number)
    add_workload_commands(sub)
    sub.choices["plan"].set_defaults(handler=cmd_plan)

    sweep = _grid_parser(
        sub, "sweep", "run a grid of scenario variants over several seeds", "the grid is their product"
    )
    sweep.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs of each seed (default 1): their spread is the host's noise, not the eviction schedule's",
    )
    sweep.add_argument("--out", type=Path, help="sweep directory (default sweeps/<name>); reruns resume it")
    sweep.set_defaults(handler=cmd_sweep)

    add_simulator_commands(sub, _grid_parser)

    broker = sub.add_parser("broker", help="run the embedded MQTT broker (amqtt)")
    broker.add_argument("--host", default="127.0.0.1")
    broker.add_argument("--port", type=port_number, default=1883)
    broker.set_defaults(handler=cmd_broker)
    return parser


def _grid_parser(sub: Any, name: str, text: str, vary: str) -> argparse.ArgumentParser:
    """A command over a grid of scenario variants and seeds: SCENARIO, --vary, --seeds, --set."""
    parser = sub.add_parser(name, help=text)
    parser.add_argument("scenario", type=Path)
    parser.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="KEY.PATH=V1,V2,...",
        help=f"a field and its values ({vary})",
    )
    parser.add_argument("--seeds", type=int, default=1, help="seeds per cell: seed, seed+1, ... (default 1)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    add_executor_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        logging.basicConfig(
            level=logging.INFO if args.verbose else logging.WARNING,
            format="%(asctime)s %(name)s %(levelname)s %(message)s",
        )
        return args.handler(args)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `testbed chaos plan S | head`
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted; everything the run started has been stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RunTerminated:
        print("terminated; everything the run started has been stopped", file=sys.stderr)
        return EXIT_TERMINATED
    except StartupFailed as exc:
        print(f"testbed run: {exc}", file=sys.stderr)
        return EXIT_FAILED


def cmd_plan(args: argparse.Namespace) -> int:
    """``testbed plan``, with the line ``strategy: auto``'s cost model gives each job."""
    from master.recovery.auto import strategy_describer
    from testbed.workloads.cli import cmd_plan as plan

    return int(plan(args, strategy_describer))


def cmd_validate(args: argparse.Namespace) -> int:
    scenario, backend = load_for_backend(args)
    scenario = preflight(scenario, args.scenario, backend).scenario
    jobs = sum(job.repeat for job in scenario.jobs)
    fidelity = scenario.fidelity
    print(
        f"{args.scenario}: ok ({scenario.name}: {jobs} jobs, {_nodes_line(scenario)}; "
        f"{fidelity.mode}, dilation {fidelity.factor:g} on this host)"
    )
    if scenario.cluster.classes is not None:
        for name, named in scenario.node_classes.items():
            spec = named.spec
            print(
                f"  class {name} ({named.kind}): {_count(spec.count, 'node')} of "
                f"{_count(spec.slots, 'slot')}, {_count(spec.cores, 'core')}, {spec.memory_mb} MB; "
                f"{spec.price_per_hour:g}/h; "
                f"lifetime {named.chaos.lifetime}"
            )
        print("  (named classes run on the simulator and local processes only today: backend: sim or local)")
    return EXIT_OK


def _count(number: float, noun: str) -> str:
    """``1 core``, ``4 cores``, ``0.5 cores``."""
    return f"{number:g} {noun}" + ("" if number == 1 else "s")


def _nodes_line(scenario: Scenario) -> str:
    """``1 reserved + 3 transient nodes``, or with named classes each class's count and kind."""
    if scenario.cluster.classes is None:
        cluster = scenario.cluster
        return f"{cluster.reserved.count} reserved + {cluster.transient.count} transient nodes"
    classes = scenario.node_classes.values()
    return f"{sum(c.spec.count for c in classes)} nodes in {len(classes)} classes"


def load_for_backend(args: argparse.Namespace) -> tuple[Scenario, str]:
    """The scenario with ``--set`` and ``--backend`` applied, and the backend it runs on."""
    overrides = [*args.overrides, *([f"backend={args.backend}"] if args.backend else [])]
    scenario = load_scenario(args.scenario, overrides)
    backend = scenario.backend or "local"
    if backend == "sim":
        from master.sim.run import sim_scenario

        scenario = sim_scenario(scenario)
    return scenario, backend


def preflight(scenario: Scenario, path: Path, backend: str) -> Resolution:
    """Every check ``testbed run`` makes before anything starts (``testbed validate`` makes
    them all): the policies build, a faithful local run gets its cgroups, the chaos section's
    plan is within the limits, an external broker answers. The scenario's resolution for this
    host (``testbed.settings.resolve``: ``dilation: auto`` resolved, the policies built; its
    ``settings()`` are the run's)."""
    from master.shell.scale_model import local_isolation, refuse_replication, refuse_slowdown
    from testbed.settings.resolve import refuse_named_classes, resolution
    from testbed.settings.run_settings import Host

    resolved = resolution(scenario, Host.this_machine(), str(path))
    scenario, problems = resolved.scenario, list(resolved.problems)
    checks: list[Callable[[], object]] = [
        lambda: planned_evictions(scenario, path),  # a chaos section too busy to run
        lambda: check_broker(scenario, backend),
    ]

    if backend == "local":  # a faithful run without cgroups is refused now, in one line
        checks.insert(1, lambda: local_isolation(scenario))
    if backend != "sim" and scenario.chaos.slowdown is not None:
        checks.append(lambda: refuse_slowdown(scenario, backend))
    if backend != "sim":
        checks.append(lambda: refuse_replication(scenario, backend, path))
        checks.append(lambda: refuse_named_classes(scenario, backend, str(path)))
    problems += [problem for check in checks for problem in _problems(check)]
    if problems:
        raise ScenarioError(problems)
    return resolved


def _problems(check: Callable[[], object]) -> list[str]:
    """What ``check`` refuses, one line each: every check runs, so that one pass says all."""
    try:
        check()
    except ScenarioError as exc:
        return exc.problems
    except UsageError as exc:
        return [str(exc)]
    return []


def cmd_run(args: argparse.Namespace) -> int:
    from master.shell.journal_file import new_run_dir
    from master.shell.run_dir import RunDirError, fresh_run_dir
    from testbed.app.console import print_jct_table
    from testbed.node.processes import SECRETS_FILE_ENV, take_secrets

    if SECRETS_FILE_ENV in os.environ:  # a compose or Swarm run's master: its Docker secret
        os.environ.update(take_secrets())  # ours alone: no child inherits them (child_env)
    if args.resume is not None:
        return cmd_resume(args)
    if args.scenario is None:
        raise UsageError("testbed run: give a scenario file, or --resume RUN_DIR")
    scenario, args.backend = load_for_backend(args)
    if args.dry_run:
        from testbed.settings.resolve import refuse_named_classes

        refuse_named_classes(scenario, args.backend, str(args.scenario))
        return dry_run(scenario, args.scenario)
    settings = preflight(scenario, args.scenario, args.backend).settings()  # before anything starts
    with contextlib.ExitStack() as owned:
        try:
            run_dir = args.out if args.out is not None else new_run_dir(Path("runs"), scenario.name)
            owned.enter_context(fresh_run_dir(run_dir, args.clean))
        except RunDirError as exc:
            raise UsageError(f"testbed run --out: {exc}") from None
        except OSError as exc:
            raise UsageError(f"testbed run --out: cannot create the run directory: {exc}") from None
        print(f"run directory: {run_dir}", file=sys.stderr)
        try:
            result = _run_backend(settings, run_dir, args.backend)
        except RunDirError as exc:  # its files cannot be written (a full disk, a read-only mount)
            raise UsageError(f"testbed run --out: {exc}") from None
    print_jct_table(result.run_dir, result.summary)
    warn_if_distorted(result.summary)
    _warn_shortfall(result.summary)
    return EXIT_OK if result.ok else EXIT_FAILED


def _run_backend(settings: RunSettings, run_dir: Path, backend: str) -> RunResult:
    """The run of ``settings`` (the simulator's: ``load_for_backend`` gave its ``sim_scenario``)."""
    from master.shell.run import RealBackend, RunBackend, run_blocking

    if backend == "sim":
        from master.sim.run import SimBackend

        chosen: RunBackend = SimBackend(progress=sys.stderr.isatty())
    else:
        chosen = RealBackend(backend, progress=True)
    return run_blocking(settings, run_dir, chosen)


def _warn_shortfall(summary: dict) -> None:
    """A run that did not have the cluster it asked for says so last (summary.json has it too)."""
    if summary.get("cluster_shortfall"):
        print(
            f"warning: this run did not have the cluster it asked for: {summary['cluster_shortfall']}",
            file=sys.stderr,
        )


def warn_if_distorted(summary: dict) -> None:
    """One line when the fidelity monitor found the run distorted (docs/fidelity.md)."""
    fidelity = summary.get("fidelity") or {}
    if fidelity.get("distorted"):
        problems = "; ".join(fidelity.get("problems") or [])
        print(
            f"warning: distorted run: {problems} (summary.json fidelity, docs/fidelity.md)", file=sys.stderr
        )


def cmd_resume(args: argparse.Namespace) -> int:
    from master.shell.resume_run import ResumeError, check_resumable, recover
    from master.shell.run import RealBackend, load_resumable, run_blocking
    from master.shell.run_dir import RunDirError, owning
    from testbed.app.console import print_jct_table

    if args.scenario is not None or args.overrides or args.out or args.clean or args.dry_run:
        raise UsageError("testbed run --resume RUN_DIR: the run directory already has its scenario")
    if args.backend == "sim":
        raise UsageError("testbed run --resume: a simulated run is not resumed; run its scenario again")
    with contextlib.ExitStack() as owned:
        try:
            check_resumable(args.resume)  # before the lock, which would leave a file in a non-run
            owned.enter_context(owning(args.resume))
            scenario = load_resumable(args.resume)  # again under the lock, and its inputs
        except (ResumeError, RunDirError) as exc:
            raise UsageError(f"testbed run --resume: {exc}") from None
        print(f"resuming run directory: {args.resume}", file=sys.stderr)
        settings = settings_for(scenario, str(args.resume / "scenario.yaml"))
        backend = RealBackend(args.backend or "local", progress=True, recovered=recover(args.resume))
        result = run_blocking(settings, args.resume, backend)
    print_jct_table(result.run_dir, result.summary)
    warn_if_distorted(result.summary)
    _warn_shortfall(result.summary)
    return EXIT_OK if result.ok else EXIT_FAILED


def check_broker(scenario: Scenario, backend: str) -> None:
    """An external broker (``mqtt://...`` or ``TESTBED_BROKER``) must answer before nodes start."""
    if backend == "sim":
        return  # no broker: the simulator's agents are models
    url = os.environ.get("TESTBED_BROKER") or None
    if backend == "attach" and url is None:
        raise UsageError("testbed run --backend attach: set TESTBED_BROKER=mqtt://HOST:PORT (agents' broker)")
    url = url or scenario.broker
    if not url.startswith("mqtt://"):
        return  # a broker the run starts itself
    from testbed.wire.mqtt import BrokerAddress  # aiomqtt: only for a broker to check

    try:  # a Swarm stack starts its services in any order: attach gives the broker a minute
        BrokerAddress.parse(url).check_reachable(60.0 if backend == "attach" else 5.0)
    except ValueError as exc:
        raise UsageError(f"TESTBED_BROKER: {exc}") from None
    except ConnectionError as exc:
        raise UsageError(f"testbed run: {exc}") from None


def dry_run(scenario: Scenario, path: Path) -> int:
    """The eviction plan to the end of the jobs (``testbed.app.dry_run``), after the checks of
    a real run's plan (to the timeout: within its limits)."""
    from testbed.app.dry_run import horizon_note, jobs_horizon

    timeout = _plan_horizon(scenario, None)[1]
    planned_evictions(scenario, path)
    horizon = jobs_horizon(scenario)
    print(horizon_note(horizon, timeout))
    print(eviction_plan(scenario, path, horizon))
    return EXIT_OK


def eviction_plan(scenario: Scenario, path: Path, horizon: float | None = None) -> str:
    """The plan up to ``horizon`` trace seconds (default: the timeout, at most ``MAX_DURATION_S``)."""
    from master.chaos.plan import format_plan

    scenario, horizon = _plan_horizon(scenario, horizon)
    return format_plan(planned_evictions(scenario, path, horizon), scenario, path.parent, horizon)


def planned_evictions(scenario: Scenario, path: Path, horizon: float | None = None) -> list[PlannedEviction]:
    """``eviction_plan``'s evictions (what ``testbed run`` checks): a plan beyond the limits is a
    ``UsageError`` naming the scenario file."""
    from master.chaos.plan import plan_evictions

    scenario, horizon = _plan_horizon(scenario, horizon)
    try:
        return plan_evictions(scenario, horizon, base_dir=path.parent)
    except ValueError as exc:
        raise UsageError(f"{path}: chaos: {exc}") from None


def _plan_horizon(scenario: Scenario, horizon: float | None) -> tuple[Scenario, float]:
    """The scenario under this host's dilation (its wall times), and the horizon of its plan."""
    from testbed.settings.dilation import resolve_dilation
    from testbed.settings.run_settings import Host

    scenario = resolve_dilation(scenario, Host.this_machine().cores)
    return scenario, horizon if horizon is not None else min(
        scenario.timeout * scenario.time_scale, MAX_DURATION_S
    )


def cmd_chaos_plan(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario, args.overrides)
    try:
        horizon = within_max_duration(parse_duration(args.horizon)) if args.horizon else None
    except ValueError as exc:
        raise UsageError(f"--horizon: {exc}") from None
    print(eviction_plan(scenario, args.scenario, horizon))
    return EXIT_OK


def cmd_chaos_evict(args: argparse.Namespace) -> int:
    from testbed.chaos_client import ChaosClient, ChaosError

    if args.fraction is not None and not 0 < args.fraction <= 1:
        raise UsageError("--fraction: expected a number in (0, 1], e.g. 0.5")
    if args.count is not None and args.count < 1:
        raise UsageError("--count: expected a whole number >= 1")
    try:
        evicted = ChaosClient(args.run).evict(
            args.count, args.fraction, args.kind, args.select, args.nodes, args.zone
        )
    except ChaosError as exc:
        raise UsageError(f"testbed chaos evict: {exc}") from None
    print(f"evicted {len(evicted)} node(s): {', '.join(evicted) or '-'}")
    return EXIT_OK


def cmd_chaos_check(args: argparse.Namespace) -> int:
    from testbed.app.chaos_check import check_run, format_check
    from testbed.chaos_client import run_directory

    try:
        check = check_run(run_directory(args.run))
    except ValueError as exc:
        raise UsageError(f"testbed chaos check: {exc}") from None
    print(format_check(check))
    return EXIT_OK


def cmd_chaos_import_trace(args: argparse.Namespace) -> int:
    from testbed.chaosmodels.traces import alibaba_spot_gpu

    try:
        text = alibaba_spot_gpu(args.file, args.gpu_model)
    except ValueError as exc:
        raise UsageError(f"testbed chaos import-trace: {exc}") from None
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        args.out.write_text(text)
    except OSError as exc:
        raise UsageError(f"testbed chaos import-trace: --out {args.out}: {exc.strerror}") from None
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from testbed.app.sweep.grid import Variation
    from testbed.app.sweep.run import run_sweep

    if args.seeds < 1:
        raise UsageError("--seeds: expected a whole number >= 1")
    if args.repeats < 1:
        raise UsageError("--repeats: expected a whole number >= 1")
    variations = [Variation.parse(text) for text in args.vary]
    out = args.out or Path("sweeps") / load_scenario(args.scenario, args.overrides).name
    results = run_sweep(
        args.scenario,
        variations,
        args.seeds,
        out,
        args.overrides,
        args.repeats,
        check=lambda scenario: check_settings(scenario, str(args.scenario)),
        executor=executor_of(args),
    )
    table = out / "sweep.md"
    print(table.read_text() if table.exists() else "no run finished")
    print(f"sweep directory: {out} (sweep.csv, sweep.md, sweep.png, CDF overlays)")
    failed = [r for r in results if r.status != "ok"]
    if failed:
        names = ", ".join(f"{r.name} ({r.status})" for r in failed)
        logs = out / "logs"
        print(f"{len(failed)} of {len(results)} runs failed: {names}; see {logs}/<run>.log", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_agent(args: argparse.Namespace) -> int:
    return run_agent(args)


def cmd_broker(args: argparse.Namespace) -> int:
    from testbed.node.processes import die_with_parent
    from testbed.wire.broker import serve

    die_with_parent()
    _run_async(serve(args.host, args.port))
    return EXIT_OK


def _run_async(coroutine) -> None:
    try:
        import uvloop
    except ImportError:
        import asyncio

        asyncio.run(coroutine)
    else:
        uvloop.run(coroutine)


if __name__ == "__main__":
    sys.exit(main())
