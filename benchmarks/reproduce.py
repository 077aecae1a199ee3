"""Regenerate one paper's table from its scenario in scenarios/papers (simulated, but for
late-real and late-evictions-real: real local nodes).

    python benchmarks/reproduce.py \
        pado|pado-mr|pado-mr-keyed|pado-mlr|yarn-me|cloudcoaster|late|late-stragglers|late-evictions| \
        late-hetero|late-hetero-5min|late-grep|late-wordcount|late-real|late-evictions-real| \
        firmament-schedulers|firmament-cost-models|rdd-recovery \
        [--full] [--seeds N] [--set KEY=VALUE ...] [--vary KEY=V1,V2 ...] [--out DIR]
        [--jobs N | --dask ADDRESS]

pado, pado-mr, pado-mr-keyed, pado-mlr, yarn-me, cloudcoaster, the late and the firmament entries: a
`testbed sweep` over the paper's variants with seeds (its sweep.md: bootstrap intervals,
Student's t below 5 runs), then benchmarks/paper_stats.py's paired table (per variant n, mean,
sd, Student's t 95% interval; the subject against each other variant paired by seed, with a
paired t-test), written to
DIR/paired.md with the conditions (backend, load average before and after, commit). Without
--full, the reduced size below (one that finishes in minutes on a small machine) is used. ``--vary``
replaces the paper's values of one varied key (e.g. only the high eviction rate:
``--vary chaos.transient.lifetime=high``) or adds a key to the grid.
pado-mr-keyed: pado-mr's scenario with the sort's map and reduce priced as the paper's MR
job, a keyed sum: wordcount's built-in map and reduce rates (``OP_MODELS`` in
testbed/scenario/simulation.py, read here, not copied), the sort's bytes (docs/papers.md, "Pado MR
priced as the paper's reduce, a keyed sum").
rdd-recovery: the job with and without its node failure; per-iteration times.
--jobs N (default: the machine's cores) and --dask ADDRESS are `testbed sweep`'s: where the
cells run; the tables are the same whichever.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPERS = ROOT / "scenarios" / "papers"
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]  # this tree's testbed, as testbed() runs

from paper_stats import cells, conditions, table  # noqa: E402

from testbed.journal.tables import read_table  # noqa: E402
from testbed.scenario.simulation import OP_MODELS  # noqa: E402

STRATEGIES = "policy.strategy=spark,spark-checkpoint,pado"
RATES = "chaos.transient.lifetime=none,low,medium,high"
LATE_RULES = ["policy.speculation=none,hadoop,late"]
FIVE_MINUTE_SORT = "simulation.ops=" + json.dumps(
    {
        "sort.map": {"s_per_mb": 0.49, "output_ratio": 1.0, "fixed_s": 0.0085},
        "sort.reduce": {"s_per_mb": 0.37, "output_ratio": 1.0, "fixed_s": 0.0195},
    }
)


def keyed_sum_ops() -> str:
    """``simulation.ops=...``: the sort's map and reduce priced as our keyed sum, wordcount's
    built-in map and reduce models, with the sort's own output ratios (its bytes)."""
    ops = {
        f"sort.{stage}": OP_MODELS[f"wordcount.{stage}"]
        .model_copy(update={"output_ratio": OP_MODELS[f"sort.{stage}"].output_ratio})
        .model_dump()
        for stage in ("map", "reduce")
    }
    return f"simulation.ops={json.dumps(ops)}"  # JSON is a YAML flow mapping


@dataclass(frozen=True)
class Sweep:
    varies: list[str]
    reduced: list[str] = field(default_factory=list)
    seeds: int = 3
    metric: str = "mean_jct_s"
    compare: str = "strategy"
    subject: str = "pado"
    scenario: str = ""  # scenarios/papers/<scenario>.yaml; default: the entry's name
    settings: list[str] = field(default_factory=list)  # at every size, before --set's


