"""Who may report what: each agent speaks for its own node, tasks and pushes only.

The broker already keeps an agent to its own node's topics; this is the master's
own check on what a message says. It remembers the node of every task attempt it
launched and of every aggregate it asked for, and ignores (counts and journals)
a report of any of them from another node, and any message naming a node other
than the one whose topic it came on.

It also remembers every attempt it cancelled itself (a speculative copy or original
that lost, a task of a failed job): such an attempt's node may still report it after
the master has moved on (launched in the same tick it was cancelled, its update is
already on the way). That is no forgery: it is counted (``late``) and dropped quietly.
"""

from __future__ import annotations

from typing import Any

from testbed.wire.protocol import CancelTask, FlushAggregate, Message, PushDelivered, TaskUpdate


class SenderCheck:
    def __init__(self, journal: Any) -> None:
        self.journal = journal
        self.forged = 0
        """Messages an agent sent about a task, push or node that is not its own: ignored."""
        self.late = 0
        """Updates of attempts the master had cancelled on that node, arriving after: dropped."""
        self._attempts: dict[tuple[str, int], str] = {}
        self._aggregates: dict[str, str] = {}
        self._cancelled: dict[tuple[str, int], str] = {}

    def launched(self, task_id: str, attempt: int, node_id: str) -> None:
        self._attempts[(task_id, attempt)] = node_id

    def sent(self, node_id: str, message: Message) -> None:
        if isinstance(message, FlushAggregate):
            self._aggregates[message.block] = node_id
        elif isinstance(message, CancelTask):
            self._cancelled[(message.task_id, message.attempt)] = node_id

    def allows(self, node_id: str, message: Message, latest_attempt: int | None = None) -> bool:
        """Whether ``node_id`` may say ``message``; if not, it is counted and journaled.
        ``latest_attempt``: the task's latest launched attempt, for a ``TaskUpdate``."""
        why = self._objection(node_id, message, latest_attempt)
        if why is None:
            return True
        if isinstance(message, TaskUpdate) and self._cancelled_on(node_id, message):
            self.late += 1
            self.journal.say("debug", f"dropped a late update of {message.task_id} attempt {message.attempt} "
                             f"from {node_id}: the master cancelled it")  # fmt: skip
            return False
        self.forged += 1
        kind = getattr(message, "kind", "message")
        self.journal.say("warning", f"ignored a forged {kind} from {node_id}: it {why}")
        self.journal.event("forged_message", node=node_id, kind=kind, why=why)
        return False

    def _cancelled_on(self, node_id: str, update: TaskUpdate) -> bool:
        """Whether ``update`` is its own node's report of an attempt the master cancelled there."""
        return update.node_id == node_id and self._cancelled.get((update.task_id, update.attempt)) == node_id

    def _objection(self, node_id: str, message: Message, latest_attempt: int | None) -> str | None:
        named = getattr(message, "node_id", node_id)
        if named != node_id:
            return f"names node {named}"
        if isinstance(message, TaskUpdate):
            ran_on = self._attempts.get((message.task_id, message.attempt), node_id)
            if ran_on != node_id or (latest_attempt is not None and message.attempt > latest_attempt):
                return f"reports {message.task_id} attempt {message.attempt}, not its own"
        if isinstance(message, PushDelivered):
            pusher = self._attempts.get((message.task_id, message.attempt)) or self._aggregates.get(
                message.block
            )
            if pusher not in (None, node_id):
                return f"reports the push of {message.block}, not its own"
        return None
