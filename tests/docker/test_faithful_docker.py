"""A faithful run with containers as nodes: each node's CPU limit is its share of the scale
model (its group on the host with a leaf per task slot, as a local node's, where this user
may make one; else the container's nano_cpus), and its agent paces its bytes on the node's
bandwidth."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest

from master.providers.base import NodeSpec
from master.providers.docker import CGROUP_DIR, DockerProvider
from master.shell.run import run_scenario
from testbed.node.cgroups import PERIOD_US, CgroupUnavailable, CpuCgroups, detect, slots_group
from testbed.scenario.chaos import EvictSpec
from tests.support.docker import new_run_id, remove_run, run_leftovers
from tests.support.runs import assert_exact, run_a_lone_task
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = [pytest.mark.docker, pytest.mark.e2e]


def host_cgroups() -> CpuCgroups | None:
    try:
        return detect()
    except CgroupUnavailable:
        return None


def cpu_limit(cgroups: CpuCgroups | None, run_id: str, node: str, host_config: dict[str, Any]) -> float:
    """The cores a node's container's tasks may use: its group's quota (a slowed node's ``tasks``
    group's, where the node's own stays its class's), else its nano_cpus."""
    if not host_config.get("CgroupParent"):
        return host_config["NanoCpus"] / 1e9
    assert cgroups is not None and host_config["NanoCpus"] == 0  # the group's quota, none of its own
    group = cgroups.run_dir(run_id) / node
    assert host_config["CgroupParent"] == "/" + str(group.relative_to(cgroups.base.parent))
    return min(q for q in (quota(cgroups, group), quota(cgroups, slots_group(group))) if q is not None)


def quota(cgroups: CpuCgroups, group: Path) -> float | None:
    """A group's CPU quota in cores (None: none)."""
    if cgroups.version == 1:
        us = int((group / "cpu.cfs_quota_us").read_text())
        return None if us < 0 else us / PERIOD_US
    field = (group / "cpu.max").read_text().split()[0]
    return None if field == "max" else int(field) / PERIOD_US


def record_limits(
    docker_client: docker.DockerClient, run_id: str, limits: dict[str, tuple[float, list[str]]]
) -> Callable[[dict[str, Any]], None]:
    """What to call on each journal record: at a node's ``node_up``, its container's CPU limit
    and agent arguments go into ``limits`` (a container not found is left out, for the test's
    assertion to name: raised here, in the master's handler of the node's state, it dropped the
    rest of that handling and the run stalled to the test's timeout, 900 s, once in CI)."""
    cgroups = host_cgroups()

    def on_record(record: dict[str, Any]) -> None:
        if record["event"] == "node_up":
            try:  # by its name (the provider's ``testbed-<run>-<node>``), not a filtered list
                container = docker_client.containers.get(f"testbed-{run_id}-{record['node']}")
            except docker.errors.NotFound:
                return
            limit = cpu_limit(cgroups, run_id, record["node"], container.attrs["HostConfig"])
            limits[record["node"]] = (limit, container.attrs["Args"])

    return on_record


def leftover_groups(run_id: str) -> list[Path]:
    """The run's groups in any hierarchy (the engine makes a node's in each of its controllers')."""
    return sorted(Path("/sys/fs/cgroup").glob(f"**/testbed/{run_id}"))


