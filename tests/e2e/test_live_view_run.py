"""The live view of a real local run, watched in real headless Chromium while the run goes: the
nodes, a finished job and an eviction appear, the page is not blank, and the run's end reaches
it (its stream closes, and the run is not held up by the open page)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.app.ui.feed import page_url
from tests.support.headless_chromium import CHROMIUM, opened_tab
from tests.support.live_view import DRAWN_TO_THE_END, SHOWN, page_errors, pixel_spread
from tests.support.runs import assert_clean, evict_first_if_none
from tests.support.scenarios import hold_job, scenario_in
from tests.support.settings import settings_of

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (Debian: chromium)"),
]

EVERYTHING_SHOWN = f"""(() => {{
    const shown = JSON.parse({SHOWN});
    return Object.keys(shown.nodes).length >= 4 && Object.values(shown.jobs).includes('succeeded')
        && shown.evictions.length > 0;
}})()"""


async def test_nodes_a_finished_job_and_an_eviction_appear_while_the_run_goes(
    tmp_path: Path, isolated_path: None
) -> None:
    hold, release = hold_job(tmp_path / "in")  # the run lives until the page has shown it all
    cluster = {"reserved": 1, "transient": {"count": 3, "zones": {"a": 1, "b": 2}}}
    scenario = scenario_in(
        tmp_path / "in",
        jobs=[{"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 1}, hold],
        cluster={**cluster, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
    )
    evict = evict_first_if_none()
    watchers: list[asyncio.Task[tuple[dict[str, Any], dict[str, Any], float, list[str]]]] = []

    async def watch(url: str) -> tuple[dict[str, Any], dict[str, Any], float, list[str]]:
        try:
            async with asyncio.timeout(180), opened_tab(url, tmp_path / "profile", width=1200) as tab:
                await tab.until(EVERYTHING_SHOWN)
                going = json.loads(await tab.evaluate(SHOWN))
                spread = pixel_spread(await tab.screenshot())
                release.touch()  # the hold's map ends, and the run with it
                await tab.until(DRAWN_TO_THE_END)
                return going, json.loads(await tab.evaluate(SHOWN)), spread, page_errors(tab)
        finally:
            release.touch()

    def on_event(master: Any, record: dict[str, Any]) -> None:
        evict(master, record)
        if record["event"] == "run_started" and not watchers:
            url = page_url(master.api.url, master.keys.api_token)
            watchers.append(asyncio.get_running_loop().create_task(watch(url)))

    result = await run_scenario(settings_of(scenario), tmp_path / "run", on_event=on_event)
    going, end, spread, errors = await watchers[0]
    assert not going["ended"], "the page showed it all only after the run's end"
    assert {"reserved-0", "transient-0", "transient-1", "transient-2"} <= set(
        going["nodes"]
    )  # + replacements
    assert going["jobs"]["j000"] == "succeeded" and going["jobs"]["j001"] == "running"
    assert going["nodes"][going["evictions"][0]] == "evicted"
    assert spread > 10
    assert end["ended"] and end["jobs"] == {"j000": "succeeded", "j001": "succeeded"}
    assert errors == []
    assert result.ok, result.summary
    assert_clean(tmp_path / "run")
