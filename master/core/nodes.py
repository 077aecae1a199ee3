"""The master's record of one node: what it is, its lifecycle status, what runs on it.

Its ``status`` follows ``master.core.lifecycle.NODE``: every assignment is checked
against that table, so an illegal change raises at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from master.core.jobs import JobRuntime, TaskKey
from master.core.lifecycle import NODE, NodeStatus
from testbed.api.policy import RunningTask
from testbed.wire.protocol import LaunchTask

_VIEWED = frozenset(
    {
        "status",
        "reserved_for",
        "partition",
        "rebalance_at",
        "launched_t",
        "running",
        "queued",
        "slots",
        "memory_mb",
    }
)
"""The fields a policy sees (``NodeView``): changing one touches the node."""


@dataclass
class NodeRecord:
    node_id: str
    node_class: str
    """Its class's kind, reserved or transient: what policies see (``NodeView.node_class``)."""
    ordinal: int
    launched_t: float
    slots: int
    memory_mb: int
    price_per_hour: float
    status: NodeStatus = "launching"
    class_name: str = ""
    """Its class's name (``cluster.classes.NAME``; its id is ``NAME-<ordinal>``): what the
    settings are keyed by and the journal's ``class``. The kind if not given (the shorthand)."""
    container: str = ""
    """An adopted node's container (its hostname: compose's or Swarm's short id); "" if launched."""
    url: str = ""
    incarnation: str = ""
    session: int = 0
    """The agent's MQTT session we last heard from: Wills of older sessions are stale."""
    last_seen: float = 0.0
    reserved_for: str | None = None
    evicted_at: float | None = None
    rebalance_at: float | None = None
    """When the chaos controller sent the node a rebalance recommendation (wall seconds)."""
    running: dict[str, tuple[JobRuntime, TaskKey]] = field(default_factory=dict)
    partition: Literal["general", "short"] = "general"
    queued: list[str] = field(default_factory=list)
    """The node-side queue (Eagle): pending task ids in enqueue order."""
    launches: dict[str, LaunchTask] = field(default_factory=dict)
    """The launch command of each running task, re-sent after a broker outage."""
    cached_inputs: tuple[tuple[str, int], ...] = ()
    """The agent's task input cache as it last reported it (key, bytes), least recent first."""
    views: dict[str, tuple[int, RunningTask, tuple[int, float] | None]] = field(default_factory=dict)
    """Each running task's snapshot view with its attempt and the score it shows
    (``Master.running_views``' cache)."""
    sent_at: dict[str, float] = field(default_factory=dict)
    """When each running task's launch was last sent (``master.core.liveness.reconcile``'s grace)."""
    strikes: dict[str, int] = field(default_factory=dict)
    """Running tasks that the node's last heartbeats did not list, and in how many."""
    acked: set[str] = field(default_factory=set)
    """Running tasks whose launch the node acknowledged (its ``running`` update)."""
    vanish_resends: dict[str, int] = field(default_factory=dict)
    """How many times each running task's launch was sent again because it was unaccounted for."""
    scores: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Each running task's (attempt, progress score) as the node's heartbeats last reported it."""

    def __post_init__(self) -> None:
        if not self.class_name:
            self.class_name = self.node_class

    def __setattr__(self, name: str, value: Any) -> None:
        state = self.__dict__
        if name in _VIEWED:
            if name == "status" and "status" in state:
                NODE.check(state["status"], value)
            elif name == "running" and type(value) is not _WatchedDict:
                value = _WatchedDict(value, self)
            elif name == "queued" and type(value) is not _WatchedList:
                value = _WatchedList(value, self)
            self.touch()
        object.__setattr__(self, name, value)

    def watch(self, changed: set[str]) -> None:
        """From now on, a change a policy would see adds this node's id to ``changed``
        (``master.core.node_views``)."""
        self.__dict__["_changed"] = changed

    def touch(self) -> None:
        changed = self.__dict__.get("_changed")
        if changed is not None:
            changed.add(self.node_id)

    @property
    def alive(self) -> bool:
        return self.status in ("launching", "up", "draining")

    def track_launch(
        self, task_id: str, task: tuple[JobRuntime, TaskKey], launch: LaunchTask, now: float
    ) -> None:
        """The task was launched here now: kept until it ends (``forget_launch``)."""
        self.running[task_id] = task
        self.launches[task_id] = launch
        self.sent_at[task_id] = now

    def forget_launch(self, task_id: str) -> tuple[JobRuntime, TaskKey] | None:
        """The task no longer runs here (it ended, or it was failed): forget its launch."""
        self.launches.pop(task_id, None)
        self.sent_at.pop(task_id, None)
        self.acked.discard(task_id)
        self.strikes.pop(task_id, None)
        self.vanish_resends.pop(task_id, None)
        self.scores.pop(task_id, None)
        return self.running.pop(task_id, None)


class _WatchedDict(dict[str, tuple[JobRuntime, TaskKey]]):
    """A node's running tasks: a change touches the node."""

    def __init__(self, items: Any, node: NodeRecord) -> None:
        super().__init__(items)
        self.node = node

    def __reduce__(self) -> Any:  # a copy is a plain dict
        return (dict, (dict(self),))


class _WatchedList(list[str]):
    """A node's queue: a change touches the node."""

    def __init__(self, items: Any, node: NodeRecord) -> None:
        super().__init__(items)
        self.node = node

    def __reduce__(self) -> Any:  # a copy is a plain list
        return (list, (list(self),))


def _touching(base: type, name: str) -> Any:
    method = getattr(base, name)

    def touching(self: _WatchedDict | _WatchedList, *args: Any, **kwargs: Any) -> Any:
        self.node.touch()
        return method(self, *args, **kwargs)

    touching.__name__ = name
    return touching


_MUTATORS = ("__setitem__", "__delitem__", "__ior__", "__iadd__", "__imul__", "pop", "popitem", "clear",
             "setdefault", "update", "append", "extend", "insert", "remove", "sort", "reverse")  # fmt: skip
for _watched, _base in ((_WatchedDict, dict), (_WatchedList, list)):
    for _name in _MUTATORS:
        if hasattr(_base, _name):
            setattr(_watched, _name, _touching(_base, _name))
