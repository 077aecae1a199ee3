"""A lowered workflow as ``testbed plan`` prints it: each stage's tasks, what it reads, the
operators it fused, and where its rows go."""

from __future__ import annotations

from testbed.plan import JobPlan, StagePlan


def _reads(stage: StagePlan) -> str:
    if not stage.deps:
        return "files"
    return ", ".join(f"s{d.stage} ({d.kind})" for d in stage.deps)


def _goes(stage: StagePlan) -> str:
    out = stage.shared_params["out"]
    if out["kind"] == "final":
        return "output: " + ", ".join(name for name, _, _ in out["schema"])
    if out["kind"] == "narrow":
        return "one-to-one to the next stage"
    key = ", ".join(out["key_names"]) or "(all rows to one task)"
    extra = " after a partial AGG" if "combine" in out else " after a partial SORT" if "topk" in out else ""
    return f"shuffle on {key} into {out['partitions']}{extra}"


def describe_plan(plan: JobPlan, title: str) -> list[str]:
    total = sum(stage.tasks for stage in plan.stages)
    lines = [f"{title}: {len(plan.stages)} stages, {total} tasks"]
    for number, stage in enumerate(plan.stages):
        fused = [op for op in stage.shared_params["fused"] if not op.startswith("partial ")]
        tasks = f"{stage.tasks} task{'s' if stage.tasks != 1 else ''}"
        lines.append(f"  s{number}: {tasks}, reads {_reads(stage)}")
        lines.append(f"      fuses {' > '.join(fused) if fused else '(reads only)'}")
        lines.append(f"      -> {_goes(stage)}")
    return lines
