"""Per-node resources in the scenario: cpus (default: slots), network_mbps, disk_mb_s."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.scenario.schema import ScenarioError, load_scenario


def load(tmp_path: Path, cluster: str):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: r\ncluster: {cluster}\njobs: [{{workload: sort}}]\n")
    return load_scenario(path)


def test_cores_default_to_slots_and_bandwidths_to_their_defaults(tmp_path: Path) -> None:
    cluster = load(tmp_path, "{reserved: {count: 1, slots: 3}, transient: 2}").cluster
    assert cluster.reserved.cores == 3.0
    assert cluster.transient.cores == 2.0
    assert cluster.reserved.network_mbps == 1000
    assert cluster.reserved.disk_mb_s is None


def test_resources_are_per_node_class(tmp_path: Path) -> None:
    cluster = load(
        tmp_path,
        "{reserved: {count: 1, cpus: 0.5, network_mbps: 80, disk_mb_s: 50},"
        " transient: {count: 2, cpus: 1.5}}",
    ).cluster
    reserved = cluster.reserved
    assert (reserved.cores, reserved.network_mbps, reserved.disk_mb_s) == (0.5, 80, 50)
    assert (cluster.transient.cores, cluster.transient.network_mbps) == (1.5, 1000)


@pytest.mark.parametrize(
    ("field", "value"), [("cpus", 0), ("network_mbps", -1), ("disk_mb_s", 0), ("cpus", "many")]
)
def test_a_bad_resource_is_one_line_naming_its_field(tmp_path: Path, field: str, value: object) -> None:
    with pytest.raises(ScenarioError) as info:
        load(tmp_path, f"{{reserved: {{count: 1, {field}: {value}}}}}")
    [line] = info.value.problems
    assert f"cluster.reserved.{field}:" in line
