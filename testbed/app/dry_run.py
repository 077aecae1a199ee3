"""``testbed run --dry-run``: the eviction plan up to the end of the jobs.

The timeout is no horizon for it: a scenario whose jobs end minutes in, with a
timeout of hours, was planned 111 evictions out to 9h52m. Where the jobs end
is what the simulator answers (``--backend sim`` of the same scenario, on a
virtual clock: seconds for the shipped small scenarios), so the dry run
simulates the scenario first and plans to the end of its last job; when the
simulated run does not finish its jobs within ``EVENT_BUDGET`` events (a
10,000-node day takes minutes to simulate), the plan goes to the timeout; the
output says which horizon it used and why.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.chaosmodels.lifetimes import format_seconds
from testbed.journal.tables import read_table
from testbed.scenario.schema import Scenario

if TYPE_CHECKING:
    from master.sim.shell import SimShell


EVENT_BUDGET = 100_000
"""Most simulator events a dry run spends on finding the end of the jobs (the shipped small
scenarios need a few thousand; a 10,000-node day, millions)."""


def jobs_horizon(scenario: Scenario, budget: int = EVENT_BUDGET) -> float | None:
    """Trace seconds from the start to the end of the last job of a simulated run of the
    scenario; None when that run did not finish every job within ``budget`` events."""
    from master.shell.secure_dir import secure_run_dir
    from master.sim.run import sim_settings, simulate

    events = [0]

    def count(shell: SimShell, _now: float) -> None:
        events[0] = shell.heap.popped

    def over_budget() -> str | None:
        return f"more than {budget:,} events" if events[0] > budget else None

    with tempfile.TemporaryDirectory(prefix="testbed-dry-run-") as scratch:
        run_dir = Path(scratch) / "sim"
        secure_run_dir(run_dir)
        _, ok = simulate(sim_settings(scenario), run_dir, count, over_budget)
        jobs = read_table(run_dir / "jobs.csv", "jobs")
        finishes = [float(row["finish_wall_s"]) for row in jobs if row["finish_wall_s"]]
    if not ok or not finishes:
        return None
    return max(finishes) * scenario.time_scale


def horizon_note(horizon: float | None, timeout: float) -> str:
    """The line that says which horizon the plan used (``horizon``: ``jobs_horizon``'s)."""
    if horizon is None:
        return (
            f"horizon: {format_seconds(timeout)} trace, the timeout: a simulated run of this "
            f"scenario (--backend sim) did not finish its jobs within {EVENT_BUDGET:,} events"
        )
    return (
        f"horizon: {format_seconds(horizon)} trace, where the last job ends in a simulated run "
        f"of this scenario (--backend sim); the timeout would plan to {format_seconds(timeout)}"
    )
