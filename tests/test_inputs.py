"""A job's input files: symlink loops, bounds, the independent reference listing, fingerprints."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.node.processes import child_env
from testbed.scenario import inputs
from testbed.scenario.inputs import first_change, input_fingerprints, resolve_inputs
from testbed.scenario.schema import ScenarioError, load_scenario
from testbed.workloads.reference_inputs import reference_files


def loop_tree(root: Path, loops: int) -> Path:
    """loop/x.txt, loop/sub/y.txt, and ``loops`` symlinks loop/self-N -> . (a cycle each)."""
    (root / "loop" / "sub").mkdir(parents=True)
    (root / "loop" / "x.txt").write_text("to be or not to be\n")
    (root / "loop" / "sub" / "y.txt").write_text("that is the question\n")
    for n in range(loops):
        (root / "loop" / f"self-{n}").symlink_to(".")
    return root / "loop"


def test_a_glob_through_a_symlink_loop_counts_each_file_once(tmp_path: Path) -> None:
    loop = loop_tree(tmp_path, loops=1)
    expected = [(loop / "sub" / "y.txt").resolve(), (loop / "x.txt").resolve()]
    assert resolve_inputs(f"{loop}/**/*.txt") == expected
    assert resolve_inputs(f"{loop}/self-0/x.txt") == [expected[1]]  # named through the loop: still one file
    assert resolve_inputs(f"{loop}/*/y.txt") == [expected[0]]


def test_validate_does_not_hang_on_a_glob_through_two_loops(tmp_path: Path) -> None:
    loop_tree(tmp_path, loops=2)
    (tmp_path / "s.yaml").write_text(
        "name: loops\njobs:\n  - {workload: wordcount, input: 'loop/**/*.txt'}\n", encoding="utf-8"
    )
    result = subprocess.run(  # the timeout only guards the suite against the hang this was
        [sys.executable, "-m", "testbed.app.cli", "validate", "s.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
    )
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_a_glob_past_its_bounds_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for n in range(6):
        (data / f"part-{n}.txt").write_text("word\n")
    monkeypatch.setattr(inputs, "MAX_INPUT_FILES", 5)
    with pytest.raises(inputs.InputError, match="matches more than 5 files"):
        resolve_inputs(f"{data}/*.txt")
    monkeypatch.setattr(inputs, "MAX_SCANNED", 4)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: big\njobs:\n  - {{workload: wordcount, input: '{data}/**/*.txt'}}\n")
    with pytest.raises(ScenarioError) as refused:
        load_scenario(scenario)
    assert refused.value.problems == [
        f"{scenario}: jobs.0.input: the glob looks at more than 4 directory entries; "
        f"give a narrower glob or a directory of the input files; found '{data}/**/*.txt'"
    ]


# ------------------------------------------------------------------ resolver vs reference

NAMES = st.sampled_from(["a", "b", "c.txt", "d.txt", ".e.txt", ".hid"])


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """(kind, path, target) entries: directories, files, and symlinks to any earlier entry or up."""
    entries: list[tuple[str, str, str]] = []
    dirs = [""]
    for _ in range(draw(st.integers(1, 14))):
        parent = draw(st.sampled_from(dirs))
        path = f"{parent}/{draw(NAMES)}".lstrip("/")
        if any(path == p for _, p, _ in entries):
            continue
        kind = draw(st.sampled_from(["dir", "file", "link"]))
        target = draw(st.sampled_from([*dirs, *(p for k, p, _ in entries if k == "file"), "missing"]))
        entries.append((kind, path, target))
        if kind == "dir":
            dirs.append(path)
    return entries


def build(root: Path, entries: list[tuple[str, str, str]]) -> None:
    for kind, path, target in entries:
        where = root / path
        if not where.parent.is_dir():
            continue
        if kind == "dir":
            where.mkdir()
        elif kind == "file":
            where.write_text(path)
        else:
            where.symlink_to(os.path.relpath(root / target, where.parent))


PATTERNS = st.sampled_from(
    ["**/*.txt", "*", "*/*.txt", "a/**", "**/c.txt", "a/**/b/*", ".*", "**/.e.txt", "a", "*/**/d.txt", "?/*"]
)


@settings(max_examples=150, deadline=None)
@given(entries=trees(), pattern=PATTERNS)
def test_the_resolver_and_the_independent_reference_list_the_same_files(
    entries: list[tuple[str, str, str]], pattern: str
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        build(root, entries)
        got = resolve_inputs(f"{root}/{pattern}")
        assert got == reference_files(f"{root}/{pattern}")
        assert len(set(got)) == len(got) and all(p.is_file() and p == p.resolve() for p in got)


# ------------------------------------------------------------------ absolute inputs and fingerprints


def test_a_relative_input_is_kept_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("a b\n")
    (tmp_path / "s.yaml").write_text("name: rel\njobs:\n  - {workload: wordcount, input: 'data/*.txt'}\n")
    monkeypatch.chdir(tmp_path)
    assert load_scenario("s.yaml").jobs[0].input == f"{tmp_path}/data/*.txt"


def test_fingerprints_name_the_first_changed_file(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("same words\n")
    pattern = f"{tmp_path}/*.txt"
    recorded = input_fingerprints(resolve_inputs(pattern))
    assert first_change(recorded, resolve_inputs(pattern)) is None
    b = (tmp_path / "b.txt").resolve()
    stat = b.stat()
    b.write_text("other word\n")  # same size, same modification time: only the content differs
    os.utime(b, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    changed = first_change(recorded, resolve_inputs(pattern))
    assert changed == f"input file {b} changed since the run started (its content differs)"
    b.unlink()
    assert first_change(recorded, resolve_inputs(pattern)) == f"input file {b} is gone"
    (tmp_path / "c.txt").write_text("new\n")
    b.write_text("same words\n")
    assert "its modification time differs" in str(first_change(recorded, resolve_inputs(pattern)))
    os.utime(b, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    new = (tmp_path / "c.txt").resolve()
    assert first_change(recorded, resolve_inputs(pattern)) == (
        f"input file {new} is new: the job's input did not match it when the run started"
    )
