"""Data locality under Firmament (issue 43, point 5), on hand-built states: the core's
replicas as the snapshot shows them, Quincy's preference for their holders, a lost replica no
longer preferred, and where each launch reads its split."""

from __future__ import annotations

import pytest

from master.core.input_replicas import InputReplication, JobInputs
from master.core.replicas import Replicas
from master.schedulers.firmament import FirmamentScheduler
from master.schedulers.firmament.costs import GB, Preferences, QuincyCostModel, TransientCostModel
from testbed.api.policy import JobView, PendingTask
from testbed.wire.protocol import BlockRef, InputReads, InputSplit, replica_block
from tests.support.firmament import node, placed, risk, snap

SPLIT = "j0.s0.t0"


def replicated(holders: list[str]) -> InputReplication:
    """One job whose one 2 GB split lives on ``holders``."""
    return InputReplication({"j0": JobInputs({SPLIT: 2 * GB}, Replicas({SPLIT: list(holders)}))})


def shown(inputs: InputReplication) -> JobView:
    """The job as a snapshot shows it: its map with the bytes each node holds."""
    size, on_node = inputs.held("j0", SPLIT)
    return JobView(
        "j0", 0.0, (PendingTask(SPLIT, "j0", 0, 0, 100, 10.0, input_bytes=size, input_on_node=on_node),)
    )


NODES = [node(f"n{i}", slots=1, zone=zone) for i, zone in enumerate("aabbcc")]


def test_the_snapshot_shows_each_holder_with_the_split_s_bytes() -> None:
    assert replicated(["n4", "n1"]).held("j0", SPLIT) == (2 * GB, (("n1", 2 * GB), ("n4", 2 * GB)))
    assert replicated(["n1"]).held("j0", "j0.s1.t0") == (0, ())  # not a replicated split
    assert replicated(["n1"]).held("j9", SPLIT) == (0, ())


@pytest.mark.parametrize("model", ["quincy", "transient"])
def test_quincy_places_a_map_on_a_node_holding_its_split(model: str) -> None:
    """A holder costs 0 (its split is on its disk; 2 GB from a holder in the rack cost 2 on the
    others of its zone, 4 across the core): the map goes to n3, the one holder with a slot."""
    cost = QuincyCostModel() if model == "quincy" else TransientCostModel(risk("none"))
    nodes = [*NODES[:3], NODES[3], node("n4", slots=1, zone="c", running=1), NODES[5]]
    decisions = FirmamentScheduler(cost).schedule(snap(nodes, [shown(replicated(["n3", "n4"]))]))
    assert placed(decisions) == {SPLIT: "n3"}


def test_a_replica_lost_with_its_node_is_no_longer_preferred() -> None:
    inputs = replicated(["n1", "n4"])
    inputs.node_lost("n1")
    assert inputs.held("j0", SPLIT) == (2 * GB, (("n4", 2 * GB),))
    racks = {n.node_id: (n.node_class, n.zone) for n in NODES}
    task = shown(inputs).pending[0]
    assert QuincyCostModel().preferences(task, racks).machines == {"n4": 0.0}
    nodes = [n for n in NODES if n.node_id != "n1"]
    assert placed(FirmamentScheduler(QuincyCostModel()).schedule(snap(nodes, [shown(inputs)]))) == {
        SPLIT: "n4"
    }
    inputs.node_lost("n4")  # no replica left: read from the source, 2 GB across the core anywhere
    task = shown(inputs).pending[0]
    assert task.input_on_node == () and QuincyCostModel().preferences(task, racks) == Preferences()
    assert QuincyCostModel().cluster_cost(task, racks) == 4.0


def test_each_launch_reads_locally_from_a_holder_or_from_the_source_and_is_counted() -> None:
    inputs = replicated(["n1", "n4"])
    job = _Job()
    assert inputs.launched(job, (0, 0), "n4") == {"kind": "local", "holder": "n4", "bytes": 2 * GB}
    assert inputs.launched(job, (0, 0), "n0") == {"kind": "remote", "holder": "n1", "bytes": 2 * GB}
    inputs.node_lost("n1"), inputs.node_lost("n4")
    assert inputs.launched(job, (0, 0), "n0") == {"kind": "source", "holder": "source", "bytes": 2 * GB}
    assert inputs.launched(job, (1, 0), "n0") is None  # a reduce reads no split
    assert inputs.summary() == {
        "input_local_fraction": round(1 / 3, 6),
        "input_read_bytes": {"local": 2 * GB, "remote": 2 * GB, "source": 2 * GB},
    }
    assert InputReplication().summary() == {}  # no job replicates: summary.json as before


