"""What a CLI start imports: ``testbed --help`` builds the whole parser with none of the heavy
packages, and ``testbed validate`` loads a scenario without the plotting and statistics ones
(scipy alone was 0.2 s of CPU of every start). Counted in a fresh interpreter: what it has in
``sys.modules`` after the command, not how long it took."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "numpy",
    "scipy",
    "pydantic",
    "matplotlib",
    "asyncio",
    "aiohttp",
    "aiomqtt",
    "rich",
    "msgpack",
    "ortools",
    "sqlglot",
    "duckdb",
    "networkx",
    "distributed",
)
NOT_FOR_VALIDATE = set(HEAVY) - {"pydantic", "numpy", "asyncio", "msgpack"}
"""What validate may not import: loading the scenario takes pydantic (and asyncio, which it
imports), checking its eviction plan numpy, building its policies the wire protocol's types
(msgpack); plotting, statistics, the HTTP API, the broker's client, the solvers, SQL and Dask
are other commands'."""


def imported_after(*argv: str) -> set[str]:
    code = (
        "import json, sys\nfrom testbed.app.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["chaos", "--help"]], ids=" ".join)
def test_help_imports_no_heavy_package(argv: list[str]) -> None:
    assert imported_after(*argv) & set(HEAVY) == set()


def test_validate_imports_neither_plots_nor_statistics() -> None:
    imported = imported_after("validate", "scenarios/quickstart.yaml")
    assert "pydantic" in imported  # it did load the scenario
    assert imported & NOT_FOR_VALIDATE == set()


OPTIONAL = ("sqlglot", "duckdb", "tpchgen", "pyspark", "distributed")
"""The extras' packages (sql, spark, dask): `pip install .` has none of them."""


def test_a_run_without_the_extras_installed(tmp_path: Path) -> None:
    """The README's first command is `pip install . && testbed run scenarios/quickstart.yaml`:
    no built-in workload, nor the workers' module, may import an extra's package to load (a
    sql workload module that imported the SQL front-end at once failed every such run)."""
    blocked = "".join(f"sys.modules[{name!r}] = None\n" for name in OPTIONAL)  # import fails
    code = (
        f"import sys\n{blocked}import agents.worker, testbed.workloads\n"
        "from testbed.app.cli import main\nsys.exit(main(sys.argv[1:]))"
    )
    run = ["run", "scenarios/quickstart.yaml", "--backend", "sim", "--out", str(tmp_path / "run")]
    done = subprocess.run([sys.executable, "-c", code, *run], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "summary.json").exists()
