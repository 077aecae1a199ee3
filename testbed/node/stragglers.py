"""LATE's straggler recipe (``chaos.slowdown.straggler: processes``; docs/speculation.md).

LATE made its stragglers by running CPU- and disk-intensive processes beside a node's tasks
rather than by slowing the node. Here a node ``factor`` times slower keeps its launch quota and
gets, in a leaf of its own CPU group (``straggler``, beside its slots), ``(factor - 1) x slots``
busy loops (rounded up) and a disk writer, the leaf weighted as many slots: while the node's
slots are busy the kernel hands them ``1 / factor`` of the node's quota and the loops the rest,
both where the threads share host CPUs (by the weights) and where they run side by side until
the quota throttles them all (by their number). The loops are held by the node's quota as its
tasks are, so no other node is slowed.

The disk writer (LATE's ``dd`` loop) writes 64 MiB files in the node's directory, each MiB
booked on the node's spill bucket (``testbed.node.bandwidth``) as a spill is: it takes the
node's spill bandwidth, and the host's disk no more than that; a node without a spill bucket
gets no writer. ``python -m testbed.node.stragglers`` runs them, in a process group its caller
kills with the node's; each dies with its parent too.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

from testbed.node.bandwidth import NodeLimits, limits_dir
from testbed.node.cgroups import join
from testbed.node.processes import die_with, die_with_parent

STRAGGLER = "straggler"
"""The leaf of a node's group the straggler processes run in."""
WEIGHTS = {1: ("cpu.shares", 1024, 262_144), 2: ("cpu.weight", 100, 10_000)}
"""Each version's weight file, its default (a slot's) and its largest."""
CHUNK = 2**20
FILE_CHUNKS = 64
MAX_LOOPS = 64


def straggler_group(version: int, node: Path, slots: int, factor: float) -> Path:
    """The node's ``straggler`` leaf, weighted ``factor - 1`` times its ``slots`` slots together."""
    name, default, largest = WEIGHTS[version]
    group = node / STRAGGLER
    group.mkdir(exist_ok=True)
    weight = min(largest, max(1, round((factor - 1) * slots * default)))
    (group / name).write_text(str(weight))
    return group


def busy_loops(factor: float, slots: int) -> int:
    """``(factor - 1) x slots`` loops, rounded up (at most ``MAX_LOOPS``): one slot's task then
    shares the quota with ``factor - 1`` loops of equal weight."""
    return min(MAX_LOOPS, max(1, math.ceil((factor - 1) * slots - 1e-9)))


def command(group: Path, node_dir: Path, factor: float, slots: int) -> list[str]:
    """The straggler processes of a node whose group's leaf is ``group``."""
    return [sys.executable, "-m", __name__, str(group), str(node_dir), str(busy_loops(factor, slots))]


def spin() -> None:
    while True:
        pass


def write_paced(node_dir: Path) -> None:
    """Write ``FILE_CHUNKS`` MiB files over and over, each MiB booked on the node's spill bucket
    first; no byte is written while there is no bucket (the agent makes it as it starts)."""
    data, path = b"\0" * CHUNK, node_dir / "straggler.dd"
    while True:
        if not (limits_dir(node_dir) / "disk").exists():
            time.sleep(0.5)
            continue
        limits = NodeLimits.open(node_dir)
        with open(path, "wb") as handle:
            for _ in range(FILE_CHUNKS):
                limits.pace("disk", CHUNK)
                handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        limits.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m testbed.node.stragglers")
    parser.add_argument("group", type=Path)
    parser.add_argument("node_dir", type=Path)
    parser.add_argument("loops", type=int)
    args = parser.parse_args(argv)
    die_with_parent()
    join(args.group)
    me = os.getpid()
    for _ in range(args.loops):
        if os.fork() == 0:
            die_with(me)
            spin()
    write_paced(args.node_dir)


if __name__ == "__main__":
    main()
