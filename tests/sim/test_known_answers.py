"""The simulator on hand-built scenarios whose answers are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.scenario.simulation import OP_MODELS
from testbed.wire.blocks import FRAME_HEADER
from tests.support.sim import events, rows, simulate

ONE_NODE = {"reserved": {"count": 1, "slots": 1}, "transient": 0}


def test_one_sleep_task_on_one_node_takes_the_launch_overhead_plus_its_duration(tmp_path: Path) -> None:
    result = simulate(
        tmp_path,
        cluster=ONE_NODE,
        jobs=[{"workload": "sleep", "tasks": 1, "duration": 2.0}],
        simulation={"launch_overhead": 0.25},
    )
    (job,) = rows(result.run_dir, "jobs")
    assert result.ok and job["status"] == "succeeded"
    assert float(job["jct_s"]) == pytest.approx(0.25 + 2.0, abs=1e-3)
    assert result.summary["backend"] == "sim"


@pytest.mark.parametrize(("cpus", "jct"), [(1, 0.1 + 0.4 + 2.0), (4, 0.1 + 0.1 + 2.0)])
def test_a_launchs_cpu_part_is_divided_by_the_nodes_cores(tmp_path: Path, cpus: int, jct: float) -> None:
    result = simulate(
        tmp_path,
        cluster={"reserved": {"count": 1, "slots": 1, "cpus": cpus}, "transient": 0},
        jobs=[{"workload": "sleep", "tasks": 1, "duration": 2.0}],
        simulation={"launch_overhead": 0.1, "launch_cpu_s": 0.4},
    )
    (job,) = rows(result.run_dir, "jobs")
    assert float(job["jct_s"]) == pytest.approx(jct, abs=1e-3)


def reduce_durations(tmp_path: Path, reduce_s_per_mb: float) -> dict[bool, float]:
    """A wordcount reduce reading 1 MB from its own node and 1 MB over a 1 MB/s link, with
    ``fetch_overlap`` off and on: its launch-to-end seconds."""
    ops = {
        "wordcount.map": {"s_per_mb": 0.1, "output_ratio": 1.0},
        "wordcount.reduce": {"s_per_mb": reduce_s_per_mb, "output_ratio": 1.0},
    }
    durations = {}
    for overlap in (False, True):
        result = simulate(
            tmp_path,
            name=f"overlap-{overlap}",
            cluster={"reserved": {"count": 2, "slots": 1, **NIC}, "transient": 0},
            jobs=[{"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 1}],
            simulation={"launch_overhead": 0.05, "fetch_overlap": overlap, "serve_cpu_s_per_mb": 0}
            | {"ops": ops},
        )
        (task,) = [t for t in rows(result.run_dir, "tasks") if t["stage"] == "1"]
        durations[overlap] = float(task["end_s"]) - float(task["start_s"])
    return durations


@pytest.mark.parametrize("reduce_s_per_mb", [1.0, 0.1])
def test_with_fetch_overlap_a_streamed_op_computes_while_its_input_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reduce_s_per_mb: float
) -> None:
    """An op that sums its frames as they come (here the reduce, made one of ``STREAMED_OPS``)
    saves the shorter of its fetch and its compute, whichever is longer (2 s of compute against
    about 1 s of fetch, or 0.2 s)."""
    monkeypatch.setattr("master.execution_model.STREAMED_OPS", frozenset({"wordcount.reduce"}))
    durations = reduce_durations(tmp_path, reduce_s_per_mb)
    compute = reduce_s_per_mb * 2.0
    fetch = durations[False] - 0.05 - compute
    assert fetch == pytest.approx(1.0, rel=0.1)
    assert durations[True] == pytest.approx(0.05 + max(fetch, compute), abs=1e-3)


def test_fetch_overlap_leaves_an_op_that_does_not_stream_alone(tmp_path: Path) -> None:
    durations = reduce_durations(tmp_path, 1.0)
    assert durations[True] == pytest.approx(durations[False], abs=1e-9)


def test_sleep_tasks_on_one_slot_run_one_after_another(tmp_path: Path) -> None:
    result = simulate(
        tmp_path,
        cluster=ONE_NODE,
        jobs=[{"workload": "sleep", "durations": [1.0, 3.0, 0.5]}],
        simulation={"launch_overhead": 0.1},
    )
    (job,) = rows(result.run_dir, "jobs")
    assert float(job["jct_s"]) == pytest.approx(3 * 0.1 + 1.0 + 3.0 + 0.5, abs=1e-3)


def test_a_map_task_costs_its_modelled_compute_time(tmp_path: Path) -> None:
    """A one-map, one-reduce wordcount on one node: the map reads its generated 1 MiB, the
    reduce its output (local: no network time), each after the launch overhead."""
    result = simulate(
        tmp_path,
        cluster=ONE_NODE,
        jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 1, "reduces": 1}],
        simulation={"launch_overhead": 0.1},
    )
    mapped, reduced = OP_MODELS["wordcount.map"], OP_MODELS["wordcount.reduce"]
    map_s = mapped.s_per_mb * 1.0
    reduce_s = reduced.s_per_mb * mapped.output_ratio
    (job,) = rows(result.run_dir, "jobs")
    assert float(job["jct_s"]) == pytest.approx(0.1 + map_s + 0.1 + reduce_s, abs=2e-3)
    tasks = {t["task_id"]: t for t in rows(result.run_dir, "tasks")}
    assert int(tasks["j000.s0.t0"]["bytes_in"]) == 2**20
    assert int(tasks["j000.s0.t0"]["bytes_out"]) == int(2**20 * mapped.output_ratio)


def test_an_eviction_reruns_exactly_the_tasks_it_lost(tmp_path: Path) -> None:
    """A storm kills the transient node while the reduces run: what reruns is the attempt it
    was running and the map outputs it held (the lineage of the lost reduce), nothing else."""
    cluster = {"reserved": {"count": 1, "slots": 2}, "transient": {"count": 1, "slots": 2}}
    result = simulate(
        tmp_path,
        cluster=cluster,
        jobs=[{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2}],
        simulation={
            "launch_overhead": 0.05,
            "ops": {
                "wordcount.map": {"s_per_mb": 1.0, "output_ratio": 1.0},
                "wordcount.reduce": {"s_per_mb": 1.0, "output_ratio": 1.0},
            },
        },
        chaos={"storms": [{"at": 3.0, "evict": {"count": 1}}]},
    )
    run_dir = result.run_dir
    (eviction,) = events(run_dir, "eviction")
    victim, killed_at = eviction["node"], eviction["t"]
    ended = {(t["task_id"], int(t["attempt"])): float(t["end_s"]) for t in rows(run_dir, "tasks")}
    first = [e for e in events(run_dir, "task_started") if e["attempt"] == 0 and e["node"] == victim]
    running = {e["task"] for e in first if ended.get((e["task"], 0), float("inf")) > killed_at}
    held = {e["task"] for e in first if e["stage"] == 0 and ended[(e["task"], 0)] <= killed_at}
    rerun = {e["task"] for e in events(run_dir, "task_started") if e["attempt"] > 0}
    assert running and held  # the storm hit while the victim ran a reduce and held map outputs
    assert rerun == running | held
    assert result.ok


def test_a_simulated_sort_is_planned_from_sizes_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No record is generated to sample the sort's key boundaries: a simulated task sorts none."""
    from testbed.workloads import sort

    def refuse(*args: object) -> None:
        raise AssertionError("the simulator generated sort records")

    monkeypatch.setattr(sort, "generate_piece", refuse)
    result = simulate(tmp_path, cluster=ONE_NODE, jobs=[{"workload": "sort", "size_mb": 64, "maps": 8}])
    assert result.ok


