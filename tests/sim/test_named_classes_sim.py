"""Named node classes on the simulator (issue #47): scenarios/node-classes.yaml's three classes
launch under their own ids, only its transient-kind classes are evicted, each by its own
lifetime model, a replacement is of the lost node's class, each node has its class's slots,
memory, cores and NIC, and the jobs' committed outputs are those of the same jobs on the
shorthand's two classes."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from master.chaos.plan import plan_evictions
from master.execution_model import ExecutionModel
from master.shell.run import run_blocking
from master.sim.run import SimBackend, sim_settings, simulate
from master.sim.shell import SimShell
from testbed.chaosmodels.lifetimes import lifetime_for
from testbed.scenario.schema import Scenario, load_scenario, parse_scenario
from testbed.settings.node_classes import class_chaos
from tests.support.sim import events, rows

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "node-classes.yaml"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Scenario, Path, SimShell]:
    scenario = load_scenario(SHIPPED)
    run_dir = tmp_path_factory.mktemp("classes") / "run"
    run_dir.mkdir()
    shell, ok = simulate(sim_settings(scenario), run_dir)
    assert ok
    return scenario, run_dir, shell


@pytest.fixture
def run(simulated: tuple[Scenario, Path, SimShell]) -> tuple[Scenario, Path]:
    return simulated[:2]


def test_each_class_launches_its_nodes_under_its_own_ids(run: tuple[Scenario, Path]) -> None:
    scenario, run_dir = run
    launched = events(run_dir, "node_launching")
    initial = [e["node"] for e in launched if e["t"] == 0]
    classes = scenario.node_classes.items()
    assert initial == [f"{name}-{i}" for name, c in classes for i in range(c.spec.count)]
    for event in launched:
        assert event["node"].rpartition("-")[0] == event["class"]
    jobs = rows(run_dir, "jobs")
    assert [j["status"] for j in jobs] == ["succeeded"] * 3


def test_only_transient_classes_are_evicted_each_by_its_own_model(run: tuple[Scenario, Path]) -> None:
    scenario, run_dir = run
    evicted = rows(run_dir, "evictions")
    assert {r["node_class"] for r in evicted} == {"spot-m5", "spot-t3"}  # never on-demand
    end = float(events(run_dir, "run_finished")[0]["t"]) * scenario.time_scale
    planned = [e for e in plan_evictions(scenario, end, SHIPPED.parent) if e.trace_s < end - 1]
    assert [r["node_id"] for r in evicted] == [e.node_id for e in planned]
    for drawn in events(run_dir, "lifetime_drawn"):
        name, _, ordinal = drawn["node"].rpartition("-")
        model = class_chaos(scenario, name).model
        expected = lifetime_for(model, scenario.seed, scenario.class_index(name), int(ordinal))
        assert drawn["lifetime_s"] == pytest.approx(expected)
        assert drawn["class"] == name
    notices = {e["node"] for e in events(run_dir, "eviction_notice")}
    assert notices and all(node.startswith("spot-m5-") for node in notices)  # spot-t3 has no notice


def test_a_replacement_is_of_the_lost_nodes_class(run: tuple[Scenario, Path]) -> None:
    _, run_dir = run
    later = Counter(e["class"] for e in events(run_dir, "node_launching") if e["t"] > 0)
    lost = Counter(r["node_class"] for r in rows(run_dir, "evictions"))
    assert later and set(later) <= set(lost)
    assert all(later[name] <= lost[name] for name in later)
    replaced = {name: sorted(int(e["node"].rpartition("-")[2]) for e in events(run_dir, "node_launching")
                             if e["class"] == name and e["t"] > 0) for name in later}  # fmt: skip
    assert replaced["spot-t3"][0] == 4  # the class's next ordinal, after its 4 initial nodes


def test_each_node_has_its_class_hardware(run: tuple[Scenario, Path]) -> None:
    scenario, run_dir = run
    busiest: dict[str, int] = defaultdict(int)
    for node, peak in _peak_running(rows(run_dir, "tasks")).items():
        name = node.rpartition("-")[0]
        busiest[name] = max(busiest[name], peak)
    assert busiest == {"on-demand": 4, "spot-m5": 4, "spot-t3": 2}  # their slots, filled
    model = ExecutionModel(scenario, lambda _j, _s: 1, lambda _j, _s: ())  # the simulator's
    assert model.nic_bytes_s("spot-t3") == 250e6 / 8 and model.nic_bytes_s("spot-m5") == 1000e6 / 8
    costs = {r["node_id"].rpartition("-")[0]: float(r["price_per_hour"]) for r in rows(run_dir, "nodes")}
    assert costs == {"on-demand": 0.4, "spot-m5": 0.12, "spot-t3": 0.04}


def test_the_simulator_gives_each_node_its_class_shape(simulated: tuple[Scenario, Path, SimShell]) -> None:
    scenario, _, shell = simulated
    nodes = shell.agents.nodes
    assert len(nodes) == len(events(simulated[1], "node_launching"))
    for node_id, node in nodes.items():
        named = scenario.node_classes[node_id.rpartition("-")[0]]
        assert (node.node_class, node.kind) == (named.name, named.kind)
        assert (node.slots, node.memory_mb) == (named.spec.slots, named.spec.memory_mb)
        assert node.cpu is not None and node.cpu.cores == named.spec.cores
        record = shell.core.nodes[node_id]
        assert (record.class_name, record.node_class, record.slots, record.memory_mb) == (
            named.name,
            named.kind,
            named.spec.slots,
            named.spec.memory_mb,
        )
    assert {n.cpu.cores for n in nodes.values() if n.node_class == "spot-t3" and n.cpu} == {1.0}


def _peak_running(tasks: list[dict[str, str]]) -> dict[str, int]:
    """Each node's most attempts running at once."""
    edges: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for t in tasks:
        if t["start_s"] and t["end_s"]:
            edges[t["node_id"]] += [(float(t["start_s"]), 1), (float(t["end_s"]), -1)]
    peaks = {}
    for node, points in edges.items():
        running = peak = 0
        for _, step in sorted(points, key=lambda p: (p[0], p[1])):
            running += step
            peak = max(peak, running)
        peaks[node] = peak
    return peaks


