"""The simulator's commands against reality: ``testbed crosscheck`` (the same cells run for
real and simulated, their error) and ``testbed calibrate`` (the execution model measured on
this machine). Their work is in ``testbed/app/crosscheck/run.py`` and ``testbed/app/calibrate.py``;
each scenario is compiled for this host as ``testbed run`` compiles it (``testbed.app.host_settings``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.app.host_settings import check_settings, host_dilation
from testbed.app.sweep.options import SERIAL, Executor, add_executor_arguments, executor_of
from testbed.app.usage import EXIT_FAILED, EXIT_OK, UsageError, sweep_dir

if TYPE_CHECKING:
    from testbed.scenario.schema import Scenario


def add_simulator_commands(sub: Any, grid_parser: Callable[..., argparse.ArgumentParser]) -> None:
    cross = grid_parser(
        sub,
        "crosscheck",
        "run a scenario's cells for real and simulated with the same seeds; their error",
        "which of them the sim gets most wrong",
    )
    cross.add_argument(
        "--tolerance",
        default="",
        metavar="METRIC=LIMIT,...",
        help="exit 1 when an error is beyond its limit: N%% relative, else absolute (jct=15%%,evictions=0)",
    )
    cross.add_argument(
        "--out", type=Path, help="cross-check directory (default crosschecks/<name>); reruns resume it"
    )
    cross.add_argument(
        "--calibrate",
        action="store_true",
        help="measure the simulator first, beside the real runs (testbed calibrate's scenario at this "
        "scenario's fidelity, dilation and node sizes, into <out>/calibration.yaml; a rerun reuses "
        "it), and simulate with it",
    )
    cross.set_defaults(handler=cmd_crosscheck)

    calib = sub.add_parser("calibrate", help="measure the simulator's execution model on this machine")
    calib.add_argument(
        "scenario", type=Path, nargs="?", help="runs measured (default: the built-in calibration scenario)"
    )
    calib.add_argument("--seeds", type=int, default=2, help="real runs: seed, seed+1, ... (default 2)")
    calib.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    calib.add_argument("--out", type=Path, default=Path("calibration.yaml"), help="default calibration.yaml")
    calib.add_argument("--runs", type=Path, help="directory of the real runs (default <out>-runs); resumes")
    add_executor_arguments(calib)
    calib.set_defaults(handler=cmd_calibrate)


def cmd_crosscheck(args: argparse.Namespace) -> int:
    from testbed.app.crosscheck.run import run_crosscheck
    from testbed.app.crosscheck.table import parse_tolerances
    from testbed.app.sweep.grid import Variation
    from testbed.scenario.schema import load_scenario

    if args.seeds < 1:
        raise UsageError("--seeds: expected a whole number >= 1")
    try:
        tolerances = parse_tolerances(args.tolerance)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    variations = [Variation.parse(text) for text in args.vary]
    if args.calibrate and any(o.startswith("simulation.calibration=") for o in args.overrides):
        raise UsageError(
            "--calibrate measures the calibration: drop --set simulation.calibration=..., or --calibrate"
        )
    executor = executor_of(args)
    base = load_scenario(args.scenario, args.overrides)
    out = sweep_dir(args.out or Path("crosschecks") / base.name, "crosscheck")
    sim_only: list[str] = []
    if args.calibrate:
        fidelity = calibration_overrides(base, host_dilation(base))
        calibration = out / "calibration.yaml"
        if not calibration.exists() and (
            measure(None, CROSSCHECK_SEEDS, fidelity, calibration, executor=executor) != EXIT_OK
        ):
            return EXIT_FAILED
        sim_only = [f"simulation.calibration={calibration.resolve()}"]
    result = run_crosscheck(
        args.scenario,
        variations,
        args.seeds,
        out,
        args.overrides,
        tolerances,
        check=lambda scenario: check_settings(scenario, str(args.scenario)),
        sim_only=sim_only,
        executor=executor,
    )
    print((out / "crosscheck.md").read_text())
    print(f"cross-check directory: {out} (crosscheck.md, crosscheck.csv, crosscheck.png; real/, sim/)")
    problems = result.problems(tolerances)
    for problem in problems:
        print(problem, file=sys.stderr)
    return EXIT_FAILED if problems else EXIT_OK


def calibration_overrides(base: Scenario, dilation: float) -> list[str]:
    """The overrides ``--calibrate`` measures with: the real runs' fidelity mode and ``dilation``
    (theirs, ``auto`` resolved as a run resolves it, not for the calibration's smaller cluster) and
    their node classes' cores and slots: a launch takes longer on a smaller node (2026-11-28,
    docs/simulation.md: 0.034 emulated s on a 1-cpu node, 0.011 on an 8-cpu one at dilation
    10.67), nodes of two sizes fit its CPU part, and an agent, one host core at most, gains
    nothing from a node's cores beyond the dilation."""
    overrides = [f"fidelity.mode={base.fidelity.mode}", f"fidelity.dilation={dilation:g}"]
    for name in ("reserved", "transient"):
        spec = getattr(base.cluster, name)
        overrides += [f"cluster.{name}.cpus={spec.cores:g}", f"cluster.{name}.slots={spec.slots}"]
    return overrides


CROSSCHECK_SEEDS = 3
"""Seeds of the calibration ``testbed crosscheck --calibrate`` measures: as the shipped one
was (2 left MLR's points op 16 attempts, and its rate 29% off: docs/simulation.md)."""


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        raise UsageError("--seeds: expected a whole number >= 1")
    executor = executor_of(args)
    return measure(
        args.scenario, args.seeds, args.overrides, args.out, args.runs, echo=True, executor=executor
    )


def measure(
    scenario_path: Path | None,
    seeds: int,
    overrides: list[str],
    out: Path,
    runs_dir: Path | None = None,
    echo: bool = False,
    executor: Executor = SERIAL,
) -> int:
    """``testbed calibrate``: the real runs into ``runs_dir`` (default ``<out>-runs``), the
    calibration fitted and written to ``out``; its exit status."""
    from testbed.app.calibrate import calibrate, write_calibration, write_calibration_scenario

    runs = sweep_dir(runs_dir or out.with_name(f"{out.stem}-runs"), "calibrate --runs")
    scenario = scenario_path or write_calibration_scenario(runs / "calibrate.yaml")
    command = ["testbed", "calibrate", *([str(scenario_path)] if scenario_path else [])]
    command += ["--seeds", str(seeds), *(a for o in overrides for a in ("--set", o))]
    command += ["--out", str(out), "--runs", str(runs)]
    try:
        document = calibrate(
            scenario,
            seeds,
            runs,
            overrides,
            shlex.join(command),
            check=lambda s: check_settings(s, str(scenario)),
            executor=executor,
        )
    except RuntimeError as exc:
        print(f"testbed calibrate: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        write_calibration(document, out)
    except OSError as exc:
        raise UsageError(f"testbed calibrate --out {out}: cannot write it: {exc.strerror}") from None
    if echo:
        print(out.read_text())
    print(f"wrote {out}; use it: --set simulation.calibration={out}", file=sys.stderr)
    return EXIT_OK
