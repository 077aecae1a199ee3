"""A worker's fetch falls back to a block's next location without giving a frame twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.wire.blocks import CorruptBlock
from testbed.wire.protocol import BlockRef
from testbed.workloads.base import BlockFetcher, FetchFailed

FRAMES = [b"one", b"two", b"three"]


class TwoCopies(BlockFetcher):
    """The block's first location dies after two frames (``failure``); the second serves it whole."""

    def __init__(self, blocks_dir: Path, failure: Exception) -> None:
        super().__init__(blocks_dir)
        self.failure = failure

    def _remote(self, location: str, ref: BlockRef) -> Iterator[bytes]:
        if location == "http://first:1":
            yield from FRAMES[:2]
            raise self.failure
        yield from FRAMES


REF = BlockRef(block="j000.s0.t0.a0", partition=0, locations=("http://first:1", "http://second:1"))


@pytest.mark.parametrize("failure", [ConnectionResetError("reset by peer"), LookupError("HTTP 404")])
def test_a_location_lost_part_way_is_followed_by_the_next_from_where_it_stopped(
    tmp_path: Path, failure: Exception
) -> None:
    assert list(TwoCopies(tmp_path, failure).frames(REF)) == FRAMES


def test_frames_given_before_a_checksum_failure_fail_the_fetch(tmp_path: Path) -> None:
    given = []
    with pytest.raises(FetchFailed, match="checksum"):
        for frame in TwoCopies(tmp_path, CorruptBlock("checksum mismatch")).frames(REF):
            given.append(frame)
    assert given == FRAMES[:2]
