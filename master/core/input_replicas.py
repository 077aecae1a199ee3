"""Input replication (issue #43, point 5), wired: ``jobs[].input_replication: N``.

When a job with it arrives, each of its maps' input splits gets N replicas on the nodes then
alive (``replicas.place``, seeded by the job's seed); a node lost takes its replicas with it.
The scheduler's snapshot shows each pending map the bytes of its split each node holds
(``PendingTask.input_bytes``, ``input_on_node``: what Quincy's preference arcs need), and each
launch says where its attempt reads the split (``TaskSpec.params["input_from"]``: its own disk,
a holder over the network, or the source when no replica is left), counted for summary.json's
``input_local_fraction``; its replica (``TaskSpec.replica``) lists its live holders, its own
node first. A real worker reports where it did read (``TaskUpdate.input_reads``): ``reported_reads``
turns the URLs it names into the holders the launch offered, for the journal's
``task_finished`` and the job's row. Where nodes report (``reported``: a real backend), the
summary counts those reads and ``task_started`` carries the launch's ``read_plan`` (the
holders offered); the simulator's summary counts the planned reads, its journal as before.
Pure: no file, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from master.core.jobs import JobRuntime
from master.core.replicas import Read, Replicas, place
from testbed.api.strategy import TaskKey
from testbed.wire.protocol import BlockRef, InputReads, InputSplit, replica_block
from testbed.workloads.progress import split_bytes

SOURCE_KEYS = ("file", "generate")
RECORD_BYTES = {"sort": 100, "pagerank": 16}
"""A generated split's bytes per record, where it gives a count (as the simulator's model)."""


@dataclass
class JobInputs:
    sizes: dict[str, int]
    """Each split (its map's task id) -> its bytes."""
    replicas: Replicas
    files: dict[str, InputSplit] = field(default_factory=dict)
    """Each split read from a file -> its replica block's source (what a real holder copies)."""
    offered: dict[tuple[str, int], dict[str, str]] = field(default_factory=dict)
    """Each launched (task, attempt) with a replica -> its holders' URLs -> their node ids."""
    placed: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Each node placed to hold some splits -> their maps' indices (``inputs_stored``'s
    ``splits``): a node's own holdings change only when it is lost, so this stays true of a
    node while it lives."""


@dataclass
class InputReplication:
    jobs: dict[str, JobInputs] = field(default_factory=dict)
    reported: bool = False
    """The nodes report where their maps read (a real backend; the simulator models it)."""
    read_bytes: dict[str, int] = field(default_factory=lambda: {"local": 0, "remote": 0, "source": 0})
    """Bytes of split read by the attempts launched, by where they read them (the core's plan)."""
    measured: dict[str, int] = field(default_factory=lambda: {"local": 0, "remote": 0, "source": 0})
    """Bytes of split the attempts that reported their reads read, by where (their workers' count)."""
    job_measured: dict[str, dict[str, int]] = field(default_factory=dict)
    """The same, of each job with a report, until its row is written (``job_counts``)."""

    def submitted(self, job: JobRuntime, replication: int | None, nodes: Sequence[str], seed: int) -> None:
        """Place the job's splits' replicas (no more than there are nodes alive)."""
        if not replication:
            return
        stage = job.plan.stages[0]
        sizes, files, indices = {}, {}, {}
        for index in range(stage.tasks):
            params = stage.params(index)
            if any(key in params for key in SOURCE_KEYS):
                sizes[job.task_id((0, index))] = split_bytes(params, RECORD_BYTES.get(job.workload, 1))
                indices[job.task_id((0, index))] = index
            if "file" in params:
                source = params["file"]
                block = replica_block(job.job_id, index)
                files[job.task_id((0, index))] = InputSplit(
                    block=block, path=source["path"], start=source["start"], end=source["end"]
                )
        if sizes:
            count = min(replication, len(nodes))
            replicas = place(sorted(sizes), nodes, count, seed)
            self.jobs[job.job_id] = JobInputs(sizes, replicas, files, placed=_by_node(replicas, indices))

    def held_by(self, job_id: str, nodes: Set[str]) -> dict[str, tuple[int, ...]]:
        """The splits of the job (their maps' indices) each of ``nodes`` (alive) holds, file or
        generated."""
        inputs = self.jobs.get(job_id)
        if inputs is None:
            return {}
        return {node: inputs.placed[node] for node in sorted(nodes) if node in inputs.placed}

    def to_store(self, job_id: str, nodes: Set[str]) -> dict[str, tuple[InputSplit, ...]]:
        """The file splits of the job each of ``nodes`` holds (what a real holder copies)."""
        inputs = self.jobs.get(job_id)
        if inputs is None:
            return {}
        by_node: dict[str, list[InputSplit]] = {}
        for task_id, split in inputs.files.items():
            for node in inputs.replicas.holders.get(task_id, ()):
                if node in nodes:
                    by_node.setdefault(node, []).append(split)
        return {node: tuple(splits) for node, splits in sorted(by_node.items())}

    def node_lost(self, node_id: str) -> None:
        for inputs in self.jobs.values():
            inputs.replicas.lose(node_id)

    def finished(self, job_id: str) -> None:
        self.jobs.pop(job_id, None)

    def held(self, job_id: str, task_id: str) -> tuple[int, tuple[tuple[str, int], ...]]:
        """The task's split's bytes and the bytes each holder has (none: not a replicated split)."""
        inputs = self.jobs.get(job_id)
        size = inputs.sizes.get(task_id) if inputs is not None else None
        if inputs is None or size is None:
            return 0, ()
        return size, tuple((node, size) for node in sorted(inputs.replicas.holders.get(task_id, ())))

    def replica(
        self, job: JobRuntime, key: TaskKey, attempt: int, node_id: str, url_of: Callable[[str], str]
    ) -> BlockRef | None:
        """The attempt's split as a replica block at its live holders' URLs, in the order it
        reads them (its own node first, then the holder its read plan names); None: the source."""
        inputs = self.jobs.get(job.job_id)
        task_id = job.task_id(key)
        split = inputs.files.get(task_id) if inputs is not None else None
        if inputs is None or split is None:
            return None
        read = inputs.replicas.read_from(task_id, node_id)
        holders = sorted(inputs.replicas.holders.get(task_id, ()), key=lambda n: (n != read.holder, n))
        offered = {url: holder for holder, url in zip(holders, map(url_of, holders), strict=True) if url}
        if not offered:
            return None
        inputs.offered[(task_id, attempt)] = offered
        return BlockRef.trusted(split.block, 0, tuple(offered))

    def read_plan(self, job: JobRuntime, key: TaskKey, attempt: int) -> dict[str, Any]:
        """``task_started``'s ``read_plan`` where nodes report: the holders the launch offered its
        split at, in the order it reads them (empty: the source); nothing for another task."""
        inputs = self.jobs.get(job.job_id)
        task_id = job.task_id(key)
        if not self.reported or inputs is None or task_id not in inputs.files:
            return {}
        return {"read_plan": list(inputs.offered.get((task_id, attempt), {}).values())}

    def reported_reads(self, job_id: str, task_id: str, attempt: int, reads: InputReads) -> dict[str, Any]:
        """Count an attempt's reads as its worker reported them; the journal's form of them, each
        remote holder by its node id (by the URL it was read from if the launch offered no such)."""
        inputs = self.jobs.get(job_id)
        offered = inputs.offered.pop((task_id, attempt), {}) if inputs is not None else {}
        remote = {offered.get(url, url): nbytes for url, nbytes in sorted(reads.remote.items())}
        journalled = {"local": reads.local, "remote": dict(sorted(remote.items())), "source": reads.source}
        self.count(job_id, journalled)
        return journalled

    def count(self, job_id: str, reads: Mapping[str, Any]) -> None:
        """Count an attempt's reported reads (their journal's form: ``task_finished``'s
        ``input_reads``) in the run's and the job's totals."""
        counts = {
            "local": int(reads["local"]),
            "remote": sum(reads["remote"].values()),
            "source": int(reads["source"]),
        }
        for totals in (self.measured, self.job_measured.setdefault(job_id, dict.fromkeys(counts, 0))):
            for kind, nbytes in counts.items():
                totals[kind] += nbytes

    def resumed(self, reads: Sequence[tuple[str, Mapping[str, Any]]], finished: Set[str]) -> None:
        """A resumed run's totals go on from the reads its journal recorded before the crash
        (``Recovered.input_reads``), each counted as the live run counted it; a job finished
        then has its row already."""
        for job_id, journalled in reads:
            self.count(job_id, journalled)
        for job_id in finished:
            self.job_measured.pop(job_id, None)

    def job_counts(self, job_id: str) -> dict[str, Any]:
        """The job's row's reported reads (jobs.csv): none unless one of its attempts reported."""
        counts = self.job_measured.pop(job_id, None)
        if counts is None:
            return {}
        total = sum(counts.values())
        fields: dict[str, Any] = {f"input_{kind}_bytes": nbytes for kind, nbytes in counts.items()}
        return {**fields, "input_local_fraction": round(counts["local"] / total, 6) if total else None}

    def launched(self, job: JobRuntime, key: TaskKey, node_id: str) -> dict[str, Any] | None:
        """Where the attempt on ``node_id`` reads its split (counted), for its spec's params."""
        inputs = self.jobs.get(job.job_id)
        task_id = job.task_id(key)
        if inputs is None or task_id not in inputs.sizes:
            return None
        read: Read = inputs.replicas.read_from(task_id, node_id)
        self.read_bytes[read.kind] += inputs.sizes[task_id]
        return {"kind": read.kind, "holder": read.holder, "bytes": inputs.sizes[task_id]}

    def summary(self) -> dict[str, Any]:
        """summary.json's fields: none unless some job replicates its input. The reads the workers
        reported where they report (``reported``), else those the launches planned (the simulator)."""
        read = self.measured if self.reported else self.read_bytes
        total = sum(read.values())
        if not total:
            return {}
        return {"input_local_fraction": round(read["local"] / total, 6), "input_read_bytes": dict(read)}


def _by_node(replicas: Replicas, indices: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Each holder -> the indices of the splits it holds (``indices``: split -> its map's index)."""
    by_node: dict[str, list[int]] = {}
    for task_id, index in indices.items():
        for node in replicas.holders.get(task_id, ()):
            by_node.setdefault(node, []).append(index)
    return {node: tuple(splits) for node, splits in sorted(by_node.items())}