NIC = {"network_mbps": 8}
"""1,000,000 bytes a second each way."""


def test_a_checkpoint_copy_holds_its_senders_nic_as_the_real_agent_does(tmp_path: Path) -> None:
    """spark-checkpoint, two transient nodes, one sort of two maps and one reduce. Each map,
    once done, copies its output (M bytes) to the reserved node: its node's ``net-out`` is
    booked for M bytes from then. The reduce starts on one of the two a launch overhead
    later, reads its own map's output locally and the other's over the other node's
    ``net-out``, still busy with its copy: the fetch waits for the copy, then takes its own M
    bytes, so the reduce ends 2 M / rate after that map did. The reserved node's ``net-in``
    takes the two copies one after the other."""
    result = simulate(
        tmp_path,
        cluster={
            "reserved": {"count": 1, "slots": 1, **NIC},
            "transient": {"count": 2, "slots": 1, **NIC},
        },
        policy={"scheduler": "fifo", "strategy": "spark-checkpoint"},
        jobs=[{"workload": "sort", "size_mb": 2, "maps": 2, "reduces": 1}],
        simulation={
            "launch_overhead": 0.1,
            "push_overhead": 0.0,
            "cpu_sharing": False,  # the links alone (test_cpu.py: the copies' CPU)
            "ops": {
                "sort.map": {"s_per_mb": 0.5, "output_ratio": 1.0},
                "sort.reduce": {"s_per_mb": 0.0, "output_ratio": 1.0},
            },
        },
    )
    assert result.ok
    tasks = rows(result.run_dir, "tasks")
    maps = sorted((float(t["end_s"]), int(t["bytes_out"]), t["node_id"]) for t in tasks if t["stage"] == "0")
    (reduce,) = [t for t in tasks if t["stage"] == "1"]
    (remote_end, remote_bytes, _) = next(m for m in maps if m[2] != reduce["node_id"])
    assert int(reduce["bytes_in"]) == sum(m[1] for m in maps)
    assert float(reduce["end_s"]) == pytest.approx(remote_end + 2 * remote_bytes / 1e6, abs=1e-3)
    (first_end, first_bytes, _), (second_end, second_bytes, _) = maps
    first_in = first_end + first_bytes / 1e6
    copies = sorted(e["t"] for e in events(result.run_dir) if e["event"] == "checkpointed")
    assert copies == pytest.approx([first_in, max(first_in, second_end) + second_bytes / 1e6], abs=1e-3)


