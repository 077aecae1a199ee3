"""An agent keeps each task's current attempt: an older attempt that ends late (a cancelled one,
whose worker dies after the task's next attempt started on the same node, as after a
scheduler's ``Preempt``) reports its own end and leaves the newer one running. Found in CI: the
late end took the newer attempt out of ``running``, the heartbeats stopped listing it, the
master re-sent its launch, and the agent ran it twice at once, one run deleting the block the
other had stored ("not stored here")."""

from __future__ import annotations

from pathlib import Path

from agents.core import WorkerFinished
from testbed.wire.protocol import CancelTask, LaunchTask, TaskUpdate
from tests.support.agents import agent
from tests.support.workloads import local_wordcount


def test_a_cancelled_attempt_ending_late_leaves_the_next_attempt_running(tmp_path: Path) -> None:
    node = agent(tmp_path)
    published: list[TaskUpdate] = []
    node._publish_update = published.append  # type: ignore[method-assign]  # no broker here
    spec = local_wordcount(tmp_path, maps=2).spec(0, 0)
    node.core.handle(LaunchTask(task=spec))  # the set-up, in the core: no worker starts here
    node.core.handle(CancelTask(task_id=spec.task_id, attempt=0))
    node.core.handle(LaunchTask(task=spec.model_copy(update={"attempt": 1})))
    second = node.running[spec.task_id]
    killed = {"state": "failed", "failure": "killed", "error": "SIGKILL"}
    node._handle(WorkerFinished(spec.task_id, 0, killed))
    assert node.running[spec.task_id] is second
    assert [(u.attempt, u.state, u.failure) for u in published] == [(0, "failed", "cancelled")]
    node._handle(WorkerFinished(spec.task_id, 1, {"state": "succeeded"}))
    assert spec.task_id not in node.running
    assert [(u.attempt, u.state) for u in published][1:] == [(1, "succeeded")]
