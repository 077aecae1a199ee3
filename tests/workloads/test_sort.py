from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from testbed.scenario.schema import SortJob
from testbed.workloads import sort
from testbed.workloads.check import check_output

SEED = 11


def make_records(path: Path, count: int, seed: int, binary: bool = False) -> None:
    """An independent record file: random keys, many duplicates, any bytes when ``binary``."""
    rng = np.random.default_rng(seed)
    records = rng.integers(0, 256, (count, 100), dtype=np.uint8)
    if not binary:
        records[:, :10] = rng.integers(ord("a"), ord("d"), (count, 10), dtype=np.uint8)
    path.write_bytes(records.tobytes())


def python_sorted_keys(data: bytes) -> list[bytes]:
    return sorted(data[i : i + 10] for i in range(0, len(data), 100))


@pytest.mark.parametrize("fraction", [1.0, 0.1])
def test_generated_sort_equals_reference(run_at, fraction):
    job = SortJob(workload="sort", size_mb=3, maps=3, reduces=3)
    local = run_at(job, SEED, fraction)
    out = b"".join(p.read_bytes() for p in sort.output_parts(local.outputs))
    inputs = b"".join(r.tobytes() for s in sort.sources_of(job, SEED) for r in sort.source_chunks(s))
    assert [out[i : i + 10] for i in range(0, len(out), 100)] == python_sorted_keys(inputs)
    assert sorted(out[i : i + 100] for i in range(0, len(out), 100)) == sorted(
        inputs[i : i + 100] for i in range(0, len(inputs), 100)
    )
    spilled = local.total("spill_bytes")
    assert (spilled > 0) if fraction < 1 else (spilled == 0)
    assert check_output(job, SEED, local.outputs) == []


@pytest.mark.parametrize("fraction", [1.0, 0.1])
def test_file_input_with_binary_keys(run_at, tmp_path, fraction):
    make_records(tmp_path / "a.dat", 9_000, 1, binary=True)
    make_records(tmp_path / "b.dat", 7_000, 2)
    job = SortJob(workload="sort", input=str(tmp_path / "*.dat"), maps=3, reduces=4)
    local = run_at(job, SEED, fraction)
    out = b"".join(p.read_bytes() for p in sort.output_parts(local.outputs))
    data = (tmp_path / "a.dat").read_bytes() + (tmp_path / "b.dat").read_bytes()
    assert [out[i : i + 10] for i in range(0, len(out), 100)] == python_sorted_keys(data)
    assert sort.read_output(local.outputs).comparable() == sort.reference_output(job, SEED)
    assert (local.total("spill_bytes") > 0) == (fraction < 1)


def test_generated_records_have_the_gensort_ascii_layout_and_gnu_sort_agrees(tmp_path):
    records = b"".join(r.tobytes() for r in sort.generate_split(3, 0, 500, 2_000))
    assert len(records) == 200_000
    first = records[:100]
    assert all(32 <= c < 127 for c in first[:10]) and first[10:12] == b"  " and first[98:] == b"\r\n"
    assert first[12:44] == b"%032X" % 500
    (tmp_path / "in").write_bytes(records)
    gnu = subprocess.run(
        ["sort", "-S", "1M", str(tmp_path / "in")], capture_output=True, check=True, env={"LC_ALL": "C"}
    ).stdout
    summary = sort.summarize([sort.as_records(gnu)])
    unsorted = sort.summarize([sort.as_records(records)])
    assert summary.ordered and not unsorted.ordered
    assert (summary.records, summary.checksum) == (unsorted.records, unsorted.checksum)


def test_boundaries_split_the_sample_evenly():
    job = SortJob(workload="sort", size_mb=2, maps=2, reduces=4)
    plan = sort.plan(job, SEED)
    bounds = [bytes.fromhex(b) for b in plan.stages[0].shared_params["boundaries"]]
    assert len(bounds) == 3 and bounds == sorted(bounds)
    keys = np.concatenate([r["key"] for s in sort.sources_of(job, SEED) for r in sort.source_chunks(s)])
    counts = np.bincount(np.searchsorted(np.array(bounds, dtype="S10"), keys, side="right"), minlength=4)
    assert counts.min() > 0.8 * len(keys) / 4


def test_file_not_made_of_whole_records_is_refused(tmp_path):
    (tmp_path / "bad").write_bytes(b"x" * 150)
    with pytest.raises(ValueError, match="expected files of whole 100-byte records; found 150 bytes"):
        SortJob(workload="sort", input=str(tmp_path / "bad"))
    (tmp_path / "bad").write_bytes(b"x" * 200)
    job = SortJob(workload="sort", input=str(tmp_path / "bad"))
    (tmp_path / "bad").write_bytes(b"x" * 150)  # changed since the scenario was validated
    with pytest.raises(ValueError, match="not a multiple of 100"):
        sort.plan(job, SEED)


@pytest.mark.parametrize("corruption", ["swap", "byte", "drop"])
def test_check_output_catches_a_corrupted_output(run_at, corruption):
    job = SortJob(workload="sort", size_mb=1, maps=2, reduces=2)
    local = run_at(job, SEED, 1.0)
    part = sort.output_parts(local.outputs)[0]
    data = bytearray(part.read_bytes())
    if corruption == "swap":
        data[:100], data[-100:] = data[-100:], data[:100]
    elif corruption == "byte":
        data[150] ^= 1
    else:
        del data[-100:]
    part.write_bytes(bytes(data))
    problems = check_output(job, SEED, local.outputs)
    assert problems
    expected = {"swap": "smaller than", "byte": "checksum", "drop": "records"}[corruption]
    assert any(expected in p for p in problems)
