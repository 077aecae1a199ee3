"""Attach mode (compose, Swarm): nodes the master did not launch ask for a name, get the
names and places in the cluster of the nodes it launches itself (``reserved-N``,
``transient-N``), and keep their container as an attribute."""

from __future__ import annotations

import json
from pathlib import Path

from master.shell.master import Master
from testbed.wire.capabilities import name_proof, unseal
from testbed.wire.protocol import Codec, Message, NameRequest, NodeNamed, NodeState, Topics
from tests.support.agents_stand_in import names_offline
from tests.support.masters import offline_master
from tests.support.scenarios import make_scenario

# Container hostnames (short ids): what compose and Swarm agents are before they are named.
RESERVED_HOSTS = ("a1b2c3d4e5f6", "0f1e2d3c4b5a", "99aa88bb77cc", "123456abcdef")
TRANSIENT_HOST = "fedcba654321"
TOPICS = Topics("offline")


def attached_master(tmp_path: Path, policy: dict) -> tuple[Master, list[tuple[str, Message]]]:
    scenario = make_scenario(cluster={"reserved": 4, "transient": 1}, policy=policy)
    master = offline_master(scenario, tmp_path, attach=True)
    sent: list[tuple[str, Message]] = []
    master._publish = lambda node_id, message: sent.append((node_id, message))  # type: ignore[method-assign]
    names_offline(master, lambda host, answer: sent.append((host, answer)))
    return master, sent


KEY = "an-agents-own-key"


def ask(
    master: Master, host: str, node_class: str, incarnation: str = "n1", topic_host: str = "", key: str = KEY
) -> None:
    request = NameRequest(
        host=host,
        node_class=node_class,  # type: ignore[arg-type]
        incarnation=incarnation,
        slots=2,
        memory_mb=512,
        key=key,
    )
    master._on_message(TOPICS.name_requests(topic_host or host), Codec.encode(request))


def names(sent: list[tuple[str, Message]]) -> dict[str, str]:
    """host -> node id, from the answers the master sent (each on the host's own topic)."""
    answers = [(to, m) for to, m in sent if isinstance(m, NodeNamed)]
    assert all(to == m.host for to, m in answers)
    return {m.host: m.node_id for _, m in answers}


def up(master: Master, node_id: str, node_class: str) -> None:
    state = NodeState(
        node_id=node_id, node_class=node_class, state="up", incarnation=f"i-{node_id}", session=1, port=7070
    )
    master._on_message(TOPICS.state(node_id), Codec.encode(state))


def test_adopted_nodes_are_named_and_placed_like_launched_ones(tmp_path: Path) -> None:
    policy = {"scheduler": "eagle", "strategy": "spark", "options": {"eagle": {"short_fraction": 0.5}}}
    master, sent = attached_master(tmp_path, policy)
    for host in RESERVED_HOSTS:
        ask(master, host, "reserved")
    ask(master, TRANSIENT_HOST, "transient")
    assert names(sent) == {
        **{host: f"reserved-{i}" for i, host in enumerate(RESERVED_HOSTS)},
        TRANSIENT_HOST: "transient-0",
    }
    for node_id, node in master.nodes.items():
        up(master, node_id, node.node_class)
    # as launched: reserved-0 and reserved-1 general, reserved-2 and reserved-3 short-only
    assert {n: (node.partition, node.container, node.status) for n, node in master.nodes.items()} == {
        "reserved-0": ("general", RESERVED_HOSTS[0], "up"),
        "reserved-1": ("general", RESERVED_HOSTS[1], "up"),
        "reserved-2": ("short", RESERVED_HOSTS[2], "up"),
        "reserved-3": ("short", RESERVED_HOSTS[3], "up"),
        "transient-0": ("short", TRANSIENT_HOST, "up"),
    }
    assert master.starts.cluster_up.is_set()
    master.journal.close()
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    launching = [e for e in events if e["event"] == "node_launching"]
    assert [(e["node"], e["container"]) for e in launching][-1] == ("transient-0", TRANSIENT_HOST)


def test_the_answer_carries_the_nodes_credentials_sealed_under_the_agents_key(tmp_path: Path) -> None:
    master, sent = attached_master(tmp_path, {"scheduler": "fifo", "strategy": "spark"})
    ask(master, TRANSIENT_HOST, "transient", incarnation="abc")
    ((_, answer),) = sent
    assert isinstance(answer, NodeNamed) and answer.incarnation == "abc"
    label = f"{TRANSIENT_HOST} abc transient-0"
    assert answer.proof == name_proof(KEY, TRANSIENT_HOST, "abc", "transient-0", answer.sealed)
    assert unseal(KEY, label, answer.sealed) == {"TESTBED_NODE_KEY": master.keys.node_key("transient-0")}
    assert master.keys.node_key("transient-0") not in answer.model_dump_json()


def test_a_request_with_another_key_is_another_agents(tmp_path: Path) -> None:
    """Its answer would be sealed under the key it names: it never gets an agent's name."""
    master, sent = attached_master(tmp_path, {"scheduler": "fifo", "strategy": "spark"})
    ask(master, TRANSIENT_HOST, "transient")
    ask(master, TRANSIENT_HOST, "transient", key="someone-elses-key")
    assert [m.node_id for _, m in sent] == ["transient-0", "transient-1"]


def test_a_repeated_request_gets_the_same_name_and_a_restarted_agent_a_new_one(tmp_path: Path) -> None:
    master, sent = attached_master(tmp_path, {"scheduler": "fifo", "strategy": "spark"})
    ask(master, TRANSIENT_HOST, "transient")
    ask(master, TRANSIENT_HOST, "transient")  # asked again before the answer arrived
    assert [m.node_id for _, m in sent] == ["transient-0", "transient-0"]
    ask(master, TRANSIENT_HOST, "transient", incarnation="n2")  # the agent process started again
    assert [m.node_id for _, m in sent][-1] == "transient-1"
    assert list(master.nodes) == ["transient-0", "transient-1"]
    assert master.core.launcher.ordinals["transient"] == 2  # a replacement launched now is transient-2


def test_unnamed_nodes_and_requests_on_another_hosts_topic_are_ignored(tmp_path: Path) -> None:
    master, sent = attached_master(tmp_path, {"scheduler": "fifo", "strategy": "spark"})
    up(master, TRANSIENT_HOST, "transient")  # an agent that announces itself without a name
    ask(master, TRANSIENT_HOST, "transient", topic_host=RESERVED_HOSTS[0])
    assert not master.nodes and not sent


def test_without_eagle_every_adopted_reserved_node_is_general(tmp_path: Path) -> None:
    master, _ = attached_master(tmp_path, {"scheduler": "fifo", "strategy": "spark"})
    for host in RESERVED_HOSTS:
        ask(master, host, "reserved")
    assert {node.partition for node in master.nodes.values()} == {"general"}
