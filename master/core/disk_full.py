"""Full disks on the nodes: a bounded retry, then a clear failure (the core's part).

A task that hits ``ENOSPC`` on a node fails as ``enospc``; its worker deletes
what that attempt wrote, and the core drains the node. The node is taken back
once it has nothing running (so its failed attempts' files are gone) and a
back-off has passed: 1 s after its first full disk, 2 s after its second. After
its third it stays drained for good. When every node alive is drained for good
that way, no task can run anywhere: the run's unfinished jobs fail at once with
that reason, instead of waiting for the scenario's timeout (issue 23, point 8).

``disk_full_verdict`` is the pure decision; ``DiskFullNodes`` applies it to the
core's nodes on every scheduling round. Full disks at the master itself (the output
sink, the journal) are the shell's: ``master.shell.disk_faults``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from master.core.nodes import NodeRecord
from master.core.ports import CorePort

MAX_DISK_FULL = 3
"""Full disks a node may have before it is drained for good."""
BACKOFF_S = 1.0
"""The wait before a node is taken back after its first full disk; doubled after each."""

Verdict = Literal["wait", "undrain", "retire"]


def disk_full_verdict(times_full: int, since_s: float, running: int) -> Verdict:
    """What to do with a node drained because its disk was full ``times_full`` times, the
    last ``since_s`` seconds ago, with ``running`` tasks still on it."""
    if times_full >= MAX_DISK_FULL:
        return "retire"
    if running or since_s < BACKOFF_S * 2 ** (times_full - 1):
        return "wait"
    return "undrain"


@dataclass
class FullDisk:
    times: int
    since: float
    retired: bool = False


class DiskFullNodes:
    def __init__(self, master: CorePort) -> None:
        self.master = master
        self.full: dict[str, FullDisk] = {}
        self.gave_up = False

    def node_full(self, node: NodeRecord) -> None:
        """A task hit ENOSPC on the node: drain it (again). Its other tasks that hit the same
        full disk before it was drained count once with it."""
        now = self.master.journal.now()
        state = self.full.get(node.node_id)
        if state is None:
            self.full[node.node_id] = FullDisk(1, now)
        elif not state.retired:
            state.times += node.status == "up"
            state.since = now
        self.master.drain(node, "disk_full")

    def step(self) -> None:
        """Take back the nodes whose back-off has passed; fail the run's unfinished jobs when
        no node alive can ever take a task again."""
        now = self.master.journal.now()
        for node_id, state in self.full.items():
            node = self.master.nodes.get(node_id)
            if node is None or node.status != "draining" or state.retired:
                continue
            verdict = disk_full_verdict(state.times, now - state.since, len(node.running))
            if verdict == "undrain":
                self.master.undrain(node, "disk_space_back")
            elif verdict == "retire":
                state.retired = True
                self.master.journal.event("node_disk_full", node=node_id, times=state.times)
        if not self.gave_up and self._every_node_retired():
            self.gave_up = True
            names = ", ".join(sorted(self.full))
            self.master.records.fail_unfinished(
                f"no node can run a task: the disk of every node is full ({names} hit ENOSPC "
                f"{MAX_DISK_FULL} times each); give the nodes more disk space"
            )

    def _every_node_retired(self) -> bool:
        if not any(state.retired for state in self.full.values()):
            return False  # the common case, in O(full disks) rather than O(nodes) every round
        alive = [n for n in self.master.nodes.values() if n.status in ("launching", "up", "draining")]
        return bool(alive) and all(n.node_id in self.full and self.full[n.node_id].retired for n in alive)
