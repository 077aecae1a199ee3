"""Skipping a faithful test on a host that cannot make cgroups, with the host's reason."""

from __future__ import annotations

import pytest

from testbed.node.cgroups import CgroupUnavailable, detect


def require_cgroups(what: str = "this test") -> None:
    """Skip the calling test, naming ``what`` and why, unless this host can make cgroups."""
    try:
        detect()
    except CgroupUnavailable as exc:
        pytest.skip(f"{what} is faithful and this host cannot isolate it: {exc}")
