"""Firmament's solver against networkx's network simplex, and its placements against the cluster."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from master.schedulers.firmament import admitted, cost_model
from master.schedulers.firmament.costs import EvictionRisk, TransientCostModel
from master.schedulers.firmament.network import MACHINE, FlowNetwork, build, extract
from master.schedulers.firmament.solver import solve
from testbed.api.policy import Assign, ClusterSnapshot, JobView, NodeView, PendingTask, RunningTask
from testbed.chaosmodels.lifetimes import parse_lifetime


def simplex_cost(net: FlowNetwork) -> int:
    import networkx as nx  # the reference, imported by the tests that use it (not at collection)

    graph = nx.MultiDiGraph()
    for index, supply in enumerate(net.supplies):
        graph.add_node(index, demand=-supply)
    for arc in range(net.num_arcs):
        graph.add_edge(
            net.tails[arc], net.heads[arc], key=arc, capacity=net.capacities[arc], weight=net.costs[arc]
        )
    cost, _ = nx.network_simplex(graph)
    return int(cost)


@st.composite
def networks(draw: st.DrawFn) -> FlowNetwork:
    """A random network of up to 10 nodes; every source also reaches the sink (at a high
    cost), so a flow routing all supply exists."""
    net = FlowNetwork()
    size = draw(st.integers(3, 10))
    for index in range(size):
        net.node(0, str(index))
    sink = size - 1
    arcs = draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1)), max_size=30))
    for tail, head in arcs:
        if tail != head:
            net.arc(tail, head, draw(st.integers(0, 6)), draw(st.integers(0, 50)))
    sources = draw(st.lists(st.integers(0, size - 2), min_size=1, max_size=4, unique=True))
    for source in sources:
        net.supplies[source] = supply = draw(st.integers(1, 5))
        net.supplies[sink] -= supply
        net.arc(source, sink, supply, 10_000)
    return net


@settings(max_examples=300, deadline=None)
@given(net=networks())
def test_or_tools_finds_the_network_simplex_optimum(net: FlowNetwork) -> None:
    solution = solve(net)
    assert solution.optimal, solution.status
    assert solution.cost == simplex_cost(net)


@st.composite
def snapshots(draw: st.DrawFn) -> ClusterSnapshot:
    nodes = []
    for ordinal in range(draw(st.integers(1, 6))):
        node_class = draw(st.sampled_from(["reserved", "transient"]))
        slots = draw(st.integers(1, 4))
        running = tuple(
            RunningTask(f"n{ordinal}/r{i}", "old", draw(st.sampled_from([100, 300])), 0.0, 50.0)
            for i in range(draw(st.integers(0, slots)))
        )
        nodes.append(
            NodeView(
                f"n{ordinal}",
                node_class,
                slots,
                draw(st.sampled_from([500, 1000, 2000])),
                running,
                draining=draw(st.booleans()) and ordinal > 0,
                launched=draw(st.floats(0, 90)),
                rebalance=draw(st.booleans()),
                zone=draw(st.sampled_from([None, "a", "b"])),
            )
        )
    ids = [n.node_id for n in nodes]
    jobs = []
    for j in range(draw(st.integers(1, 3))):
        pending = tuple(
            PendingTask(
                f"j{j}/t{i}",
                f"j{j}",
                0,
                i,
                draw(st.sampled_from([100, 400, 700])),
                draw(st.sampled_from([1.0, 10.0, 60.0])),
                preferred_nodes=tuple(draw(st.lists(st.sampled_from(ids), max_size=2, unique=True))),
                allowed_classes=draw(
                    st.sampled_from([frozenset({"reserved", "transient"}), frozenset({"transient"})])
                ),
                excluded_nodes=frozenset(draw(st.lists(st.sampled_from(ids), max_size=1))),
            )
            for i in range(draw(st.integers(1, 6)))
        )
        jobs.append(JobView(f"j{j}", float(j), pending))
    return ClusterSnapshot(100.0, tuple(nodes), tuple(jobs))


RISK = EvictionRisk({("transient", None): parse_lifetime({"exponential": {"mean": "2m"}})})


@settings(max_examples=120, deadline=None)
@given(
    snapshot=snapshots(),
    name=st.sampled_from(["trivial", "octopus", "quincy", "transient"]),
    waits=st.lists(st.floats(0, 100), min_size=20, max_size=20),
)
def test_placements_respect_slots_memory_classes_and_exclusions(
    snapshot: ClusterSnapshot, name: str, waits: list[float]
) -> None:
    model = cost_model({"cost_model": name}, RISK)
    assert not isinstance(model, TransientCostModel) or model.risk is RISK
    tasks = [task for job in snapshot.jobs for task in job.pending]
    waited = {task.task_id: wait for task, wait in zip(tasks, waits, strict=False)}
    net = build(snapshot, model, waited, tasks)
    solution = solve(net)
    assert solution.optimal, solution.status
    assert solution.cost == simplex_cost(net)
    placed = extract(net, solution.flows)
    views = {n.node_id: n for n in snapshot.nodes}
    by_id = {task.task_id: task for task in tasks}
    counts: dict[str, int] = {}
    for task_id, node_id in placed.items():
        view, task = views[node_id], by_id[task_id]
        assert not view.draining
        assert view.node_class in task.allowed_classes
        assert node_id not in task.excluded_nodes
        assert task.ideal_memory_mb <= view.free_memory_mb
        counts[node_id] = counts.get(node_id, 0) + 1
    assert all(counts[n] <= views[n].free_slots for n in counts)
    through_machines = sum(
        int(solution.flows[a]) for a in range(net.num_arcs) if net.kinds[net.tails[a]] == MACHINE
    )
    assert len(placed) == through_machines  # every unit through a machine is one placement
    memory: dict[str, int] = {}
    for decision in admitted(snapshot, tasks, placed, {}):
        if isinstance(decision, Assign):
            memory[decision.node_id] = memory.get(decision.node_id, 0) + decision.memory_mb
    assert all(memory[n] <= views[n].free_memory_mb for n in memory)
