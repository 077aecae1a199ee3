"""The workload commands' arguments (``testbed gen``, ``profile``, ``plan``, ``check-output``), apart from
their handlers (testbed/workloads/cli.py, in a package whose ``__init__`` imports every
workload, numpy, pydantic and the scenario schema): ``testbed --help`` builds this parser, the
handlers are imported when such a command runs."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORKLOADS = ["mlr", "pagerank", "sort", "wordcount"]
"""The built-in workloads with generated inputs (testbed/workloads/cli.py's ``JOB_MODELS``)."""
DEFAULT_SEED = 1
"""The handlers' ``DEFAULT_SEED``, as the help shows it."""


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module("testbed.workloads.cli"), name)(args))

    return handler


def add_workload_commands(subparsers: Any) -> None:
    gen = subparsers.add_parser("gen", help="write a workload's generated input to a file")
    _job_options(gen, with_input=False)
    gen.add_argument("--out", required=True, help="file to write")
    gen.set_defaults(handler=_handler("cmd_gen"))

    profile = subparsers.add_parser(
        "profile", help="memory-elasticity profile of a workload's map and reduce tasks"
    )
    _job_options(profile)
    profile.add_argument(
        "--fractions",
        default="1.0,0.9,0.8,0.7,0.6,0.5,0.4,0.3,0.2,0.1",
        help="fractions of the ideal memory to run at (comma separated)",
    )
    profile.add_argument("--repeat", type=int, default=1, help="runs per fraction; the fastest counts")
    profile.add_argument("--out", default=".", help="directory for <workload>-<role>.json profiles")
    profile.set_defaults(handler=_handler("cmd_profile"))

    plan = subparsers.add_parser("plan", help="print the stage DAG of a scenario's workload: sql jobs")
    plan.add_argument("scenario", type=Path, help="a scenario with workload: sql jobs")
    plan.add_argument("--merge", choices=("on", "off", "auto"), help="override each job's merge: switch")
    plan.set_defaults(handler=_handler("cmd_plan"))

    check = subparsers.add_parser("check-output", help="verify a job's output against a reference")
    check.add_argument("workload", nargs="?", choices=WORKLOADS, help="omit with --run")
    check.add_argument("output", nargs="?", help="the job's output directory (outputs/<job_id>)")
    _job_options(check, positional=False)
    check.add_argument("--run", help="a run directory: check every job of it")
    check.set_defaults(handler=_handler("cmd_check_output"))


def _job_options(parser: argparse.ArgumentParser, with_input: bool = True, positional: bool = True) -> None:
    if positional:
        parser.add_argument("workload", choices=WORKLOADS)
    if with_input:
        parser.add_argument("--input", help="input file, directory or glob (instead of generated data)")
    parser.add_argument("--seed", type=int, help=f"seed of the generated input (default {DEFAULT_SEED})")
    parser.add_argument("--size-mb", type=float, help="sort, wordcount: generated size")
    parser.add_argument("--maps", type=int, help="map tasks (input splits)")
    parser.add_argument("--reduces", type=int, help="reduce tasks (partitions)")
    parser.add_argument("--vocabulary", type=int, help="wordcount: distinct generated words")
    parser.add_argument("--nodes", type=int, help="pagerank: generated node id space")
    parser.add_argument("--edges", type=int, help="pagerank: generated edges")
    parser.add_argument("--iterations", type=int, help="pagerank, mlr: iterations")
    parser.add_argument("--damping", type=float, help="pagerank damping factor")
    parser.add_argument("--tolerance", type=float, help="pagerank: stop when the L1 change is below")
    parser.add_argument("--points", type=int, help="mlr: generated training samples")
    parser.add_argument("--features", type=int, help="mlr: features per sample")
    parser.add_argument("--classes", type=int, help="mlr: classes")
    parser.add_argument("--learning-rate", type=float, help="mlr: gradient descent step")
    parser.add_argument("--regularization", type=float, help="mlr: L2 penalty")
