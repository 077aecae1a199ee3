"""``dilation: auto`` fixed for a host, once, before the run (the resolved factor is what the run
directory's scenario.yaml records, so a resumed run keeps it)."""

from __future__ import annotations

from testbed.scenario.fidelity import auto_dilation
from testbed.scenario.schema import Scenario, ScenarioError
from testbed.settings.policies import added_transient_nodes


def peak_cores(scenario: Scenario) -> float:
    """The cluster's cores at its largest: every node of the scenario plus the autoscaler's budget
    (a replacement starts after its node is gone, so it adds none)."""
    classes = scenario.node_classes.values()
    initial = sum(named.spec.cores * named.spec.count for named in classes)
    added = scenario.of_kind("transient")  # an autoscaler's launch is of the first transient class
    return initial + (added[0].spec.cores * added_transient_nodes(scenario) if added else 0.0)


def resolve_dilation(scenario: Scenario, host_cores: float) -> Scenario:
    """The scenario with ``dilation: auto`` replaced by the factor of a host of ``host_cores``."""
    fidelity = scenario.fidelity
    if fidelity.dilation != "auto":
        return scenario
    try:
        factor = auto_dilation(peak_cores(scenario), host_cores, fidelity.control_plane_cores)
    except ValueError as exc:
        raise ScenarioError([f"{scenario.name}: {exc}"]) from None
    return scenario.model_copy(update={"fidelity": fidelity.model_copy(update={"dilation": factor})})
