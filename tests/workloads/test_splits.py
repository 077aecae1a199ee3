"""Input splits of files: ``maps: N`` gives N splits, over one file or several."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.scenario.splitting import byte_ranges, line_splits
from testbed.workloads.splits import read_lines_range


def lines_file(path: Path, lines: int) -> Path:
    path.write_text("".join(f"line {i} of {path.name}\n" for i in range(lines)))
    return path


@pytest.mark.parametrize("maps", [1, 2, 3, 4, 5, 7, 8, 13])
def test_maps_n_over_two_files_gives_n_splits_covering_every_line_once(tmp_path: Path, maps: int) -> None:
    """Each file was cut into splits of the total's N-th: with two files that gave N + 1."""
    lines_file(tmp_path / "a.txt", 20_000)
    lines_file(tmp_path / "b.txt", 50)
    splits = line_splits(str(tmp_path / "*.txt"), maps, split_mb=64)
    assert len(splits) == max(maps, 2)  # one file is never split with another
    read = b"".join(b"".join(read_lines_range(**split["file"])) for split in splits)
    expected = (tmp_path / "a.txt").read_bytes() + (tmp_path / "b.txt").read_bytes()
    assert sorted(read.splitlines()) == sorted(expected.splitlines())


def test_ranges_are_aligned_and_as_many_as_asked_where_a_file_has_units_enough(tmp_path: Path) -> None:
    small, big = tmp_path / "small.dat", tmp_path / "big.dat"
    small.write_bytes(b"r" * 300)
    big.write_bytes(b"r" * 1000)
    ranges = byte_ranges([small, big], 6, align=100)
    assert len(ranges) == 6 and all(int(r["start"]) % 100 == 0 for r in ranges)
    assert sum(int(r["end"]) - int(r["start"]) for r in ranges) == 1300
    assert len(byte_ranges([small], 9, align=100)) == 3  # no range is smaller than a unit
