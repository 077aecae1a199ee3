"""The model agents on their own: what they answer, and when, on a bare clock."""

from __future__ import annotations

import pytest

from master.execution_model import ExecutionModel
from master.sim.nodes import part_bytes, url_of
from testbed.scenario.schema import parse_scenario
from testbed.wire.protocol import (
    BlockReceived,
    BlockRef,
    CancelTask,
    FlushAggregate,
    Heartbeat,
    LaunchTask,
    Message,
    NodeState,
    PushDelivered,
    PushTarget,
    TaskSpec,
    TaskUpdate,
)
from testbed.workloads.pagerank import sizes as pagerank_sizes
from tests.support.model_agents import NIC_SPEC, SPEC, agents, reduce_task, run_all, written_blocks
from tests.support.sim import sleep_task


def test_nodes_announce_themselves_after_the_startup_delay() -> None:
    _, _, heard = agents()
    assert [(t, node, m.state) for t, node, m in heard if isinstance(m, NodeState)] == [
        (2.0, "reserved-0", "up"),
        (2.0, "transient-0", "up"),
    ]


def test_a_node_starts_in_proportion_to_its_cores_when_the_startup_names_its_cores() -> None:
    """A faithful agent starts inside its node's CPU quota: node_startup was measured on nodes
    of node_startup_cores, so a node of half those cores takes twice as long."""
    spec = {
        **SPEC,
        "cluster": {"reserved": {"count": 1, "slots": 2}, "transient": {"count": 1, "slots": 1}},
        "simulation": {**SPEC["simulation"], "node_startup": 1.0, "node_startup_cores": 2},
    }
    _, _, heard = agents(spec=spec)
    assert [(t, node) for t, node, m in heard if isinstance(m, NodeState)] == [
        (1.0, "reserved-0"),
        (2.0, "transient-0"),
    ]


def test_a_launch_is_running_at_once_and_succeeds_after_overhead_and_duration() -> None:
    heap, fleet, heard = agents()
    heard.clear()
    fleet.command("reserved-0", LaunchTask(task=sleep_task(0, 3.0)))
    run_all(heap)
    updates = [(t, m.state) for t, _, m in heard if isinstance(m, TaskUpdate)]
    assert updates == [(2.0, "running"), (pytest.approx(2.0 + 0.5 + 3.0), "succeeded")]


def test_a_cancelled_attempt_reports_cancelled_and_never_succeeds() -> None:
    heap, fleet, heard = agents()
    heard.clear()
    fleet.command("reserved-0", LaunchTask(task=sleep_task(0, 3.0)))
    fleet.command("reserved-0", CancelTask(task_id="j000.s0.t0", attempt=0))
    run_all(heap)
    assert [m.failure for _, _, m in heard if isinstance(m, TaskUpdate) and m.state != "running"] == [
        "cancelled"
    ]


def test_a_killed_node_loses_its_blocks_and_its_will_comes_after_the_detection_delay() -> None:
    heap, fleet, heard = agents()
    spec = sleep_task(0, 1.0).model_copy(update={"final": False, "params": {}, "op": "wordcount.map"})
    fleet.command("transient-0", LaunchTask(task=spec))
    run_all(heap)
    assert spec.block_id in fleet.nodes["transient-0"].blocks
    heard.clear()
    fleet.kill("transient-0")
    run_all(heap)
    assert [(t, m.state) for t, _, m in heard] == [(pytest.approx(heap.now), "lost")]
    reader = sleep_task(1, 0.0).model_copy(
        update={
            "params": {},
            "op": "wordcount.reduce",
            "stage": 1,
            "inputs": ((BlockRef(block=spec.block_id, partition=0, locations=(url_of("transient-0"),)),),),
        }
    )
    heard.clear()
    fleet.command("reserved-0", LaunchTask(task=reader))
    run_all(heap)
    failed = [m for _, _, m in heard if isinstance(m, TaskUpdate) and m.state == "failed"]
    assert [(m.failure, m.lost_blocks) for m in failed] == [("fetch", (spec.block_id,))]


