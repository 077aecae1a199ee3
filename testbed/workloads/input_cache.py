"""Task input caching on an agent (Pado, section 3.2.7), the worker's side.

A task that reads a source (a generated split or a byte range of a file) may
read it through the node's input cache: the first read keeps the source's
chunks, in the representation the task consumes (text, sort records, parsed
edges), in ``<node>/cache/<key>``; a later task of any job reading the same
source on this node reads that file instead of generating or parsing it
again. The agent owns the cache's bounds (an LRU in bytes): the worker only
reports what it read or wrote (``CacheReport``), and the agent deletes what
its LRU evicts. The master computes the same key to prefer a node that holds
a task's input (``input_cache_key``). Sources are immutable during a run, as
the paper's inputs on HDFS are.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOURCE_KEYS = ("generate", "file")
_LENGTH = struct.Struct("<I")


def input_cache_key(op: str, params: Mapping[str, Any]) -> str | None:
    """The cache key of a task's source input (None: the task reads no source). The op is
    part of the key because each op caches its own representation of the source."""
    source = {k: params[k] for k in SOURCE_KEYS if k in params}
    if not source:
        return None
    digest = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()[:24]
    return f"{op.replace('.', '-')}-{digest}"


@dataclass
class CacheReport:
    """What one task did with the cache: ``hit`` (read the cached file, ``nbytes`` long)
    or a miss (wrote one of ``nbytes``, which the agent's LRU then keeps or drops)."""

    key: str
    hit: bool
    nbytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "hit": self.hit, "nbytes": self.nbytes}


class InputCache:
    """Read a source through ``directory`` (``<node>/cache``); misses are staged in ``scratch``."""

    def __init__(self, directory: Path, scratch: Path) -> None:
        self.directory = directory
        self.scratch = scratch
        self.report: CacheReport | None = None

    def read(self, key: str, produce: Iterable[bytes]) -> Iterator[bytes]:
        """The source's chunks: from the cached file when it is there, else from ``produce``
        (lazy: never started on a hit), kept in the cache once read whole."""
        try:
            handle = open(self.directory / key, "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            yield from self._read_and_keep(key, produce)
            return
        with handle:
            nbytes = os.fstat(handle.fileno()).st_size
            while header := handle.read(_LENGTH.size):
                yield handle.read(_LENGTH.unpack(header)[0])
        self.report = CacheReport(key, True, nbytes)

    def _read_and_keep(self, key: str, produce: Iterable[bytes]) -> Iterator[bytes]:
        staged = self.scratch / f"cache-{key}"
        with open(staged, "wb") as out:
            for chunk in produce:
                out.write(_LENGTH.pack(len(chunk)))
                out.write(chunk)
                yield chunk
        self.directory.mkdir(parents=True, exist_ok=True)
        nbytes = staged.stat().st_size
        os.replace(staged, self.directory / key)
        self.report = CacheReport(key, False, nbytes)
