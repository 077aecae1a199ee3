"""A map reading its input split from a replica (``jobs[].input_replication``; issue #43,
point 5): from this node's blocks when it holds one (stored by ``testbed.wire.replica_blocks``),
else fetched from a live holder over the data plane (``BlockFetcher``: a holder that fails
part-way is followed by the next one from where it stopped), else from the source when no
holder can serve it.

Which holders a map may read from is the core's decision (``master.core.input_replicas``: the
launch's ``TaskSpec.replica``, its own node first); where it did read is the worker's count
(``SplitReads``): the bytes each location served, and the span's bytes when it read the
source. Its outcome carries them (``input_reads``) and summary.json counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.wire.protocol import BlockRef, TaskSpec
from testbed.wire.replica_blocks import span_bytes, span_start, wait_stored
from testbed.workloads.base import BlockFetcher, FetchFailed


@dataclass
class SplitReads:
    """The bytes a map read of its split: from its own node's replica, from each remote holder
    (by its URL), and from the source (the whole span, once no holder could serve it whole;
    what holders served before they failed is counted too: it was read)."""

    local: int = 0
    remote: dict[str, int] = field(default_factory=dict)
    source: int = 0

    def served(self, location: str, own: bool, nbytes: int) -> None:
        if own:
            self.local += nbytes
        else:
            self.remote[location] = self.remote.get(location, 0) + nbytes

    def to_dict(self) -> dict[str, Any]:
        """As the outcome's ``input_reads`` (``testbed.wire.protocol.InputReads``)."""
        return {"local": self.local, "remote": dict(self.remote), "source": self.source}


def replicated(spec: TaskSpec) -> bool:
    """Whether the map reads a file split its job replicates (the core said where it reads)."""
    return "file" in spec.params and (spec.replica is not None or "input_from" in spec.params)


def read_replica(
    spec: TaskSpec, fetcher: BlockFetcher, scratch: Path, reads: SplitReads | None = None
) -> dict[str, Any] | None:
    """The map's params reading its split from a replica, copied from its holders (in order)
    into ``scratch``; None when it has no replica or none could serve it whole (the map reads
    the source). ``reads`` counts where the bytes came from, the source's too."""
    ref, source = spec.replica, spec.params.get("file")
    if source is None or (ref is None and reads is None):
        return None
    copied = None if ref is None else _copy(ref, fetcher, scratch, reads or SplitReads())
    if copied is not None:
        base = span_start(int(source["start"]))
        span = {"path": str(copied), "start": int(source["start"]) - base, "end": int(source["end"]) - base}
        return {**spec.params, "file": span}
    if reads is not None:
        reads.source += span_bytes(str(source["path"]), int(source["start"]), int(source["end"]))
    return None


def _copy(ref: BlockRef, fetcher: BlockFetcher, scratch: Path, reads: SplitReads) -> Path | None:
    """The replica block copied into ``scratch`` from its locations; None: none served it whole."""
    wait_stored(fetcher.blocks_dir, ref.block)
    copy = scratch / "replica.input"
    try:
        with open(copy, "wb") as out:
            for location, frame in fetcher.located_frames(ref):
                out.write(frame)
                reads.served(location, location == fetcher.own_url, len(frame))
    except FetchFailed:  # no holder served it whole: the source is durable
        copy.unlink(missing_ok=True)
        return None
    return copy
