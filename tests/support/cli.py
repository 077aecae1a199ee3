"""The ``testbed`` command line as a test drives it."""

from __future__ import annotations

from pathlib import Path

import pytest


def assert_validate_refuses(
    path: Path, field: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``testbed validate PATH`` exits 2 with one line: the file, then ``field``, then ``expected``."""
    from testbed.app.cli import main

    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{path}: {field}"), err
    assert expected in err
