"""Under Pado the snapshot is a pure query: receivers get their reserved node in the strategy's
``on_tick`` before the round, never while a snapshot is being built."""

from __future__ import annotations

from pathlib import Path

from testbed.api import Tick
from tests.support.agents_stand_in import StandInAgents
from tests.support.masters import offline_master, shell_act
from tests.support.scenarios import make_scenario


def journaled(run_dir: Path, name: str) -> int:
    return (run_dir / "events.jsonl").read_text().count(f'"event":"{name}"')


def test_a_snapshot_sets_up_no_receiver_and_the_tick_does(tmp_path: Path) -> None:
    scenario = make_scenario(
        policy={"strategy": "pado"}, jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 2}]
    )
    master = offline_master(scenario, tmp_path, attach=True)
    try:
        agents = StandInAgents(master)
        agents.announce("reserved-0", "reserved", 2, 1024)
        for ordinal in range(3):
            agents.announce(f"transient-{ordinal}", "transient", 2, 1024)
        shell_act(master, master.core.submit_job, scenario.jobs[0], 0)
        state = master.core.strategy.jobs["j000"]  # type: ignore[attr-defined]
        first, _ = shell_act(master, master.core.snapshot)
        again, _ = shell_act(master, master.core.snapshot)
        assert not state.receivers and journaled(tmp_path, "receiver_set_up") == 0
        assert first.jobs == again.jobs and not first.jobs[0].pending  # the maps wait for receivers
        shell_act(master, master.core.recovery.react, Tick())  # the strategy's decisions, applied by the core
        assert state.receivers == {(1, 0): "reserved-0", (1, 1): "reserved-0"}
        assert journaled(tmp_path, "receiver_set_up") == 2
        snapshot, _ = shell_act(master, master.core.snapshot)
        assert {t.stage for t in snapshot.jobs[0].pending} == {0, 1}  # receivers (incremental) and maps
    finally:
        master.journal.close()
