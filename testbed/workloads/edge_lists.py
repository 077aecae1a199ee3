"""Edge lists as PageRank reads them: a line ``src dst`` per edge, ``#`` comments, node
tokens that are integers (their own ids) or names (a 62-bit hash with bit 62 set): the input
of ``testbed.workloads.pagerank``, whose files ``testbed.scenario.jobs`` checks before the run."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from testbed.workloads.base import InputDataError

NAMED = 1 << 62
"""Bit 62 marks the id of a named node (a hash of its name)."""
_COMMENT = re.compile(rb"#[^\n]*")


@dataclass
class EdgeChunk:
    """Edges of a chunk of input as node ids, and the names of its named nodes."""

    src: np.ndarray
    dst: np.ndarray
    names: dict[int, bytes] = field(default_factory=dict)


def node_id(token: bytes) -> int:
    """A canonical decimal integer below 2**62 is its own id; any other token is a name:
    a 62-bit BLAKE2b hash with bit 62 set (so names never meet integer ids)."""
    if token.isdigit() and len(token) <= 19 and (token[0] != 0x30 or len(token) == 1) and int(token) < NAMED:
        return int(token)
    return NAMED | (int.from_bytes(hashlib.blake2b(token, digest_size=8).digest(), "little") & (NAMED - 1))


def parse_edges(data: bytes, where: str = "input") -> EdgeChunk:
    """The edges of a chunk of whole lines; a line without exactly two tokens raises InputDataError."""
    if b"#" in data:
        data = _COMMENT.sub(b"", data)
    tokens = data.split()
    lines = sum(1 for line in data.splitlines() if line.strip())
    if len(tokens) != 2 * lines:
        bad = next(line for line in data.splitlines() if line.strip() and len(line.split()) != 2)
        raise InputDataError(f"{where}: expected 'src dst' per line, found {text(bad[:80])!r}")
    integers = _canonical_integers(tokens)
    if integers is not None:
        pairs = integers.reshape(-1, 2)
        return EdgeChunk(pairs[:, 0].copy(), pairs[:, 1].copy())
    ids = {token: node_id(token) for token in set(tokens)}
    pairs = np.fromiter(map(ids.__getitem__, tokens), dtype=np.int64, count=len(tokens)).reshape(-1, 2)
    names = {i: token for token, i in ids.items() if i >= NAMED}
    return EdgeChunk(pairs[:, 0].copy(), pairs[:, 1].copy(), names)


_POWERS_OF_TEN = 10 ** np.arange(19, dtype=np.int64)


def _canonical_integers(tokens: list[bytes]) -> np.ndarray | None:
    """The tokens as integers when every one is its own id (a decimal below 2**62 without
    sign or leading zeros), else None. Fast path: numpy parses them, and since a token is
    never shorter than its value's digits, equal total lengths mean every token is canonical."""
    try:
        values = np.array(tokens, dtype=np.int64) if tokens else np.empty(0, np.int64)
    except (ValueError, OverflowError):
        return None
    if len(values) and (values.min() < 0 or values.max() >= NAMED):
        return None
    digits = np.maximum(1, np.searchsorted(_POWERS_OF_TEN, values, side="right"))
    return values if int(digits.sum()) == sum(map(len, tokens)) else None


def node_names(ids: np.ndarray, names: dict[int, bytes]) -> list[bytes]:
    """Each node as the input wrote it: its name, or its integer id in decimal."""
    return [names[i] if i >= NAMED else str(i).encode() for i in ids.tolist()]


def text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
