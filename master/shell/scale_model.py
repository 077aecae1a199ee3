"""What each node of a run gets: its share of the host under the scenario's fidelity.

``dilation: auto`` is fixed before the run by ``testbed.settings`` (``resolve_dilation``).
``NodeShares`` turns a node class into the provider's CPU limit and the agent's
bandwidth flags; ``local_isolation`` finds the cgroups a faithful local run needs, or
refuses the run with one line saying how to get them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from testbed.chaosmodels.slowdown import slowdown_factor
from testbed.node.cgroups import CgroupUnavailable, CpuCgroups, detect
from testbed.scenario.cluster import NodeClassSpec
from testbed.scenario.schema import Scenario, ScenarioError

log = logging.getLogger(__name__)


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

    def slowed(self, factor: float) -> NodeShares:
        """The shares of a node ``factor`` times slower (``chaos.slowdown``): its CPU quota and
        its NIC and spill token buckets each divided by ``factor``."""
        if factor == 1:
            return self
        return NodeShares(*(None if share is None else share / factor for share in
                            (self.cpus, self.network_mbps, self.disk_mb_s)))  # fmt: skip

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


def class_spec(scenario: Scenario, node_class: str) -> NodeClassSpec:
    """The shape of the class named ``node_class`` (``reserved``, ``transient`` or a named class)."""
    return scenario.node_classes[node_class].spec


def node_shares(scenario: Scenario, node_id: str, node_class: str) -> NodeShares:
    """What one node of the class named ``node_class`` gets: its class's shares, divided by its
    ``chaos.slowdown`` factor (not with ``straggler: processes``: processes beside its tasks slow it)."""
    shares = NodeShares.of(scenario, class_spec(scenario, node_class))
    return shares if by_processes(scenario) else shares.slowed(node_slowdown(scenario, node_id, node_class))


def by_processes(scenario: Scenario) -> bool:
    """Slow nodes are made slow by LATE's straggler processes (``straggler: processes``)."""
    slowdown = scenario.chaos.slowdown
    return slowdown is not None and slowdown.straggler == "processes"


def node_slowdown(scenario: Scenario, node_id: str, node_class: str) -> float:
    """The ``chaos.slowdown`` factor (1: none) of a node of the class named ``node_class``, as the
    chaos controller journals it (``chaos.slowdown`` picks nodes by their class's kind)."""
    kind = scenario.node_classes[node_class].kind
    return slowdown_factor(scenario.chaos.slowdown, scenario.seed, node_id, kind)


def class_flags(
    scenario: Scenario, node_class: str, broker_url: str, node_id: str | None = None
) -> list[str]:
    """The agent flags every node of the class named ``node_class`` gets, from ``--node-class``
    (its kind: what the agent announces) on (the run and node id come before them): what the
    master launches and what a compose file starts. With ``node_id``, its bandwidth flags are
    that node's (slowed by its ``chaos.slowdown`` factor)."""
    named = scenario.node_classes[node_class]
    spec = named.spec
    shares = NodeShares.of(scenario, spec) if node_id is None else node_shares(scenario, node_id, node_class)
    return [
        *("--node-class", named.kind, "--broker", broker_url),
        *("--slots", str(spec.slots), "--memory-mb", str(spec.memory_mb)),
        *("--heartbeat-interval", str(scenario.heartbeat_interval_s)),
        *([] if scenario.cluster.warm_workers else ["--lazy-workers"]),
        *shares.agent_flags(),
    ]


def refuse_slowdown(scenario: Scenario, backend: str) -> None:
    """Slow nodes (``chaos.slowdown``) are enforced by the simulator and, in faithful mode, by the
    local and Docker backends (a slowed node's CPU quota and token buckets); elsewhere a run would
    not be slowed, so it is refused (docs/speculation.md)."""
    if backend not in ("local", "docker"):
        raise ScenarioError(
            [f"chaos.slowdown: --backend {backend} does not enforce slow nodes (the nodes are started "
             "by another deployment): run with --backend local, docker or sim"]
        )  # fmt: skip
    if not scenario.fidelity.faithful:
        raise ScenarioError(
            ["chaos.slowdown: a real run enforces slow nodes by their CPU quota, which only "
             "fidelity.mode: faithful sets: set fidelity.mode: faithful or run with --backend sim"]
        )  # fmt: skip
    if by_processes(scenario) and backend != "local":
        raise ScenarioError(
            [f"chaos.slowdown.straggler: processes runs beside local nodes only, not --backend {backend}: "
             "run with --backend local or sim, or set straggler: quota"]
        )  # fmt: skip


def refuse_replication(scenario: Scenario, backend: str, source: object) -> None:
    """Input replicas (``jobs[].input_replication``) on a real backend: the local agents copy
    each file split to its holders and read it from there (``testbed.workloads.replica_input``);
    a generated split has no bytes to copy, and a Docker or attached node may not see the
    source files, so those are left to the simulator (docs/firmament.md, "Data locality")."""
    for index, job in enumerate(scenario.jobs):
        if job.input_replication is None:
            continue
        if backend != "local":
            raise ScenarioError(
                [f"{source}: jobs.{index}.input_replication: --backend {backend} does not place input "
                 "replicas on its nodes: remove it or run with --backend local or sim"]
            )  # fmt: skip
        if getattr(job, "input", None) is None:
            raise ScenarioError(
                [f"{source}: jobs.{index}.input_replication: a real run replicates file inputs only: "
                 f"give jobs.{index}.input (a file, a directory or a glob) or run with --backend sim"]
            )  # fmt: skip
