"""``testbed.testing.StrategyBench``: a strategy on the real core, driven by hand, with no agent."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from testbed.api import Note, Strategy
from testbed.testing import StrategyBench
from tests.support.plugins import write_doc_files

JOB = {"workload": "wordcount", "size_mb": 1, "maps": 4, "reduces": 2}


class Journaling(Strategy):
    def on_task_succeeded(self, view, event):  # type: ignore[no-untyped-def]
        job = view.jobs[event.job_id]
        return [Note("push_failed", {"job": job.job_id, "task": job.task_id(event.key), "error": "bench"})]


def test_the_docs_strategy_pins_what_a_lost_node_set_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_doc_files(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    strategy = importlib.import_module("evicted_to_reserved").EvictedToReserved()
    bench = StrategyBench(strategy, {"jobs": [JOB]})
    launched = bench.round()
    assert len(launched) == 4 and {r.classes for r in bench.plan()} <= {frozenset({"reserved", "transient"})}
    on_transient = sorted(t for t, n in launched.items() if n.startswith("transient"))
    victim = launched[on_transient[0]]
    for task_id, node_id in launched.items():
        if node_id != victim:
            bench.succeed(task_id)
    bench.lose(victim)
    set_back = sorted(t for t, n in launched.items() if n == victim)
    ready = {bench.job().task_id(r.key): r.classes for r in bench.plan()}
    assert ready == {t: frozenset({"reserved"}) for t in set_back}
    relaunched = bench.round()
    assert set(relaunched) <= set(set_back) and all(n.startswith("reserved") for n in relaunched.values())
    assert [e["status"] for e in bench.events("task_finished") if e["task"] in set_back] == ["lost"] * len(
        set_back
    )


def test_the_decisions_of_its_handlers_are_kept_and_applied() -> None:
    bench = StrategyBench(Journaling(), {"jobs": [JOB]})
    task_id = next(iter(bench.round()))
    bench.succeed(task_id)
    assert bench.decisions == [Note("push_failed", {"job": "j000", "task": task_id, "error": "bench"})]
    assert bench.events("push_failed") == [{"job": "j000", "task": task_id, "error": "bench"}]
    assert bench.job().tasks[bench.job().key_of(task_id)].status == "done"  # type: ignore[index]
    with pytest.raises(ValueError, match="not ready"):
        bench.launch("j000.s1.t0")  # its maps are not all done
    for other in bench.running():
        bench.succeed(other)
    (blocks,) = bench.launch("j000.s1.t0").inputs  # one shuffle dependency: every map's block
    assert sorted(b.block for b in blocks) == [f"j000.s0.t{i}.a0" for i in range(4)]
