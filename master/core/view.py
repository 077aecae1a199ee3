"""What the shell may read of the core: a read-only view, no record handed out.

The HTTP API's status and its output sink's checks, the full-disk handling at the
master: each asks a question here and gets plain data back (numbers, strings, lists
and dicts of them), never a node or job record it could change. What they change
goes into the core as events (``master.core.events``).
"""

from __future__ import annotations

from typing import Any

from master.core.machine import MasterCore


class CoreView:
    def __init__(self, core: MasterCore) -> None:
        self._core = core

    def has_job(self, job_id: str) -> bool:
        return job_id in self._core.jobs

    def job_active(self, job_id: str) -> bool:
        """The job is submitted and has not ended (waiting or running)."""
        job = self._core.jobs.get(job_id)
        return job is not None and job.status in ("waiting", "running")

    def status(self) -> dict[str, Any]:
        """The run's state for ``GET /status``: nodes, jobs, running tasks, evictions, counters."""
        core = self._core
        return {
            "started": core.clock_started,
            "nodes": [
                {"node": n.node_id, "class": n.class_name, "status": n.status, "running": sorted(n.running)}
                for n in core.nodes.values()
            ],
            "jobs": [
                {
                    "job": j.job_id,
                    "workload": j.workload,
                    "status": j.status,
                    "done": j.done_count,
                    "running": j.running_count,
                    "tasks": j.plan.total_tasks,
                    "relaunched": j.relaunched,
                }
                for j in core.jobs.values()
            ],
            "tasks": self._running_tasks(),
            "expected_jobs": core.expected_jobs,
            "evictions": core.evictions,
            "evicted": [dict(e) for e in core.evicted],
            "forged_messages": core.senders.forged,
            "late_updates": core.senders.late,
        }

    def _running_tasks(self) -> list[dict[str, Any]]:
        tasks = []
        for node in self._core.nodes.values():
            for task_id, (job, key) in sorted(node.running.items()):
                record = job.tasks[key]
                tasks.append(
                    {
                        "task": task_id,
                        "job": job.job_id,
                        "node": node.node_id,
                        "class": node.class_name,
                        "attempt": record.attempt,
                        "memory_mb": record.memory_mb,
                        "started": record.started,
                    }
                )
        return tasks
