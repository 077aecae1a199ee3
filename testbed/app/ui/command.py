"""The ``testbed ui`` command (its work in ``testbed.app.ui.replay``, imported when it runs:
``testbed --help`` needs neither asyncio, aiohttp nor the scenario's schema)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from testbed.app.usage import EXIT_OK


def add_ui_command(sub: Any, port_number: Callable[[str], int]) -> None:
    parser = sub.add_parser("ui", help="serve the live view of a finished or crashed run (docs/live-view.md)")
    parser.add_argument("run", help="run directory, or a run's name under runs/ such as latest")
    parser.add_argument(
        "--port", type=port_number, default=0, help="port on 127.0.0.1 (default: any free port)"
    )
    parser.set_defaults(handler=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    import asyncio

    from testbed.app.ui.replay import replay_feed, serve

    feed = replay_feed(args.run)
    asyncio.run(serve(feed, args.port))  # until Ctrl-C or SIGTERM
    return EXIT_OK