def test_real_holders_are_told_their_file_splits_and_each_launch_names_the_live_holders() -> None:
    """What a real run sends: each holder its file splits to copy (``StoreInputs``), and each
    launch its split's replica at the live holders, its own node first, the plan's next."""
    split = InputSplit(block=replica_block("j0", 0), path="in.txt", start=0, end=2 * GB)
    replicas = Replicas({SPLIT: ["n4", "n1"]})
    inputs = InputReplication({"j0": JobInputs({SPLIT: 2 * GB}, replicas, {SPLIT: split})})
    assert inputs.to_store("j0", {"n0", "n1", "n4"}) == {"n1": (split,), "n4": (split,)}
    assert inputs.to_store("j0", {"n4"}) == {"n4": (split,)} and inputs.to_store("j9", {"n1"}) == {}
    urls = {"n1": "http://n1:1", "n4": "http://n4:1"}

    def url_of(node_id: str) -> str:
        return urls[node_id]

    job = _Job()
    assert inputs.replica(job, (0, 0), 0, "n1", url_of) == BlockRef(
        block=split.block, partition=0, locations=("http://n1:1", "http://n4:1")
    )
    assert inputs.replica(job, (0, 0), 0, "n0", url_of).locations == ("http://n4:1", "http://n1:1")
    inputs.node_lost("n4")
    assert inputs.replica(job, (0, 0), 0, "n0", url_of).locations == ("http://n1:1",)
    inputs.node_lost("n1")  # no replica left: the map reads the source
    assert inputs.replica(job, (0, 0), 0, "n0", url_of) is None
    assert replicated(["n1"]).replica(job, (0, 0), 0, "n1", url_of) is None


def test_reported_reads_name_the_holders_offered_and_a_real_summary_counts_them() -> None:
    """A worker names the URLs it read from; the core turns them into the holders its launch
    offered (this attempt's), counts them for the job's row and for a real run's summary, which
    then says what was read, not what the launches planned."""
    split = InputSplit(block=replica_block("j0", 0), path="in.txt", start=0, end=2 * GB)
    replicas = Replicas({SPLIT: ["n4", "n1"]})
    inputs = InputReplication({"j0": JobInputs({SPLIT: 2 * GB}, replicas, {SPLIT: split})}, reported=True)
    urls = {"n1": "http://n1:1", "n4": "http://n4:1"}
    job = _Job()
    inputs.launched(job, (0, 0), "n0")
    inputs.replica(job, (0, 0), 3, "n0", urls.__getitem__)
    assert inputs.read_plan(job, (0, 0), 3) == {"read_plan": ["n4", "n1"]}
    assert inputs.read_plan(job, (0, 0), 2) == {"read_plan": []} and inputs.read_plan(job, (1, 0), 3) == {}
    reads = InputReads(local=0, remote={"http://n4:1": 700, "http://n1:1": 300}, source=0)
    journalled = {"local": 0, "remote": {"n1": 300, "n4": 700}, "source": 0}
    assert inputs.reported_reads("j0", SPLIT, 3, reads) == journalled
    later = InputReads(local=500, remote={"http://gone:9": 100}, source=2000)
    not_offered = inputs.reported_reads("j0", SPLIT, 4, later)["remote"]
    assert not_offered == {"http://gone:9": 100}  # attempt 4 was offered no holder: by its URL
    assert inputs.summary() == {
        "input_local_fraction": round(500 / 3600, 6),
        "input_read_bytes": {"local": 500, "remote": 1100, "source": 2000},
    }
    inputs.reported = False  # the simulator: its plan
    assert inputs.summary()["input_read_bytes"] == {"local": 0, "remote": 2 * GB, "source": 0}
    assert inputs.read_plan(job, (0, 0), 3) == {}
    assert inputs.job_counts("j0") == {
        "input_local_bytes": 500, "input_remote_bytes": 1100, "input_source_bytes": 2000,
        "input_local_fraction": round(500 / 3600, 6),
    }  # fmt: skip
    assert inputs.job_counts("j0") == {} and InputReplication(reported=True).summary() == {}


class _Job:
    """What ``launched`` reads of a job: its id and its tasks' ids."""

    job_id = "j0"

    def task_id(self, key: tuple[int, int]) -> str:
        return f"j0.s{key[0]}.t{key[1]}"
