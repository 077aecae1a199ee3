"""``testbed gen``, ``testbed profile`` and ``testbed check-output``.

All three describe a job with the same options as a scenario's job entry
(``--input`` or the generator's size options, ``--seed``, ...), so a
profile, a generated file or a check refers to exactly the data a scenario
job would process. ``check-output --run RUN_DIR`` checks every job of a run.
Handlers return an exit status: 0 fine, 1 a failed check, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from testbed.plan import JobPlan
from testbed.scenario.base import MAX_SEED
from testbed.scenario.schema import (
    MlrJob,
    PagerankJob,
    PluginJob,
    Scenario,
    ScenarioError,
    SortJob,
    WordcountJob,
    load_scenario,
)
from testbed.workloads.catalog import builtin

DEFAULT_SEED = 1
StrategyOf = Callable[[Scenario], Callable[[JobPlan], str] | None]
"""A scenario's describer of the strategy each job gets (None: the scenario's one strategy)."""
JOB_MODELS = {"sort": SortJob, "wordcount": WordcountJob, "pagerank": PagerankJob, "mlr": MlrJob}


def job_from_args(args: argparse.Namespace) -> Any:
    """The job spec the options describe; ``ValueError`` (one line) when they are invalid."""
    fields = {
        "input": getattr(args, "input", None),
        "size_mb": args.size_mb,
        "maps": args.maps,
        "reduces": args.reduces,
        "vocabulary": args.vocabulary,
        "nodes": args.nodes,
        "edges": args.edges,
        "iterations": args.iterations,
        "damping": args.damping,
        "tolerance": args.tolerance,
        "points": args.points,
        "features": args.features,
        "classes": args.classes,
        "learning_rate": args.learning_rate,
        "regularization": args.regularization,
    }
    if not 0 <= seed_of(args) <= MAX_SEED:
        raise ValueError(f"--seed: expected a whole number from 0 to {MAX_SEED}, found {args.seed}")
    model = JOB_MODELS[args.workload]
    given = {k: v for k, v in fields.items() if v is not None}
    unknown = sorted(k for k in given if k not in model.model_fields)
    if unknown:
        options = ", ".join("--" + k.replace("_", "-") for k in unknown)
        raise ValueError(f"{args.workload} does not take {options}")
    try:
        return model(workload=args.workload, **given)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = "--" + "-".join(str(p) for p in err["loc"]).replace("_", "-")
        raise ValueError(f"{where}: {err['msg'].removeprefix('Value error, ')}") from None


def seed_of(args: argparse.Namespace) -> int:
    return DEFAULT_SEED if args.seed is None else args.seed


ASSUMABLE = (
    *("size_mb", "vocabulary", "nodes", "edges", "maps", "iterations", "damping", "tolerance"),
    *("points", "features", "classes", "learning_rate", "regularization"),
)
"""Options that shape a generated input or the result: when absent, check-output assumes them."""


def assumed_options(args: argparse.Namespace, job: Any) -> list[str]:
    """The options the command line left out, as the check assumed them (``auto``: derived)."""
    if getattr(args, "input", None):
        return []
    fields = type(job).model_fields
    missing = [name for name in ASSUMABLE if name in fields and getattr(args, name) is None]
    assumed = [f"--{name.replace('_', '-')} {_option_value(getattr(job, name))}" for name in missing]
    return assumed + ([f"--seed {DEFAULT_SEED}"] if args.seed is None else [])


def _option_value(value: Any) -> str:
    return "auto" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _fail(message: str) -> int:
    print(f"testbed: {message}", file=sys.stderr)
    return 2


# ------------------------------------------------------------------ gen


def cmd_gen(args: argparse.Namespace) -> int:
    try:
        job = job_from_args(args)
    except ValueError as exc:
        return _fail(str(exc))
    workload = builtin(job.workload)
    if workload is None or workload.generate is None:
        return _fail(f"{job.workload} reads no input file: its tasks generate their data")
    out = Path(args.out)
    if not out.parent.is_dir():
        return _fail(f"--out: directory {out.parent} does not exist")
    try:
        handle = open(out, "wb")  # noqa: SIM115 (the with below closes it)
    except OSError as exc:
        return _fail(f"--out: cannot write {out}: {exc.strerror}")
    with handle:
        workload.generate(job, seed_of(args), handle)
    print(f"wrote {out} ({out.stat().st_size / 2**20:.1f} MB)")
    return 0



# ------------------------------------------------------------------ profile


def parse_fractions(text: str) -> tuple[float, ...]:
    try:
        fractions = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--fractions: expected numbers like 1.0,0.5,0.1, got {text!r}") from None
    if not fractions or any(not 0 < f <= 1 for f in fractions):
        raise ValueError(f"--fractions: every fraction must be in (0, 1], got {text!r}")
    if 1.0 not in fractions:
        fractions = (1.0, *fractions)
    return fractions


def cmd_profile(args: argparse.Namespace) -> int:
    from testbed.workloads.profile import format_profile, profile_workload

    try:
        job = job_from_args(args)
        fractions = parse_fractions(args.fractions)
    except ValueError as exc:
        return _fail(str(exc))
    if args.repeat < 1:
        return _fail("--repeat: must be at least 1")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f"--out: cannot create the directory {out}: {exc.strerror or exc}")
    for profile in profile_workload(job, seed_of(args), fractions, args.repeat):
        print(format_profile(profile))
        path = out / f"{profile.workload}-{profile.role}.json"
        measured_on = {"job": job.model_dump(mode="json", exclude_none=True), "seed": seed_of(args)}
        path.write_text(json.dumps({**profile.to_dict(), **measured_on}, indent=2) + "\n")
        print(f"saved {path}\n")
    return 0


# ------------------------------------------------------------------ check-output


def cmd_check_output(args: argparse.Namespace) -> int:
    from testbed.workloads.check import check_output

    if args.run:
        if args.workload or args.output:
            return _fail("give either --run RUN_DIR or WORKLOAD OUTPUT_DIR, not both")
        try:
            if load_scenario(Path(args.run) / "scenario.yaml").backend == "sim":
                return _fail(
                    f"--run {args.run}: a simulated run (backend: sim) produces no job outputs to check; "
                    "check a run of a real backend"
                )
            jobs = run_jobs(Path(args.run))
        except (ScenarioError, OSError) as exc:
            return _fail(f"--run: {exc}")
    else:
        if not args.workload or not args.output:
            return _fail("check-output needs WORKLOAD OUTPUT_DIR (or --run RUN_DIR)")
        try:
            jobs = [(args.output, job_from_args(args), seed_of(args))]
        except ValueError as exc:
            return _fail(str(exc))
    failed = 0
    for directory, job, seed in jobs:
        problems = check_output(job, seed, Path(directory))
        failed += bool(problems)
        print(f"{directory}: {job.workload} " + ("OK" if not problems else "FAILED"))
        for problem in problems:
            print(f"  {problem}")
        assumed = assumed_options(args, job) if problems and not args.run else []
        if assumed:
            print(
                f"  the reference assumed {', '.join(assumed)} (not given): if the job was generated "
                "otherwise, give its options, or check a whole run with --run RUN_DIR"
            )
    return 1 if failed else 0


def cmd_plan(args: argparse.Namespace, strategy_of: StrategyOf | None = None) -> int:
    """Each sql job's stages, what each fused, and where its rows go (exit 2: none, or bad);
    with ``strategy_of`` (the CLI's: ``strategy: auto``'s cost model), the line it gives a job."""
    from testbed.workflows.describe import describe_plan
    from testbed.workloads.dag import plan_dag
    from testbed.workloads.sql import job_dag, lowered

    scenario = load_scenario(args.scenario)
    describe_strategy = strategy_of(scenario) if strategy_of else None
    jobs = [(n, job) for n, job in enumerate(scenario.jobs) if job.workload == "sql"]
    if not jobs:
        return _fail(f"{args.scenario}: no job has workload: sql")
    for number, job in jobs:
        if args.merge:
            job = job.model_copy(update={"merge": {"on": True, "off": False}.get(args.merge, args.merge)})
        stages, choice = lowered(job)
        name = f" ({job.name})" if job.name else ""
        merge = "on" if (choice.merge if choice else job.merge) else "off"
        if choice:
            on, off = choice.predicted_s[True], choice.predicted_s[False]
            merge = f"auto, {merge} (predicted {on:.2f} s merged, {off:.2f} s unmerged)"
        title = f"jobs.{number}{name}, merge {merge}"
        plan = plan_dag("sql", job_dag(stages))
        print("\n".join(describe_plan(plan, title)))
        if describe_strategy:
            print(describe_strategy(plan))
    return 0


def run_jobs(run: Path) -> list[tuple[Path, Any, int]]:
    """(output directory, job spec, seed) of every checkable job of a run, numbered as the master does."""
    scenario = load_scenario(run / "scenario.yaml")
    jobs = []
    ordinal = itertools.count()
    firsts = itertools.accumulate((spec.repeat for spec in scenario.jobs), initial=0)
    named = {spec.name: first for spec, first in zip(scenario.jobs, firsts, strict=False) if spec.name}
    for spec in scenario.jobs:
        if spec.after is not None:  # a chained job read its parent's committed parts
            parts = run / "outputs" / f"j{named[spec.after]:03d}" / "part-*"
            spec = spec.model_copy(update={"input": str(parts)})
        for _ in range(spec.repeat):
            number = next(ordinal)
            if _checkable(spec):
                seed = spec.seed if spec.seed is not None else scenario.seed * 1000 + number
                jobs.append((run / "outputs" / f"j{number:03d}", spec, seed))
    return jobs


def _checkable(spec: Any) -> bool:
    """Whether ``check-output`` checks the job: a plugin's, or a built-in's with a ``check``."""
    workload = builtin(spec.workload)
    return isinstance(spec, PluginJob) or (workload is not None and workload.check is not None)
