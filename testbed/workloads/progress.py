"""A running attempt's progress score, as Hadoop defines it (``Task.Progress``, LATE section 2.1).

A map task's score is the fraction of its input split read (bytes of the split's range, or of
a generated split's size). A reduce (or iterate) task's runs through three phases, a third of the
score each: *copy* (its input blocks fetched / blocks to fetch), *sort* (its merge done) and
*reduce* (records reduced / records). The worker writes the score into a shared double the agent
reads when it sends a heartbeat (``cell``, a ``multiprocessing`` ``RawValue``): no message per
record, one float store per chunk. Scores only grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COPY, SORT, REDUCE = 0, 1, 2
PHASES = 3


@dataclass
class Progress:
    cell: Any = None
    """The shared double the agent reads (None: nobody reads it; the score is still kept)."""
    score: float = 0.0

    def read(self, done: int, total: int) -> None:
        """A map task has read ``done`` of its split's ``total`` bytes (or records)."""
        self._set(_fraction(done, total))

    def phase(self, phase: int, done: int, total: int) -> None:
        """A reduce task's ``phase`` (COPY, SORT, REDUCE) is ``done`` of ``total`` through."""
        self._set((phase + _fraction(done, total)) / PHASES)

    def _set(self, score: float) -> None:
        if score > self.score:
            self.score = score
            if self.cell is not None:
                self.cell.value = score


def _fraction(done: int, total: int) -> float:
    return 1.0 if total <= 0 else min(1.0, done / total)


def split_bytes(source: dict[str, Any], record_bytes: int = 1) -> int:
    """The size of a map task's input split: a file range's length, or a generated split's bytes
    (``nbytes``, or ``count`` records of ``record_bytes``)."""
    if "file" in source:
        return int(source["file"]["end"]) - int(source["file"]["start"])
    generated = source.get("generate", {})
    if "nbytes" in generated:
        return int(generated["nbytes"])
    return int(generated.get("count", 0)) * record_bytes