SWEEPS: dict[str, Sweep] = {
    # 10 seeds at every rate, as docs/papers.md's "At a glance" (pado-mlr: about 40 min here)
    "pado": Sweep([STRATEGIES, RATES], seeds=10),
    "pado-mr": Sweep([STRATEGIES, RATES], seeds=10),
    "pado-mr-keyed": Sweep([STRATEGIES, RATES], seeds=10, scenario="pado-mr", settings=[keyed_sum_ops()]),
    "pado-mlr": Sweep([STRATEGIES, RATES], seeds=10),
    # 25 nodes and 25 jobs: the paper's 100 / 100 weak-scaled by 4 (a 100-node run
    # takes over 30 minutes of wall time here: docs/yarn-me.md)
    "yarn-me": Sweep(
        ["policy.scheduler=yarn,yarn-me"],
        ["cluster.transient.count=25", "arrivals.dss.jobs=25"],
        compare="scheduler",
        subject="yarn-me",
    ),
    "cloudcoaster": Sweep(
        ["policy.autoscaler=static,cloudcoaster"],
        [  # 1,000 servers (N = 20: the paper's 2%), arrivals scaled by 1000/4000: docs/papers.md
            "cluster.reserved.count=1000",
            "policy.options.cloudcoaster.r=3",
            "arrivals.synthetic.calm_rate_per_s=0.1425",
            "arrivals.synthetic.burst_rate_per_s=1.425",
            "arrivals.synthetic.long_rate_per_s=0.0494",
        ],
        metric="mean_short_queue_s",
        compare="autoscaler",
        subject="cloudcoaster",
    ),
    # LATE's section 5.4 sleep job at the paper's size (40 nodes: seconds in sim); the seed draws
    # which nodes run at 1 and which at 1.5
    "late": Sweep(
        ["policy.speculation=none,hadoop,late,spark"],
        seeds=5,
        compare="speculation",
        subject="late",
        scenario="late-sleep",
    ),
    # LATE's section 5.2.2 Sort with 8 stragglers in 100 VMs (Fig. 4), the paper's scale
    "late-stragglers": Sweep(LATE_RULES, seeds=5, compare="speculation", subject="late"),
    # LATE's section 5.2.1 Sort in the heterogeneous EC2 cluster (Fig. 3): 243 VMs on Table 3's
    # 99 hosts; late-stragglers' rates, then sort's rates x 2.31 so that no speculation takes
    # about 5 minutes, the paper's stated job length
    "late-hetero": Sweep(LATE_RULES, seeds=5, compare="speculation", subject="late"),
    "late-hetero-5min": Sweep(
        LATE_RULES,
        seeds=5,
        compare="speculation",
        subject="late",
        scenario="late-hetero",
        settings=[FIVE_MINUTE_SORT],
    ),
    # section 5.2.2 Grep and WordCount with 8 stragglers in 204 VMs (Figs. 5 and 6)
    "late-grep": Sweep(LATE_RULES, seeds=5, compare="speculation", subject="late"),
    "late-wordcount": Sweep(LATE_RULES, seeds=5, compare="speculation", subject="late"),
    # Fig. 4 for real: 12 local one-core nodes in faithful mode, two slowed 8x (one at a time:
    # real cells measure the host; about 20 minutes here)
    "late-real": Sweep(LATE_RULES, seeds=5, compare="speculation", subject="late"),
    # the same job on transient nodes evicted at Pado's high rate with a 2-minute notice
    "late-evictions": Sweep(
        ["policy.speculation=none,late,spark"], seeds=5, compare="speculation", subject="spark"
    ),
    # the same question for real: 2 + 6 local one-core nodes, CPU-bound sleeps (about 15 minutes)
    "late-evictions-real": Sweep(
        ["policy.speculation=none,late,spark"], seeds=5, compare="speculation", subject="spark"
    ),
    # Firmament (Gog 2017) against the other schedulers at 1,000 nodes under Pado's high rate,
    # then its cost models on the same runs' shape (about 20 s a run here)
    "firmament-schedulers": Sweep(
        ["policy.scheduler=fifo,yarn,eagle,firmament"], seeds=5, compare="scheduler", subject="firmament"
    ),
    "firmament-cost-models": Sweep(
        ["policy.options.firmament.cost_model=trivial,quincy,transient"],
        seeds=5,
        compare="cost_model",
        subject="transient",
        scenario="firmament-schedulers",
    ),
}