def test_a_push_is_received_then_reported_by_its_sender() -> None:
    heap, fleet, heard = agents()
    target = PushTarget(node_id="reserved-0", url=url_of("reserved-0"), partitions=(0,))
    spec = sleep_task(0, 0.0).model_copy(
        update={
            "final": False,
            "params": {"generate": {"nbytes": 2**20}},
            "op": "sort.map",
            "push": (target,),
        }
    )
    heard.clear()
    fleet.command("transient-0", LaunchTask(task=spec))
    run_all(heap)
    kinds = [(node, type(m).__name__) for _, node, m in heard if not isinstance(m, TaskUpdate)]
    assert kinds == [("reserved-0", "BlockReceived"), ("transient-0", "PushDelivered")]
    delivered = next(m for _, _, m in heard if isinstance(m, PushDelivered)).delivered
    assert delivered["reserved-0"][0].nbytes == 2**20  # sort.map's output is its input
    assert spec.block_id in fleet.nodes["reserved-0"].blocks


def test_a_push_to_two_receivers_sends_both_at_once_on_the_senders_link() -> None:
    """As the real agent (one upload per receiver at once, their chunks interleaved on the
    sender's ``net-out``): both copies are through when the sender's link has sent both,
    2 MiB at 1,000,000 bytes a second, and committed ``push_overhead`` later; then the
    sender reports."""
    heap, fleet, heard = agents(spec=NIC_SPEC)
    targets = tuple(
        PushTarget(node_id=n, url=url_of(n), partitions=(0,)) for n in ("reserved-0", "reserved-1")
    )
    spec = sleep_task(0, 0.0).model_copy(
        update={"final": False, "params": {"generate": {"nbytes": 2**20}}, "op": "sort.map", "push": targets}
    )
    fleet.command("transient-0", LaunchTask(task=spec))
    run_all(heap)
    (done,) = [t for t, _, m in heard if isinstance(m, TaskUpdate) and m.state == "succeeded"]
    copies = [(t, type(m).__name__) for t, _, m in heard if not isinstance(m, (TaskUpdate, NodeState))]
    end = pytest.approx(done + 2 * 2**20 / 1e6 + 0.25)
    assert copies == [(end, "BlockReceived"), (end, "BlockReceived"), (end, "PushDelivered")]


def test_fetches_by_one_node_share_its_net_in_link() -> None:
    """Two readers on one node start together, each fetching 1 MiB from another node: the
    receiver's ``net-in`` books them one after the other (first come, first served)."""
    heap, fleet, heard = agents(spec=NIC_SPEC)
    refs = written_blocks(heap, fleet)
    heard.clear()
    for index, ref in enumerate(refs):
        fleet.command("transient-0", LaunchTask(task=reduce_task(index, (ref,))))
    start = heap.now
    run_all(heap)
    ends = sorted(t for t, _, m in heard if isinstance(m, TaskUpdate) and m.state == "succeeded")
    reduce = parse_scenario(SPEC).simulation.op("sort.reduce").s_per_mb
    begin = start + 0.5
    assert ends == pytest.approx([begin + (1 + k) * 2**20 / 1e6 + reduce for k in range(2)])


def test_a_link_idle_now_is_not_held_for_a_later_block_of_another_reader() -> None:
    """Reader A fetches 1 MiB from reserved-0, then 1 MiB from reserved-1; reader B, on
    reserved-0, fetches the reserved-1 block at the same time. As the real workers book each
    chunk as it arrives, B has reserved-1's ``net-out`` now and A's second block follows it;
    booked ahead, A's second block would have held that link idle for B's whole first second."""
    heap, fleet, heard = agents(spec=NIC_SPEC)
    refs = written_blocks(heap, fleet)
    heard.clear()
    for index, (node, inputs) in enumerate((("transient-0", tuple(refs)), ("reserved-0", (refs[1],)))):
        fleet.command(node, LaunchTask(task=reduce_task(index, inputs)))
    begin = heap.now + 0.5
    run_all(heap)
    ends = {m.task_id: t for t, _, m in heard if isinstance(m, TaskUpdate) and m.state == "succeeded"}
    model = ExecutionModel(parse_scenario(NIC_SPEC), lambda job, stage: 256, lambda job, stage: ("shuffle",))
    op = model.op_model(reduce_task(0, ()))
    per_mb, fixed = op.s_per_mb, op.fixed_s
    one = 2**20 / 1e6
    assert ends["j000.s1.t1"] == pytest.approx(begin + one + fixed + per_mb)
    assert ends["j000.s1.t0"] == pytest.approx(begin + 2 * one + fixed + 2 * per_mb)


