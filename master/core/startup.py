"""When the initial cluster is up: a pure verdict on the node registry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def cluster_up(nodes: Iterable[tuple[str, str]], attach: bool, wanted: Mapping[str, int]) -> bool:
    """Whether the run's initial cluster is up, given each node's (class, status).

    No node may still be launching. A master that launched its nodes itself
    (not ``attach``) waits for nothing more: a node that did not come up was
    given up on (status ``given up``). One that attaches to nodes started by someone
    else waits until ``wanted`` (class -> count) of each class have come up or been
    given up on: an agent lost once up may come back (restarted by compose or Swarm,
    it asks for a new name), one given up on was killed by the master."""
    nodes = list(nodes)
    if any(status == "launching" for _, status in nodes):
        return False
    arrived = [node_class for node_class, status in nodes if status in ("up", "given up")]
    return not attach or all(arrived.count(node_class) >= count for node_class, count in wanted.items())
