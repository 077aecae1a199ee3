"""``strategy: auto``'s loss per eviction against the simulator's, one eviction at a time.

For each TPC-H query (SF ``--sf``, merged, 40 reduces, on Pado's cluster in sim: the set-up of
``benchmarks/workflows.py auto``, its stage costs read from ``--costs``) and each strategy, one
transient node (``select: random``, seeded) is evicted at each of ``--points`` times spread
over the strategy's simulated eviction-free makespan, no other eviction; the simulated delay
(makespan with the eviction minus without) is printed beside the model's
(``master.recovery.auto_cost.loss_at`` at that time). Their means over the times and seeds,
and the model's per-eviction figure (the loss averaged over the lifetime model's eviction
times) beside the simulated delays weighted the same way.

    python benchmarks/auto_loss.py --costs /tmp/costs.json [--queries q1 q3 q17] [--seeds 3] [--points 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workflows import STRATEGIES, Sim, conditions, job_with_tables, sim_scenario, testbed

from master.recovery.auto_cost import TIMELINES, eviction_times, loss_at, per_eviction_s, setting_of
from testbed.scenario.schema import load_scenario
from testbed.workloads.catalog import plan_job


def scenario_with(doc: dict[str, Any], at: float | None, seed: int) -> dict[str, Any]:
    """The sim scenario with no lifetime evictions and, at ``at`` seconds, one storm taking one
    random transient node."""
    doc = {**doc, "seed": seed, "chaos": {**doc["chaos"], "transient": {**doc["chaos"]["transient"]}}}
    doc["chaos"]["transient"]["lifetime"] = "none"
    if at is not None:
        evict = {"count": 1, "kind": "transient", "select": "random"}
        doc["chaos"]["storms"] = [{"at": round(at, 6), "evict": evict}]
    return doc


def run(work: Path, doc: dict[str, Any], label: str) -> float:
    path = work / f"{label}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return float(testbed("run", str(path), "--out", str(work / label))["makespan_s"])


def measure(runs: Sim, work: Path, name: str, strategy: str, args: argparse.Namespace) -> dict[str, Any]:
    """One query under one strategy: the simulated and the model's delays at each time."""
    job = runs_job(runs, name)
    base = sim_scenario(job, runs._costs(name, True), strategy, args.rate, 1)
    free = run(work, scenario_with(base, None, 1), f"{name}-{strategy}-free")
    path = work / f"{name}-{strategy}-free.yaml"
    scenario = load_scenario(path)
    setting = setting_of(load_scenario(path, ["chaos.transient.lifetime=" + args.rate]))
    plan = plan_job(scenario.jobs[0], scenario.seed * 1000, scenario)
    line = TIMELINES[strategy](plan, setting)
    times = [free * (i + 0.5) / args.points for i in range(args.points)]
    rows = []
    for t in times:
        sims = [
            run(work, scenario_with(base, t, seed), f"{name}-{strategy}-{t:.4f}-{seed}") - free
            for seed in range(1, args.seeds + 1)
        ]
        model = loss_at(plan, line, t, setting.detection_s)
        rows.append({"t": t, "sim": sims, "model": model})
        print(f"    t {t:6.3f}  sim {statistics.mean(sims):6.3f} ({' '.join(f'{d:.3f}' for d in sims)})  "
              f"model {model:6.3f}", flush=True)  # fmt: skip
    grid, weights = eviction_times(setting, free)  # both interpolated between the same times
    sim_at = np.interp(grid, times, [statistics.mean(r["sim"]) for r in rows])
    model_at = np.interp(grid, times, [r["model"] for r in rows])
    return {
        "free_sim": free,
        "free_model": line.length_s,
        "rows": rows,
        "weighted_sim": float(np.dot(weights, sim_at)),
        "weighted_model": float(np.dot(weights, model_at)),
        "per_eviction_model": per_eviction_s(plan, line, setting),
    }


def runs_job(runs: Sim, name: str) -> dict[str, Any]:
    return job_with_tables(name, runs.data[name][0], True, reduces=40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1)
    parser.add_argument("--calibration-sf", type=float, default=0.1)
    parser.add_argument("--purchases", type=int, default=400_000)
    parser.add_argument("--queries", nargs="*", default=["q1", "q3", "q17"])
    parser.add_argument("--strategies", nargs="*", default=list(STRATEGIES), choices=STRATEGIES)
    parser.add_argument("--rate", default="high", help="the lifetime model weighting the eviction times")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--costs", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "testbed-workflows-data")
    parser.add_argument("--json", type=Path, default=Path("auto-loss.json"))
    args = parser.parse_args()
    print(conditions())
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-auto-loss-") as tmp:
        runs = Sim(args, Path(tmp))
        for name in args.queries:
            for strategy in args.strategies:
                print(f"  {name} {strategy}", flush=True)
                found = measure(runs, Path(tmp), name, strategy, args)
                results[f"{name}/{strategy}"] = found
                print(f"    eviction-free: sim {found['free_sim']:.3f} s, model {found['free_model']:.3f} s; "
                      f"per eviction ({args.rate}'s times): sim {found['weighted_sim']:.3f} s, "
                      f"model {found['weighted_model']:.3f} s (its own: {found['per_eviction_model']:.3f} s)",
                      flush=True)  # fmt: skip
    args.json.write_text(json.dumps(results, indent=1))
    print(conditions())


if __name__ == "__main__":
    main()
