"""A faithful run end to end: every node's agent in its own CPU cgroup, bandwidth limits on,
pushes and spills paced, outputs still exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from master.run import run_scenario
from testbed.cgroups import CgroupUnavailable, detect
from tests.conftest import make_scenario
from tests.e2e.test_wordcount_run import assert_clean
from tests.e2e.test_workloads_run import JOBS, assert_exact

pytestmark = pytest.mark.e2e


def node_class(cpus: float, count: int) -> dict[str, Any]:
    return {"count": count, "slots": 1, "cpus": cpus, "network_mbps": 400, "disk_mb_s": 200}


async def test_a_faithful_pado_run_is_exact_with_each_agent_in_its_cgroup(tmp_path: Path) -> None:
    try:
        cgroups = detect()
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    scenario = make_scenario(
        cluster={"reserved": node_class(0.5, 1), "transient": node_class(0.25, 2), "heartbeat_timeout": 5},
        jobs=JOBS[:2],
        policy={"strategy": "pado"},
        fidelity={"mode": "faithful"},
    )
    groups: dict[str, str] = {}
    run_ids: set[str] = set()

    def where(master: Any, record: dict[str, Any]) -> None:
        run_ids.add(master.run_id)
        if record["event"] == "node_up":
            groups[record["node"]] = Path(f"/proc/{record['pid']}/cgroup").read_text()

    result = await run_scenario(scenario, tmp_path, on_event=where)
    assert result.ok, result.summary
    assert_exact(scenario, tmp_path)
    assert result.summary["bytes_pushed"] > 0
    [run_id] = run_ids
    assert len(groups) == 3
    for node, table in groups.items():
        assert f"/testbed/{run_id}/{node}\n" in table
    assert not cgroups.run_dir(run_id).exists()
    assert_clean(tmp_path)
