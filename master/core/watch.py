"""The core's watch over its nodes: heartbeats, silent nodes, Wills and goodbyes.

The verdicts are the pure functions of ``master.core.liveness`` (which nodes are
silent, what a probe's answer means, which launches a heartbeat no longer
accounts for). Asking an agent directly is a ``Probe`` command; its answer comes
back as a ``ProbeAnswered`` event. The core checks for silent nodes every
heartbeat interval while its own broker link is up (our own outage says nothing
about the nodes).
"""

from __future__ import annotations

from master.core.events import ProbeAnswered
from master.core.jobs import JobRuntime, TaskKey
from master.core.liveness import (
    MAX_VANISH_RESENDS,
    Launched,
    after_probe,
    everyone_quiet,
    patience_s,
    reconcile,
    silent_unasked,
)
from master.core.nodes import NodeRecord
from master.core.ports import CorePort
from testbed.wire.protocol import CancelTask, Heartbeat


class NodeWatch:
    def __init__(self, core: CorePort) -> None:
        self.core = core
        self.probing: set[str] = set()
        """Silent nodes being asked directly whether they live (see ``check_heartbeats``)."""
        self.answered: dict[str, float] = {}
        """When each silent node last answered a probe (a fresh timeout from then)."""
        self.starting_up = True
        """Until time 0: silent nodes that do not answer are waited for, the machine is busy."""
        self.asked_in_quiet: set[tuple[str, str]] = set()
        """(node, purpose) of the probes sent while the whole cluster was quiet: one of them
        that times out says nothing about its node alone, even if the others are heard by then
        (a probe sent into a freeze of every agent can time out just after they thaw, before
        its own node's first heartbeat)."""

    # ------------------------------------------------------------------ silent nodes

    def check_heartbeats(self) -> None:
        """Every node silent for ``heartbeat_timeout`` is asked directly before anything else;
        ``master.core.liveness.after_probe`` decides from the answer."""
        now = self.core.journal.now()
        live = {n.node_id: n for n in self.core.nodes.values() if n.status in ("up", "draining")}
        heard = {node_id: n.last_seen for node_id, n in live.items()}
        timeout = self.core.time.heartbeat_timeout_s
        silent = silent_unasked(heard, self.answered, self.probing, now, timeout)
        unasked = [live[node_id] for node_id in silent]
        if unasked and self._everyone_quiet(now):
            self.core.journal.event("cluster_silent", nodes=[n.node_id for n in unasked])
        for node in unasked:
            self.probing.add(node.node_id)
            self._ask(node, "silent", now)

    def _everyone_quiet(self, now: float) -> bool:
        live = [n.last_seen for n in self.core.nodes.values() if n.status in ("up", "draining")]
        return everyone_quiet(live, now, self.core.time.heartbeat_interval_s)

    def _ask(self, node: NodeRecord, purpose: str, now: float, session: int = 0) -> None:
        """Probe the node, remembering whether the whole cluster was quiet as it was asked."""
        if self._everyone_quiet(now):
            self.asked_in_quiet.add((node.node_id, purpose))
        self.core.probe(node, purpose, session)

    def _lenient(self, asked_in_quiet: bool, now: float) -> bool:
        """Whether a probe's silence is forgiven (``master.core.liveness.after_probe``): while the
        cluster starts, or when the whole cluster is quiet now or was when the probe was sent."""
        return self.starting_up or asked_in_quiet or self._everyone_quiet(now)

    def probe_answered(self, answer: ProbeAnswered) -> None:
        node = self.core.nodes.get(answer.node_id)
        if answer.purpose == "silent":
            self.probing.discard(answer.node_id)
        asked_in_quiet = (answer.node_id, answer.purpose) in self.asked_in_quiet
        self.asked_in_quiet.discard((answer.node_id, answer.purpose))
        if node is None:
            return
        if answer.purpose == "silent":
            self._silent_answered(node, answer, asked_in_quiet)
        elif answer.purpose == "will":
            self._will_answered(node, answer, asked_in_quiet)
        else:
            self._gone_answered(node, answer)

    def _silent_answered(self, node: NodeRecord, answer: ProbeAnswered, asked_in_quiet: bool) -> None:
        if node.status not in ("up", "draining"):
            return
        now = self.core.journal.now()
        patience = patience_s(self.core.time.heartbeat_timeout_s)
        lenient = self._lenient(asked_in_quiet, now)
        timeout = self.core.time.heartbeat_timeout_s
        verdict = after_probe(answer.outcome, now - node.last_seen, lenient, patience, timeout)
        if verdict == "alive":
            self.answered[node.node_id] = now
        elif verdict == "lost":
            self._lost_by_silence(node)

    def _lost_by_silence(self, node: NodeRecord) -> None:
        silent_s = self.core.journal.now() - node.last_seen
        self.core.journal.say("warning", f"node {node.node_id} missed heartbeats for {silent_s:.1f}s")
        self.core.node_lost(node, "heartbeat_timeout")
        self.core.kill(node.node_id)  # a silent node may be frozen, not dead

    # ------------------------------------------------------------------ heartbeats

    def heartbeat(self, node: NodeRecord, beat: Heartbeat) -> None:
        """A heartbeat of the node's current incarnation: it is heard, and what it runs checked."""
        node.last_seen = self.core.journal.now()
        if node.status in ("up", "draining"):
            self._reconcile(node, beat)

    def _reconcile(self, node: NodeRecord, beat: Heartbeat) -> None:
        """What the node says it runs against what we think it runs (``master.core.liveness.reconcile``):
        a task it does not run is failed and relaunched, an attempt we do not expect is cancelled."""
        now, acked = self.core.journal.now(), node.acked
        expected = {
            task_id: Launched(attempt_on(job, key, node), node.sent_at.get(task_id, now), task_id in acked)
            for task_id, (job, key) in node.running.items()
        }
        timeout = self.core.time.heartbeat_timeout_s
        verdict = reconcile(expected, beat.attempts, node.strikes, now, timeout)
        node.strikes = verdict.strikes
        for task_id, attempt in verdict.stray:
            self.core.send(node.node_id, CancelTask(task_id=task_id, attempt=attempt))
        for task_id in verdict.resend:
            self._task_unaccounted(node, task_id, now, "launch_unacknowledged")
        for task_id in verdict.vanished:
            self._task_unaccounted(node, task_id, now, "task_vanished")

    def _task_unaccounted(self, node: NodeRecord, task_id: str, now: float, why: str) -> None:
        """A launch never acknowledged, or an acknowledged task its node no longer lists: send
        the launch again first (it is idempotent: an agent that finished the attempt, its
        result still queued behind its heartbeats, repeats the outcome; one that never got or
        forgot it runs it). Only an attempt that stays unaccounted for is failed and relaunched."""
        job, key = node.running[task_id]
        attempt = attempt_on(job, key, node)
        resends = node.vanish_resends.get(task_id, 0)
        action = "resent" if resends < MAX_VANISH_RESENDS else "failed"
        self.core.journal.event(why, task=task_id, node=node.node_id, attempt=attempt, action=action)
        if action == "resent":
            node.vanish_resends[task_id] = resends + 1
            node.acked.discard(task_id)
            node.sent_at[task_id] = now
            self.core.send(node.node_id, node.launches[task_id])
            return
        self.core.journal.say(
            "warning", f"{task_id} attempt {attempt} is not running on {node.node_id}: relaunching it"
        )
        self.fail_unaccounted(node, task_id, now, why)

    def fail_unaccounted(self, node: NodeRecord, task_id: str, now: float, why: str) -> None:
        """Fail and relaunch an attempt its node no longer accounts for."""
        job, key = node.running[task_id]
        cause = f"{node.node_id} does not run it ({why})"
        if self.core.copies.vanished(node, task_id, job, key, cause):
            return
        attempt = job.tasks[key].attempt
        node.forget_launch(task_id)
        job.failed(key, attempt, counts_as_failure=True, error=cause)
        self.core.records.task_finished(job, key, node, "failed", "vanished", cause=cause)
        if job.status == "failed":
            self.core.records.finish_job(job)
        self.core.kick()

    # ------------------------------------------------------------------ Wills and goodbyes

    def will(self, node: NodeRecord, session: int) -> None:
        """The broker says the agent's connection died: trust it only if the agent is gone too.

        A Will of an older session is stale (the agent has reconnected since).
        A broker shutting down may publish the Wills of every connection it
        drops, so unless we evicted the node ourselves we ask the agent
        directly before declaring it lost.
        """
        if session < node.session:
            return
        if node.evicted_at is not None:
            self.core.node_lost(node, "evicted")
            return
        self._ask(node, "will", self.core.journal.now(), session)

    def gone(self, node: NodeRecord) -> None:
        """The agent says it stopped (it closes its HTTP server first): believed once it no
        longer answers; one that still answers is kept (heartbeats watch it as before)."""
        self.core.probe(node, "gone")

    def _gone_answered(self, node: NodeRecord, answer: ProbeAnswered) -> None:
        if answer.outcome == "answered":
            self.core.journal.event("gone_ignored", node=node.node_id)
            return
        self.core.node_lost(node, "released")

    def _will_answered(self, node: NodeRecord, answer: ProbeAnswered, asked_in_quiet: bool) -> None:
        """A refusal (nothing listens) is a crash; an answer, a Will to ignore. No answer in time
        while the whole cluster is quiet is a pause (a frozen host, a stalled broker: every
        agent's keepalive ran out at once): asked again, as a silent node is, within the
        patience; a node silent alone that does not answer is lost."""
        if answer.outcome == "answered":
            self.core.journal.event("will_ignored", node=node.node_id, session=answer.session)
            return
        if not node.alive or answer.session < node.session:
            return
        now = self.core.journal.now()
        timeout = self.core.time.heartbeat_timeout_s
        lenient = self._lenient(asked_in_quiet, now)
        verdict = after_probe(answer.outcome, now - node.last_seen, lenient, patience_s(timeout), timeout)
        if verdict == "alive":  # heard again since its Will: the keepalive ran out in a pause
            self.core.journal.event("will_ignored", node=node.node_id, session=answer.session)
        elif verdict == "wait":
            self._ask(node, "will", now, answer.session)
        else:
            self.core.node_lost(node, "evicted" if node.evicted_at is not None else "crashed")


def attempt_on(job: JobRuntime, key: TaskKey, node: NodeRecord) -> int:
    """The task's attempt on the node (its copy's there, under speculation)."""
    return job.attempt_on(key, node.node_id)[0]
