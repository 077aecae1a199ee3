"""The ``testbed`` command line as a test drives it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testbed.node.processes import child_env


def assert_validate_refuses(path: Path, field: str, expected: str, capsys: pytest.CaptureFixture[str]) -> str:
    """``testbed validate PATH`` exits 2 with one line: the file, then ``field``, then ``expected``
    (the line, returned)."""
    from testbed.app.cli import main

    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{path}: {field}"), err
    assert expected in err
    return err


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed.app.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=child_env(),
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The refusal: exit 2 and a single line on stderr, no traceback."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    return lines[0]
