"""Attach mode (compose, Swarm): nodes the master did not launch join the run when they announce
themselves, and get the same place in the cluster as the nodes it launches itself."""

from __future__ import annotations

from pathlib import Path

from master.master import Master
from testbed.protocol import Codec, NodeState, Topics
from tests.conftest import make_scenario, offline_master

# Container hostnames, as compose and Swarm agents take them for node ids.
RESERVED_IDS = ("a1b2c3d4e5f6", "0f1e2d3c4b5a", "99aa88bb77cc", "123456abcdef")
TRANSIENT_ID = "fedcba654321"


def attached_master(tmp_path: Path, policy: dict) -> Master:
    scenario = make_scenario(cluster={"reserved": 4, "transient": 1}, policy=policy)
    return offline_master(scenario, tmp_path, attach=True)


def announce(master: Master, node_id: str, node_class: str) -> None:
    state = NodeState(
        node_id=node_id, node_class=node_class, state="up", incarnation=f"i-{node_id}", session=1, port=7070
    )
    master._on_message(Topics("attach").state(node_id), Codec.encode(state))


def test_adopted_nodes_get_eagles_partitions_like_launched_ones(tmp_path: Path) -> None:
    policy = {"scheduler": "eagle", "strategy": "spark", "options": {"eagle": {"short_fraction": 0.5}}}
    master = attached_master(tmp_path, policy)
    for node_id in RESERVED_IDS:
        announce(master, node_id, "reserved")
    announce(master, TRANSIENT_ID, "transient")
    partitions = {node_id: node.partition for node_id, node in master.nodes.items()}
    # as launched: reserved-0 and reserved-1 general, reserved-2 and reserved-3 short-only
    assert partitions == {
        **dict(zip(RESERVED_IDS, ["general"] * 2 + ["short"] * 2, strict=True)),
        TRANSIENT_ID: "short",
    }
    assert all(node.status == "up" for node in master.nodes.values())


def test_without_eagle_every_adopted_reserved_node_is_general(tmp_path: Path) -> None:
    master = attached_master(tmp_path, {"scheduler": "fifo", "strategy": "spark"})
    for node_id in RESERVED_IDS:
        announce(master, node_id, "reserved")
    assert {node.partition for node in master.nodes.values()} == {"general"}