async def test_dilated_containers_get_their_share_and_outputs_stay_exact(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = f"faithful-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    scenario = make_scenario(
        cluster={
            "reserved": {"count": 1, "slots": 2, "memory_mb": 256, "network_mbps": 400},
            "transient": {"count": 2, "slots": 1, "cpus": 0.5, "memory_mb": 256, "disk_mb_s": 100},
            "heartbeat_timeout": 10,
        },
        jobs=[{"workload": "sort", "size_mb": 4, "maps": 4, "reduces": 2, "memory_mb": 1}],
        fidelity={"mode": "faithful", "dilation": 2},
    )
    limits: dict[str, tuple[float, list[str]]] = {}
    record_limit = record_limits(docker_client, run_id, limits)

    def on_event(master: Any, record: dict[str, Any]) -> None:
        record_limit(record)
        if record["event"] == "task_started" and record["class"] == "transient" and not evicted:
            evicted[record["node"]] = []
            asyncio.get_running_loop().create_task(evict(master, record["node"]))

    async def evict(master: Any, node_id: str) -> None:  # its groups go with its container, mid-run
        await master.chaos.evict_now(EvictSpec(count=1), named=[node_id])  # the kill is on its way
        labels = [f"testbed.run={run_id}", f"testbed.node={node_id}"]
        while docker_client.containers.list(all=True, filters={"label": labels}):
            await asyncio.sleep(0.1)
        for _ in range(20):  # the provider removes the groups right after the container
            evicted[node_id] = sorted(Path("/sys/fs/cgroup").glob(f"**/testbed/{run_id}/{node_id}"))
            if not evicted[node_id]:
                break
            await asyncio.sleep(0.1)

    evicted: dict[str, list[Path]] = {}
    try:
        result = await run_scenario(settings_of(scenario), tmp_path, backend="docker", on_event=on_event)
        assert result.ok, result.summary
        assert result.summary["evictions"] == 1
        assert_exact(scenario, tmp_path)
        assert list(evicted.values()) == [[]]
    finally:
        remove_run(docker_client, run_id)
    assert run_leftovers(docker_client, run_id) == []
    assert leftover_groups(run_id) == []
    assert {"reserved-0", "transient-0", "transient-1"} <= set(limits), (
        f"no container found for a node up: {limits}"
    )
    assert limits["reserved-0"][0] == 1.0  # 2 cores / dilation 2
    assert limits["transient-0"][0] == 0.25  # 0.5 core / 2
    assert "--network-mbps" in limits["reserved-0"][1] and "200" in limits["reserved-0"][1]
    assert "--disk-mb-s" in limits["transient-1"][1] and "50" in limits["transient-1"][1]


