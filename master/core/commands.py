"""What the master's core asks its shell to do: commands are data.

``MasterCore.handle`` returns them in the order they are to be carried out. The
real shell (``master.shell.master``) publishes, writes the journal file, renames output
files, launches and kills nodes and asks agents over HTTP; a simulator models the
same commands. Times in them are run seconds, stamped by the core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from master.core.events import ProbePurpose
from testbed.wire.protocol import Message

LogLevel = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Send:
    """Publish ``message`` to the node (the real shell signs it for that node first)."""

    node_id: str
    message: Message


@dataclass(frozen=True, slots=True)
class Journal:
    """Append one journal event (``testbed.journal.schema`` checked it already) at run time ``t``; the
    writer adds the table row it makes, if any (``testbed.journal.tables.ROWS_FROM_EVENTS``)."""

    t: float
    kind: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StartNode:
    """Launch a node of the class (the core journaled ``node_launching`` already)."""

    node_id: str
    node_class: str
    ordinal: int


@dataclass(frozen=True, slots=True)
class NameNode:
    """Tell the agent on ``host`` (attach mode) that it is ``node_id`` (``NodeNamed``, with its
    credentials sealed under ``key``, the agent's own, by the shell); its provider adopts it."""

    host: str
    incarnation: str
    node_id: str
    key: str = ""


@dataclass(frozen=True, slots=True)
class KillNode:
    """Kill the node for real (SIGKILL, disk destroyed), if the provider owns it."""

    node_id: str


@dataclass(frozen=True, slots=True)
class SlowNode:
    """Make the node ``factor`` times slower than its own ``chaos.slowdown`` factor (a slowdown
    episode; 1: back to its own), if the provider owns it: its CPU quota, in the simulator its cores."""

    node_id: str
    factor: float


@dataclass(frozen=True, slots=True)
class ReleaseNode:
    """Stop the node gracefully, if the provider owns it."""

    node_id: str


@dataclass(frozen=True, slots=True)
class Probe:
    """Ask the agent's ``/health`` whether this incarnation lives; answer with ``ProbeAnswered``."""

    node_id: str
    url: str
    incarnation: str
    purpose: ProbePurpose
    session: int = 0


@dataclass(frozen=True, slots=True)
class CommitOutput:
    """Move the attempt's staged part file into place (the core journals ``output_committed``)."""

    job_id: str
    index: int
    attempt: int


@dataclass(frozen=True, slots=True)
class PrepareJob:
    """Make the job's output directory. ``keep``: a restored job's committed partitions; every
    other file there (an upload of an attempt that died, an uncommitted part) is removed."""

    job_id: str
    keep: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class PlanJob:
    """Plan the scenario's ``ordinal``-th job (``spec``, its seed ``seed``): size its inputs (which
    reads them) and its stages' memory; answer with ``JobPlanned``, or ``JobPlanFailed`` if it
    cannot be planned, before any other event (the core's due timers wait for the answer)."""

    ordinal: int
    spec: Any
    seed: int


@dataclass(frozen=True, slots=True)
class Log:
    """Say ``message`` on the master's console log at ``level`` (the run's journal has its own
    events for what the analyses read)."""

    level: LogLevel
    message: str


@dataclass(frozen=True, slots=True)
class RunFile:
    """Write a text file under the run directory (a job's DAG description: ``dags/<job>.json``)."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class WakeAt:
    """Deliver ``Wake()`` at run time ``t`` (a later one may be earlier; a spurious Wake is harmless)."""

    t: float


@dataclass(frozen=True, slots=True)
class WantRound:
    """Deliver ``Round()`` soon (at most one is outstanding)."""


@dataclass(frozen=True, slots=True)
class ClusterUp:
    """The initial cluster is up: the shell sets time 0 and delivers ``Begin``."""


@dataclass(frozen=True, slots=True)
class RunOver:
    """Every job has ended (or the run was aborted): the shell stops."""

    ok: bool


@dataclass(frozen=True, slots=True)
class LocateOutput:
    """Say where job ``job_id``'s committed output is (it succeeded): the input of the chained
    job ``ordinal``; answer with ``OutputLocated``."""

    job_id: str
    ordinal: int


@dataclass(frozen=True, slots=True)
class Evicted:
    """The answer to an ``EvictRequest``: the nodes evicted, or (``refused``) why none was."""

    nodes: tuple[str, ...]
    refused: Literal["not_running", "foreign"] | None = None
    error: str = ""


Command = (
    Send
    | Journal
    | StartNode
    | NameNode
    | KillNode
    | SlowNode
    | ReleaseNode
    | Probe
    | CommitOutput
    | PrepareJob
    | PlanJob
    | Log
    | RunFile
    | WakeAt
    | WantRound
    | ClusterUp
    | RunOver
    | LocateOutput
    | Evicted
)
