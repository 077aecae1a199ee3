"""containers/requirements.py: what the node image installs (the dependencies and the
``node`` extra, the extra sql pulls in too, never the host-only reference and generator),
and the digest its label carries, which changes with any requirement."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "containers" / "requirements.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("image_requirements", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_image_installs_the_dependencies_and_the_node_extra_only() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    lines = script().requirements(REPO / "pyproject.toml")
    assert lines == [*project["dependencies"], *extras["node"]]
    assert any(line.startswith("sqlglot") for line in lines)
    assert not any(line.startswith(("duckdb", "tpchgen-cli", "pytest")) for line in lines)
    assert "transient-testbed[node]" in extras["sql"]


def test_the_label_digest_follows_every_requirement(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    text = (REPO / "pyproject.toml").read_text()
    pyproject.write_text(text.replace('"sqlglot>=30.0"', '"sqlglot>=31.0"', 1))
    digests = [
        subprocess.run(
            [sys.executable, str(SCRIPT), "--sha", str(path)], capture_output=True, text=True, check=True
        ).stdout.strip()
        for path in (REPO / "pyproject.toml", pyproject)
    ]
    module = script()
    assert digests[0] == module.digest(module.requirements(REPO / "pyproject.toml"))
    assert len(digests[0]) == 64 and digests[0] != digests[1]
