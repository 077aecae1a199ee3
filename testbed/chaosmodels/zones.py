"""Availability zones: which zone each node of a class is in (docs/chaos.md, "Zones").

A class's ``zones`` maps zone names to node counts (whole numbers summing to the
class's ``count``) or to fractions (summing to 1, apportioned by largest remainder,
ties to the zone listed first). The initial nodes fill the zones in the order
listed; a later node (a replacement, an autoscaler's launch) of ordinal k takes
the zone of ordinal k mod count, so every zone keeps its share. The zone is a pure
function of (class spec, ordinal): plan and run agree without asking each other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

FRACTION_SLOTS = 100
"""How finely fractions are apportioned for a class of no initial nodes."""


def check_zones(zones: Mapping[str, int | float], count: int) -> None:
    """``ValueError`` naming what is wrong with a class's ``zones``."""
    if not zones:
        return
    if any(not name or not name.strip() for name in zones):
        raise ValueError("zones: a zone name must not be empty")
    values = list(zones.values())
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        if any(v < 0 for v in values) or sum(values) != count:
            raise ValueError(
                f"zones: node counts must be >= 0 and sum to the class's count ({count}); "
                f"found {sum(values)}; or give fractions summing to 1"
            )
        return
    if any(not isinstance(v, int | float) or not 0 <= v <= 1 for v in values) or not math.isclose(
        sum(values), 1.0, abs_tol=1e-9
    ):
        raise ValueError(
            f"zones: give node counts summing to the class's count ({count}) or fractions in [0, 1] "
            f"summing to 1; found {dict(zones)}"
        )


def zone_pattern(zones: Mapping[str, int | float], count: int) -> tuple[str, ...]:
    """The zone of each of the first ``count`` ordinals (at least one slot), zones in order."""
    slots = count if count > 0 else FRACTION_SLOTS
    values = list(zones.values())
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values) and sum(values) == slots:
        counts = [int(v) for v in values]
    else:
        total = sum(values)
        shares = [v / total * slots for v in values]
        counts = [math.floor(s) for s in shares]
        by_remainder = sorted(range(len(shares)), key=lambda i: (-(shares[i] - counts[i]), i))
        for i in by_remainder[: slots - sum(counts)]:
            counts[i] += 1
    return tuple(name for name, n in zip(zones, counts, strict=True) for _ in range(n))


def zone_of(zones: Mapping[str, int | float], count: int, ordinal: int) -> str | None:
    """The zone of the class's node ``ordinal``; None without zones."""
    if not zones:
        return None
    pattern = zone_pattern(zones, count)
    return pattern[ordinal % len(pattern)]


def per_zone(
    zones_of_class: Mapping[str, tuple[Mapping[str, int | float], int]], node_ids: list[str]
) -> dict[str, int]:
    """How many of ``node_ids`` (``<class>-<ordinal>``) are in each zone, given each class's
    (zones, count); nodes of a class without zones, or of another name, are not counted."""
    counts: dict[str, int] = {}
    for node_id in node_ids:
        node_class, _, ordinal = node_id.rpartition("-")
        zones, count = zones_of_class.get(node_class, ({}, 0))
        zone = zone_of(zones, count, int(ordinal)) if ordinal.isdigit() else None
        if zone is not None:
            counts[zone] = counts.get(zone, 0) + 1
    return counts
