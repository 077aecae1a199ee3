"""The cluster setting `policy.strategy: auto`'s cost model is asked about in the tests: Pado's
reserved/transient split under a named lifetime."""

from __future__ import annotations

from master.recovery.auto_cost import Setting
from testbed.chaosmodels.lifetimes import parse_lifetime
from testbed.scenario.simulation import SimulationSpec


def pado_cluster(lifetime: str, trace_s_per_run_s: float = 1.0) -> Setting:
    """Pado's cluster (scenarios/papers/pado.yaml: 5 reserved + 40 transient, 4 slots, 1 Gb/s;
    spark-checkpoint's readers fetch its copies back)."""
    return Setting(
        nodes={"reserved": 5, "transient": 40},
        slots={"reserved": 20, "transient": 160},
        nic_mb_s={"reserved": 1e9 / 8 / 2**20, "transient": 1e9 / 8 / 2**20},
        simulation=SimulationSpec(),
        lifetime=parse_lifetime(lifetime),
        trace_s_per_run_s=trace_s_per_run_s,
        detection_s=SimulationSpec().will_delay,
        fetch_back=True,
    )
