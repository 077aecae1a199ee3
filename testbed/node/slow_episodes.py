"""Slowdown episodes on a real node (``chaos.slowdown.episodes``, faithful mode).

An episode makes a node ``factor`` times slower than its launch made it: every CPU quota its
launch set in its group (``testbed.node.cgroups``: the node's own, its ``slots`` group's where a
slowed launch set one, its task slots') is divided
by the factor (``SlowQuotas``), and so is the rate of each of its token buckets
(``testbed.node.bandwidth``: NIC and spill; ``SlowBuckets``); both are written back as they
were once the episode is over. The agent's leaf is left as its launch left it. What the launch
set is read once, at a node's first episode, and every later change is computed from it, so a
factor of 1 restores it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from testbed.node.bandwidth import KINDS, SharedBucket, limits_dir
from testbed.node.cgroups import AGENT, PERIOD_US, slot_groups

MIN_QUOTA_US = 1000
"""The kernel's smallest CFS quota."""


@dataclass
class SlowQuotas:
    version: Literal[1, 2]
    launched: dict[Path, dict[Path, int]] = field(default_factory=dict)
    """Each node group's quotas as its launch set them: quota file -> microseconds per period."""

    def slow(self, node: Path, factor: float) -> dict[Path, int]:
        """Make the node's quotas its launch's divided by ``factor`` (1: its launch's); what
        was written."""
        launched = self.launched.get(node)
        if launched is None:
            launched = self.launched[node] = self._read(node)
        written = {path: max(MIN_QUOTA_US, round(quota / factor)) for path, quota in launched.items()}
        for path, quota in written.items():
            value = str(quota) if self.version == 1 else f"{quota} {PERIOD_US}"
            path.write_text(value)
        return written

    def forget(self, node: Path) -> None:
        """The node is gone."""
        self.launched.pop(node, None)

    def _read(self, node: Path) -> dict[Path, int]:
        children = [g for g in node.iterdir() if g.is_dir() and g.name != AGENT]
        groups = [node, *sorted(children), *slot_groups(node)]  # the slots, one level further down
        quotas = {}
        for group in groups:
            path = group / ("cpu.cfs_quota_us" if self.version == 1 else "cpu.max")
            quota = path.read_text().split()[0] if path.exists() else "max"  # a v2 file not written
            if quota not in ("max", "-1"):
                quotas[path] = int(quota)
        return quotas


@dataclass
class SlowBuckets:
    launched: dict[Path, dict[str, float]] = field(default_factory=dict)
    """Each node directory's bucket rates as its agent made them (bytes a second)."""

    def slow(self, node_dir: Path, factor: float) -> dict[str, float]:
        """Make the node's bucket rates its agent's divided by ``factor``; what was written."""
        directory = limits_dir(node_dir)
        buckets = {kind: SharedBucket(directory / kind) for kind in KINDS if (directory / kind).exists()}
        try:
            launched = self.launched.setdefault(
                node_dir, {kind: bucket.rate_bytes_s for kind, bucket in buckets.items()}
            )
            written = {kind: rate / factor for kind, rate in launched.items() if kind in buckets}
            for kind, rate in written.items():
                buckets[kind].set_rate(rate)
        finally:
            for bucket in buckets.values():
                bucket.close()
        return written

    def forget(self, node_dir: Path) -> None:
        """The node is gone."""
        self.launched.pop(node_dir, None)
