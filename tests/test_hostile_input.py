"""Hostile input, table-driven: each case exits 2 with one line naming the problem and its limit,
never a traceback, a hang or a MemoryError. The CLI runs in-process (``testbed.app.cli.main``).

A case is (name, the command line built from a folder of prepared files, phrases the one
line must hold). ``run`` cases that would start nodes must be refused before any starts.
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from testbed.app.cli import main

OK = {"name": "hostile", "cluster": {"reserved": 1, "transient": 1}, "jobs": [{"workload": "sleep"}]}
HANG_GUARD_S = 120
"""A case still running after this is a hang: SIGALRM turns it into a failure (not a timing test)."""


def scenario(folder: Path, text: str | None = None, **fields: object) -> str:
    path = folder / "scenario.yaml"
    path.write_text(text if text is not None else yaml.safe_dump({**OK, **fields}))
    return str(path)


def chaos(folder: Path, **sections: object) -> str:
    return scenario(folder, chaos=sections)


def alias_bomb(levels: int = 9) -> str:
    """A flow mapping of ``levels`` anchors, each a list of ten aliases of the one before."""
    items = ["a0: &a0 [x, x, x, x, x]"]
    items += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "{" + ", ".join(items) + "}"


def fifo(folder: Path) -> str:
    path = folder / "pipe"
    os.mkfifo(path)
    return str(path)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the socket is closed


def edges(folder: Path, text: str) -> str:
    path = folder / "edges.txt"
    path.write_text(text)
    return str(path)


Case = tuple[str, Callable[[Path], list[str]], tuple[str, ...]]
DEEP = "[" * 500 + "]" * 500

CASES: list[Case] = [
    # 1. deep nesting
    (
        "deep nesting",
        lambda d: ["validate", scenario(d, "name: x\njobs: [{workload: sleep}]\na: " + DEEP)],
        ("line 3, column 35", "nested deeper than 32 levels"),
    ),
    (
        "deep nesting via --set",
        lambda d: ["validate", scenario(d), "--set", f"seed={DEEP}"],
        ("--set 'seed=[[[", "nested deeper than 32 levels"),
    ),
    # 2. aliases
    (
        "alias bomb in policy.options",
        lambda d: [
            "run",
            "--dry-run",
            scenario(d, f"name: x\njobs: [{{workload: sleep}}]\npolicy:\n  options: {alias_bomb()}\n"),
        ],
        ("aliases expand to more than 10,000 nodes",),
    ),
    (
        "self-referencing alias",
        lambda d: [
            "run",
            "--dry-run",
            scenario(d, "name: x\njobs: [{workload: sleep}]\npolicy:\n  options: &r {x: *r}\n"),
        ],
        ("the alias *r refers to a node that contains it",),
    ),
    (
        "alias bomb via --set",
        lambda d: ["validate", scenario(d), "--set", f"policy.options={alias_bomb()}"],
        ("aliases expand to more than 10,000 nodes",),
    ),
    # 3. huge files and counts
    (
        "a 2 MiB scenario",
        lambda d: ["validate", scenario(d, "name: x\njobs:\n" + "  - {workload: sleep}\n" * 100_000)],
        ("a scenario file is at most 1 MiB",),
    ),
    (
        "too many jobs",
        lambda d: ["validate", scenario(d, jobs=[{"workload": "sleep", "repeat": 10_000}] * 11)],
        ("the jobs submitted", "is at most 100,000", "found 110,000"),
    ),
    (
        "too many tasks",
        lambda d: ["validate", scenario(d, jobs=[{"workload": "noop", "tasks": 1_000_000}] * 2)],
        ("the tasks of all jobs is at most 1,000,000",),
    ),
    (
        "a bursty mix of a billion jobs",
        lambda d: [
            "validate",
            scenario(d, jobs=[], arrivals={"synthetic": {"burst_rate_per_s": 1e6, "horizon_s": 1e5}}),
        ],
        ("synthetic: the jobs expected", "at most 100,000"),
    ),
    (
        "a network of 1e-300 Mbit/s",
        lambda d: ["validate", scenario(d, cluster={"transient": {"count": 1, "network_mbps": 1e-300}})],
        ("cluster.transient.network_mbps", "greater than or equal to 1"),
    ),
    # 4. broker URLs
    (
        "broker port out of range",
        lambda d: ["run", scenario(d), "--set", "broker=mqtt://127.0.0.1:99999"],
        ("broker:", "port 1-65535"),
    ),
    (
        "nothing listening at the broker",
        lambda d: [
            "run",
            "--out",
            str(d / "run"),
            scenario(d),
            "--set",
            f"broker=mqtt://127.0.0.1:{closed_port()}",
        ],
        ("cannot reach the broker at mqtt://127.0.0.1:",),
    ),
    # 5. chaos values that validate but cannot run
    (
        "a storm of a billion firings",
        lambda d: [
            "run",
            "--dry-run",
            chaos(d, storms=[{"at": "0s", "every": "1ms", "times": 1_000_000_000}]),
        ],
        ("chaos.storms.0.times", "less than or equal to 100000"),
    ),
    (
        "a storm window of 1e300 s",
        lambda d: ["validate", chaos(d, storms=[{"from": "0s", "to": "1e300s", "rate": "1000/s"}])],
        ("chaos.storms.0.to", "a duration is at most 366 days"),
    ),
    (
        "a storm window firing a million times",
        lambda d: ["validate", chaos(d, storms=[{"from": "0s", "to": "1000s", "rate": "1000/s"}])],
        ("rate x (to - from) is at most 100,000",),
    ),
    (
        "lognormal mu 1e308",
        lambda d: ["validate", chaos(d, transient={"lifetime": {"lognormal": {"mu": 1e308, "sigma": 1}}})],
        ("lognormal mu", "within [-20, 20]"),
    ),
    (
        "a fixed lifetime of 1 ms",
        lambda d: ["run", "--dry-run", chaos(d, transient={"lifetime": {"fixed": "1ms"}})],
        ("chaos: more than 100,000 evictions are planned",),
    ),
    (
        "plan --horizon 1e308",
        lambda d: ["chaos", "plan", scenario(d), "--horizon", "1e308"],
        ("--horizon: a duration is at most 366 days",),
    ),
    (
        "timeout 1e9h",
        lambda d: ["run", "--dry-run", scenario(d), "--set", "timeout=1e9h"],
        ("timeout: a duration is at most 366 days",),
    ),
    (
        "timeout of a month",
        lambda d: ["run", "--dry-run", scenario(d), "--set", "timeout=30d"],
        ("timeout:", "less than or equal to 604800"),
    ),
    (
        "time_scale 1e12",
        lambda d: ["run", "--dry-run", scenario(d), "--set", "time_scale=1.0e12"],
        ("time_scale:", "less than or equal to 1000000"),
    ),
    (
        "time_scale 1e-320",
        lambda d: ["run", "--dry-run", scenario(d), "--set", "time_scale=1.0e-320"],
        ("time_scale:", "greater than or equal to 0.001"),
    ),
    # 6. special files
    (
        "a FIFO as arrivals trace",
        lambda d: ["validate", scenario(d, jobs=[], arrivals={"trace": fifo(d)})],
        ("arrivals: trace", "not a regular file"),
    ),
    (
        "a directory as arrivals trace",
        lambda d: ["validate", scenario(d, jobs=[], arrivals={"trace": str(d)})],
        ("arrivals: trace", "not a regular file"),
    ),
    (
        "/proc/self/mem as arrivals trace (a regular file whose reads fail)",
        lambda d: ["validate", scenario(d, jobs=[], arrivals={"trace": "/proc/self/mem"})],
        ("arrivals: trace /proc/self/mem: cannot read the file",),
    ),
    (
        "a FIFO as empirical lifetimes",
        lambda d: ["validate", chaos(d, transient={"lifetime": {"empirical": fifo(d)}})],
        ("empirical", "not a regular file"),
    ),
    (
        "/dev/zero as empirical lifetimes",
        lambda d: ["validate", chaos(d, transient={"lifetime": {"empirical": "/dev/zero"}})],
        ("empirical /dev/zero: not a regular file",),
    ),
    (
        "a FIFO as job input",
        lambda d: ["validate", scenario(d, jobs=[{"workload": "wordcount", "input": fifo(d)}])],
        ("jobs.0.input", "not a regular file or a directory"),
    ),
    # 7. heartbeats
    (
        "heartbeat_timeout below heartbeat_interval",
        lambda d: [
            "validate",
            scenario(d, cluster={"reserved": 1, "heartbeat_interval": "2s", "heartbeat_timeout": "1s"}),
        ],
        ("cluster: heartbeat_timeout (1s) must be at least twice heartbeat_interval (2s)",),
    ),
    # 8. workload inputs
    (
        "an empty sort input",
        lambda d: ["validate", scenario(d, jobs=[{"workload": "sort", "input": edges(d, "")}])],
        ("jobs.0.input: the input is empty",),
    ),
    (
        "an empty edge list",
        lambda d: [
            "validate",
            scenario(d, jobs=[{"workload": "pagerank", "input": edges(d, "# nothing\n\n")}]),
        ],
        ("jobs.0.input: the edge lists hold no edge",),
    ),
    (
        "a garbage line in an edge list",
        lambda d: [
            "validate",
            scenario(d, jobs=[{"workload": "pagerank", "input": edges(d, "1 2\n2 3\n3 1 9\n")}]),
        ],
        ("edges.txt line 3: expected 'src dst', found '3 1 9'",),
    ),
    # 9. the other commands
    (
        "attach without TESTBED_BROKER",
        lambda d: ["run", "--backend", "attach", "--out", str(d / "run"), scenario(d)],
        ("--backend attach: set TESTBED_BROKER",),
    ),
    (
        "broker --port 99999",
        lambda d: ["broker", "--port", "99999"],
        ("argument --port: expected a port from 0 to 65535",),
    ),
    (
        "agent --broker nope",
        lambda d: [
            "agent",
            "--run",
            "r",
            "--node-class",
            "reserved",
            "--data-dir",
            str(d),
            "--broker",
            "nope",
        ],
        ("argument --broker: expected mqtt://HOST:PORT",),
    ),
]


@pytest.fixture
def hang_guard() -> Iterator[None]:
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {HANG_GUARD_S}s: a hang")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_GUARD_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(("name", "command", "phrases"), CASES, ids=[case[0] for case in CASES])
def test_hostile_input_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hang_guard: None,
    name: str,
    command: Callable[[Path], list[str]],
    phrases: tuple[str, ...],
) -> None:
    monkeypatch.delenv("TESTBED_BROKER", raising=False)
    assert main(command(tmp_path)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    for phrase in phrases:
        assert phrase in err, err
    assert not (tmp_path / "run").exists(), "a refused run created its run directory"


def test_aliases_within_the_budget_are_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "name: aliases\njobs:\n  - &job {workload: sleep, tasks: 2}\n  - {<<: *job, name: b}\n  - *job\n"
    assert main(["validate", scenario(tmp_path, text)]) == 0, capsys.readouterr().err
    assert "3 jobs" in capsys.readouterr().out
