"""The live view's server side: the page and the stream of the run's journal events.

``GET /ui``         the page (HTML, its script, its style sheet and the vendored chart
                    library in one document: the page asks nothing else of the network)
``GET /ui/events``  ``text/event-stream``: first a ``layout`` event (the cluster's classes),
                    then every journal event so far and each one as it is written, in
                    emulated seconds as the reports show them; an ``end`` event once the run
                    is over (the page then stops listening)

Both need the run's API token (as ``/status`` does): in the ``X-Testbed-Token`` header or,
since a browser's ``EventSource`` sends no header, as ``?token=``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from aiohttp import web

from testbed.chaosmodels.zones import zone_pattern
from testbed.journal.schema import read_events
from testbed.scenario.cluster import ClusterSpec, class_specs
from testbed.scenario.fidelity import emulated
from testbed.wire.blocks import TOKEN_HEADER
from testbed.wire.tokens import token_matches

STATIC = Path(__file__).parent / "static"
SCRIPTS = ("chart.umd.min.js", "fold.js", "view.js")
"""Inlined into the page in this order: the chart library, the fold of events into state
(live and replay alike), the drawing."""
_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode


def sse_frame(data: Any, kind: str | None = None) -> bytes:
    """One server-sent event: ``data`` as one line of JSON (which escapes every newline)."""
    head = f"event: {kind}\n" if kind else ""
    return f"{head}data: {_ENCODE(data)}\n\n".encode()


def cluster_layout(cluster: ClusterSpec, name: str, dilation: float) -> dict[str, Any]:
    """What the page knows of the cluster beyond the events: each class's node size and the
    zone of each ordinal (node ``<class>-<k>`` is in ``zones[k % len(zones)]``)."""
    classes = {}
    for node_class, (kind, spec) in class_specs(cluster).items():
        classes[node_class] = {
            "kind": kind,
            "count": spec.count,
            "slots": spec.slots,
            "memory_mb": spec.memory_mb,
            "zones": list(zone_pattern(spec.zones, spec.count)) if spec.zones else [],
        }
    return {"name": name, "dilation": dilation, "classes": classes}


@cache
def page_html() -> str:
    """The page with its style sheet and scripts inlined (read once)."""
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    style = (STATIC / "ui.css").read_text(encoding="utf-8")
    scripts = "\n".join(
        f"<script>\n{(STATIC / name).read_text(encoding='utf-8')}\n</script>" for name in SCRIPTS
    )
    return html.replace("<!-- style -->", f"<style>\n{style}</style>").replace("<!-- scripts -->", scripts)


class EventFeed:
    """A queue per open stream of the run's journal ``events.jsonl``. ``publish`` is a journal
    listener; a stream's past events are read from the file as it opens (a real run's journal
    flushes every line), so a run nobody watches keeps nothing and pays a loop over no
    streams per event. ``close`` ends every stream (before the HTTP server stops, which would
    otherwise wait for them)."""

    def __init__(self, layout: dict[str, Any], journal: Path) -> None:
        self.layout = layout
        self.journal = journal
        self.dilation = float(layout["dilation"])
        self.closed = False
        self._streams: set[asyncio.Queue[Mapping[str, Any] | None]] = set()

    def publish(self, record: Mapping[str, Any]) -> None:
        for queue in self._streams:
            queue.put_nowait(record)

    def close(self) -> None:
        self.closed = True
        for queue in self._streams:
            queue.put_nowait(None)

    def _frame(self, record: Mapping[str, Any]) -> bytes:
        return sse_frame(emulated(dict(record), self.dilation))

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """The layout, the events so far, then each new one until the feed closes."""
        queue: asyncio.Queue[Mapping[str, Any] | None] = asyncio.Queue()
        if self.closed:
            queue.put_nowait(None)
        self._streams.add(queue)
        backlog = read_events(self.journal).events  # read as the queue is added (no await between):
        # every event is in the file or in the queue, once
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        response = web.StreamResponse(headers=headers)
        try:
            await response.prepare(request)
            await response.write(sse_frame(self.layout, "layout") + b"".join(map(self._frame, backlog)))
            while (record := await queue.get()) is not None:
                await response.write(self._frame(record))
            await response.write(sse_frame({}, "end"))
        finally:
            self._streams.discard(queue)
        return response


def presented_token(request: web.Request) -> str | None:
    return request.headers.get(TOKEN_HEADER) or request.query.get("token")


def add_ui_routes(app: web.Application, feed: EventFeed, token: str) -> None:
    """``/ui`` and ``/ui/events`` on ``app``, for holders of ``token`` only."""

    def check(request: web.Request) -> None:
        if not token_matches(presented_token(request), token):
            raise web.HTTPForbidden(text="missing or wrong token")

    async def page(request: web.Request) -> web.Response:
        check(request)
        return web.Response(text=page_html(), content_type="text/html", headers={"Cache-Control": "no-store"})

    async def events(request: web.Request) -> web.StreamResponse:
        check(request)
        return await feed.stream(request)

    app.router.add_get("/ui", page)
    app.router.add_get("/ui/events", events)


def page_url(base: str, token: str) -> str:
    return f"{base}/ui?token={token}"