def test_without_checkpoints_the_same_fetch_takes_its_own_bytes_only(tmp_path: Path) -> None:
    """The same job under spark (no copies): the reduce's remote MiB over idle links."""
    launch = 0.1
    result = simulate(
        tmp_path,
        cluster={"reserved": 0, "transient": {"count": 2, "slots": 1, **NIC}},
        policy={"scheduler": "fifo", "strategy": "spark"},
        jobs=[{"workload": "sort", "size_mb": 2, "maps": 2, "reduces": 1}],
        simulation={
            "launch_overhead": launch,
            "ops": {
                "sort.map": {"s_per_mb": 0.5, "output_ratio": 1.0},
                "sort.reduce": {"s_per_mb": 0.0, "output_ratio": 1.0},
            },
        },
    )
    tasks = {t["task_id"]: t for t in rows(result.run_dir, "tasks")}
    reduce, fetched = tasks["j000.s1.t0"], int(tasks["j000.s0.t0"]["bytes_out"]) / 1e6
    assert float(reduce["end_s"]) - float(reduce["start_s"]) == pytest.approx(launch + fetched, abs=1e-4)


def test_a_narrow_dependency_reads_its_parents_whole_block(tmp_path: Path) -> None:
    """PageRank's scatter reads its links task's edges and node table (partitions 0 and 1 of
    3: a generated graph's names are an empty frame), as the real task does, not the one
    partition its reference names; the last iterate reads the table and the names."""
    result = simulate(
        tmp_path,
        cluster=ONE_NODE,
        jobs=[
            {"workload": "pagerank", "nodes": 2000, "edges": 20000, "iterations": 1, "maps": 2, "reduces": 3}
        ],
    )
    assert result.ok
    tasks = {(int(t["stage"]), int(t["index"])): t for t in rows(result.run_dir, "tasks")}
    for index in range(3):
        links, scatter, last = tasks[(1, index)], tasks[(2, index)], tasks[(3, index)]
        assert int(scatter["bytes_in"]) == int(links["bytes_out"]) - FRAME_HEADER.size > 0
        assert int(scatter["bytes_out"]) < int(last["bytes_in"]) < int(scatter["bytes_in"]) / 2


