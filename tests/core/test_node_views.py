"""The round's node views, kept up to date as nodes change, against a full rebuild
(tests/support/policy_reference/snapshot_v1.py) after every change a policy could see: queue
edits of every kind, reservations, rebalance marks, partitions, drains and losses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from master.core.events import FromNode, Round
from tests.support.driver import Driver, up
from tests.support.masters import core_act
from tests.support.node_views import check_node_views
from tests.support.scenarios import make_scenario

EDITS = ("append", "remove", "slice", "clear", "insert", "reserve", "free", "rebalance", "partition",
         "drain", "undrain", "lose", "round", "succeed")  # fmt: skip


def edit(driver: Driver, action: str, pick: int) -> None:
    core = driver.core
    alive = [n for n in core.nodes.values() if n.status in ("up", "draining")]
    if not alive:
        return
    node = alive[pick % len(alive)]
    task = f"j000-s0-t{pick % 7}"
    if action == "append":
        node.queued.append(task)
    elif action == "remove" and node.queued:
        node.queued.remove(node.queued[pick % len(node.queued)])
    elif action == "slice":
        node.queued[:] = [*node.queued[::-1], task]
    elif action == "clear":
        node.queued.clear()
    elif action == "insert":
        node.queued.insert(0, task)
    elif action in ("reserve", "free"):
        node.reserved_for = "j000" if action == "reserve" else None
    elif action == "rebalance":
        node.rebalance_at = driver.now
    elif action == "partition":
        node.partition = "short" if node.partition == "general" else "general"
    elif action == "drain":
        core_act(core, driver.now, core.drain, node, "test")
    elif action == "undrain":
        core_act(core, driver.now, core.undrain, node, "test")
    elif action == "lose" and len(alive) > 1:
        will = up(node.node_id, node.node_class, core).model_copy(update={"state": "lost"})
        driver.do(FromNode(node.node_id, will))
    elif action == "round":
        driver.do(Round())
    elif action == "succeed":
        running = sorted(driver.running().values(), key=lambda item: item[1].task_id)
        if running:
            node_id, spec = running[pick % len(running)]
            driver.finish(node_id, spec)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    scheduler=st.sampled_from(["fifo", "eagle", "yarn-me"]),
    steps=st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 1000)), max_size=40),
)
def test_views_follow_every_change(scheduler: str, steps: list[tuple[str, int]]) -> None:
    jobs = [{"workload": "wordcount", "size_mb": 1, "maps": 6, "reduces": 2}]
    cluster = {"reserved": 2, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    driver = Driver(make_scenario(cluster=cluster, jobs=jobs, policy={"scheduler": scheduler}))
    driver.boot()
    check_node_views(driver)
    for action, pick in steps:
        driver.advance(driver.now + 0.05)
        edit(driver, action, pick)
        check_node_views(driver)