def test_a_holder_killed_before_its_block_is_fetched_fails_the_reader_as_a_real_worker() -> None:
    """A reader fetches 1 MiB from reserved-0, then 1 MiB from reserved-1; reserved-1 is
    killed during the first fetch. As the real worker, it fails when it reaches that block (the
    first fetch's end), with ``fetch``, that block alone and the real worker's message; the
    bytes it had booked and will not fetch are given back to the links."""
    heap, fleet, heard = agents(spec=NIC_SPEC)
    refs = tuple(written_blocks(heap, fleet))
    reader = reduce_task(0, refs)
    heard.clear()
    fleet.command("transient-0", LaunchTask(task=reader))
    begin = heap.now + 0.5
    run_all(heap, until=begin + 0.25)
    fleet.kill("reserved-1")
    run_all(heap)
    (failed,) = [(t, m) for t, _, m in heard if isinstance(m, TaskUpdate) and m.state != "running"]
    at, update = failed
    assert at == pytest.approx(begin + 2**20 / 1e6)
    assert (update.state, update.failure, update.lost_blocks) == ("failed", "fetch", ("j000.s0.t1.a0",))
    assert update.error == "cannot fetch block j000.s0.t1.a0: its holders are gone"
    # the second block's booking, never sent, is given back: the reader's net-in is free now
    assert fleet.nodes["transient-0"].links.in_free == pytest.approx(at, abs=0.01)


def test_a_holder_killed_while_a_reader_reads_leaves_it_the_next_location() -> None:
    """As above, but the second block has a copy on reserved-0 (pushed when it was written):
    the holders the reader found at its start are not trusted once a node died, and it reads
    that block from its next location, as a worker tries each in turn."""
    heap, fleet, heard = agents(spec=NIC_SPEC)
    copy = PushTarget(node_id="reserved-0", url=url_of("reserved-0"), partitions=(0,))
    for index, (holder, push) in enumerate((("reserved-0", ()), ("reserved-1", (copy,)))):
        writer = sleep_task(index, 0.0).model_copy(
            update={"final": False, "params": {"generate": {"nbytes": 2**20}}, "op": "sort.map", "push": push}
        )
        fleet.command(holder, LaunchTask(task=writer))
    run_all(heap)
    refs = (
        BlockRef(block="j000.s0.t0.a0", partition=0, locations=(url_of("reserved-0"),)),
        BlockRef(block="j000.s0.t1.a0", partition=0, locations=(url_of("reserved-1"), url_of("reserved-0"))),
    )
    heard.clear()
    fleet.command("transient-0", LaunchTask(task=reduce_task(0, refs)))
    begin = heap.now + 0.5
    run_all(heap, until=begin + 0.25)
    fleet.kill("reserved-1")
    run_all(heap)
    (done,) = [(t, m) for t, _, m in heard if isinstance(m, TaskUpdate) and m.state != "running"]
    assert done[1].state == "succeeded"
    assert done[1].metrics is not None and done[1].metrics.bytes_in == 2 * 2**20
    one = 2**20 / 1e6
    assert done[0] > begin + 2 * one  # both blocks came over the links
    assert fleet.nodes["reserved-0"].links.out_free > begin + 1.5 * one  # both from reserved-0


