"""A planned ``workload: sql`` job as ``testbed plan`` prints it: each stage of its DAG with
its tasks, what it reads (and by which of the four dependency types), the operators it
fused, and where its rows go."""

from __future__ import annotations

from typing import Any

from testbed.plan import JobPlan, StagePlan


def _reads(stage: StagePlan) -> str:
    meta = stage.shared_params["dag"]
    if not meta["inputs"]:
        return "files"
    edges = zip(meta["inputs"], meta["dependencies"], strict=True)
    return ", ".join(f"{name} ({kind})" for name, kind in edges)


def _goes(out: dict[str, Any]) -> str:
    if out["kind"] == "final":
        return "output: " + ", ".join(name for name, _, _ in out["schema"])
    if out["kind"] == "narrow":
        return "whole to the next stage"
    key = ", ".join(out["key_names"]) or "(all rows to one task)"
    extra = " after a partial AGG" if "combine" in out else " after a partial SORT" if "topk" in out else ""
    return f"shuffle on {key} into {out['partitions']}{extra}"


def describe_plan(plan: JobPlan, title: str) -> list[str]:
    """The lines ``testbed plan`` prints for one job (its plan as ``sql.plan`` makes it)."""
    total = sum(stage.tasks for stage in plan.stages)
    lines = [f"{title}: {len(plan.stages)} stages, {total} tasks"]
    for stage in plan.stages:
        args = stage.shared_params["args"]
        fused = [op for op in args["fused"] if not op.startswith("partial ")]
        tasks = f"{stage.tasks} task{'s' if stage.tasks != 1 else ''}"
        lines.append(f"  {stage.shared_params['dag']['stage']}: {tasks}, reads {_reads(stage)}")
        lines.append(f"      fuses {' > '.join(fused) if fused else '(reads only)'}")
        lines.append(f"      -> {_goes(args['out'])}")
    return lines
