"""The public plugin API of transient-testbed: everything a scheduler or autoscaler plugin needs.

A plugin imports only from this module; what is here keeps its name and meaning
within a major ``API_VERSION`` (a new optional capability or field with a default
raises the minor version; a removal or a change of meaning raises the major one).

A policy is pure: it gets an immutable :class:`ClusterSnapshot` (``now`` is a field of
it; a policy never reads the clock, sleeps or does I/O) and returns decisions that the
master applies. Name one in a scenario by import path (``policy.scheduler:
my_module:RandomScheduler``) or by an entry point; see docs/plugins.md.

Interfaces and their optional capabilities (members with a default, inherited by
a plugin that subclasses the Protocol; the master never probes for anything else):

- :class:`Scheduler`: ``schedule(snapshot) -> list[Decision]``; optional
  ``needs_all_pending`` (True: every ready task is in the snapshot; False: a window of the
  first pending tasks of each job, faster for head-of-queue schedulers).
- :class:`Autoscaler`: ``decide(snapshot, provisioning) -> list[ScaleDecision]``;
  optional ``provisioning_delay_s``, ``wake_at(snapshot, provisioning)`` and
  ``facts(snapshot)``.

A plugin class is built with its options as keyword arguments (``policy.options.<name>``
where ``<name>`` is the scenario's ``policy.scheduler``/``policy.autoscaler`` value);
it may declare a pydantic model ``Options`` (a nested class attribute) so that
``testbed validate`` checks them; then it is built with the validated model's fields.
"""

from __future__ import annotations

from testbed.policy import (
    Assign,
    Autoscaler,
    ClusterSnapshot,
    Decision,
    Dequeue,
    Drain,
    Enqueue,
    JobView,
    Launch,
    LogDecision,
    NodeClass,
    NodeView,
    PendingTask,
    Release,
    Reserve,
    RunningTask,
    ScaleDecision,
    Scheduler,
    Undrain,
)

API_VERSION = "1.0"
"""``major.minor`` of this module's contract (see the module docstring)."""

__all__ = [
    "API_VERSION",
    "Assign",
    "Autoscaler",
    "ClusterSnapshot",
    "Decision",
    "Dequeue",
    "Drain",
    "Enqueue",
    "JobView",
    "Launch",
    "LogDecision",
    "NodeClass",
    "NodeView",
    "PendingTask",
    "Release",
    "Reserve",
    "RunningTask",
    "ScaleDecision",
    "Scheduler",
    "Undrain",
]
