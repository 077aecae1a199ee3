"""A map reading its input split from a replica (``jobs[].input_replication``; issue #43,
point 5): from this node's blocks when it holds one (stored by ``testbed.wire.replica_blocks``),
else fetched from a live holder over the data plane (``BlockFetcher``: a holder that fails
part-way is followed by the next one from where it stopped), else from the source when no
holder can serve it.

Where a map reads (local, a holder, the source) is the core's decision
(``master.core.input_replicas``): the launch carries it, and summary.json counts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.wire.protocol import TaskSpec
from testbed.wire.replica_blocks import span_start, wait_stored
from testbed.workloads.base import BlockFetcher, FetchFailed


def read_replica(spec: TaskSpec, fetcher: BlockFetcher, scratch: Path) -> dict[str, Any] | None:
    """The map's params reading its split from a replica, copied from its holders (in order)
    into ``scratch``; None when it has no replica or none could serve it whole (the map reads
    the source)."""
    ref, source = spec.replica, spec.params.get("file")
    if ref is None or source is None:
        return None
    wait_stored(fetcher.blocks_dir, ref.block)
    copy = scratch / "replica.input"
    try:
        with open(copy, "wb") as out:
            for frame in fetcher.frames(ref):
                out.write(frame)
    except FetchFailed:  # no holder served it whole: the source is durable
        copy.unlink(missing_ok=True)
        return None
    base = span_start(int(source["start"]))
    span = {"path": str(copy), "start": int(source["start"]) - base, "end": int(source["end"]) - base}
    return {**spec.params, "file": span}
