"""When the initial cluster is up: a pure verdict on the node registry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def cluster_up(nodes: Iterable[tuple[str, str]], attach: bool, wanted: Mapping[str, int]) -> bool:
    """Whether the run's initial cluster is up, given each node's (class, status).

    No node may still be launching. A master that launched its nodes itself
    (not ``attach``) waits for nothing more: a node that did not come up was
    given up on. One that attaches to nodes started by someone else waits until
    ``wanted`` (class -> count) of each class have come up."""
    nodes = list(nodes)
    if any(status == "launching" for _, status in nodes):
        return False
    up = [node_class for node_class, status in nodes if status == "up"]
    return not attach or all(up.count(node_class) >= count for node_class, count in wanted.items())
