"""The CI's cross-check (tests/e2e/test_crosscheck.py): its scenario, its tolerance, and the
agreement it was set from, measured on this host (tests/test_crosscheck.py checks the
tolerance against those numbers and against deliberately wrong models).

Measured 2026-12-02 19:04 to 19:06 UTC, main at cce10e7, host load (1 min) 10.1 before and 9.2
after, shared with other sessions: ``testbed crosscheck`` of SCENARIO with ``--seeds 5``.
The sleeps need no CPU, so the host's load moves the real side little (a wordcount version,
faithful, on 0.5-cpu nodes at load 5: its tasks got 0.69 of their quota and it missed by
-32%). What this check can see: a scenario's scheduling, launches, eviction, its detection,
relaunches and the node replacement; not an op's cost (sleep tasks have none; doubling every
calibrated value the scenario uses, launch_overhead, node_startup and will_delay, moved its
error from -7.2% to -4.5%)."""

from __future__ import annotations

SCENARIO = """\
name: ci-crosscheck
cluster: {reserved: 1, transient: 2, heartbeat_interval: 0.2}
chaos:
  transient: {replace: true, provisioning_delay: 0.5s}
  storms:
    - {at: 1s, evict: {count: 1, kind: transient}}
jobs:
  - {workload: sleep, tasks: 6, duration: 1.5}
"""

TOLERANCE = "jct=25%,p95=25%,evictions=0,relaunched=0"
"""Per seed the sim missed by -0.5% to -16.3% (mean -7.2%); 25% leaves 8.7 points over the
worst seed. Evictions (1) and the relaunched ratio (2 of 6) agreed exactly in every run."""

REAL_JCT_S = (3.9084, 3.2435, 3.2731, 3.4153, 3.2864)
"""The real runs' mean JCT, seeds 1 to 5 (one job: also its p95 and makespan)."""
SIM_JCT_S = (3.27, 3.12, 3.12, 3.12, 3.27)
"""The simulated runs' of the same seeds, built-in model defaults."""
LATE_WILL_JCT_S = 5.56
"""Every seed's, simulated with a calibration whose ``will_delay`` is 3 s (measured 8 ms): a
model that hears of an eviction 3 s late. The check fails it at +62.3%."""
EVICTIONS, RELAUNCHED_RATIO = 1, 0.3333
