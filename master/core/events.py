"""What happens to the master: the events its core handles (``MasterCore.handle``).

Each is a frozen dataclass: a stimulus from outside (a node's message, an answer to
a probe, the broker link, the HTTP sink, an operator) or a time the core asked for.
The real shell (``master.shell.master``) and the simulator make them; the core never reads
a clock, so every event is handled at the run time the caller passes with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from master.core.liveness import ProbeOutcome
from testbed.plan import JobPlan
from testbed.scenario.chaos import EvictSpec
from testbed.wire.protocol import Message

ProbePurpose = Literal["silent", "will", "gone"]
"""Why a node's /health is asked: it went silent, the broker published its Will, it said goodbye."""


@dataclass(frozen=True, slots=True)
class FromNode:
    """A decoded protocol message from ``node_id``'s topic."""

    node_id: str
    message: Message


@dataclass(frozen=True, slots=True)
class Wake:
    """A time the core asked for with ``WakeAt`` has come: every due timer runs."""


@dataclass(frozen=True, slots=True)
class Round:
    """Run a scheduling round now (after the messages already received are handled).
    ``defer``: its decisions wait, in flight, for ``RoundLanded`` (the simulator charging
    the round's time to its clock: ``simulation.charge_policy_time``)."""

    defer: bool = False


@dataclass(frozen=True, slots=True)
class RoundLanded:
    """The deferred round's time is over: its decisions that still hold take effect now."""


@dataclass(frozen=True, slots=True)
class Begin:
    """Time 0: the initial cluster is up. ``origin``: the run time (on the clock the core was
    given until now) that becomes 0; the core moves what it remembers by it."""

    origin: float = 0.0


@dataclass(frozen=True, slots=True)
class NodeStartFailed:
    """The node did not come up in time (or its provider could not start it)."""

    node_id: str
    error: str = ""


@dataclass(frozen=True, slots=True)
class ProbeAnswered:
    """The answer to a ``Probe`` command."""

    node_id: str
    purpose: ProbePurpose
    outcome: ProbeOutcome
    session: int = 0


@dataclass(frozen=True, slots=True)
class OutputStaged:
    """The output sink holds that attempt's part file (its upload is complete)."""

    job_id: str
    index: int
    attempt: int


@dataclass(frozen=True, slots=True)
class OutputLocated:
    """The answer to ``LocateOutput``: the chained job ``ordinal``'s input (a glob of the
    parent's committed part files)."""

    ordinal: int
    input: str


@dataclass(frozen=True, slots=True)
class LinkUp:
    """The master's own broker connection is up; ``session`` > 1: it rejoined after an outage."""

    session: int


@dataclass(frozen=True, slots=True)
class LinkDown:
    """The master's own broker connection is down: silence says nothing about the nodes."""


@dataclass(frozen=True, slots=True)
class Abort:
    """End the run now (its broker is gone for good, an internal error, the timeout)."""

    reason: str
    journal: bool = True
    """Whether the core journals ``run_aborted`` (not for a timeout or a crash: the shell says)."""


@dataclass(frozen=True, slots=True)
class Crashed:
    """A policy, a strategy, a plugin or the shell raised on an event: the run ends now, the
    error and its traceback journaled (``master_error``), its unfinished jobs failed."""

    error: BaseException


@dataclass(frozen=True, slots=True)
class JobFailed:
    """The job fails now, saying why (its output does not fit at the master's disk)."""

    job_id: str
    error: str


@dataclass(frozen=True, slots=True)
class JobPlanned:
    """The answer to ``PlanJob``: the ``ordinal``-th job's plan and each stage's ideal memory (MB);
    a sleep job's scaled duration estimate and Eagle class (``estimate_s`` None: no estimate);
    each stage's prior task duration, for a scheduler that reads the exposure (() : none)."""

    ordinal: int
    plan: JobPlan
    stage_memory_mb: tuple[int, ...]
    estimate_s: float | None = None
    long: bool = False
    stage_prior_s: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class JobPlanFailed:
    """The answer to ``PlanJob`` when the job cannot be planned (e.g. its input changed since
    validation): the job fails with ``error``, the run goes on."""

    ordinal: int
    error: str


@dataclass(frozen=True, slots=True)
class EvictRequest:
    """A live eviction (the HTTP API, the CLI, an operator's script): ``nodes`` by name, else
    those ``spec`` picks; ``foreign``: named nodes the shell's provider does not own. The core
    answers with an ``Evicted`` command."""

    spec: EvictSpec
    nodes: tuple[str, ...] | None = None
    foreign: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Stop:
    """The run stops (its jobs ended, or it was aborted): no more evictions or autoscaling,
    and every node alive ends with it (``run_end`` in nodes.csv)."""


Event = (
    FromNode
    | Wake
    | Round
    | RoundLanded
    | Begin
    | NodeStartFailed
    | ProbeAnswered
    | OutputStaged
    | OutputLocated
    | LinkUp
    | LinkDown
    | Abort
    | Crashed
    | JobFailed
    | JobPlanned
    | JobPlanFailed
    | EvictRequest
    | Stop
)
