"""Skipping a faithful test on a host that cannot make cgroups, with the host's reason; burning
CPU in a cgroup."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.node.cgroups import CgroupUnavailable, detect, join


def require_cgroups(what: str = "this test") -> None:
    """Skip the calling test, naming ``what`` and why, unless this host can make cgroups."""
    try:
        detect()
    except CgroupUnavailable as exc:
        pytest.skip(f"{what} is faithful and this host cannot isolate it: {exc}")


def busy_in_group(group: Path, cpu_s: float) -> float:
    """Wall seconds a process in ``group`` takes to burn ``cpu_s`` of CPU."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", BUSY.format(cpu_s=cpu_s)],
        preexec_fn=lambda: join(group, os.getpid()),
    )
    assert process.wait(timeout=60) == 0
    return time.monotonic() - started


BUSY = "import time\nwhile time.process_time() < {cpu_s}: pass\n"
