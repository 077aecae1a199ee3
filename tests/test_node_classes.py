"""Named node classes (``cluster.classes``, issue #47): the schema, its errors, what ``resolve``
compiles them into, ``testbed validate``'s report, the real backends' refusal of them, and
``testbed chaos plan`` on them (tests/sim/test_named_classes_sim.py runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.app.cli import main
from testbed.scenario.schema import ScenarioError, load_scenario
from testbed.settings.resolve import resolution
from testbed.settings.run_settings import Host
from tests.support.scenarios import problems, write

JOBS = "jobs:\n  - {workload: wordcount, size_mb: 4}\n"
THREE = (
    """\
name: three
cluster:
  classes:
    on-demand: {kind: reserved, count: 2, slots: 4, cpus: 2, memory_mb: 4096, price_per_hour: 0.4}
    spot-m5: {kind: transient, count: 3, memory_mb: 2048, price_per_hour: 0.12,
              chaos: {lifetime: high, notice: 2m, replace: false}}
    c5.large: {kind: transient, count: 1, zones: {z1: 1}, chaos: {zones: {z1: {lifetime: low}}}}
"""
    + JOBS
)


def test_the_classes_keep_their_order_kind_shape_price_and_chaos(tmp_path: Path) -> None:
    settings = resolution(load_scenario(write(tmp_path, THREE)), Host(4.0))
    assert not settings.problems
    assert settings.chaos is not None
    cluster = settings.scenario.node_classes
    assert list(cluster) == ["on-demand", "spot-m5", "c5.large"]
    assert [c.kind for c in cluster.values()] == ["reserved", "transient", "transient"]
    shape = {name: settings.scenario.cluster.classes[name] for name in cluster}  # type: ignore[index]
    assert (shape["on-demand"].cores, shape["on-demand"].slots, shape["spot-m5"].memory_mb) == (2.0, 4, 2048)
    prices = [c.spec.price_per_hour for c in cluster.values()]
    assert prices == [0.4, 0.12, 0.3]  # a class without a price has its kind's (as the shorthand)
    chaos = settings.chaos.classes
    assert list(chaos) == list(cluster)
    assert chaos["on-demand"].model.describe() == "none"
    assert (chaos["spot-m5"].notice, chaos["spot-m5"].replace) == (120.0, False)
    assert chaos["c5.large"].model_for("z1").describe() != chaos["c5.large"].model.describe()


def test_cluster_settings_hold_each_class_by_name_with_its_kind(tmp_path: Path) -> None:
    from testbed.settings.cluster import ClusterSettings

    cluster = ClusterSettings.of(load_scenario(write(tmp_path, THREE)))
    assert {name: (c.kind, c.count, c.slots, c.cores) for name, c in cluster.classes.items()} == {
        "on-demand": ("reserved", 2, 4, 2.0),
        "spot-m5": ("transient", 3, 2, 2.0),
        "c5.large": ("transient", 1, 2, 2.0),
    }
    assert cluster["c5.large"].zone_of(0) == "z1"


def test_the_shorthand_compiles_to_two_classes_named_by_their_kind(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, "name: s\ncluster: {reserved: 2, transient: 5}\n" + JOBS))
    classes = scenario.node_classes
    assert [(n, c.kind, c.spec.count) for n, c in classes.items()] == [
        ("reserved", "reserved", 2),
        ("transient", "transient", 5),
    ]
    assert classes["transient"].chaos is scenario.chaos.transient


def named(body: str) -> str:
    return "name: t\ncluster:\n  classes:\n" + body + JOBS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "name: t\ncluster:\n  reserved: 1\n  classes: {a: {kind: transient, count: 1}}\n" + JOBS,
            "cluster: give the nodes either as classes or as reserved/transient, not both",
        ),
        (named("    Spot: {kind: transient, count: 1}\n"), "cluster.classes: class name 'Spot': use 1 to 32"),
        (named("    spot-1: {kind: transient, count: 1}\n"), "must not end in '-' or '-<digits>'"),
        (named("    spot: {count: 1}\n"), "cluster.classes.spot.kind: required field is missing"),
        (
            named("    spot: {kind: spot, count: 1}\n"),
            "cluster.classes.spot.kind: Input should be 'reserved'",
        ),
        (
            named("    a: {kind: transient, count: 1}\n    a: {kind: reserved, count: 1}\n"),
            "line 5, column 5: the key 'a' is given twice in one mapping; keep one",
        ),
        (
            named("    a: {kind: transient, count: 0}\n"),
            "cluster: the cluster has no nodes: give a class a count",
        ),
        (
            "name: t\ncluster: {classes: {}}\n" + JOBS,
            "cluster.classes: Dictionary should have at least 1 item",
        ),
        (
            named("    a: {kind: transient, count: 1}\n") + "chaos:\n  transient: {lifetime: high}\n",
            "chaos.transient: with cluster.classes each class has its own chaos; move it to",
        ),
        (
            named("    a: {kind: transient, count: 1, chaos: {zones: {z1: {lifetime: high}}}}\n"),
            "cluster.classes.a: chaos.zones: unknown zone 'z1'",
        ),
        (
            named("    a: {kind: transient, count: 1, chaos: {lifetime: forever}}\n"),
            "cluster.classes.a.chaos.lifetime: unknown lifetime model 'forever'",
        ),
        (
            named("    a: {kind: transient, count: 1, memory_mb: 512}\n").replace(
                "size_mb: 4", "memory_mb: 900"
            ),
            "raise cluster.classes.a.memory_mb",
        ),
        (named("    a: {kind: reserved, count: 501}\n"), "cluster.classes.a.count: 501 nodes, at most 500"),
    ],
)
def test_bad_classes_are_one_line_naming_the_field(tmp_path: Path, text: str, expected: str) -> None:
    found = problems(tmp_path, text)
    assert len(found) == 1
    assert found[0].startswith(f"{tmp_path / 's.yaml'}: ")
    assert expected in found[0]


def test_validate_reports_each_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(write(tmp_path, THREE)), "--backend", "sim"]) == 0
    out = capsys.readouterr().out
    assert "ok (three: 1 jobs, 6 nodes in 3 classes;" in out
    assert "class spot-m5 (transient): 3 nodes of 2 slots, 2 cores, 2048 MB; 0.12/h; lifetime high" in out
    assert "named classes run on the simulator and local processes only today: backend: sim or local" in out


@pytest.mark.parametrize("backend", ["docker", "attach"])
def test_docker_and_attach_refuse_named_classes_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    path = write(tmp_path, THREE)
    assert main(["run", str(path), "--backend", backend]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # attach's also asks for its broker
    assert err[-1] == (
        f"{path}: cluster.classes: named node classes run on the simulator and local processes only "
        f"today (backend: sim or local), not on {backend}; write the cluster as cluster.reserved and "
        "cluster.transient to run it there"
    )
    assert len(err) == (1 if backend == "docker" else 2)


def test_compose_refuses_named_classes(tmp_path: Path) -> None:
    from master.shell.compose_file import compose_file

    with pytest.raises(ScenarioError, match="named node classes run on the simulator and local processes"):
        compose_file(write(tmp_path, THREE), [], None, Host(4.0), [])


def test_chaos_plan_and_dry_runs_take_named_classes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, THREE)
    assert main(["chaos", "plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "spot-m5 (transient, 3): lifetime high" in out
    assert "c5.large (transient, 1, z1 1): lifetime" in out and "  zone z1: lifetime low" in out
    for backend in ("sim", "local"):
        assert main(["run", str(path), "--dry-run", "--backend", backend]) == 0
        assert "on-demand-" not in capsys.readouterr().out  # a reserved class is never evicted


def test_the_run_directorys_scenario_yaml_loads_back(tmp_path: Path) -> None:
    """A run records its scenario (``to_yaml``); named classes without the shorthand's defaults."""
    from testbed.scenario.schema import to_yaml

    scenario = load_scenario(write(tmp_path, THREE))
    again = tmp_path / "again.yaml"
    again.write_text(to_yaml(scenario))
    assert load_scenario(again).node_classes == scenario.node_classes
