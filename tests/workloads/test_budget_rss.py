"""The budget is honest: a task's peak RSS stays near its budget, not near its data size.

Each task runs through the agent's own ``execute`` in a fresh interpreter and
its peak RSS is the kernel's high-water mark of that process (``VmHWM``, which
unlike ``ru_maxrss`` does not inherit the parent's peak across fork and exec);
the baseline is the mark just before the task starts (interpreter, imports). The same task with a budget large
enough to hold its data shows that the measurement would catch an overrun.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from testbed.wire.protocol import TaskSpec

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")

MB = 2**20
RUNNER = """
import json, re, sys
from pathlib import Path
from agents.worker import execute
from testbed.wire.protocol import TaskSpec

def high_water_mark():
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) * 1024

spec = TaskSpec.model_validate_json(sys.argv[1])
baseline = high_water_mark()
outcome = execute(spec, Path(sys.argv[2]), "")
print(json.dumps({"baseline": baseline, "peak": high_water_mark(), "outcome": outcome}))
"""


def run_isolated(spec: TaskSpec, node: Path) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, spec.model_dump_json(), str(node)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    result = json.loads(done.stdout)
    outcome = result["outcome"]
    assert outcome["state"] == "succeeded", outcome
    return result["peak"] - result["baseline"], outcome["metrics"]


def wordcount_input(path: Path) -> dict:
    """24 MB of text with 600k distinct words: a 90 MB dictionary if nothing spilled."""
    words = [f"w{i:07d}x" for i in range(600_000)]
    text = ("\n".join(" ".join(words[i : i + 20]) for i in range(0, len(words), 20)) + "\n").encode()
    path.write_bytes(text * 2)
    return {"file": {"path": str(path), "start": 0, "end": path.stat().st_size}}


def sort_input(path: Path) -> dict:
    """40 MB of records."""
    rng = np.random.default_rng(1)
    path.write_bytes(rng.integers(32, 127, (400_000, 100), dtype=np.uint8).tobytes())
    return {"file": {"path": str(path), "start": 0, "end": path.stat().st_size}}


@pytest.mark.parametrize(
    ("op", "make_input", "extra"),
    [
        ("wordcount.map", wordcount_input, {}),
        ("sort.map", sort_input, {"boundaries": ["4f" * 10]}),
    ],
)
def test_peak_rss_stays_within_the_budget(tmp_path, op, make_input, extra):
    params = {**make_input(tmp_path / "input"), **extra}
    deltas: dict[int, int] = {}
    for memory_mb in (8, 1024):
        spec = TaskSpec(
            task_id=f"j.s0.t{memory_mb}",
            job_id="j",
            stage=0,
            index=memory_mb,
            attempt=0,
            op=op,
            memory_mb=memory_mb,
            params=params,
            partitions=2,
        )
        deltas[memory_mb], metrics = run_isolated(spec, tmp_path / "node")
        assert (metrics["spill_bytes"] > 0) == (memory_mb == 8)
    assert deltas[8] <= 8 * MB + 4 * MB, f"RSS grew {deltas[8] / MB:.1f} MB under an 8 MB budget"
    assert deltas[1024] > 2 * deltas[8], "the unconstrained task should use much more memory"
    assert not any((tmp_path / "node" / "scratch").rglob("*.run"))
