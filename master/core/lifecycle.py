"""The lifecycles of a node, a task and a job: each one explicit transition table.

As in h11's connection state machine, a table maps each state to the events it
accepts and the state each leads to; anything else is a bug in the caller and
raises ``IllegalTransition`` at once, rather than leaving a task or node in a
state nothing else expects. The state-holding records (``TaskRecord`` and
``JobRuntime`` in ``master.core.jobs``, ``NodeRecord`` in ``master.core.nodes``) check
every assignment of their status against their table (``Lifecycle.check``),
and the code that changes a status names the event (``Lifecycle.next``). The statuses
are the plugin API's (``testbed.api``), which strategies read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from testbed.api.strategy import JobStatus, NodeStatus, TaskStatus

S = TypeVar("S", bound=str)
E = TypeVar("E", bound=str)


class IllegalTransition(RuntimeError):
    """A state change its lifecycle's table does not allow."""


@dataclass(frozen=True)
class Lifecycle(Generic[S, E]):
    name: str
    table: Mapping[S, Mapping[E, S]]
    """state -> {event: next state}; a state with no events is terminal."""
    _edges: frozenset[tuple[str, str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        edges = {(old, new) for old, events in self.table.items() for new in events.values()}
        unknown = {new for _, new in edges} - set(self.table)
        if unknown:
            raise ValueError(f"{self.name} lifecycle: transitions into undeclared states {sorted(unknown)}")
        object.__setattr__(self, "_edges", frozenset(edges))

    def next(self, state: S, event: E) -> S:
        """The state ``event`` leads to from ``state``; ``IllegalTransition`` if none."""
        try:
            return self.table[state][event]
        except KeyError:
            raise IllegalTransition(f"{self.name}: no '{event}' in state '{state}'") from None

    def check(self, old: str, new: str) -> None:
        """Raise ``IllegalTransition`` unless some event leads from ``old`` to ``new``
        (staying in the same state is always allowed: it changes nothing)."""
        if old != new and (old, new) not in self._edges:
            raise IllegalTransition(f"{self.name}: no transition from '{old}' to '{new}'")

    @property
    def terminal(self) -> frozenset[S]:
        return frozenset(state for state, events in self.table.items() if not events)


TaskEvent = Literal[
    "launch",
    "succeed",
    "succeed_pushing",
    "commit",
    "fail",
    "node_lost",
    "abandon_push",
    "reopen",
    "input_lost",
    "restore_committed",
]

TASK: Lifecycle[TaskStatus, TaskEvent] = Lifecycle(
    "task",
    {
        "pending": {
            "launch": "running",
            "restore_committed": "done",  # a resumed run keeps a committed final partition
        },
        "running": {
            "succeed": "done",
            "succeed_pushing": "pushing",  # Pado: done once its push is committed
            "fail": "pending",
            "node_lost": "pending",
        },
        "pushing": {
            "commit": "done",
            "abandon_push": "pending",  # the push failed or was superseded: compute it again
            "node_lost": "pending",
        },
        "done": {
            "input_lost": "pending",  # lineage: its lost output is needed again
            "reopen": "pending",  # Pado: the receiver holding its commit was lost
        },
    },
)

NodeEvent = Literal["joined", "drain", "undrain", "lost", "released", "run_ended"]

NODE: Lifecycle[NodeStatus, NodeEvent] = Lifecycle(
    "node",
    {
        "launching": {"joined": "up", "lost": "lost", "released": "gone", "run_ended": "gone"},
        "up": {"drain": "draining", "lost": "lost", "released": "gone", "run_ended": "gone"},
        "draining": {"undrain": "up", "lost": "lost", "released": "gone", "run_ended": "gone"},
        "lost": {},
        "gone": {},
    },
)

JobEvent = Literal["start", "succeed", "fail"]

JOB: Lifecycle[JobStatus, JobEvent] = Lifecycle(
    "job",
    {
        "waiting": {"start": "running", "succeed": "succeeded", "fail": "failed"},
        "running": {"succeed": "succeeded", "fail": "failed"},
        "succeeded": {},
        "failed": {},
    },
)
