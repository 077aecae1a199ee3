"""The scale model: a scenario's ``fidelity`` section and its time dilation.

``mode: faithful`` gives every node the resources it declares and no more: its
``cpus`` as a CPU quota (a cgroup for a local node, ``nano_cpus`` for a container),
its ``network_mbps`` and ``disk_mb_s`` as bandwidth limits where the bytes move
(``testbed.node.bandwidth``). ``mode: unisolated`` (the default) lets nodes share the host
freely, as before.

``dilation`` (DieCast's time dilation) slows the whole emulated cluster by one factor
so that it fits the host: each node gets ``cpus / dilation`` of a core and its
bandwidths divided by ``dilation``, and every trace-time duration is stretched by
``dilation``; reports divide wall seconds by it again (emulated seconds). ``auto``
picks the smallest factor for which the cluster's cores at its peak node count fit the
host's cores left to the master and the broker (``control_plane_cores``).
``priority`` (faithful local runs, on by default) serves the run's processes first on a
busy host (``testbed.node.cgroups.control_plane``).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from testbed.scenario.time_base import divided

CONTROL_PLANE_CORES = 0.5
"""Cores kept for the master and the broker when dilation is ``auto`` (docs/fidelity.md)."""


class FidelitySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["faithful", "unisolated"] = "unisolated"
    dilation: Literal["auto"] | Annotated[float, Field(ge=1, le=1000)] = 1.0
    control_plane_cores: float = Field(
        default=CONTROL_PLANE_CORES, ge=0, description="cores kept for the master and broker (auto dilation)"
    )
    priority: bool = Field(
        default=True,
        description="faithful local runs: the nodes, master and broker get the CPU before the host's other "
        "processes (a quota caps a node; priority makes sure it gets its share on a busy host)",
    )

    @model_validator(mode="after")
    def _dilation_needs_isolation(self) -> FidelitySpec:
        if self.dilation != 1.0 and self.mode != "faithful":
            raise ValueError(
                "dilation slows the nodes' CPU and bandwidth shares, which only a faithful run has: "
                "set mode: faithful, or remove dilation"
            )
        return self

    @property
    def faithful(self) -> bool:
        return self.mode == "faithful"

    @property
    def factor(self) -> float:
        """The resolved dilation (``auto`` must have been resolved by ``auto_dilation``)."""
        if self.dilation == "auto":
            raise RuntimeError("fidelity.dilation is still auto: resolve it for this host first")
        return float(self.dilation)


def auto_dilation(peak_cores: float, host: float, control_plane: float) -> float:
    """The smallest factor (to 0.01) at which ``peak_cores`` fit in ``host - control_plane``."""
    available = host - control_plane
    if available <= 0:
        raise ValueError(
            f"fidelity.control_plane_cores: {control_plane:g} leaves none of this host's {host:g} cores "
            "to the nodes; lower it"
        )
    return max(1.0, math.ceil(peak_cores / available * 100 - 1e-9) / 100)


RATE_SUFFIXES = ("_mb_s", "bytes_s", "_per_s", "_mbps")
PER_WORKLOAD_JCT = "mean_jct_s_"
"""The summary's mean JCT of one workload is ``mean_jct_s_<workload>``: a time, though its
name does not end in ``_s``."""


def wall_name(key: str) -> str:
    """A duration key as the same time in wall seconds names it (summary.json's ``wall``
    block): ``mean_jct_s`` -> ``mean_jct_wall_s``, ``mean_jct_s_sort`` -> ``mean_jct_wall_s_sort``."""
    if key.startswith(PER_WORKLOAD_JCT):
        return f"mean_jct_wall_s_{key[len(PER_WORKLOAD_JCT):]}"
    return f"{key[:-2]}_wall_s" if key.endswith("_s") else f"{key}_wall_s"


TRACE_FIELDS = frozenset({"lifetime_s", "drawn_s", "actual_s"})
"""The journal's fields in trace seconds (a lifetime the model drew, and lived, in the chaos
rules' clock: ``eviction``, ``lifetime_drawn``, ``eviction_timing``); its other times are wall
seconds. A table names the clock in the column (``lifetime_trace_s``)."""


def is_duration_key(key: str) -> bool:
    """Whether a recorded field is a time in seconds (``t``, ``jct_s``, ``mean_jct_s_sort``,
    ...), not a rate."""
    if key in ("t", "seconds") or key.startswith(PER_WORKLOAD_JCT):
        return True
    return key.endswith("_s") and not key.endswith(RATE_SUFFIXES)


def emulated(record: dict[str, Any], dilation: float) -> dict[str, Any]:
    """``record`` (an event, or the summary's figures) with its wall times in emulated seconds
    (wall seconds / dilation; ``TRACE_FIELDS`` and ``_trace_s`` kept); numbers given as text
    (CSV cells) stay text."""
    if dilation == 1.0:
        return dict(record)
    return {
        key: divided(value, dilation) if _wall_key(key) else value for key, value in record.items()
    }


def _wall_key(key: str) -> bool:
    """A time in wall seconds: a duration key, not one in trace seconds."""
    return is_duration_key(key) and key not in TRACE_FIELDS and not key.endswith("_trace_s")
