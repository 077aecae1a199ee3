"""The core's node views checked against the reference snapshot after every change."""

from __future__ import annotations

from master.schedulers.window import PendingWindow
from tests.support.driver import Driver
from tests.support.policy_reference import snapshot_v1


def check_node_views(driver: Driver) -> None:
    """The round's nodes, kept up to date as they change, are what a full rebuild gives."""
    core = driver.core
    assert core.round.nodes.views() == snapshot_v1.node_views(core)
    free = {n.node_id: n for n in snapshot_v1.free_nodes(core) if n.free_slots > 0}
    assert {n.node_id: n for n in core.round.nodes.free_nodes()} == free
    by_slots: dict[tuple[str, int], list[str]] = {}
    for node in free.values():
        by_slots.setdefault((node.node_class, node.free_slots), []).append(node.node_id)
    index = core.round.nodes.free_index()
    assert (index.nodes, index.by_slots) == (free, {k: tuple(sorted(ids)) for k, ids in by_slots.items()})
    kept, rebuilt = core.round.nodes.window(), PendingWindow(free.values())
    assert (+kept.room, kept._most) == (+rebuilt.room, rebuilt._most)
    queueing = sorted(n.node_id for n in snapshot_v1.node_views(core) if n.queued)
    assert sorted(core.round.nodes.queueing()) == queueing
    if core.jobs:  # the pending tasks and jobs, reusing the last snapshot's views, as built afresh
        reused = core.snapshot()[0].jobs
        core.round._pending_views.clear()
        core.round._job_views.clear()
        core.round._shown_jobs.clear()
        assert core.snapshot()[0].jobs == reused
