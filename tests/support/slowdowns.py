"""A slowdown episode's small scenario: two one-slot reserved nodes, six 100 s sleeps, one node
3x slower from 150 s for 100 s."""

from __future__ import annotations

CLUSTER = {"reserved": {"count": 2, "slots": 1}, "transient": 0}


JOBS = [{"workload": "sleep", "tasks": 6, "duration": "100s"}]


EPISODE = {"at": "150s", "for": "100s", "nodes": {"count": 1, "kind": "reserved"}, "factor": 3}
