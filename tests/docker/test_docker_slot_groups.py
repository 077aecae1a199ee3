"""DockerProvider's CPU groups against a stub engine: what it asks the engine for on cgroup v2
(which this v1 host cannot run for real) and when it falls back to nano_cpus. The real thing,
on v1, is in test_faithful_docker.py."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
import pytest

from master.providers.base import NodeSpec
from master.providers.docker import CGROUP_DIR, DockerProvider
from master.providers.node_container import DATA_DIR
from testbed.node.cgroups import CpuCgroups, agent_group, hierarchy_path, slot_group


class StubContainer:
    id = "c0ffee"

    def __init__(self, group: Path | None, kwargs: dict[str, Any]) -> None:
        self.group, self.kwargs = group, kwargs
        self.attrs = {
            "Config": {"User": "10001:10001"},
            "Mounts": [{"Destination": DATA_DIR, "Source": "/v"}],
        }

    def reload(self) -> None:
        pass

    def start(self) -> None:  # the engine makes the container's group under its cgroup_parent
        if self.group is not None:
            (self.group / self.id).mkdir()

    def remove(self, **_: Any) -> None:
        pass


class StubEngine:
    def __init__(self, driver: str, version: str) -> None:
        self.info_ = {"CgroupDriver": driver, "CgroupVersion": version}
        self.created: list[StubContainer] = []
        self.group: Path | None = None
        self.containers = self
        self.api = self

    def info(self) -> dict[str, str]:
        return self.info_

    def create_endpoint_config(self, **_: Any) -> dict[str, Any]:
        return {}

    def create(self, image: str, command: list[str], **kwargs: Any) -> StubContainer:
        self.created.append(StubContainer(self.group, kwargs))
        return self.created[-1]


def provider_on(engine: StubEngine, cgroups: CpuCgroups, monkeypatch: pytest.MonkeyPatch) -> DockerProvider:
    monkeypatch.setattr(docker, "from_env", lambda: engine)
    return DockerProvider("run-1", "image", cgroups=cgroups)


def test_on_v2_the_container_shares_the_hosts_cgroup_namespace_and_owns_the_nodes_procs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A private cgroup namespace is rooted at the container's own group: the slot groups, its
    siblings, would be out of reach (ENOENT). v2 checks write access to the common ancestor
    of a move's source and target: the node's cgroup.procs."""
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    mount = tmp_path / "cgroup2"
    cgroups = replace(CpuCgroups(2, mount / "testbed"), core=0.5)
    table = f"cgroup2 {mount} cgroup2 rw 0 0\n"  # this host's /proc/self/mounts, as a v2 host's
    monkeypatch.setattr("master.providers.docker.hierarchy_path", lambda group: hierarchy_path(group, table))
    engine = StubEngine("cgroupfs", "2")
    provider = provider_on(engine, cgroups, monkeypatch)
    group = cgroups.create("run-1", "n0", 1.0, 2)
    for leaf in (group, agent_group(group), slot_group(group, 0), slot_group(group, 1)):
        (leaf / "cgroup.procs").touch()
    engine.group = group
    provider._create_and_start(
        NodeSpec("n0", "transient", 2, 64, 1.0, ("agent",)), {}, 1.0, ["agent"], {}, group
    )
    [container] = engine.created
    assert container.kwargs["cgroup_parent"] == "/testbed/run-1/n0"
    assert container.kwargs["cgroupns"] == "host"
    assert "nano_cpus" not in container.kwargs  # the group's quota caps the node
    # its workers leave the container's group (and memory limit) for their slots': the node's caps them
    assert (group / "memory.max").read_text() == str(container.kwargs["mem_limit"])
    assert (group.parent / "cgroup.subtree_control").read_text() == "+memory"
    [mount_] = [m for m in container.kwargs["mounts"] if m["Target"] == CGROUP_DIR]
    assert (mount_["Source"], mount_["ReadOnly"]) == (str(group), False)
    owned = {path.parent.name for path in group.rglob("cgroup.procs") if path.stat().st_uid == 10001}
    assert owned == {"n0", "agent", "slot-0", "slot-1"}
    assert provider._data_dirs == {"n0": Path("/v")}  # its token buckets, for a slowdown episode


@pytest.mark.parametrize(("driver", "version"), [("systemd", "2"), ("cgroupfs", "2")])
def test_an_engine_that_does_not_share_this_hosts_groups_gives_nano_cpus_with_a_warning(
    driver: str,
    version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = StubEngine(driver, version)
    with caplog.at_level(logging.WARNING):
        provider = provider_on(engine, CpuCgroups(1, tmp_path / "testbed"), monkeypatch)
    assert "nano_cpus only" in caplog.text
    provider._create_and_start(
        NodeSpec("n0", "transient", 1, 64, 0.5, ("agent",)), {}, 0.5, ["agent"], {}, None
    )
    [container] = engine.created
    assert container.kwargs["nano_cpus"] == 500_000_000 and "cgroup_parent" not in container.kwargs
