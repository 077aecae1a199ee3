"""The initial cluster's verdict (master/core/startup.py) on hand-built registries."""

from __future__ import annotations

from master.core.startup import cluster_up

WANTED = {"reserved": 1, "transient": 2}


def test_a_launching_node_holds_the_cluster_back() -> None:
    nodes = [("reserved", "up"), ("transient", "up"), ("transient", "launching")]
    assert not cluster_up(nodes, attach=False, wanted=WANTED)
    assert not cluster_up(nodes, attach=True, wanted=WANTED)


def test_a_launching_master_does_not_wait_for_nodes_it_gave_up_on() -> None:
    nodes = [("reserved", "up"), ("transient", "lost")]
    assert cluster_up(nodes, attach=False, wanted=WANTED)


def test_an_attached_master_waits_for_the_counts_of_each_class() -> None:
    assert not cluster_up([("reserved", "up"), ("transient", "up")], attach=True, wanted=WANTED)
    assert not cluster_up(
        [("reserved", "lost"), ("transient", "up"), ("transient", "up")], attach=True, wanted=WANTED
    )
    assert not cluster_up([("transient", "up")] * 3, attach=True, wanted=WANTED)
    enough = [("reserved", "up"), ("transient", "up"), ("transient", "draining"), ("transient", "up")]
    assert cluster_up(enough, attach=True, wanted=WANTED)
    assert cluster_up([], attach=True, wanted={"reserved": 0, "transient": 0})


def test_an_attached_master_counts_the_agents_it_gave_up_on_but_not_those_lost_once_up() -> None:
    """An agent lost once up may come back under a new name (compose or Swarm restarts it);
    one the master gave up on was killed by it, and the run goes on without it."""
    given_up = [("reserved", "up"), ("transient", "up"), ("transient", "given up")]
    assert cluster_up(given_up, attach=True, wanted=WANTED)
    lost = [("reserved", "up"), ("transient", "up"), ("transient", "lost")]
    assert not cluster_up(lost, attach=True, wanted=WANTED)
    assert not cluster_up([("reserved", "given up"), ("transient", "given up")], attach=True, wanted=WANTED)