def testbed(*arguments: str, stdout: int | None = None, check: bool = True) -> int:
    """``testbed ARGUMENTS`` with this tree's code (the console script runs the installed
    checkout's); its exit status."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "testbed.app.cli", *arguments]
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(command, check=check, env=env, stdout=stdout).returncode


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def commit() -> str:
    result = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return result.stdout.strip() or "?"


def sweep(
    name: str,
    full: bool,
    seeds: int | None,
    settings: list[str],
    out: Path,
    varies: tuple[str, ...] = (),
    where: tuple[str, ...] = (),
) -> Path:
    """The paper's sweep into ``out`` and its paired table; ``where``: ``testbed sweep``'s
    ``--jobs``/``--dask`` arguments."""
    spec = SWEEPS[name]
    command = [
        "sweep",
        str(PAPERS / f"{spec.scenario or name}.yaml"),
        "--seeds",
        str(seeds or spec.seeds),
        "--out",
        str(out),
        *where,
    ]
    replaced = {vary.partition("=")[0] for vary in varies}
    for vary in [*(v for v in spec.varies if v.partition("=")[0] not in replaced), *varies]:
        command += ["--vary", vary]
    for setting in [*spec.settings, *([] if full else spec.reduced), *settings]:
        command += ["--set", setting]
    before = load_average()
    status = testbed(*command, check=False)  # 1: some runs failed, flagged in both tables
    runs = cells([out])
    if status not in (0, 1) or not runs:
        raise SystemExit(f"reproduce: testbed sweep exited {status} with {len(runs)} finished runs")
    text = (
        f"`testbed {' '.join(command)}` (commit {commit()}; load average {before} before, "
        f"{load_average()} after; {conditions(runs)}; sim results do not depend on the load, "
        "real ones do)\n\n" + table(runs, spec.metric, spec.compare, spec.subject)
    )
    (out / "paired.md").write_text(text + "\n")
    return out / "paired.md"


def iteration_times(tasks_csv: Path) -> list[float]:
    """Each PageRank iteration's time as the job lives it: from the first launch of its
    stage to the first launch of the next one (the stages are barriers: the next starts when
    every partition of this one exists, recomputed ones included); the last iteration ends
    with its stage's last task. A stage's last end is not used: recomputing a lost
    partition re-runs earlier stages and moves their ends past the failure."""
    starts: dict[int, float] = {}
    end = 0.0
    for row in read_table(tasks_csv, "tasks"):
        stage = int(row["stage"])
        starts[stage] = min(starts.get(stage, float("inf")), float(row["start_wall_s"]))
        if row["status"] == "succeeded":
            end = max(end, float(row["end_wall_s"]))
    iterations = sorted(starts)[3:]  # generate, build the graph, the initial ranks
    bounds = [starts[stage] for stage in iterations] + [end]
    return [b - a for a, b in itertools.pairwise(bounds)]


def rdd_recovery(out: Path, settings: list[str]) -> str:
    scenario = str(PAPERS / "rdd-recovery.yaml")
    extra = [item for setting in settings for item in ("--set", setting)]
    columns = {}
    for label, storms in (("no failure", ["--set", "chaos.storms=[]"]), ("failure", [])):
        run = out / label.replace(" ", "-")
        testbed("run", scenario, "--out", str(run), *extra, *storms, stdout=subprocess.DEVNULL)
        columns[label] = iteration_times(run / "tasks.csv")
    lines = ["| iteration | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for index in range(max(len(times) for times in columns.values())):
        row = [f"{times[index]:.2f}" if index < len(times) else "" for times in columns.values()]
        lines.append(f"| {index + 1} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paper", choices=[*SWEEPS, "rdd-recovery"])
    parser.add_argument("--full", action="store_true", help="the scenario's own (paper) size")
    parser.add_argument("--seeds", type=int, help="seeds per cell (default: the paper's entry)")
    parser.add_argument("--set", action="append", default=[], dest="settings", metavar="KEY=VALUE")
    parser.add_argument("--vary", action="append", default=[], dest="varies", metavar="KEY=V1,V2")
    parser.add_argument("--out", type=Path, help="directory for the runs (default: a new temporary one)")
    parser.add_argument("--jobs", type=int, help="cells at once on this machine (default: its cores)")
    parser.add_argument("--dask", metavar="ADDRESS", help="run the cells on this Dask cluster instead")
    args = parser.parse_args()
    jobs = ("--jobs", str(args.jobs)) if args.jobs else ()
    where = (*jobs, *(("--dask", args.dask) if args.dask else ()))
    out = args.out or Path(tempfile.mkdtemp(prefix=f"reproduce-{args.paper}-"))
    if args.paper == "rdd-recovery":
        print(rdd_recovery(out, args.settings))
    else:
        paired = sweep(args.paper, args.full, args.seeds, args.settings, out, tuple(args.varies), where)
        print(f"tables: {out / 'sweep.md'}, {paired}")
        print(paired.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
