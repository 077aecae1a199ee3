"""``testbed ui RUN_DIR``: a recorded run replayed in real headless Chromium, its final state
shown and the time slider taking it back; a bad RUN_DIR refused in one line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from testbed.node.processes import child_env
from tests.support.cli import cli, one_line
from tests.support.headless_chromium import CHROMIUM, opened_tab
from tests.support.live_view import (
    DRAWN_TO_THE_END,
    RELAUNCHED,
    RUNNING,
    SHOWN,
    page_errors,
    pixel_spread,
    slide_to,
)
from tests.support.recorded_run import EVICTION, JOBS, NODES, RUN_END, TASKS, write_run

chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (Debian: chromium)")
PAGE_WITHIN_S = 90.0
"""The page's whole check (Chromium started, the replay drawn, the slider moved twice): about
2 s on a quiet host."""
STOP_WITHIN_S = 30.0


@contextlib.asynccontextmanager
async def serving_replay(run_dir: Path, in_background: bool = False) -> AsyncIterator[str]:
    """``testbed ui run_dir`` running; its page's address (stopped with Ctrl-C on the way out).
    ``in_background``: started with SIGINT ignored, as a background job is."""
    command = [sys.executable, "-m", "testbed.app.cli", "ui", str(run_dir)]
    if in_background:  # what a non-interactive shell does to a job it starts with ``&``
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=child_env()
    )
    assert process.stdout is not None
    try:
        line = (await process.stdout.readline()).decode()
        match = re.search(r"http://127\.0\.0\.1:\d+/ui\?token=\S+", line)
        assert match, line
        yield match.group(0)
    finally:
        await stop_with_ctrl_c(process)


async def stop_with_ctrl_c(process: asyncio.subprocess.Process, within_s: float = STOP_WITHIN_S) -> None:
    """Ctrl-C (SIGINT) must stop ``testbed ui`` with status 0; killed if it does not (no process
    left behind), and the failure says which of the two it was."""
    process.send_signal(signal.SIGINT)
    try:
        status = await asyncio.wait_for(process.wait(), within_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"testbed ui did not stop within {within_s:g} s of Ctrl-C (killed)") from None
    assert status == 0


@chromium
async def test_the_replay_shows_the_end_and_the_slider_takes_it_back(tmp_path: Path) -> None:
    write_run(tmp_path / "run")
    evicted, _, evicted_at, *_ = EVICTION
    before = evicted_at - 1.0  # 5 s: every job submitted, none finished, no eviction yet
    async with (
        serving_replay(tmp_path / "run") as url,
        # bounded apart from the server's stop, so that a timeout names which was slow
        asyncio.timeout(PAGE_WITHIN_S),
        opened_tab(url, tmp_path / "profile", width=1200) as tab,
    ):
        await tab.until(DRAWN_TO_THE_END)
        end = json.loads(await tab.evaluate(SHOWN))
        assert end["ended"] and end["clock"].startswith(f"t = {RUN_END:.1f} of {RUN_END:.1f}")
        assert end["jobs"] == {job: "succeeded" for job, *_ in JOBS}
        assert end["evictions"] == [evicted] and end["nodes"][evicted] == "evicted"
        assert set(end["nodes"]) == {node for node, *_ in NODES}
        assert pixel_spread(await tab.screenshot()) > 10
        relaunched = await tab.evaluate(
            RELAUNCHED
        )  # marked in the Gantt: an attempt after a lost or failed one
        assert sorted(relaunched) == sorted(t[0] for t in TASKS if t[4] > 1)

        await tab.evaluate(slide_to(before / RUN_END))
        await tab.until(f"document.getElementById('clock-label').textContent.startsWith('t = {before:.1f}')")
        back = json.loads(await tab.evaluate(SHOWN))
        assert back["evictions"] == [] and back["nodes"][evicted] == "up"
        assert set(back["nodes"]) == {node for node, _, launched, *_ in NODES if launched <= before}
        assert back["jobs"] == {job: "running" for job, _, submit, _ in JOBS if submit <= before}
        running = await tab.evaluate(RUNNING)
        assert sorted(running) == sorted(t[0] for t in TASKS if t[7] <= before < t[8])

        await tab.evaluate(slide_to(1.0))
        await tab.until(f"document.getElementById('clock-label').textContent.startsWith('t = {RUN_END:.1f}')")
        assert json.loads(await tab.evaluate(SHOWN)) == end
        assert page_errors(tab) == []


async def test_ctrl_c_stops_a_replay_started_in_the_background(tmp_path: Path) -> None:
    """A background job inherits SIGINT ignored: ``testbed ui`` handles it itself, so Ctrl-C
    still stops it, with status 0 (it did not before: two CI runs timed out on it)."""
    write_run(tmp_path / "run")
    async with serving_replay(tmp_path / "run", in_background=True) as url:
        assert "/ui?token=" in url


def test_a_bad_run_dir_is_refused_in_one_line(tmp_path: Path) -> None:
    assert "no such run directory" in one_line(cli("ui", str(tmp_path / "nowhere")))
    (tmp_path / "jobs.csv").write_text("job_id\n")
    assert "events.jsonl: missing" in one_line(cli("ui", str(tmp_path)))
    assert "--port" in one_line(cli("ui", str(tmp_path), "--port", "70000"))


SYNTHETIC = [  # a speculative copy beside its original, a notice and a slowdown on one node
    {"t": 0.0, "event": "node_up", "node": "transient-0", "class": "transient"},
    {"t": 0.0, "event": "slowdown_drawn", "node": "transient-0", "class": "transient", "factor": 2.0},
    {"t": 1.0, "event": "task_started", "task": "a", "job": "j", "node": "transient-0", "attempt": 0},
    {
        "t": 2.0,
        "event": "task_started",
        "task": "a",
        "job": "j",
        "node": "transient-0",
        "attempt": 1,
        "role": "copy",
    },
    {
        "t": 3.0,
        "event": "task_finished",
        "task": "a",
        "node": "transient-0",
        "attempt": 1,
        "status": "succeeded",
    },
    {
        "t": 3.0,
        "event": "task_finished",
        "task": "a",
        "node": "transient-0",
        "attempt": 0,
        "status": "killed",
    },
    {"t": 3.5, "event": "task_started", "task": "b", "job": "j", "node": "transient-0", "attempt": 0},
    {"t": 4.0, "event": "eviction_notice", "node": "transient-0", "seconds": 30.0},
]
FOLDED = """(() => {
    const state = foldUpTo(window.testbedUi.layout, %s, Infinity);
    const node = state.nodes.get('transient-0');
    return {attempts: [...state.attempts.values()].map(a => [a.key, a.lane, a.status, a.copy, a.relaunch]),
            notice: node.notice, slowdown: node.slowdown};
})()"""


@chromium
async def test_the_fold_marks_copies_and_gives_concurrent_attempts_their_own_lanes(tmp_path: Path) -> None:
    write_run(tmp_path / "run")
    async with (
        asyncio.timeout(90),
        serving_replay(tmp_path / "run") as url,
        opened_tab(url, tmp_path / "profile") as tab,
    ):
        await tab.until(DRAWN_TO_THE_END)
        folded = await tab.evaluate(FOLDED % json.dumps(SYNTHETIC))
    assert folded["attempts"] == [
        ["a#0", 0, "killed", False, False],
        ["a#1", 1, "succeeded", True, False],  # beside the original, while both run
        ["b#0", 0, "running", False, False],  # the first lane free again
    ]
    assert folded["notice"] == {"at": 4.0, "seconds": 30.0} and folded["slowdown"] == 2.0
