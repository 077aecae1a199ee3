"""Pado's partial aggregation (section 3.2.7) below the running system: which stages
aggregate, the combiner an agent runs on held map outputs, and how a receiver names
the blocks the ledger committed to it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import msgpack

from agents.worker import combine
from master.recovery.pado_compiler import compile_pado
from master.recovery.pado_rules import CommitLedger, Push
from master.recovery.pado_state import aggregates_into, push_block_id
from testbed.scenario.schema import parse_scenario
from testbed.wire.blocks import iter_frames, read_segment_chunks, segment
from testbed.workloads.catalog import plan_job
from testbed.workloads.pagerank.lineage_dag import pagerank_dag
from testbed.workloads.sort.lineage_dag import sort_dag
from testbed.workloads.wordcount.lineage_dag import wordcount_dag
from tests.support.workloads import local_wordcount, pagerank_plan


def counts(blocks: Path, block: str, partition: int) -> tuple[Counter[str], int]:
    seg = segment(blocks, block, partition)
    assert seg is not None
    total: Counter[str] = Counter()
    pairs = 0
    for frame in iter_frames(read_segment_chunks(seg), seg.crc32):
        for word, count in msgpack.unpackb(frame):
            total[word] += count
            pairs += 1
    return total, pairs


def test_only_outputs_received_by_a_commutative_associative_operator_aggregate() -> None:
    scenario = parse_scenario(
        {"name": "t", "jobs": [{"workload": "wordcount", "size_mb": 1, "maps": 3, "reduces": 2}]}
    )
    wordcount = plan_job(scenario.jobs[0], 1, scenario)
    assert aggregates_into(compile_pado(wordcount_dag(3, 2)), wordcount, 0)
    sort = plan_job(
        parse_scenario({"name": "t", "jobs": [{"workload": "sort", "size_mb": 1}]}).jobs[0], 1, scenario
    )
    assert not aggregates_into(compile_pado(sort_dag(sort.stages[0].tasks, sort.stages[1].tasks)), sort, 0)
    pagerank = pagerank_plan(parts=3, iterations=2)
    assert not aggregates_into(compile_pado(pagerank_dag(3, 2, readers=2)), pagerank, 0)


def test_the_combiner_merges_held_outputs_into_one_block_with_the_same_counts(tmp_path: Path) -> None:
    local = local_wordcount(tmp_path)
    members = [local.tasks[(0, i)].spec.block_id for i in range(3)]
    outcome = combine("wordcount.map", members, "job.s0.x0", 2, tmp_path)
    assert outcome["state"] == "succeeded"
    for partition in range(2):
        merged, merged_pairs = counts(local.blocks, "job.s0.x0", partition)
        parts = [counts(local.blocks, m, partition) for m in members]
        assert merged == sum((c for c, _ in parts), Counter())
        assert merged_pairs == len(merged) < sum(n for _, n in parts)


def test_a_combine_missing_a_member_leaves_no_block(tmp_path: Path) -> None:
    local = local_wordcount(tmp_path, maps=1)
    members = [local.tasks[(0, 0)].spec.block_id, "job.s0.t9.a0"]
    outcome = combine("wordcount.map", members, "job.s0.x0", 2, tmp_path)
    assert outcome["state"] == "failed" and "job.s0.t9.a0" in outcome["error"]
    assert segment(local.blocks, "job.s0.x0", 0) is None


def test_a_receiver_reads_one_block_per_committed_push() -> None:
    ledger = CommitLedger()
    aggregate = Push("j.s0.x0", (("j.s0.t0", 0), ("j.s0.t2", 1)))
    single = Push.of("j.s0.t1", 0)
    for push in (aggregate, single):
        ledger.receive(push.push_id, "j.s1.t0", (10, 1))
        assert ledger.commit(push, {"j.s1.t0": (10, 1)}) == "accepted"
    owners = ledger.owners_for("j.s1.t0")
    assert owners == {"j.s0.t0": "j.s0.x0", "j.s0.t2": "j.s0.x0", "j.s0.t1": "j.s0.t1#0"}
    assert sorted(map(push_block_id, set(owners.values()))) == ["j.s0.t1.a0", "j.s0.x0"]
