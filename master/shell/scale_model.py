"""What each node of a run gets: its share of the host under the scenario's fidelity.

``resolve`` fixes ``dilation: auto`` for this host once, before the run (the resolved
factor is what the run directory's scenario.yaml records, so a resumed run keeps it).
``NodeShares`` turns a node class into the provider's CPU limit and the agent's
bandwidth flags; ``local_isolation`` finds the cgroups a faithful local run needs, or
refuses the run with one line saying how to get them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from master.policy_setup import added_transient_nodes
from testbed.node.cgroups import CgroupUnavailable, CpuCgroups, detect
from testbed.scenario.cluster import NodeClassSpec
from testbed.scenario.fidelity import auto_dilation, host_cores
from testbed.scenario.schema import Scenario, ScenarioError

log = logging.getLogger(__name__)


def peak_cores(scenario: Scenario) -> float:
    """The cluster's cores at its largest: every node of the scenario plus the autoscaler's budget
    (a replacement starts after its node is gone, so it adds none)."""
    cluster = scenario.cluster
    transient = cluster.transient.count + added_transient_nodes(scenario)
    return cluster.reserved.cores * cluster.reserved.count + cluster.transient.cores * transient


def resolve(scenario: Scenario, host: float | None = None) -> Scenario:
    """The scenario with ``dilation: auto`` replaced by this host's factor."""
    fidelity = scenario.fidelity
    if fidelity.dilation != "auto":
        return scenario
    try:
        factor = auto_dilation(
            peak_cores(scenario), host_cores() if host is None else host, fidelity.control_plane_cores
        )
    except ValueError as exc:
        raise ScenarioError([f"{scenario.name}: {exc}"]) from None
    return scenario.model_copy(update={"fidelity": fidelity.model_copy(update={"dilation": factor})})


@dataclass(frozen=True)
class NodeShares:
    """The resources of one node class as this run enforces them."""

    cpus: float | None
    """The CPU limit handed to the provider (None: none)."""
    network_mbps: float | None
    disk_mb_s: float | None

    @classmethod
    def of(cls, scenario: Scenario, spec: NodeClassSpec) -> NodeShares:
        fidelity = scenario.fidelity
        if not fidelity.faithful:  # as before the scale model: a user's cpus is a Docker limit
            return cls(spec.cpus, None, None)
        factor = fidelity.factor
        disk = spec.disk_mb_s / factor if spec.disk_mb_s is not None else None
        return cls(spec.cores / factor, spec.network_mbps / factor, disk)

    def agent_flags(self) -> list[str]:
        flags = []
        if self.network_mbps is not None:
            flags += ["--network-mbps", f"{self.network_mbps:.6g}"]
        if self.disk_mb_s is not None:
            flags += ["--disk-mb-s", f"{self.disk_mb_s:.6g}"]
        return flags


def local_isolation(scenario: Scenario) -> CpuCgroups | None:
    """The cgroups a faithful run's local nodes need (None for an unisolated run); a task slot's
    quota is one emulated core (``core``: 1 / dilation), at most its node's."""
    if not scenario.fidelity.faithful:
        return None
    try:
        return replace(detect(), core=1 / scenario.fidelity.factor)
    except CgroupUnavailable as exc:
        raise ScenarioError([f"{scenario.name}: fidelity.mode: faithful: {exc}"]) from None


def docker_isolation(scenario: Scenario) -> CpuCgroups | None:
    """The host's cgroups for a faithful run's Docker nodes, as ``local_isolation``'s; None
    (each container then gets its node's ``nano_cpus`` only, as the warning says) when this
    user may not make them."""
    try:
        return local_isolation(scenario)
    except ScenarioError as exc:
        log.warning("the Docker nodes get no per-slot CPU quota: %s", exc)
        return None


def class_flags(scenario: Scenario, node_class: str, broker_url: str) -> list[str]:
    """The agent flags every node of ``node_class`` gets, from ``--node-class`` on (the run and
    node id come before them): what the master launches and what a compose file starts."""
    spec = scenario.cluster.reserved if node_class == "reserved" else scenario.cluster.transient
    return [
        *("--node-class", node_class, "--broker", broker_url),
        *("--slots", str(spec.slots), "--memory-mb", str(spec.memory_mb)),
        *("--heartbeat-interval", str(scenario.heartbeat_interval_s)),
        *([] if scenario.cluster.warm_workers else ["--lazy-workers"]),
        *NodeShares.of(scenario, spec).agent_flags(),
    ]


def refuse_slowdown(backend: str) -> None:
    """Slow nodes (``chaos.slowdown``) are modelled by the simulator only: a real run would not
    be slowed, so it is refused (docs/speculation.md)."""
    raise ScenarioError(
        [f"chaos.slowdown: --backend {backend} does not enforce slow nodes yet (only --backend sim "
         "does): remove chaos.slowdown or run with --backend sim"]
    )  # fmt: skip
