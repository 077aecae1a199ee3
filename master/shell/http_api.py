"""The master's HTTP API: the output sink, the status endpoint and live evictions.

``PUT /outputs/<job>/<index>/<attempt>``  a final task streams its part file here (with the
                                          capability of that attempt's upload)
``GET /status``                           JSON: nodes, jobs, running tasks, evictions (read-only)
``POST /chaos/evict``                     a live storm (run token required; 409 before the
                                          run's time 0 and once it is ending)
``GET /ui``, ``GET /ui/events``           the live view: its page and the journal's events as
                                          server-sent events (``testbed.app.ui.feed``)

``/status``, ``/chaos/evict`` and the live view need the API token. Where the API listens, with
that token, is written to ``master.json`` in the run directory: created anew
(never over a file someone planted), readable by its owner only.
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from master.providers.base import ForeignNodeError
from master.shell.disk_faults import output_disk_full
from master.shell.live_chaos import NotRunning
from master.shell.master_ports import ApiPort
from master.shell.secure_dir import write_secret_file
from testbed.app.ui.feed import EventFeed, add_ui_routes, cluster_layout, page_url
from testbed.scenario.chaos import EvictSpec
from testbed.wire.blocks import TOKEN_HEADER
from testbed.wire.tokens import token_matches

NUMBER = re.compile(r"[0-9]{1,9}")
"""A task index or attempt in a URL: ASCII digits only (``str.isdigit`` accepts '²')."""


class MasterApi:
    def __init__(self, master: ApiPort) -> None:
        self.master = master
        self.port = 0
        scenario = master.scenario
        self.feed = EventFeed(
            cluster_layout(scenario.cluster, scenario.name, scenario.fidelity.factor),
            master.run_dir / "events.jsonl",  # a resumed run's holds what it did before its crash
        )
        master.journal.listeners.append(self.feed.publish)
        self.announce: Callable[[str], None] | None = None
        """Told the live view's address once the API listens (``testbed run`` prints it)."""

    @property
    def url(self) -> str:
        return f"http://{self.master.advertise}:{self.port}"

    async def start(self) -> web.AppRunner:
        app = web.Application(client_max_size=0)
        app.router.add_put("/outputs/{job}/{index}/{attempt}", self._receive_output)
        app.router.add_get("/status", self._status)
        app.router.add_post("/chaos/evict", self._chaos_evict)
        add_ui_routes(app, self.feed, self.master.keys.api_token)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.master.http_host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._write_master_info()
        if self.announce is not None:
            self.announce(page_url(self.url, self.master.keys.api_token))
        return runner

    def _write_master_info(self) -> None:
        """``master.json``, created exclusively: a resumed run replaces its own old one (which
        it removes first), and a file planted by someone else is never written through."""
        info = {"url": self.url, "token": self.master.keys.api_token, "pid": os.getpid()}
        write_secret_file(self.master.run_dir / "master.json", json.dumps(info))

    def _check_token(self, request: web.Request, expected: str | None = None) -> None:
        if not token_matches(request.headers.get(TOKEN_HEADER), expected or self.master.keys.api_token):
            raise web.HTTPForbidden(text="missing or wrong token")

    # ------------------------------------------------------------------ outputs

    def _staged_path(self, job_id: str, index: int, attempt: int) -> Path:
        return self.master.run_dir / "outputs" / job_id / f".part-{index:05d}.a{attempt}.tmp"

    def commit_output(self, job_id: str, index: int, attempt: int) -> None:
        """Rename the attempt's uploaded part into place (the core decided: ``CommitOutput``)."""
        staged = self._staged_path(job_id, index, attempt)
        os.replace(staged, self.master.run_dir / "outputs" / job_id / f"part-{index:05d}")

    async def _receive_output(self, request: web.Request) -> web.Response:
        job_id, index, attempt = (request.match_info[k] for k in ("job", "index", "attempt"))
        if not NUMBER.fullmatch(index) or not NUMBER.fullmatch(attempt):
            raise web.HTTPBadRequest(text="the index and the attempt are numbers")
        self._check_token(request, self.master.keys.output_cap(job_id, int(index), int(attempt)))
        if not self.master.view.has_job(job_id):
            raise web.HTTPNotFound(text="no such job output")
        staged = self._staged_path(job_id, int(index), int(attempt))
        partial = staged.with_suffix(".partial")
        try:
            with open(partial, "wb") as out:
                async for chunk in request.content.iter_chunked(1 << 20):
                    out.write(chunk)
        except BaseException as exc:  # a full disk, a dropped connection: nothing half-written stays
            partial.unlink(missing_ok=True)
            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                output_disk_full(self.master, job_id, exc)
                raise web.HTTPInsufficientStorage(text="the master's output disk is full") from None
            raise
        if request.content_length is not None and partial.stat().st_size != request.content_length:
            partial.unlink(missing_ok=True)
            raise web.HTTPBadRequest(text="truncated upload")
        os.replace(partial, staged)
        self.master.output_staged(job_id, int(index), int(attempt))
        return web.Response(status=201)

    # ------------------------------------------------------------------ status and chaos

    async def _status(self, request: web.Request) -> web.Response:
        self._check_token(request)
        return web.json_response(self.status())

    def status(self) -> dict[str, Any]:
        view = self.master.view.status()
        forged = view.pop("forged_messages")
        return {
            "run_id": self.master.run_id,
            "t": round(self.master.journal.now(), 3),
            **view,
            "malformed_messages": self.master.codec.malformed,
            "forged_messages": forged,
        }

    async def _chaos_evict(self, request: web.Request) -> web.Response:
        """A live storm: ``{"count"|"fraction", "kind", "select"}`` or ``{"nodes": [...]}``."""
        self._check_token(request)
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("the body is a JSON object")
            named = body.pop("nodes", None)
            spec = EvictSpec.model_validate(body if not named else {"count": len(named), **body})
            victims = await self.master.chaos.evict_now(spec, named)
        except ForeignNodeError as exc:
            return web.json_response({"error": str(exc)}, status=403)
        except NotRunning as exc:
            return web.json_response({"error": str(exc)}, status=409)
        except (ValueError, TypeError, AttributeError) as exc:  # json errors are ValueErrors
            return web.json_response({"error": f"bad eviction request: {exc}"}, status=400)
        return web.json_response({"evicted": victims})