async def test_a_lone_task_on_a_2_cpu_2_slot_container_gets_one_core_not_two(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As tests/e2e/test_faithful_run.py's local test, with the node a container: one CPU-bound
    task alone on a node of 2 cpus and 2 slots at dilation 4 uses 1 / 4 of a host core (its
    slot's), not the node's 2 / 4 (the container's nano_cpus alone gave it 0.91 of its CPU
    seconds' worth of two emulated cores, 0.50 expected)."""
    cgroups = host_cgroups()
    if cgroups is None:
        pytest.skip("no writable cgroup on this host: Docker nodes get nano_cpus only")
    run_id = f"faithful-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    try:
        result, cpu_s = await run_a_lone_task(cgroups, tmp_path, run_id, backend="docker")
    finally:
        remove_run(docker_client, run_id)
    assert 0.8 <= cpu_s <= 1.0 * 1.1
    assert result.summary["fidelity"]["slots_throttled_share"] is not None  # the slots' counters were read
    assert leftover_groups(run_id) == []


async def test_a_container_moves_only_its_own_processes_and_its_groups_go_with_it(
    docker_client: docker.DockerClient, image: str
) -> None:
    """Unprivileged, the image's user may move its processes into its node's leaves, and
    change nothing else; the node's groups (in every hierarchy) go when it is evicted,
    released, or left to close()."""
    cgroups = host_cgroups()
    if cgroups is None:
        pytest.skip("no writable cgroup on this host: Docker nodes get nano_cpus only")
    run_id = new_run_id()
    provider = DockerProvider(run_id, image, cgroups=cgroups)
    idle = ("sh", "-c", "sleep 60")  # the provider's placement flags become its $0 and arguments
    try:
        for node in ("n0", "n1", "n2"):
            await provider.launch(NodeSpec(node, "transient", 2, 64, 1.0, idle))
        [container] = docker_client.containers.list(
            filters={"label": [f"testbed.run={run_id}", "testbed.node=n0"]}
        )
        assert not container.attrs["HostConfig"]["Privileged"] and not container.attrs["HostConfig"]["CapAdd"]
        joined = container.exec_run(
            ["sh", "-c", f"echo $$ > {CGROUP_DIR}/slots/slot-1/cgroup.procs && cat /proc/self/cgroup"]
        )
        assert joined.exit_code == 0 and f"/testbed/{run_id}/n0/slots/slot-1" in joined.output.decode()
        for quota in ("cpu.cfs_quota_us", "slots/cpu.cfs_quota_us"):  # the node's, its tasks' (slowed)
            widen = container.exec_run(["sh", "-c", f"echo -1 > {CGROUP_DIR}/{quota}"])
            assert widen.exit_code != 0  # not the container's to change
        assert (cgroups.run_dir(run_id) / "n0").is_dir()
        await provider.evict("n0")
        await provider.release("n1")
        assert not (cgroups.run_dir(run_id) / "n0").exists() and not (cgroups.run_dir(run_id) / "n1").exists()
        assert set(provider.node_cpu_stats()) == {"n0", "n1", "n2"}
    finally:
        await provider.close()
        remove_run(docker_client, run_id)
    assert leftover_groups(run_id) == []


async def test_a_slowed_container_gets_its_quota_and_bandwidth_divided_by_its_factor(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chaos.slowdown`` on Docker nodes: transient-0 4x slower gets a quarter of its class's CPU
    (its group's quota, or its nano_cpus) and of its NIC token bucket; reserved-0 its class's."""
    run_id = f"slowed-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    node = {"count": 1, "slots": 1, "cpus": 1, "memory_mb": 256, "network_mbps": 400}
    scenario = make_scenario(
        cluster={"reserved": node, "transient": node, "heartbeat_timeout": 10},
        jobs=[{"workload": "sort", "size_mb": 4, "maps": 2, "reduces": 2}],
        fidelity={"mode": "faithful", "dilation": 1},
        chaos={"slowdown": {"nodes": {"transient-0": 4}}},
    )
    limits: dict[str, tuple[float, list[str]]] = {}
    record_limit = record_limits(docker_client, run_id, limits)

    def on_event(master: Any, record: dict[str, Any]) -> None:
        record_limit(record)

    try:
        result = await run_scenario(settings_of(scenario), tmp_path, backend="docker", on_event=on_event)
        assert result.ok, result.summary
        assert_exact(scenario, tmp_path)
    finally:
        remove_run(docker_client, run_id)
    assert run_leftovers(docker_client, run_id) == []
    assert {"reserved-0", "transient-0"} <= set(limits), f"no container found for a node up: {limits}"
    assert (limits["reserved-0"][0], limits["transient-0"][0]) == (1.0, 0.25)
    for node_id, mbps in (("reserved-0", "400"), ("transient-0", "100")):
        args = limits[node_id][1]
        assert args[args.index("--network-mbps") + 1] == mbps


MAKE_BUCKETS = (  # the agent's buckets (--network-mbps 400, --disk-mb-s 50) in its data dir
    "import pathlib, time; from testbed.node.bandwidth import NodeLimits; "
    "NodeLimits.create(pathlib.Path('/data'), 400, 50); time.sleep(120)"
)
READ_BUCKETS = (
    "import pathlib; from testbed.node.bandwidth import NodeLimits; "
    "limits = NodeLimits.open(pathlib.Path('/data')); "
    "print({kind: bucket.rate_bytes_s for kind, bucket in sorted(limits.buckets.items())})"
)


def container_rates(container: Any) -> dict[str, float]:
    """The node's bucket rates as its own processes read them (empty until the agent made them)."""
    done = container.exec_run(["python3", "-c", READ_BUCKETS])
    assert done.exit_code == 0, done.output
    return ast.literal_eval(done.output.decode())


async def test_an_episode_divides_a_containers_token_buckets_and_its_quota_then_restores_them(
    docker_client: docker.DockerClient, image: str
) -> None:
    """``chaos.slowdown.episodes`` on a Docker node with a host group: ``slow(node, 4)`` divides
    its NIC and spill buckets (in its data volume) and its quota by 4, as a local node's; 1 puts
    back its launch's, as the container's processes read them."""
    cgroups = host_cgroups()
    if cgroups is None:
        pytest.skip("no writable cgroup on this host: Docker nodes get nano_cpus only")
    run_id = new_run_id()
    provider = DockerProvider(run_id, image, cgroups=cgroups)
    launched = {"disk": 50e6, "net-in": 50e6, "net-out": 50e6}  # 400 Mbit/s = 50 MB/s
    try:
        await provider.launch(NodeSpec("n0", "transient", 1, 64, 1.0, ("python3", "-c", MAKE_BUCKETS)))
        [container] = docker_client.containers.list(
            filters={"label": [f"testbed.run={run_id}", "testbed.node=n0"]}
        )
        for _ in range(300):  # the container's python starts and makes its buckets
            if container_rates(container):
                break
            await asyncio.sleep(0.1)
        group = cgroups.run_dir(run_id) / "n0"
        assert container_rates(container) == launched and quota(cgroups, group) == 1.0
        await provider.slow("n0", 4)
        assert container_rates(container) == {kind: rate / 4 for kind, rate in launched.items()}
        assert quota(cgroups, group) == 0.25
        await provider.slow("n0", 1)
        assert container_rates(container) == launched and quota(cgroups, group) == 1.0
    finally:
        await provider.close()
        remove_run(docker_client, run_id)
    assert leftover_groups(run_id) == []