def test_a_jobs_final_stage_takes_its_ops_final_model_when_there_is_one() -> None:
    """``<op>.final`` (a calibration's fit of the stages that write the run's output) is the
    model of a final stage's attempts only; without it a final stage takes its op's model."""
    ops = {
        "pagerank.iterate": {"s_per_mb": 0.01, "output_ratio": 0.5},
        "pagerank.iterate.final": {"s_per_mb": 0.1, "output_ratio": 0.5, "fixed_s": 0.2},
    }
    scenario = parse_scenario({**SPEC, "simulation": {**SPEC["simulation"], "ops": ops}})
    model = ExecutionModel(scenario, lambda job, stage: 64, lambda job, stage: ("shuffle",))
    task = sleep_task(0, 0.0).model_copy(update={"op": "pagerank.iterate", "params": {}, "final": False})
    assert model.cost(task, 8 * 2**20, 0.0, "reserved").compute_s == pytest.approx(0.08)
    final = task.model_copy(update={"final": True})
    assert model.cost(final, 8 * 2**20, 0.0, "reserved").compute_s == pytest.approx(1.0)
    sort = final.model_copy(update={"op": "sort.reduce"})  # no sort.reduce.final: sort.reduce's
    assert model.cost(sort, 2**20, 0.0, "reserved").compute_s == model.spec.op("sort.reduce").s_per_mb


def test_pageranks_iterates_read_only_the_parts_of_the_links_block_the_real_tasks_read() -> None:
    """Links is edges (0), node table (1), names (2): an iterate reads the edges and the
    table, the last iterate the table and the names, as ``testbed.workloads.pagerank``."""
    kinds = lambda job, stage: ("shuffle", "narrow")  # noqa: E731
    model = ExecutionModel(parse_scenario(SPEC), lambda job, stage: 64, kinds)
    links = BlockRef(block="j000.s1.t0.a0", partition=0, locations=(url_of("reserved-0"),))
    shuffled = BlockRef(block="j000.s3.t0.a0", partition=0, locations=(url_of("reserved-0"),))
    update = {"params": {}, "op": "pagerank.iterate", "stage": 4, "inputs": ((shuffled,), (links,))}
    iterate = sleep_task(0, 0.0).model_copy(update={**update, "final": False})
    last = iterate.model_copy(update={"final": True})
    node = agents()[1].nodes["reserved-0"]
    node.blocks[links.block] = (1000, 200, 30)
    node.blocks[shuffled.block] = (7, 9)
    read = model.whole_blocks(iterate)
    assert read == {links.block: (0, 1)}
    assert [part_bytes(node, ref, read) for ref in (shuffled, links)] == [7, 1200]
    assert part_bytes(node, links, model.whole_blocks(last)) == 230
    gradient = iterate.model_copy(update={"op": "mlr.gradient"})  # a broadcast model: every part
    assert part_bytes(node, links, model.whole_blocks(gradient)) == 1230


def broadcast_reader(index: int, model: BlockRef) -> TaskSpec:
    """Task ``index`` of stage 1, reading ``model`` by broadcast (through its node's copy)."""
    return reduce_task(index, (model,)).model_copy(update={"broadcast": (0,)})


def outcomes(heard: list[tuple[float, str, Message]]) -> dict[str, TaskUpdate]:
    return {m.task_id: m for _, _, m in heard if isinstance(m, TaskUpdate) and m.state != "running"}


