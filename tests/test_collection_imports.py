"""What collecting the tests imports: the statistics, Dask and graph packages that a few
tests use as references are imported by those tests, not when pytest collects every module
(scipy.stats alone was seconds of each collection's CPU). Counted in a fresh interpreter: what
``sys.modules`` holds after ``--collect-only``, not how long it took."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = {"scipy", "distributed", "dask", "networkx"}
COLLECTED = [
    "tests/chaos",  # scipy.stats through tests.support.lazy, and in a parametrize
    "tests/test_paper_stats.py",  # and through benchmarks/paper_stats.py
    "tests/test_yarn_me_dss.py",
    "tests/e2e/test_sweep_executors.py",  # dask
    "tests/policies/test_firmament_solver.py",  # networkx
]


def test_collecting_imports_no_reference_package() -> None:
    code = (
        "import json, sys, pytest\n"
        "code = pytest.main(['--collect-only', '-q', '-n', '0', '-p', 'no:cacheprovider', *sys.argv[1:]])\n"
        "print(json.dumps([int(code), sorted({m.split('.')[0] for m in sys.modules})]), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *COLLECTED], cwd=ROOT, capture_output=True, text=True, check=True
    )
    status, imported = json.loads(done.stderr.strip().splitlines()[-1])
    assert status == 0, done.stdout[-2000:]
    assert "numpy" in imported  # it did import the modules it collected
    assert REFERENCES & set(imported) == set()
