"""The shell side of liveness: heartbeats, probes of silent nodes, Wills and ``gone`` reports.

The verdicts are the pure functions of ``master.liveness`` (which nodes are
silent, what a probe's answer means, which launches a heartbeat no longer
accounts for); this shell feeds them the node records and the clock, asks the
agents directly over HTTP, and reaches the master only through
``master.ports.LivenessPort`` (a node is lost, an attempt is failed).
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp

from master.liveness import (
    MAX_VANISH_RESENDS,
    Launched,
    ProbeOutcome,
    after_probe,
    everyone_quiet,
    patience_s,
    reconcile,
    silent_unasked,
)
from master.nodes import NodeRecord
from master.ports import LivenessPort
from testbed.protocol import CancelTask, Heartbeat

log = logging.getLogger("master")


class LivenessShell:
    def __init__(self, master: LivenessPort) -> None:
        self.master = master
        self.probes: dict[str, asyncio.Task[None]] = {}
        """Silent nodes being asked directly whether they live (see ``check_heartbeats``)."""
        self.answered: dict[str, float] = {}
        """When each silent node last answered a probe (a fresh timeout from then)."""
        self.starting_up = True
        """Until time 0: silent nodes that do not answer are waited for, the machine is busy."""

    async def watch(self) -> None:
        interval = self.master.scenario.heartbeat_interval_s
        while True:
            await asyncio.sleep(interval)
            if self.master.link.connected.is_set():  # our own outage says nothing about the nodes
                self.check_heartbeats()

    async def stop(self) -> None:
        probes = list(self.probes.values())
        for probe in probes:
            probe.cancel()
        await asyncio.gather(*probes, return_exceptions=True)

    # ------------------------------------------------------------------ silent nodes

    def check_heartbeats(self) -> None:
        """Every node silent for ``heartbeat_timeout`` is asked directly before anything else
        (``_probe_silent``); ``master.liveness.after_probe`` decides from the answer."""
        now = self.master.journal.now()
        live = {n.node_id: n for n in self.master.nodes.values() if n.status in ("up", "draining")}
        heard = {node_id: n.last_seen for node_id, n in live.items()}
        timeout = self.master.scenario.heartbeat_timeout_s
        silent = silent_unasked(heard, self.answered, self.probes, now, timeout)
        unasked = [live[node_id] for node_id in silent]
        if unasked and self._everyone_quiet(now):
            self.master.journal.event("cluster_silent", nodes=[n.node_id for n in unasked])
        for node in unasked:
            self.probes[node.node_id] = asyncio.get_running_loop().create_task(self._probe_silent(node))

    def _everyone_quiet(self, now: float) -> bool:
        live = [n.last_seen for n in self.master.nodes.values() if n.status in ("up", "draining")]
        return everyone_quiet(live, now, self.master.scenario.heartbeat_interval_s)

    async def _probe_silent(self, node: NodeRecord) -> None:
        try:
            outcome = await self._probe(node)
        finally:
            del self.probes[node.node_id]
        if node.status not in ("up", "draining"):
            return
        now = self.master.journal.now()
        patience = patience_s(self.master.scenario.heartbeat_timeout_s)
        lenient = self.starting_up or self._everyone_quiet(now)
        verdict = after_probe(outcome, now - node.last_seen, lenient, patience)
        if verdict == "alive":
            self.answered[node.node_id] = now
        elif verdict == "lost":
            self._lost_by_silence(node)

    def _lost_by_silence(self, node: NodeRecord) -> None:
        silent_s = self.master.journal.now() - node.last_seen
        log.warning("node %s missed heartbeats for %.1fs", node.node_id, silent_s)
        self.master.node_lost(node, "heartbeat_timeout")
        provider = self.master.provider
        if provider.owns(node.node_id):  # a silent node may be frozen, not dead
            asyncio.get_running_loop().create_task(provider.evict(node.node_id))

    async def _probe(self, node: NodeRecord) -> ProbeOutcome:
        """Whether this very agent process (same incarnation) answers on its HTTP port in time."""
        timeout = aiohttp.ClientTimeout(total=self.master.scenario.heartbeat_timeout_s)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as http,
                http.get(f"{node.url}/health") as response,
            ):
                body = await response.json()
        except TimeoutError:
            return "silent"
        except (aiohttp.ClientError, ValueError):
            return "refused"
        same = response.status == 200 and body.get("incarnation") == node.incarnation
        return "answered" if same else "refused"

    # ------------------------------------------------------------------ heartbeats

    def heartbeat(self, node: NodeRecord, beat: Heartbeat) -> None:
        """A heartbeat of the node's current incarnation: it is heard, and what it runs checked."""
        node.last_seen = self.master.journal.now()
        if node.status in ("up", "draining"):
            self._reconcile(node, beat)

    def _reconcile(self, node: NodeRecord, beat: Heartbeat) -> None:
        """What the node says it runs against what we think it runs (``master.liveness.reconcile``):
        a task it does not run is failed and relaunched, an attempt we do not expect is cancelled."""
        now = self.master.journal.now()
        expected = {
            task_id: Launched(job.tasks[key].attempt, node.sent_at.get(task_id, now), task_id in node.acked)
            for task_id, (job, key) in node.running.items()
        }
        timeout = self.master.scenario.heartbeat_timeout_s
        verdict = reconcile(expected, beat.attempts, node.strikes, now, timeout)
        node.strikes = verdict.strikes
        for task_id, attempt in verdict.stray:
            self.master.send(node.node_id, CancelTask(task_id=task_id, attempt=attempt))
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
        attempt = job.tasks[key].attempt
        resends = node.vanish_resends.get(task_id, 0)
        action = "resent" if resends < MAX_VANISH_RESENDS else "failed"
        self.master.journal.event(why, task=task_id, node=node.node_id, attempt=attempt, action=action)
        if action == "resent":
            node.vanish_resends[task_id] = resends + 1
            node.acked.discard(task_id)
            node.sent_at[task_id] = now
            self.master.send(node.node_id, node.launches[task_id])
            return
        log.warning("%s attempt %d is not running on %s: relaunching it", task_id, attempt, node.node_id)
        self.master.fail_unaccounted(node, task_id, now, why)

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
            self.master.node_lost(node, "evicted")
            return
        asyncio.get_running_loop().create_task(self._confirm_lost(node, session))

    def gone(self, node: NodeRecord) -> None:
        """The agent says it stopped: checked by ``_confirm_gone``."""
        asyncio.get_running_loop().create_task(self._confirm_gone(node))

    async def _confirm_gone(self, node: NodeRecord) -> None:
        """An agent says it stopped (it closes its HTTP server first): believed once it no
        longer answers; one that still answers is kept (heartbeats watch it as before)."""
        if await self._probe(node) == "answered":
            self.master.journal.event("gone_ignored", node=node.node_id)
            return
        self.master.node_lost(node, "released")

    async def _confirm_lost(self, node: NodeRecord, session: int) -> None:
        if await self._probe(node) == "answered":
            self.master.journal.event("will_ignored", node=node.node_id, session=session)
            return
        if node.alive and session >= node.session:
            self.master.node_lost(node, "evicted" if node.evicted_at is not None else "crashed")
