"""The holders of a job's replicated input splits told, and the telling journaled.

When a job with ``jobs[].input_replication`` arrives (or is restored by ``--resume``), its
splits' replicas are placed on the nodes then alive (``InputReplication.submitted``); each of
those that is up gets an ``inputs_stored`` event naming the job, the node and the splits it
holds (their maps' indices, every split: a real node's file splits and the simulator's modelled
ones), and a real holder the file splits to copy (``StoreInputs``). A node placed while it
launched gets both once it is up. events.jsonl thus says where every replica was placed.

A resumed run places its restored jobs' replicas again, on its own new cluster: the holders the
journal names died with the crashed master (its agents die with it, their node directories
with them; each is ended by ``master_crashed``), so the master's view of the holders and the
new agents' blocks are one, and both are journaled. Pure: no file, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from master.core.jobs import JobRuntime
from master.core.ports import ClusterPort
from testbed.wire.protocol import StoreInputs


def place_inputs(
    core: ClusterPort, job: JobRuntime, replication: int | None, nodes: Sequence[str], seed: int
) -> None:
    """Place the job's replicas on ``nodes`` (seeded) and tell the holders that are up."""
    core.inputs.submitted(job, replication, nodes, seed)
    store_inputs(core, job.job_id, nodes)


def store_inputs(core: ClusterPort, job_id: str, nodes: Iterable[str]) -> None:
    """Tell those of ``nodes`` that are up the splits of the job they hold (a launching node is
    told once it is up), each telling journaled."""
    nodes = set(nodes)
    files = core.inputs.to_store(job_id, nodes)
    for node_id, splits in core.inputs.held_by(job_id, nodes).items():
        if core.nodes[node_id].url:
            core.journal.event("inputs_stored", job=job_id, node=node_id, splits=list(splits))
            if node_id in files:
                core.send(node_id, StoreInputs(job_id=job_id, splits=files[node_id]))
