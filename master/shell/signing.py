"""The capabilities a command carries, minted by the master as it sends the command.

A command goes to one node only (the broker's access rules), so what it carries is
that node's alone: the capability to read each input block at each of its
locations (and its input split at each of its replicas'), to store its output on
each push target, and to upload a final task's output (``testbed.wire.capabilities``).
"""

from __future__ import annotations

from master.shell.master_ports import SignerPort
from testbed.wire.capabilities import block_cap
from testbed.wire.protocol import (
    BlockRef,
    FlushAggregate,
    LaunchTask,
    Message,
    PushTarget,
    TaskInputs,
    TaskSpec,
)


class CommandSigner:
    def __init__(self, master: SignerPort) -> None:
        self.master = master

    def sign(self, message: Message) -> Message:
        if isinstance(message, LaunchTask):
            return message.model_copy(update={"task": self._spec(message.task)})
        if isinstance(message, TaskInputs):
            return message.model_copy(update={"refs": self._refs(message.refs, self._keys_by_url())})
        if isinstance(message, FlushAggregate):
            return message.model_copy(update={"push": self._targets(message.push, message.block)})
        return message

    def _keys_by_url(self) -> dict[str, str]:
        keys = self.master.keys
        return {n.url: keys.node_key(n.node_id) for n in self.master.nodes.values() if n.url}

    def _spec(self, spec: TaskSpec) -> TaskSpec:
        by_url = self._keys_by_url()
        update: dict[str, object] = {
            "inputs": tuple(self._refs(refs, by_url) for refs in spec.inputs),
            "push": self._targets(spec.push, spec.block_id),
        }
        if spec.replica is not None:
            update["replica"] = self._refs((spec.replica,), by_url)[0]
        if spec.output_url:
            update["output_token"] = self.master.keys.output_cap(spec.job_id, spec.index, spec.attempt)
        return spec.model_copy(update=update)

    @staticmethod
    def _refs(refs: tuple[BlockRef, ...], by_url: dict[str, str]) -> tuple[BlockRef, ...]:
        def caps(ref: BlockRef) -> tuple[str, ...]:
            return tuple(block_cap(by_url[u], "GET", ref.block) if u in by_url else "" for u in ref.locations)

        return tuple(ref.model_copy(update={"caps": caps(ref)}) for ref in refs)

    def _targets(self, targets: tuple[PushTarget, ...], block: str) -> tuple[PushTarget, ...]:
        """Each target may store ``block`` (and only it) from the sender."""
        keys = self.master.keys
        return tuple(
            t.model_copy(update={"token": block_cap(keys.node_key(t.node_id), "PUT", block)}) for t in targets
        )
