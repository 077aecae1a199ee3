"""``testbed compose`` and ``testbed secrets``: a compose file (compose v1/v2, Swarm) for a
scenario, and the secrets its stack mounts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.app.usage import EXIT_OK, UsageError
from testbed.scenario.loading import ScenarioError

if TYPE_CHECKING:
    from testbed.settings.run_settings import Host


def add_compose_commands(sub: Any) -> None:
    """``compose`` and ``secrets`` on the CLI's subcommands."""
    compose = sub.add_parser("compose", help="write a compose file (compose v1/v2, Swarm) for a scenario")
    compose.add_argument("scenario", type=Path)
    compose.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    compose.add_argument("-o", "--out", type=Path, help="the compose file (default: standard output)")
    compose.add_argument(
        "--host-cores",
        type=float,
        help="cores of the host the stack runs on, for dilation: auto (default: this machine's)",
    )
    compose.add_argument(
        "--per-node",
        action="store_true",
        help="one service per node (reserved-0, transient-0, ...), not one per class: on a multi-host "
        "Swarm the master evicts a node anywhere by removing its service through the manager",
    )
    compose.set_defaults(handler=cmd_compose)

    secrets = sub.add_parser("secrets", help="write fresh secrets of a compose run or Swarm stack")
    secrets.add_argument("directory", type=Path, help="a new directory: <scenario>.secrets beside the file")
    secrets.set_defaults(handler=cmd_secrets)


def cmd_compose(args: argparse.Namespace) -> int:
    from master.shell.compose_file import compose_file, secrets_directory

    argv = [str(args.scenario), *(arg for value in args.overrides for arg in ("--set", value))]
    if args.host_cores is not None:
        if args.host_cores <= 0:
            raise UsageError("testbed compose --host-cores: expected a number of cores > 0, e.g. 4")
        argv += ["--host-cores", f"{args.host_cores:g}"]
    if args.per_node:
        argv.append("--per-node")
    if args.out is not None:
        argv += ["-o", str(args.out)]
    try:
        text = compose_file(args.scenario, args.overrides, args.out, compose_host(args), argv, args.per_node)
    except ScenarioError as exc:  # one line, however many problems
        raise UsageError("; ".join(exc.problems)) from None
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"testbed compose -o {args.out}: cannot write it: {exc.strerror}") from None
    print(f"wrote {args.out}", file=sys.stderr)
    from testbed.scenario.schema import load_scenario  # here: ``testbed --help`` builds this parser

    directory = secrets_directory(load_scenario(args.scenario, args.overrides), args.out)
    if not directory.exists():
        _write_secrets(directory, "testbed compose -o")
    return EXIT_OK


def compose_host(args: argparse.Namespace) -> Host:
    """The host a compose file is fitted to: ``--host-cores``, or this machine."""
    from testbed.settings.run_settings import Host

    return Host(args.host_cores) if args.host_cores is not None else Host.this_machine()


def cmd_secrets(args: argparse.Namespace) -> int:
    _write_secrets(args.directory, "testbed secrets")
    return EXIT_OK


def _write_secrets(directory: Path, command: str) -> None:
    from master.shell.compose_file import write_secrets

    try:
        write_secrets(directory)
    except FileExistsError:
        raise UsageError(f"{command}: {directory} exists; remove it for new secrets, or use it") from None
    except OSError as exc:
        raise UsageError(f"{command}: cannot write the secrets to {directory}: {exc.strerror}") from None
    print(f"wrote the run's secrets to {directory}", file=sys.stderr)
