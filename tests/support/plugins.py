"""Plugin modules a test writes beside its scenario."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest


def plugin_module(
    directory: Path, source: str, prefix: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> str:
    """Write ``source`` as a module of a name of its own (modules are cached) in ``directory``,
    importable the way a module beside a scenario is; it is forgotten after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    module = prefix + re.sub(r"\W", "_", request.node.name)
    (directory / f"{module}.py").write_text(source, encoding="utf-8")
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    return module
