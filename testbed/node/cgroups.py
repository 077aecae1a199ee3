"""CPU shares of local nodes through Linux control groups, v1 and v2.

Each node gets its own group, ``<base>/<run>/<node>``, with a CFS quota of its cores
(``cpus`` of its class, divided by the run's dilation) per 100 ms period, and under it
the leaf ``agent`` and the group ``slots``, which holds one leaf per task slot,
``slots/slot-<i>``, with a quota of one emulated core (``core``: 1 / dilation of a host
core) when the node has more: a task is one thread, and one thread of a real node runs on
one core at most, however many the node has. The node's quota caps the sum, so tasks that
outnumber its cores share them. A node f times slower (``chaos.slowdown``) keeps its
node quota, and ``slots`` gets ``cores / f`` and each slot ``core / f``: the slowdown is
its tasks', its agent starts and serves at the node's speed (its bandwidth is slowed by
its token buckets). The agent joins the leaf ``agent`` as its first act (``join``), so its
task forkserver is born there (under the node's quota only: serving blocks and pushing are
the node's work, not a slot's), and each task worker moves itself into its slot's leaf as
it takes a task. v2 allows processes only in leaves once a group hands ``cpu`` to its
children; v1 would allow the agent in the node's group itself, and gets the same layout.
The kernel's ``cpu.stat`` then counts the periods the node (its group and ``slots``) was
throttled: the fidelity monitor's evidence that the node got no more than its share.

- v1 (a ``cgroup`` mount with the ``cpu`` controller): ``cpu.cfs_quota_us`` and
  ``cpu.cfs_period_us``, under ``<mount>/testbed``; needs root.
- v2 (the unified ``cgroup2`` mount): ``cpu.max``, with ``+cpu`` enabled in the
  ``cgroup.subtree_control`` of every group above a node. As root, under
  ``<mount>/testbed``; otherwise in a delegated subtree named by ``TESTBED_CGROUP``
  (a group this user owns, with ``cpu`` in its ``cgroup.controllers`` and no process
  in it), e.g. made by ``systemd-run --user -p Delegate=yes``.

Priority: a quota caps a node, it does not guarantee it the CPU when other processes
of the host want it too. So ``<base>`` gets the highest weight (v1 ``cpu.shares``, v2
``cpu.weight``), and the master and its broker run in ``<base>/<run>/control``
(``control_plane``) for the run's length: on a busy host the run's processes are served
first, each node up to its quota, and the run is slowed by no one but itself.

``detect`` finds a usable one or raises ``CgroupUnavailable`` with one line saying how
to enable it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

PERIOD_US = 100_000
AGENT = "agent"
"""The leaf of a node's group the agent (and its task forkserver) runs in."""
SLOTS = "slots"
"""The group of a node's task slot leaves: a slowed node's tasks' quota."""
TOP_WEIGHT = {1: ("cpu.shares", "262144"), 2: ("cpu.weight", "10000")}
"""The largest weight of each version: ``<base>`` wins the host's CPU over other processes."""
CONTROL = "control"
ENV_BASE = "TESTBED_CGROUP"
log = logging.getLogger(__name__)
HOW_TO = (
    "run as root (cgroup v1 or v2), or give a delegated cgroup v2 subtree in "
    f"{ENV_BASE} (a group you own, cpu in its cgroup.controllers), or set "
    "fidelity.mode: unisolated to run without CPU isolation"
)


class CgroupUnavailable(Exception):
    """No writable CPU controller here; the message is one line saying how to get one."""


@dataclass(frozen=True)
class CpuStats:
    periods: int
    throttled_periods: int
    throttled_s: float

    @property
    def throttled_ratio(self) -> float:
        return self.throttled_periods / self.periods if self.periods else 0.0

    def __add__(self, other: CpuStats) -> CpuStats:
        return CpuStats(
            self.periods + other.periods,
            self.throttled_periods + other.throttled_periods,
            self.throttled_s + other.throttled_s,
        )


def agent_group(node: Path) -> Path:
    return node / AGENT


def slots_group(node: Path) -> Path:
    return node / SLOTS


def slot_group(node: Path, slot: int) -> Path:
    return slots_group(node) / f"slot-{slot}"


