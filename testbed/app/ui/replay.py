"""``testbed ui RUN_DIR`` (``testbed.app.ui.command``): the live view's page for a run that
ended or crashed, replayed from its journal (``events.jsonl``), with the time slider to see
the run at any time."""

from __future__ import annotations

import asyncio
import secrets
import signal
import sys
from pathlib import Path

from aiohttp import web

from testbed.app.report.errors import UsageError as RunDirError
from testbed.app.report.rundir import load_run
from testbed.app.ui.feed import EventFeed, add_ui_routes, cluster_layout, page_url
from testbed.app.usage import UsageError
from testbed.chaos_client import run_directory

HOST = "127.0.0.1"


def replay_feed(run: str | Path) -> EventFeed:
    """The feed of a recorded run: its whole journal, and its end."""
    try:
        data = load_run(run_directory(run))
    except RunDirError as exc:
        raise UsageError(f"testbed ui: {exc}") from None
    journal = data.path / "events.jsonl"
    if not journal.is_file():
        raise UsageError(
            f"testbed ui: {journal}: missing; give the directory of a run (it replays its journal)"
        )
    feed = EventFeed(cluster_layout(data.cluster, data.name, data.dilation), journal)
    feed.close()
    return feed


def stop_on_signals() -> asyncio.Event:
    """Set on Ctrl-C (SIGINT) or SIGTERM, handled here: a process started in the background by a
    non-interactive shell inherits SIGINT ignored, and would not stop on Ctrl-C otherwise
    (the way the broker stops: ``testbed.wire.broker``). Installed before the address is
    printed, so a signal sent on reading it is not lost."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


async def serve(feed: EventFeed, port: int) -> None:
    """Serve the page until interrupted, its address (with a fresh token) on standard output."""
    stop = stop_on_signals()
    token = secrets.token_urlsafe(16)
    app = web.Application()
    add_ui_routes(app, feed, token)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, HOST, port)
        try:
            await site.start()
        except OSError as exc:
            raise UsageError(f"testbed ui --port {port}: cannot listen on {HOST}: {exc.strerror}") from None
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(
            f"live view of {feed.layout['name']} (replay): {page_url(f'http://{HOST}:{bound}', token)}",
            flush=True,
        )
        print("Ctrl-C stops it", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()
