"""Open a page in headless Chromium over the DevTools protocol and report what went wrong
(``render``), or keep it open to watch it (``opened_tab``: evaluate, wait, screenshot).

Collects console errors, uncaught exceptions, failed loads, every request that
is not a data: or file: URL (a self-contained page makes none) and the state
of every image after the load event.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
)  # fmt: skip
IMAGES_JS = """JSON.stringify(Array.from(document.images).map(i => ({
    src: i.src.slice(0, 40), complete: i.complete, width: i.naturalWidth})))"""


@dataclass
class PageResult:
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    """What each of ``render``'s ``expressions`` evaluated to (JSON values)."""

    @property
    def broken_images(self) -> list[dict[str, Any]]:
        return [i for i in self.images if not i["complete"] or i["width"] == 0]


class DevTools:
    """A minimal CDP client: commands with ids, events kept until asked for."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.events: list[dict[str, Any]] = []
        self.last_id = 0

    async def call(self, method: str, session: str | None = None, **params: Any) -> dict:
        self.last_id += 1
        message: dict[str, Any] = {"id": self.last_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        await self.socket.send_json(message)
        while True:
            reply = await self.socket.receive_json()
            if reply.get("id") == self.last_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    async def wait_for(self, method: str) -> dict[str, Any]:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(await self.socket.receive_json())
        return next(e for e in self.events if e.get("method") == method)


async def render(
    page: Path,
    profile: Path,
    timeout: float = 60.0,
    expressions: dict[str, str] | None = None,
    width: int = 1000,
) -> PageResult:
    """Load ``page`` in a fresh headless Chromium, ``width`` CSS pixels wide, and collect what
    went wrong, and the value of each JavaScript expression in ``expressions`` once loaded."""
    async with asyncio.timeout(timeout), opened_tab(page.resolve().as_uri(), profile, width) as tab:
        return await _collect_page(tab, expressions or {})


class Tab:
    """One page open in Chromium: evaluate JavaScript in it, wait for a condition, take a screenshot."""

    def __init__(self, devtools: DevTools, session: str) -> None:
        self.devtools = devtools
        self.session = session

    async def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` (a promise is awaited)."""
        reply = await self.devtools.call(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def until(self, condition: str) -> None:
        """Return once the JavaScript ``condition`` holds, checked by the page on each of its
        timer turns (bound the wait with ``asyncio.timeout``)."""
        await self.evaluate(
            f"new Promise(done => {{ const check = () => ({condition}) ? done(true) : setTimeout(check, 50);"
            " check(); })"
        )

    async def screenshot(self) -> bytes:
        """The viewport as PNG."""
        shot = await self.devtools.call("Page.captureScreenshot", self.session, format="png")
        return base64.b64decode(shot["data"])

    def problems(self) -> PageResult:
        """What went wrong so far: console errors, failed loads, requests made."""
        return _collect(self.devtools.events)


@contextlib.asynccontextmanager
async def opened_tab(url: str, profile: Path, width: int = 1000) -> AsyncIterator[Tab]:
    """``url`` loaded (its load event fired) in a fresh headless Chromium, ``width`` CSS pixels
    wide; the browser is stopped on the way out."""
    assert CHROMIUM, "chromium is not installed"
    process = await asyncio.create_subprocess_exec(
        CHROMIUM,
        *FLAGS,
        f"--user-data-dir={profile}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    drain: asyncio.Task | None = None
    try:
        endpoint = await _devtools_endpoint(process.stderr)
        drain = asyncio.create_task(_drain(process.stderr))  # keep its pipe from filling
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(endpoint, max_msg_size=0) as socket,
        ):
            devtools = DevTools(socket)
            yield await _load(devtools, url, width)
            with contextlib.suppress(Exception):  # the browser may be gone already
                await devtools.call("Browser.close")
    finally:
        await _stop(process)
        if drain is not None:
            await drain


async def _devtools_endpoint(stderr: asyncio.StreamReader) -> str:
    """Chromium prints its browser endpoint on stderr once it listens (port 0: any port)."""
    while line := await stderr.readline():
        match = re.search(rb"DevTools listening on (ws://\S+)", line)
        if match:
            return match.group(1).decode()
    raise RuntimeError("chromium exited before it listened for DevTools")


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


async def _load(devtools: DevTools, url: str, width: int) -> Tab:
    target = await devtools.call("Target.createTarget", url="about:blank")
    attached = await devtools.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)
    session = attached["sessionId"]
    for domain in ("Runtime", "Log", "Network", "Page"):
        await devtools.call(f"{domain}.enable", session)
    await devtools.call(
        "Emulation.setDeviceMetricsOverride",
        session,
        width=width,
        height=800,
        deviceScaleFactor=1,
        mobile=False,
    )
    await devtools.call("Page.navigate", session, url=url)
    await devtools.wait_for("Page.loadEventFired")
    return Tab(devtools, session)


async def _collect_page(tab: Tab, expressions: dict[str, str]) -> PageResult:
    images = await tab.evaluate(IMAGES_JS)
    title = await tab.evaluate("document.title")
    result = tab.problems()
    result.images = json.loads(images)
    result.title = title
    for name, expression in expressions.items():
        result.values[name] = await tab.evaluate(expression)
    return result


def _collect(events: list[dict[str, Any]]) -> PageResult:
    result = PageResult()
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            result.console_errors.append(str(params.get("args")))
        elif method == "Runtime.exceptionThrown":
            result.console_errors.append(str(params.get("exceptionDetails")))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            result.console_errors.append(params["entry"].get("text", ""))
        elif method == "Network.loadingFailed":
            result.console_errors.append(f"loading failed: {params.get('errorText')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(("data:", "file:", "about:")):
                result.external_requests.append(url)
    return result


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()