def test_the_tasks_of_a_node_reading_a_broadcast_book_it_once_on_the_links() -> None:
    """Three tasks of transient-0 read reserved-0's 1 MiB block by broadcast at once: the block
    crosses the links once, and the three wait for that one fetch (Spark's broadcast, once per
    executor). A later task of the node reads the node's copy at once; another node fetches
    its own copy."""
    heap, fleet, heard = agents(spec=NIC_SPEC)
    model = written_blocks(heap, fleet)[0]
    heard.clear()
    for index in range(3):
        fleet.command("transient-0", LaunchTask(task=broadcast_reader(index, model)))
    begin, one = heap.now + 0.5, 2**20 / 1e6
    run_all(heap)
    done = outcomes(heard)
    assert [m.state for m in done.values()] == ["succeeded"] * 3
    assert [m.metrics.fetch_s for m in done.values()] == pytest.approx([one] * 3)
    assert [m.metrics.bytes_in for m in done.values()] == [2**20] * 3
    assert fleet.nodes["transient-0"].links.in_free == pytest.approx(begin + one)
    assert fleet.nodes["reserved-0"].links.out_free == pytest.approx(begin + one)
    heard.clear()
    fleet.command("transient-0", LaunchTask(task=broadcast_reader(3, model)))
    fleet.command("reserved-1", LaunchTask(task=broadcast_reader(4, model)))
    later = heap.now + 0.5
    run_all(heap)
    done = outcomes(heard)
    assert {t: (m.metrics.fetch_s, m.metrics.bytes_in) for t, m in done.items()} == {
        "j000.s1.t3": (0.0, 2**20),
        "j000.s1.t4": (pytest.approx(one), 2**20),
    }
    assert fleet.nodes["reserved-0"].links.out_free == pytest.approx(later + one)


def test_a_nodes_copy_outlives_the_blocks_holder_but_a_copy_under_way_dies_with_it() -> None:
    """transient-0 copies reserved-0's block, then reserved-0 dies: the node's next task reads
    its copy. Two tasks then read reserved-1's block, which dies during their one fetch: both
    fail with ``fetch`` (the second waited for the first's fetch), the bytes not sent are given
    back to the links, and no copy is left."""
    heap, fleet, heard = agents(spec=NIC_SPEC)
    first, second = written_blocks(heap, fleet)
    fleet.command("transient-0", LaunchTask(task=broadcast_reader(0, first)))
    run_all(heap)
    fleet.kill("reserved-0")
    heard.clear()
    fleet.command("transient-0", LaunchTask(task=broadcast_reader(1, first)))
    for index in (2, 3):
        fleet.command("transient-0", LaunchTask(task=broadcast_reader(index, second)))
    begin = heap.now + 0.5
    run_all(heap, until=begin + 0.25)
    killed_at = heap.now
    assert begin <= killed_at < begin + 2**20 / 1e6  # during the fetch
    fleet.kill("reserved-1")
    run_all(heap)
    done = outcomes(heard)
    assert {t: (m.state, m.failure, m.lost_blocks) for t, m in done.items()} == {
        "j000.s1.t1": ("succeeded", None, ()),
        "j000.s1.t2": ("failed", "fetch", (second.block,)),
        "j000.s1.t3": ("failed", "fetch", (second.block,)),
    }
    node = fleet.nodes["transient-0"]
    assert set(node.copies) == {(first.block, 0)}
    assert node.links.in_free == pytest.approx(killed_at)


@pytest.mark.parametrize(("op", "pushed"), [("mlr.gradient", (0, 500, 0)), ("wordcount.map", (500, 1000, 0))])
def test_a_partial_aggregate_of_gradients_is_one_vector(op: str, pushed: tuple[int, ...]) -> None:
    """Gradients written whole into one partition each (``treeAggregate``: 0 and 2 into
    partition 1, 1 into partition 0) sum into one gradient, whole in the partition
    ``combined_partition`` picks among theirs ([0, 1]: 1), as the real combiner writes it;
    merged word counts are counted as the members' sum (an upper bound)."""
    heap, fleet, heard = agents()
    sender = fleet.nodes["transient-0"]
    sender.blocks.update({"g0": (0, 500, 0), "g1": (500, 0, 0), "g2": (0, 500, 0)})
    target = PushTarget(node_id="reserved-0", url=url_of("reserved-0"), partitions=(0, 1, 2))
    heard.clear()
    flush = FlushAggregate(block="agg", op=op, members=("g0", "g1", "g2"), partitions=3, push=(target,))
    fleet.command("transient-0", flush)
    run_all(heap)
    (received,) = [m for _, _, m in heard if isinstance(m, BlockReceived)]
    assert tuple(part.nbytes for part in received.parts) == pushed
    assert fleet.nodes["reserved-0"].blocks["agg"] == pushed


