"""The live view's server side: the page and its event stream, token rules and SSE framing,
through aiohttp's own test client against the real routes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from testbed.app.ui.feed import EventFeed, add_ui_routes, cluster_layout, sse_frame
from testbed.scenario.cluster import ClusterSpec
from testbed.wire.blocks import TOKEN_HEADER

TOKEN = "s3cret-token"
CLUSTER = ClusterSpec.model_validate(
    {"reserved": 1, "transient": {"count": 3, "slots": 4, "zones": {"a": 2, "b": 1}}}
)


def feed_of(directory: Path, *history: dict) -> EventFeed:
    """A feed of a journal that holds ``history`` (and a torn last line, as after a crash)."""
    journal = directory / "events.jsonl"
    journal.write_text("".join(json.dumps(event) + "\n" for event in history) + '{"t": 9', encoding="utf-8")
    return EventFeed(cluster_layout(CLUSTER, "demo", 2.0), journal)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[TestClient, EventFeed]]:
    feed = feed_of(tmp_path, {"t": 4.0, "event": "run_started", "run_id": "r", "name": "demo"})
    app = web.Application()
    add_ui_routes(app, feed, TOKEN)
    async with TestClient(TestServer(app)) as client:
        yield client, feed
    feed.close()


async def next_frame(response) -> tuple[str | None, dict]:
    """One server-sent event: its ``event:`` name (None: a plain message) and its data."""
    kind, data = None, None
    while (line := (await response.content.readline()).decode()) != "\n":
        field, _, value = line.rstrip("\n").partition(": ")
        if field == "event":
            kind = value
        else:
            assert field == "data", line
            data = json.loads(value)
    return kind, data


def test_a_frame_is_one_data_line_whatever_the_text_holds() -> None:
    frame = sse_frame({"error": "two\nlines"}, "end")
    assert frame == b'event: end\ndata: {"error":"two\\nlines"}\n\n'
    assert sse_frame({"t": 1}) == b'data: {"t":1}\n\n'


def test_the_layout_gives_each_class_its_size_and_the_zone_of_each_ordinal() -> None:
    layout = cluster_layout(CLUSTER, "demo", 2.0)
    assert layout["classes"]["transient"] == {
        "kind": "transient",
        "count": 3,
        "slots": 4,
        "memory_mb": 1024,
        "zones": ["a", "a", "b"],
    }
    assert layout["classes"]["reserved"]["zones"] == []


def test_the_layout_gives_named_classes_by_name_with_their_kind() -> None:
    classes = {"on-demand": {"kind": "reserved", "count": 1}, "spot": {"kind": "transient", "count": 2}}
    named = ClusterSpec.model_validate({"classes": classes})
    layout = cluster_layout(named, "demo", 1.0)["classes"]
    assert {name: (c["kind"], c["count"]) for name, c in layout.items()} == {
        "on-demand": ("reserved", 1),
        "spot": ("transient", 2),
    }


@pytest.mark.parametrize("path", ["/ui", "/ui/events"])
async def test_no_token_or_a_wrong_one_is_refused(served, path: str) -> None:
    client, _ = served
    for query in ("", "?token=wrong", "?token="):
        response = await client.get(path + query)
        assert response.status == 403, query
    response = await client.get(path, headers={TOKEN_HEADER: "wrong"})
    assert response.status == 403


async def test_the_page_comes_whole_with_the_token_in_the_query_or_the_header(served) -> None:
    client, _ = served
    for response in (
        await client.get(f"/ui?token={TOKEN}"),
        await client.get("/ui", headers={TOKEN_HEADER: TOKEN}),
    ):
        assert response.status == 200
        html = await response.text()
        assert "<!-- scripts -->" not in html and "<!-- style -->" not in html
        assert "Chart.js v4" in html and "function foldEvent" in html
        assert "src=" not in html and 'href="http' not in html  # nothing fetched at run time


async def test_the_stream_sends_the_layout_the_past_and_each_new_event_in_emulated_seconds(served) -> None:
    client, feed = served
    response = await client.get("/ui/events", params={"token": TOKEN})
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    kind, layout = await next_frame(response)
    assert kind == "layout" and layout["name"] == "demo" and layout["dilation"] == 2.0
    assert await next_frame(response) == (
        None,
        {"t": 2.0, "event": "run_started", "run_id": "r", "name": "demo"},
    )
    feed.publish(
        {"t": 10.0, "event": "job_finished", "job": "j0", "status": "succeeded", "jct_s": 6.0, "error": None}
    )
    kind, event = await next_frame(response)
    assert kind is None and event["t"] == 5.0 and event["jct_s"] == 3.0
    feed.close()
    assert await next_frame(response) == ("end", {})
    assert await response.content.read() == b""


async def test_a_stream_opened_after_the_end_gets_everything_then_the_end(tmp_path: Path) -> None:
    feed = feed_of(tmp_path, {"t": 1.0, "event": "run_finished", "status": "succeeded"})
    feed.close()
    app = web.Application()
    add_ui_routes(app, feed, TOKEN)
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/ui/events", headers={TOKEN_HEADER: TOKEN})
        assert (await next_frame(response))[0] == "layout"
        assert await next_frame(response) == (
            None,
            {"t": 0.5, "event": "run_finished", "status": "succeeded"},
        )
        assert await next_frame(response) == ("end", {})