def test_the_outputs_are_those_of_the_shorthand(run: tuple[Scenario, Path], tmp_path: Path) -> None:
    """The simulator writes no output files: each job's committed output partitions (bytes
    out of the attempt committed) equal those of the same jobs on two classes, without chaos."""
    scenario, run_dir = run
    data: dict[str, Any] = scenario.model_dump(mode="json", include={"name", "seed", "policy", "jobs"})
    reference = parse_scenario({**data, "cluster": {"reserved": 2, "transient": 8}})
    plain = tmp_path / "plain"
    plain.mkdir()
    assert run_blocking(sim_settings(reference), plain, SimBackend()).ok
    assert _committed(run_dir) == _committed(plain)


def _committed(run_dir: Path) -> dict[tuple[str, int], int]:
    """Each job's committed partitions (its final stage's): the bytes of the attempt committed."""
    tasks = rows(run_dir, "tasks")
    final = {t["job_id"]: max(int(u["stage"]) for u in tasks if u["job_id"] == t["job_id"]) for t in tasks}
    done = {
        (t["job_id"], int(t["index"]), int(t["attempt"])): int(t["bytes_out"])
        for t in tasks
        if int(t["stage"]) == final[t["job_id"]] and t["status"] == "succeeded"
    }
    committed = {(e["job"], int(e["index"])): done[(e["job"], int(e["index"]), int(e["attempt"]))]
                 for e in events(run_dir, "output_committed")}  # fmt: skip
    assert committed
    return committed


def test_a_named_cluster_runs_as_its_shorthand_renamed(tmp_path: Path) -> None:
    """scenarios/cloudcoaster.yaml (Eagle's partitions of the reserved nodes, CloudCoaster
    launching transient ones) with its classes renamed, and a second transient class after
    them: the journal is the shorthand's, names changed; every launch is of the first
    transient class (``Launch`` names a kind), none of the second."""
    data = yaml.safe_load((SHIPPED.parent / "cloudcoaster.yaml").read_text())
    data.pop("fidelity")
    shape = {"slots": 1, "memory_mb": 512}
    classes = {
        "on-demand": {"kind": "reserved", "count": 12, **shape, "price_per_hour": 1.0},
        "spot-a": {"kind": "transient", "count": 0, **shape, "price_per_hour": 0.3},
        "spot-b": {"kind": "transient", "count": 0, "slots": 2, "memory_mb": 1024},
    }
    journals = []
    for name, cluster in (
        ("shorthand", data["cluster"]),
        ("named", {"classes": classes, "heartbeat_timeout": "10s"}),
    ):
        run_dir = tmp_path / name
        run_dir.mkdir()
        settings = sim_settings(parse_scenario({**data, "cluster": cluster}))
        assert run_blocking(settings, run_dir, SimBackend()).ok
        journals.append((run_dir / "events.jsonl").read_text())
    shorthand, named = journals
    renamed = shorthand.replace("reserved", "on-demand").replace("transient-", "spot-a-")
    assert renamed.replace('"class":"transient"', '"class":"spot-a"') == named
    assert "spot-a-0" in named and "spot-b" not in named