def slot_groups(node: Path) -> list[Path]:
    return sorted(slots_group(node).glob("slot-*"))


@dataclass(frozen=True)
class CpuCgroups:
    """The groups of one run: ``base/<run>/<node>/{agent,slots/slot-<i>}``."""

    version: Literal[1, 2]
    base: Path
    core: float = 1.0
    """One emulated core in host cores (1 / the run's dilation): what a task slot may use."""

    def run_dir(self, run_id: str) -> Path:
        return self.base / run_id

    def create(self, run_id: str, node_id: str, cores: float, slots: int, slowdown: float = 1.0) -> Path:
        """The node's group, with a quota of ``cores`` (a fraction is fine), its ``agent``
        leaf and its ``slots`` group, with a leaf per task slot with a quota of ``core``. Where
        ``core`` is no less than the node's ``cores`` the node's quota is the slot's, and the
        slot gets none of its own: a quota nested in an equal one only costs (2 to 3% of a
        CPU-bound task's rate, measured: each level hands its runtime out in per-CPU slices).
        A node ``slowdown`` times slower (``chaos.slowdown``) keeps its ``cores``; the ``slots``
        group gets ``cores / slowdown`` and each slot ``core / slowdown``: its tasks together,
        and one task alone on it, are slowed, its agent is not."""
        node_dir = self._group(run_id, node_id)
        self._limit(node_dir, cores)
        slots_dir = slots_group(node_dir)
        agent_group(node_dir).mkdir(exist_ok=True)
        slots_dir.mkdir(exist_ok=True)
        if self.version == 2:  # their children may get cpu.max; no process may stay in them from now on
            for group in (node_dir, slots_dir):
                _write(group / "cgroup.subtree_control", "+cpu")
        tasks_cores = cores / slowdown
        if slowdown > 1:
            self._limit(slots_dir, tasks_cores)
        slot_cores = self.core / slowdown
        for slot in range(slots):
            slot_group(node_dir, slot).mkdir(exist_ok=True)
            if slot_cores < tasks_cores:
                self._limit(slot_group(node_dir, slot), slot_cores)
        return node_dir

    def _limit(self, group: Path, cores: float) -> None:
        quota = max(1000, round(cores * PERIOD_US))
        if self.version == 1:
            _write(group / "cpu.cfs_period_us", str(PERIOD_US))
            _write(group / "cpu.cfs_quota_us", str(quota))
        else:
            _write(group / "cpu.max", f"{quota} {PERIOD_US}")

    def _group(self, run_id: str, name: str) -> Path:
        """``<base>/<run>/<name>``, its parents made (v2: with the cpu controller delegated)."""
        run_dir = self.run_dir(run_id)
        if self.version == 2:
            for parent in (self.base, run_dir):  # a group's controllers come from its parent
                parent.mkdir(parents=True, exist_ok=True)
                _write(parent / "cgroup.subtree_control", "+cpu")
        (run_dir / name).mkdir(parents=True, exist_ok=True)
        return run_dir / name

    def prioritise(self) -> bool:
        """Give ``<base>`` the top weight; False where this user may not (a delegated subtree's
        own weight is its parent's to set)."""
        name, value = TOP_WEIGHT[self.version]
        try:
            _write(self.base / name, value)
        except OSError:
            return False
        return True

    def stats(self, group: Path) -> CpuStats:
        fields = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines() if " " in line)
        if self.version == 1:
            throttled_s = int(fields.get("throttled_time", 0)) / 1e9
        else:
            throttled_s = int(fields.get("throttled_usec", 0)) / 1e6
        return CpuStats(int(fields.get("nr_periods", 0)), int(fields.get("nr_throttled", 0)), throttled_s)

    def node_stats(self, node: Path) -> CpuStats:
        """The counters of a node's group and its ``slots`` group (a slowed node's tasks' quota;
        none counted where it has no quota), totalled."""
        return self.stats(node) + self.stats(slots_group(node))

    def slot_stats(self, node: Path) -> CpuStats:
        """The counters of a node's slot groups, totalled (none counted where slots have no quota)."""
        return sum((self.stats(slot) for slot in slot_groups(node)), CpuStats(0, 0, 0.0))

    def stats_so_far(
        self, gone: dict[str, CpuStats], groups: Iterable[tuple[str, Path]], slots: bool = False
    ) -> dict[str, CpuStats]:
        """Each node's counters: those kept of nodes gone, then read from the live ``groups``
        (node id, node group) by ``slot_stats`` or ``node_stats``; a group just removed is skipped."""
        read = self.slot_stats if slots else self.node_stats
        stats = dict(gone)
        for node_id, group in groups:
            with contextlib.suppress(OSError):
                stats[node_id] = read(group)
        return stats

    async def retire(
        self,
        node_id: str,
        group: Path,
        gone: tuple[dict[str, CpuStats], dict[str, CpuStats]],
        remove: Callable[[], bool],
    ) -> bool:
        """Keep a node's last counters in ``gone`` (the node's, its slots'), then ``remove()``
        its group once its processes are gone (killed task workers take a moment to exit):
        False if they still held it after about 5 s."""
        with contextlib.suppress(OSError):
            gone[0][node_id] = self.node_stats(group)
            gone[1][node_id] = self.slot_stats(group)
        for _ in range(100):
            if await asyncio.to_thread(remove):
                return True
            await asyncio.sleep(0.05)
        return False

    def delegate(self, node: Path, uid: int) -> None:
        """Let the user ``uid`` (a container's agent) move its own processes into the node's
        leaves: v1 asks for write access to the target group's ``cgroup.procs``, v2 to the
        source's and target's common ancestor's too (the node's). Nothing else becomes its."""
        files = [agent_group(node) / "cgroup.procs", *(slot / "cgroup.procs" for slot in slot_groups(node))]
        if self.version == 2:
            files.append(node / "cgroup.procs")
        for path in files:
            os.chown(path, uid, -1)

    def cap_memory(self, node: Path, limit_bytes: int) -> None:
        """v2: the node's memory limit, without swap, on its group: a container's task workers
        leave its own group (and its memory limit) for their slots', in every controller at
        once. v1 moves them in the cpu hierarchy only, and needs nothing."""
        if self.version != 2:
            return
        for parent in (self.base, node.parent):  # a group's controllers come from its parent
            _write(parent / "cgroup.subtree_control", "+memory")
        _write(node / "memory.max", str(limit_bytes))
        with contextlib.suppress(FileNotFoundError):  # no swap accounting: no swap to forbid
            _write(node / "memory.swap.max", "0")

    @staticmethod
    def remove(group: Path) -> bool:
        """Remove a group and its child groups once no process is left in any of them
        (False while one is: nothing of a busy group is removed)."""
        try:
            children = [child for child in group.iterdir() if child.is_dir()]
            if (group / "cgroup.procs").read_text().strip():
                return False
        except FileNotFoundError:
            return True
        if not all(CpuCgroups.remove(child) for child in children):
            return False
        try:
            os.rmdir(group)
        except FileNotFoundError:
            pass
        except OSError as exc:  # a process came in meanwhile
            if exc.errno != errno.EBUSY:
                raise
            return False
        return True

    def remove_run(self, run_id: str) -> None:
        """The run's group, once its nodes' groups are gone."""
        with contextlib.suppress(OSError):
            os.rmdir(self.run_dir(run_id))


