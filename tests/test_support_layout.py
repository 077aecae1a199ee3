"""Test helpers live in ``tests/support/``: no test module imports another test module or a
conftest (a helper moved or renamed there broke its importers silently before, and a test
file's imports ran its module's collection-time code)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(path: Path) -> list[str]:
    """The ``tests.…`` modules ``path`` imports that are test modules or conftests."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found += [name for name in names if name.startswith("tests.") and _is_test_module(name)]
    return found


def _is_test_module(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def test_no_test_module_imports_another() -> None:
    offenders = {
        str(path.relative_to(TESTS)): modules
        for path in sorted(TESTS.rglob("*.py"))
        if (modules := imported_test_modules(path))
    }
    assert offenders == {}


def test_the_check_sees_such_an_import(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    lines = [
        "from tests.sim.test_cpu import fleet",
        "import tests.workflows.conftest",
        "from tests.support import sim",
    ]
    module.write_text("\n".join(lines) + "\n")
    assert imported_test_modules(module) == ["tests.sim.test_cpu", "tests.workflows.conftest"]
