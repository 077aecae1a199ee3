"""Co-located VMs as slow nodes: ``chaos.slowdown.colocation`` presets (docs/speculation.md).

``ec2-2008`` is LATE's heterogeneous EC2 cluster (Zaharia et al., OSDI'08). Its Table 3 puts 243
VMs on 99 physical hosts (40 hosts with one VM, 20 with two, 15 with three, 10 with four, 8 with
five, 4 with six, 2 with seven); its Table 2 measured a VM's disk writes by how many VMs shared
its host (61.8 MB/s alone down to 24.8 MB/s seven to a host). A class's nodes are laid over the
table's 243 VM places in an order shuffled by the scenario's seed (a node's ordinal picks its
place; every further 243 nodes take a fresh copy of the table, shuffled again), and a node's
factor is the isolated VM's rate over its host's: 1 alone, 61.8 / 24.8 = 2.49 seven to a host.
A cluster of fewer than 243 nodes shares its hosts with VMs that are not its own, as LATE's did.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

HOSTS_BY_VMS = {1: 40, 2: 20, 3: 15, 4: 10, 5: 8, 6: 4, 7: 2}
"""LATE's Table 3: how many hosts had each number of VMs (99 hosts, 243 VMs)."""

WRITE_MB_S = {1: 61.8, 2: 56.5, 3: 53.6, 4: 46.4, 5: 34.2, 6: 25.4, 7: 24.8}
"""LATE's Table 2: a VM's dd write rate by the number of VMs on its host."""

TABLE_HOSTS = sum(HOSTS_BY_VMS.values())


@dataclass(frozen=True)
class Place:
    host: int
    """The host's index in the layout (its copy of the table's hosts counted on: 99 per copy)."""
    vms: int
    """How many VMs share that host."""

    @property
    def factor(self) -> float:
        """How many times slower than an isolated VM's disk a VM on this host writes."""
        return WRITE_MB_S[1] / WRITE_MB_S[self.vms]


def _table_places() -> list[Place]:
    """The table's 243 VM places, host by host."""
    places = []
    host = 0
    for vms, hosts in HOSTS_BY_VMS.items():
        for _ in range(hosts):
            places.extend(Place(host, vms) for _ in range(vms))
            host += 1
    return places


TABLE_PLACES = tuple(_table_places())


@lru_cache(maxsize=64)
def _layout(seed: int, node_class: str, copy: int) -> tuple[Place, ...]:
    """One copy of the table, its places in the order the class's nodes take them."""
    places = [Place(p.host + copy * TABLE_HOSTS, p.vms) for p in TABLE_PLACES]
    random.Random(f"{seed}:colocation:{node_class}:{copy}").shuffle(places)
    return tuple(places)


def place(seed: int, node_class: str, ordinal: int) -> Place:
    """Where the class's node of this ordinal runs under ``ec2-2008``."""
    copy, index = divmod(ordinal, len(TABLE_PLACES))
    return _layout(seed, node_class, copy)[index]


def colocation_factor(seed: int, node_id: str) -> float:
    """The factor of the node ``<class>-<ordinal>`` (its host's sharing)."""
    node_class, _, ordinal = node_id.rpartition("-")
    return place(seed, node_class, int(ordinal)).factor
