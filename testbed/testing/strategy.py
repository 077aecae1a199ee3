"""A recovery strategy on the master's real core, with no agent, broker or clock: ``StrategyBench``.

A test starts and ends tasks and loses nodes by hand, asks the strategy's queries, and reads
the decisions its handlers returned (the core applied them as in a run)::

    bench = StrategyBench(MyStrategy(), {"cluster": {"reserved": 1, "transient": 2}, "jobs": [...]})
    launched = bench.round()                       # {task id: node id}, the scheduler's and the strategy's
    bench.lose("transient-0")                      # an eviction: the node's Will
    assert {r.classes for r in bench.plan()} == {frozenset({"reserved"})}
    bench.succeed("j000.s0.t1")
    assert bench.decisions[-1] == ...

Part of ``testbed.testing`` (allowed to import ``master``: it runs the core in-process).
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from master.core import commands as cmd
from master.core.events import Begin, EvictRequest, FromNode, OutputStaged, Round
from master.core.machine import MasterCore
from testbed.api.strategy import LiveJob, Ready, Strategy, StrategyDecision, StrategyView, TaskLaunch
from testbed.scenario.chaos import EvictSpec
from testbed.scenario.schema import load_scenario, parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host
from testbed.testing.recording import RecordingShell
from testbed.wire.protocol import NodeState, TaskSpec, TaskUpdate


class _Recording:
    """The strategy, its handlers' decisions kept in ``decisions`` (the core sees the strategy)."""

    def __init__(self, strategy: Strategy, decisions: list[StrategyDecision]) -> None:
        self._strategy, self._decisions = strategy, decisions

    def __getattr__(self, name: str) -> Any:
        member = getattr(self._strategy, name)
        if not name.startswith("on_"):
            return member

        def recorded(view: StrategyView, event: Any) -> list[StrategyDecision]:
            out = member(view, event)
            self._decisions.extend(out)
            return out

        return recorded


class StrategyBench(RecordingShell):
    """``strategy`` with the scenario's scheduler over its cluster (every node up at time 0)
    and its jobs (submitted at their times). ``scenario``: a file, or its fields as a dict
    (``name`` and ``cluster`` may be left out)."""

    def __init__(self, strategy: Strategy, scenario: str | Path | dict[str, Any]) -> None:
        if isinstance(scenario, dict):
            fields = {"name": "strategy-bench", "cluster": {"reserved": 1, "transient": 2}, **scenario}
            loaded = parse_scenario(fields)
        else:
            loaded = load_scenario(scenario)
        self.decisions: list[StrategyDecision] = []
        """Every decision the strategy's handlers returned, in order."""
        self._seen = 0
        recording = _Recording(strategy, self.decisions)
        settings = resolve(loaded, Host.this_machine())
        policies = replace(settings.policies, strategy=recording)
        super().__init__(MasterCore(replace(settings, policies=policies), "strategy-bench"))
        self.execute(self.core.start(0.0))
        for command in list(self.log):
            if isinstance(command, cmd.StartNode):
                self.handle(FromNode(command.node_id, self._state(command.node_id, command.node_class, "up")))
        self.handle(Begin(0.0))
        self.advance(0.0)  # the jobs due at time 0 are submitted

    # ------------------------------------------------------------------ the strategy's side

    @property
    def view(self) -> StrategyView:
        """The view the strategy gets."""
        return self.core.recovery.view

    def job(self, job_id: str = "j000") -> LiveJob:
        return self.view.jobs[job_id]

    def plan(self, job_id: str = "j000") -> list[Ready]:
        """The strategy's answer to ``plan`` for the job, now."""
        return list(self.core.recovery.plan(self.core.jobs[job_id]))

    def launch(self, task_id: str) -> TaskLaunch:
        """The strategy's answer to ``launch`` for the task, now: a ready one (the core asks
        only of a task it places, so a strategy may count on its inputs being there)."""
        job = self.core.jobs[task_id.partition(".")[0]]
        key = job.key_of(task_id)
        if key is None or key not in {r.key for r in self.core.recovery.plan(job)}:
            raise ValueError(f"{task_id} is not ready: the core asks launch() only of a task it places")
        return self.core.recovery.launch(job, key)

    # ------------------------------------------------------------------ driving the run

    def round(self) -> dict[str, str]:
        """A scheduling round: ``{task id: node id}`` of the tasks launched since the last call
        (as the shell does, the bench also runs a round after the timers that ``advance``
        and the start run: the jobs due at time 0 are placed already)."""
        self.handle(Round())
        new, self._seen = self.log[self._seen :], len(self.log)
        return {
            c.message.task.task_id: c.node_id
            for c in new
            if isinstance(c, cmd.Send) and c.message.kind == "launch"  # type: ignore[attr-defined]
        }

    def running(self) -> dict[str, str]:
        """``{task id: node id}`` of every task running now."""
        return {task_id: node.node_id for node in self.core.nodes.values() for task_id in node.running}

    def succeed(self, task_id: str) -> None:
        """The task's node reports its success (a final task's part file staged first)."""
        node_id, spec = self._spec(task_id)
        if spec.final:
            self.handle(OutputStaged(spec.job_id, spec.index, spec.attempt))
        partitions = () if spec.final else (100,) * spec.partitions
        self._report(node_id, spec, state="succeeded", partition_bytes=partitions)

    def fail(self, task_id: str, failure: str = "error", error: str = "failed on the bench") -> None:
        """The task's node reports its failure (``failure``: ``error``, ``oom``, ``data``, ...)."""
        node_id, spec = self._spec(task_id)
        self._report(node_id, spec, state="failed", failure=failure, error=error)

    def lose(self, node_id: str) -> None:
        """An eviction of the node: the master kills it and its Will says it is gone."""
        self.handle(EvictRequest(EvictSpec(count=1), (node_id,)))
        self.handle(FromNode(node_id, self._state(node_id, self.core.nodes[node_id].node_class, "lost")))

    def events(self, kind: str) -> list[dict[str, Any]]:
        """The journal's events of one kind so far."""
        return [c.fields for c in self.log if isinstance(c, cmd.Journal) and c.kind == kind]

    # ------------------------------------------------------------------ plumbing

    def _spec(self, task_id: str) -> tuple[str, TaskSpec]:
        for node in self.core.nodes.values():
            if task_id in node.running:
                return node.node_id, node.launches[task_id].task
        raise KeyError(f"{task_id} is not running")

    def _report(self, node_id: str, spec: TaskSpec, **fields: Any) -> None:
        update = TaskUpdate(node_id=node_id, task_id=spec.task_id, attempt=spec.attempt, **fields)
        self.handle(FromNode(node_id, update))

    def _state(self, node_id: str, node_class: str, state: str) -> NodeState:
        spec = self.core.settings.cluster[node_class]
        return NodeState(
            node_id=node_id,
            node_class=node_class,  # type: ignore[arg-type]
            state=state,  # type: ignore[arg-type]
            incarnation=f"bench-{node_id}",
            session=1,
            host="127.0.0.1",
            port=20000 + zlib.crc32(node_id.encode()) % 40000,  # a URL of its own
            slots=spec.slots,
            memory_mb=spec.memory_mb,
        )
