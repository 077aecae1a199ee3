"""The node-provider interface: launch, evict, release and clean up nodes of one run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class NodeSpec:
    """One node to start, built once by its caller (``master.shell.node_start``) and handed to
    every provider's ``launch`` as it is."""

    node_id: str
    node_class: str
    """Its class's name (``reserved``, ``transient`` or a named class): its Docker label."""
    slots: int
    memory_mb: int
    cpus: float | None
    """Its CPU limit in cores (None: no limit)."""
    command: tuple[str, ...]
    """Its agent's command line, without the placement flags the provider appends."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Its agent's environment, secrets (``testbed.node.processes.SECRET_ENV``) included."""
    slowdown: float = 1.0
    """How many times slower its tasks run (``chaos.slowdown``): their quota is ``cpus / slowdown``."""


class ForeignNodeError(Exception):
    """A request named a node (process or container) that does not belong to this run."""


class NodeProvider(Protocol):
    run_id: str

    async def launch(self, spec: NodeSpec) -> None:
        """Start the node ``spec`` describes: its agent's command line with the provider's
        placement flags, held to its ``cpus`` with its tasks ``slowdown`` times slower."""

    async def evict(self, node_id: str) -> None:
        """Kill the node with SIGKILL and destroy its node-local disk. A provider that can kill
        without waiting (local) sends the kill as it is called, before the first await."""

    async def release(self, node_id: str) -> None:
        """Stop the node gracefully (SIGTERM), then remove it."""

    async def straggle(self, node_id: str, factor: float, slots: int) -> None:
        """Make the node ``factor`` times slower by processes beside its tasks
        (``chaos.slowdown.straggler: processes``): the local backend's; refused elsewhere."""

    async def slow(self, node_id: str, factor: float) -> None:
        """Make the node ``factor`` times slower than its launch made it (a slowdown episode;
        1: as launched). The backends that enforce slow nodes (local, Docker: their CPU
        groups) do; the preflight refuses ``chaos.slowdown`` elsewhere."""

    async def close(self) -> None:
        """Remove every node of this run; touch nothing else."""

    def owns(self, node_id: str) -> bool:
        """Whether the node is one of this run's live nodes."""


@runtime_checkable
class AdoptingProvider(NodeProvider, Protocol):
    """A provider of nodes someone else started (compose, Swarm), named by the master."""

    def adopt(self, node_id: str, host: str) -> None:
        """The node whose hostname is ``host`` is ``node_id`` from now on."""

    async def agents_report(self) -> str:
        """One line: what compose or Swarm reports of the run's agent containers or tasks."""

    async def node_report(self, node_id: str) -> str:
        """One line: the state, health and last log lines of an adopted node's container."""
