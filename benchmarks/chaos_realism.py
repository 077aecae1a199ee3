"""Realism of real evictions: do the lifetimes a real run lives follow the preset's model?

Our figure: a real local run (agents as processes, SIGKILLed by the chaos controller,
replaced at once) under a provider preset, compressed by ``time_scale`` so that a
node's mean lifetime is ``--mean-wall`` seconds, until at least ``--kills`` nodes were
killed by their lifetime. ``testbed chaos check`` then gives the Kolmogorov-Smirnov
distance of the lifetimes lived (Kaplan-Meier: nodes the run did not kill by their
lifetime are censored) from the preset's CDF, and the notices' lead-time error.
Peer, from the same run: the KS distance of as many lifetimes drawn straight from the
model with numpy (no run at all): the sampling noise a perfect run would still show.
Issue 22's goals: KS <= 0.1 over >= 200 real evictions, notice lead-time error p99 <= 100 ms.

    python benchmarks/chaos_realism.py [--kills 200] [--nodes 10] [--mean-wall 2] [--preset aws-spot]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.shell.run import run_scenario
from testbed.app.chaos_check import check_run, format_check, ks_distance
from testbed.chaosmodels.lifetimes import PRESETS, SPOT_MEAN_S, rng_for
from testbed.scenario.schema import parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host


def scenario(kills: int, nodes: int, mean_wall: float, preset: str) -> Any:
    time_scale = SPOT_MEAN_S / mean_wall
    run_wall = 1.4 * kills * mean_wall / nodes + 5.0  # replacements take a moment to come up
    return parse_scenario(
        {
            "name": f"realism-{preset}",
            "seed": 22,
            "time_scale": time_scale,
            "cluster": {"reserved": 1, "transient": nodes, "warm_workers": False},
            "chaos": {"transient": {"lifetime": preset, "replace": True}},
            "jobs": [
                {"workload": "sleep", "tasks": 1, "duration": 1.0},
                {"workload": "sleep", "tasks": 1, "duration": 1.0, "submit_at": run_wall * time_scale},
            ],
            "timeout": run_wall + 120,
        }
    )


async def measure(kills: int, nodes: int, mean_wall: float, preset: str, out: Path) -> dict[str, Any]:
    case = scenario(kills, nodes, mean_wall, preset)
    result = await run_scenario(resolve(case, Host.this_machine()), out)
    check = check_run(out)
    (fit,) = check.classes
    model = PRESETS[preset]
    noise = ks_distance(model.sample(rng_for(0, 99), fit.lived), model)
    print(format_check(check))
    return {
        "preset": preset,
        "time_scale": case.time_scale,
        "ok": result.ok,
        "lifetime_kills": fit.lived,
        "censored": fit.censored,
        "ks_lived_model": fit.ks_lived_model,
        "ks_drawn_model": fit.ks_model,
        "ks_numpy_draws_same_n": noise,
        "crit_95": 1.358 / fit.lived**0.5 if fit.lived else None,
        "lived_minus_drawn_p99_ms": fit.error_p99_ms,
        "notices": check.notices.notices,
        "notice_error_p50_ms": check.notices.error_p50_ms,
        "notice_error_p99_ms": check.notices.error_p99_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--mean-wall", type=float, default=2.0, help="mean lifetime, wall seconds")
    parser.add_argument(
        "--preset", default="aws-spot", choices=("aws-spot", "gcp-spot", "gcp-preemptible", "azure-spot")
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="realism-") as tmp:
        figures = asyncio.run(measure(args.kills, args.nodes, args.mean_wall, args.preset, Path(tmp) / "run"))
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