def join(group: Path, pid: int | None = None) -> None:
    """Move a process (default: this one) into ``group``; its children are born there."""
    _write(group / "cgroup.procs", str(pid or os.getpid()))


@contextlib.contextmanager
def control_plane(cgroups: CpuCgroups, run_id: str) -> Iterator[bool]:
    """Run the block (the master, and the broker and agents it starts) in the run's
    top-weight ``control`` group, then move this process back where it was.

    Yields whether the run's processes have priority over the host's other ones: False
    when ``<base>``'s weight or the move is refused (the run goes on, unprioritised).
    """
    origin = own_group(cgroups.version)
    moved = False
    if origin is not None and not origin.is_relative_to(cgroups.base):  # not a run inside a run
        try:
            if cgroups.prioritise():
                join(cgroups._group(run_id, CONTROL))
                moved = True
        except OSError as exc:
            log.warning("the control plane runs without CPU priority: %s", exc)
    try:
        yield moved
    finally:
        if moved and origin is not None:
            with contextlib.suppress(OSError):
                join(origin)
        with contextlib.suppress(OSError):
            os.rmdir(cgroups.run_dir(run_id) / CONTROL)
        cgroups.remove_run(run_id)


def hierarchy_path(group: Path, mounts: str | None = None) -> str:
    """``group`` as its hierarchy names it, from its root: a container engine's ``cgroup_parent``."""
    for mount in _mount_points(Path("/proc/self/mounts").read_text() if mounts is None else mounts):
        if mount is not None and group.is_relative_to(mount):
            return "/" + str(group.relative_to(mount))
    raise ValueError(f"{group} is in no mounted CPU hierarchy")