def _fetch_from_an_evicted_node(tmp_path: Path, evict_at: float) -> dict[tuple[str, int], dict[str, str]]:
    """spark, a reserved node of 2 slots, a transient one of 1: a sort of 3 maps (two on the
    reserved node, one on the transient) and 1 reduce on the reserved node from 0.65 s. After
    the launch overhead (0.75 s) it fetches the transient node's 1 MiB over 1 MB/s links: the
    last byte arrives at 0.75 + 1.048576 s. The storm evicts the transient node at ``evict_at``."""
    result = simulate(
        tmp_path,
        cluster={
            "reserved": {"count": 1, "slots": 2, **NIC},
            "transient": {"count": 1, "slots": 1, **NIC},
        },
        policy={"scheduler": "fifo", "strategy": "spark"},
        jobs=[{"workload": "sort", "size_mb": 3, "maps": 3, "reduces": 1}],
        simulation={
            "launch_overhead": 0.1,
            "ops": {
                "sort.map": {"s_per_mb": 0.5, "output_ratio": 1.0},
                "sort.reduce": {"s_per_mb": 0.0, "output_ratio": 1.0},
            },
        },
        chaos={"storms": [{"at": evict_at, "evict": {"count": 1}}]},
    )
    assert result.ok
    return {(t["task_id"], int(t["attempt"])): t for t in rows(result.run_dir, "tasks")}


def test_a_reducer_fetching_from_an_evicted_node_fails_and_reruns_after_its_map(tmp_path: Path) -> None:
    """Evicted at 1.2 s, mid-fetch: the reduce fails at once with ``fetch`` (as a real worker's
    does), the lost map reruns on the reserved node (1.2 to 1.8 s), then the reduce (all local
    now: the launch overhead only)."""
    tasks = _fetch_from_an_evicted_node(tmp_path, 1.2)
    (lost_map,) = [t for t in tasks.values() if t["node_id"].startswith("transient")]
    failed, rerun = tasks[("j000.s1.t0", 0)], tasks[("j000.s1.t0", 1)]
    assert (failed["status"], failed["failure"]) == ("failed", "fetch")
    assert float(failed["end_s"]) == pytest.approx(1.2)
    remap = tasks[(lost_map["task_id"], 1)]
    assert remap["node_id"] == "reserved-0" and remap["status"] == "succeeded"
    assert (float(remap["start_s"]), float(remap["end_s"])) == pytest.approx((1.2, 1.8), abs=1e-3)
    assert rerun["status"] == "succeeded"
    assert float(rerun["end_s"]) == pytest.approx(1.8 + 0.1, abs=1e-3)
    assert len(tasks) == 6


def test_a_reducer_whose_fetch_completed_survives_the_eviction(tmp_path: Path) -> None:
    """Evicted at 1.9 s, after the fetch's last byte (1.7986 s): nothing fails or reruns."""
    tasks = _fetch_from_an_evicted_node(tmp_path, 1.9)
    assert len(tasks) == 4 and all(t["status"] == "succeeded" for t in tasks.values())
    assert float(tasks[("j000.s1.t0", 0)]["end_s"]) == pytest.approx(0.75 + 2**20 / 1e6, abs=1e-3)
