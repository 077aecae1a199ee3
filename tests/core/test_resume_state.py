"""What a resumed run rebuilds from the journal besides its jobs (issue #43's leftovers): the
observed stage means, where input replicas are, and the run's totals.

The master runs in a ``Driver`` (no process); its journal is written by the real ``Journal``
(its rounding of ``t`` included) and read back by ``recover``, as ``testbed run --resume`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from master.core import commands as cmd
from master.core.events import Round
from master.core.exposure import exposure
from master.shell.journal_file import Journal
from master.shell.resume_run import recover
from tests.support.driver import Driver
from tests.support.scenarios import make_scenario


def crash(driver: Driver, run_dir: Path) -> None:
    """The master dies now: its journal so far, as its shell wrote it (events.jsonl, tables)."""
    journal = Journal(run_dir, clock=lambda: 0.0)
    for command in driver.log:
        if isinstance(command, cmd.Journal):
            journal.write_event(command.t, command.kind, command.fields)
    journal.close()


def resumed(scenario, run_dir: Path) -> Driver:  # type: ignore[no-untyped-def]
    found = recover(run_dir)
    driver = Driver(scenario, resume=found)
    driver.now = found.crashed_at
    driver.boot()
    return driver


def test_a_resumed_core_prices_a_pending_task_on_the_means_observed_before_the_crash(tmp_path: Path) -> None:
    """The maps of j000 finish at different times; the master dies while j001's maps are
    pending. The resumed core has the same stage means as the live one, so a pending map of
    j001 gets the same ``expected_run_s`` (not the prior's)."""
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2, "repeat": 2, "every": 30}]
    scenario = make_scenario(jobs=jobs)
    first = Driver(scenario)
    first.boot()
    first.do(Round(), at=1.0)
    for seconds, (node_id, spec) in zip(
        (2.0, 3.5, 7.25, 11.0), sorted(first.running().values(), key=str), strict=True
    ):
        first.advance(1.0 + seconds)
        first.finish(node_id, spec)
    first.advance(31.0)  # j001 arrives; its maps not launched yet
    live = first.core.durations
    assert live.totals[("wordcount", 0)][1] == 4
    crash(first, tmp_path)

    second = resumed(scenario, tmp_path)
    assert second.core.durations.totals.keys() == live.totals.keys()
    for key, (total, count) in live.totals.items():
        assert second.core.durations.totals[key] == (pytest.approx(total, abs=1e-3), count)
    pending = second.core.jobs["j001"]
    assert pending.tasks[(0, 0)].status == "pending"
    now = second.now
    expected = exposure(first.core.jobs["j001"], 0, live, now).run_s
    assert exposure(pending, 0, second.core.durations, now).run_s == expected
    assert expected != exposure(pending, 0, type(live)(), now).run_s, "the prior would price it the same"