def remove_everywhere(path: str, mounts: str | None = None) -> bool:
    """Remove the group ``path`` (a hierarchy path, see ``hierarchy_path``) and its child groups
    from every mounted hierarchy, once they hold no process: a container engine given a
    ``cgroup_parent`` makes it in each of its controllers' (v1), and removes only the
    container's own group. False while a process is left in one of them."""
    table = Path("/proc/self/mounts").read_text() if mounts is None else mounts
    roots = [
        Path(fields[1])
        for fields in map(str.split, table.splitlines())
        if fields[2:3] in (["cgroup"], ["cgroup2"])
    ]
    return all([CpuCgroups.remove(root / path.lstrip("/")) for root in roots])


def own_group(version: int, table: str | None = None, mounts: str | None = None) -> Path | None:
    """The group this process is in, in the hierarchy of ``version`` (None if not found)."""
    table = Path("/proc/self/cgroup").read_text() if table is None else table
    v1, v2 = _mount_points(Path("/proc/self/mounts").read_text() if mounts is None else mounts)
    for line in table.splitlines():
        number, controllers, path = line.split(":", 2)
        if version == 1 and v1 is not None and "cpu" in controllers.split(","):
            return v1 / path.lstrip("/")
        if version == 2 and v2 is not None and number == "0" and not controllers:
            return v2 / path.lstrip("/")
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def detect(mounts: Path = Path("/proc/self/mounts")) -> CpuCgroups:
    """A writable CPU controller: ``TESTBED_CGROUP`` (v2), else v1's or v2's as root."""
    given = os.environ.get(ENV_BASE)
    if given:
        return _probe(CpuCgroups(2, Path(given)))
    v1, v2 = _mount_points(mounts.read_text())
    if v1 is not None:
        return _probe(CpuCgroups(1, v1 / "testbed"))
    if v2 is not None and "cpu" in (v2 / "cgroup.controllers").read_text().split():
        try:  # the root delegates cpu to its children (systemd usually has already)
            if "cpu" not in (v2 / "cgroup.subtree_control").read_text().split():
                _write(v2 / "cgroup.subtree_control", "+cpu")
        except OSError as exc:
            raise CgroupUnavailable(
                f"cannot enable the cpu controller in {v2} ({exc.strerror}): {HOW_TO}"
            ) from None
        return _probe(CpuCgroups(2, v2 / "testbed"))
    raise CgroupUnavailable(f"no cgroup CPU controller is mounted here: {HOW_TO}")


def _mount_points(table: str) -> tuple[Path | None, Path | None]:
    v1 = v2 = None
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        kind, mount, options = fields[2], Path(fields[1]), fields[3].split(",")
        if kind == "cgroup" and "cpu" in options:
            v1 = mount
        elif kind == "cgroup2":
            v2 = mount
    return v1, v2


def _probe(cgroups: CpuCgroups) -> CpuCgroups:
    """Create and remove a throw-away node's groups (a slot quota among them), so a refusal
    comes before any node starts."""
    probe = f"probe-{os.getpid()}"
    try:
        group = replace(cgroups, core=0.5).create(probe, "probe", 1.0, 1)
        if not cgroups.remove(group):
            raise OSError(errno.EBUSY, "a process joined the probe group")
        os.rmdir(group.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            cgroups.remove(cgroups.run_dir(probe) / "probe")
        with contextlib.suppress(OSError):
            os.rmdir(cgroups.run_dir(probe))
        reason = f"cannot make a cgroup under {cgroups.base} ({exc.strerror})"
        raise CgroupUnavailable(f"{reason}: {HOW_TO}") from None
    return cgroups
