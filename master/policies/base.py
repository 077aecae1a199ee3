"""The pure policy interface, re-exported where the master's policies have always imported it.

The types live in ``testbed.policy`` so that plugins reach them through the public
``testbed.api`` without importing the master (the import contracts forbid that).
"""

from testbed.policy import (
    Assign,
    Autoscaler,
    ClusterSnapshot,
    Decision,
    Dequeue,
    Drain,
    Enqueue,
    FreeNode,
    FreeNodes,
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

__all__ = [
    "Assign",
    "Autoscaler",
    "ClusterSnapshot",
    "Decision",
    "Dequeue",
    "Drain",
    "Enqueue",
    "FreeNode",
    "FreeNodes",
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