def test_heartbeats_list_the_running_attempts_and_probes_tell_the_dead() -> None:
    heap, fleet, heard = agents(heartbeat_s=1.0)
    fleet.command("reserved-0", LaunchTask(task=sleep_task(0, 10.0)))
    heard.clear()
    run_all(heap, until=heap.now + 1.5)
    beats = [m for _, node, m in heard if isinstance(m, Heartbeat) and node == "reserved-0"]
    assert beats and beats[-1].attempts == {"j000.s0.t0": 0}
    fleet.kill("transient-0")
    assert fleet.probe("reserved-0", "sim-reserved-0") == "answered"
    assert fleet.probe("transient-0", "sim-transient-0") == "refused"


def test_a_launch_sent_again_repeats_the_outcome_kept_encoded() -> None:
    heap, fleet, heard = agents()
    heard.clear()
    fleet.command("reserved-0", LaunchTask(task=sleep_task(0, 3.0)))
    run_all(heap)
    first = [m for _, _, m in heard if isinstance(m, TaskUpdate) and m.state == "succeeded"]
    heard.clear()
    fleet.command("reserved-0", LaunchTask(task=sleep_task(0, 3.0)))
    assert [m for _, _, m in heard] == first  # at once, the same message (its id too)
    fleet.kill("reserved-0")
    assert not fleet.nodes["reserved-0"].core.finished  # a dead node gets no launch again


def test_an_aggregate_of_gradients_is_one_inputs_size_however_many_it_sums() -> None:
    """An MLR aggregate sums the whole gradients it reads: its output is one gradient whether
    it reads 16 gradients (Spark) or 4 partial aggregates (Pado), not a ratio of what it read."""
    model = ExecutionModel(parse_scenario(SPEC), lambda job, stage: 256, lambda job, stage: ("shuffle",))
    aggregate = sleep_task(0, 0.0).model_copy(update={"op": "mlr.aggregate", "params": {}, "final": False})
    spark = model.cost(aggregate, 16 * 2**20, 0.0, "reserved", largest=2**20)
    pado = model.cost(aggregate, 4 * 2**20, 0.0, "reserved", largest=2**20)
    assert spark.bytes_out == pado.bytes_out == 2**20
    sort = model.cost(aggregate.model_copy(update={"op": "sort.reduce"}), 4 * 2**20, 0.0, "reserved", 2**20)
    assert sort.bytes_out == 4 * 2**20  # any other op: its output ratio (sort's is 1)
    final = model.cost(
        aggregate.model_copy(update={"op": "sort.reduce", "final": True}), 2**20, 0.0, "reserved"
    )
    assert final.bytes_out == 0  # a final task writes to the sink, no block


def test_a_pagerank_tasks_output_comes_from_its_graphs_shape() -> None:
    """A generated graph's scatter writes its expected contributions, whatever it read; a graph
    read from files (no shape in the plan) keeps the op's ratio."""
    model = ExecutionModel(parse_scenario(SPEC), lambda job, stage: 256, lambda job, stage: ("narrow",))
    graph = {"nodes": 100_000, "edges": 1_000_000, "partitions": 8}
    scatter = sleep_task(0, 0.0).model_copy(
        update={"op": "pagerank.scatter", "params": {"graph": graph}, "partitions": 8, "final": False}
    )
    shaped = pagerank_sizes.task_bytes(scatter)
    assert shaped is not None and shaped > 2 * 2**20 / 8
    for read in (2**20, 4 * 2**20):
        assert model.cost(scatter, read, 0.0, "reserved").bytes_out == shaped
    from_files = scatter.model_copy(update={"params": {}})
    ratio = model.spec.op("pagerank.scatter").output_ratio
    assert model.cost(from_files, 2**20, 0.0, "reserved").bytes_out == int(2**20 * ratio)
