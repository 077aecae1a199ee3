"""The core's side of the recovery strategy: it asks the strategy's queries, hands it events,
and applies the decisions it returns (``testbed.api``'s strategy interface), in order.

Applying a decision is the one place where a strategy's will changes the core's state:
a task committed or run again, a replica added, an event journaled, a message sent. A
decision that no longer holds (a task that moved on meanwhile) changes nothing, as a
stale scheduler decision does in ``master.core.rounds``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from master.core.jobs import JobRuntime, TaskKey
from master.core.nodes import NodeRecord
from master.core.ports import StrategyPort
from testbed.api.strategy import (
    AbandonPush,
    AddReplica,
    BlockReported,
    CommitPush,
    CountPushed,
    FeedReceiver,
    Flush,
    JobSubmitted,
    LiveJob,
    LiveNode,
    NodeLost,
    Note,
    PushReported,
    Ready,
    Reconnected,
    Recover,
    Reopen,
    Reschedule,
    SetUpReceiver,
    Strategy,
    StrategyDecision,
    StrategyEvent,
    TaskLaunch,
    TaskStarted,
    TaskSucceeded,
    Tick,
    WriteFile,
)
from testbed.wire.protocol import TaskUpdate


class CoreView:
    """``testbed.api.StrategyView`` over the core: its own node and job records behind
    read-only mappings, typed as the API's ``LiveNode`` and ``LiveJob`` (nothing copied)."""

    def __init__(self, core: StrategyPort) -> None:
        self._core = core
        self._nodes: Mapping[str, LiveNode] = MappingProxyType(core.nodes)
        self._jobs: Mapping[str, LiveJob] = MappingProxyType(core.jobs)

    @property
    def nodes(self) -> Mapping[str, LiveNode]:
        return self._nodes

    @property
    def jobs(self) -> Mapping[str, LiveJob]:
        return self._jobs

    def now(self) -> float:
        return self._core.journal.now()


HANDLERS: dict[type, str] = {
    JobSubmitted: "on_job_submitted",
    TaskStarted: "on_task_started",
    TaskSucceeded: "on_task_succeeded",
    BlockReported: "on_block_reported",
    PushReported: "on_push_reported",
    Tick: "on_tick",
    Reconnected: "on_reconnected",
    NodeLost: "on_node_lost",
}
"""Each event's handler on ``testbed.api.Strategy``."""


class Recovery:
    def __init__(self, core: StrategyPort, strategy: Strategy) -> None:
        self.core = core
        self.strategy = strategy
        self.view = CoreView(core)

    # ------------------------------------------------------------------ queries

    def plan(self, job: JobRuntime) -> Iterable[Ready]:
        return self.strategy.plan(self.view, job)

    def launch(self, job: JobRuntime, key: TaskKey) -> TaskLaunch:
        return self.strategy.launch(self.view, job, key)

    # ------------------------------------------------------------------ events

    def react(self, event: StrategyEvent) -> None:
        """Hand the strategy one event (``on_<event>``) and apply what it decides, in order."""
        handler = getattr(self.strategy, HANDLERS[type(event)])
        for decision in handler(self.view, event):
            self.apply(decision)

    def succeeded(
        self, job: JobRuntime, key: TaskKey, node: NodeRecord, update: TaskUpdate, now: float
    ) -> None:
        """Record a task's success (a pushed output waits for its commit), then tell the strategy."""
        pushing = job.tasks[key].pushes
        block = f"{job.task_id(key)}.a{update.attempt}"
        if job.succeeded(
            key, update.attempt, node.url, block, update.partition_bytes, now=now, pushing=pushing
        ):
            self.react(TaskSucceeded(job.job_id, key, update.attempt, node.node_id, pushing))

    # ------------------------------------------------------------------ decisions

    def apply(self, decision: StrategyDecision) -> None:
        core = self.core
        if isinstance(decision, Note):
            core.journal.event(decision.kind, **decision.fields)
        elif isinstance(decision, FeedReceiver):
            core.send(decision.node_id, decision.inputs)
        elif isinstance(decision, Flush):
            core.send(decision.node_id, decision.command)
        elif isinstance(decision, CommitPush):
            core.jobs[decision.job_id].committed(decision.key, decision.attempt, decision.holders)
        elif isinstance(decision, AbandonPush):
            self._abandon(decision)
        elif isinstance(decision, CountPushed):
            core.jobs[decision.job_id].bytes_pushed += decision.nbytes
        elif isinstance(decision, SetUpReceiver):
            job = core.jobs[decision.job_id]
            core.journal.event(
                "receiver_set_up", job=job.job_id, task=job.task_id(decision.key), node=decision.node_id
            )
        elif isinstance(decision, Reschedule):
            core.kick()
        elif isinstance(decision, Reopen):
            core.jobs[decision.job_id].reopen(decision.key)
        elif isinstance(decision, Recover):
            core.jobs[decision.job_id].recover()
        elif isinstance(decision, AddReplica):
            self._replica(decision)
        elif isinstance(decision, WriteFile):
            core.run_file(decision.name, decision.text)
        else:
            raise TypeError(f"not a strategy decision: {decision!r}")

    def _abandon(self, decision: AbandonPush) -> None:
        job = self.core.jobs[decision.job_id]
        if job.abandon_push(decision.key, decision.attempt) and decision.failed:
            self.core.journal.event(
                "push_failed", job=job.job_id, task=job.task_id(decision.key), error=decision.error
            )

    def _replica(self, decision: AddReplica) -> None:
        job = self.core.jobs[decision.job_id]
        if job.add_replica(decision.key, decision.block, decision.url):
            job.bytes_checkpointed += decision.nbytes
            self.core.journal.event(
                "checkpointed",
                job=job.job_id,
                task=job.task_id(decision.key),
                node=decision.node_id,
                bytes=decision.nbytes,
            )
            self.core.kick()
