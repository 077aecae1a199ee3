"""The master's core driven by events alone: no broker, no process, no file, no clock.

Each test feeds ``MasterCore.handle`` the stimuli of one fault interleaving at chosen
times and asserts on the commands it returns (docs/architecture.md, "The sans-I/O core").
"""

from __future__ import annotations

import json
from pathlib import Path

from master.core import commands as cmd
from master.core.events import EvictRequest, FromNode, LinkDown, LinkUp, OutputStaged, ProbeAnswered, Round
from master.shell.resume_run import recover
from testbed.api.policy import Assign, ClusterSnapshot, Decision, Scheduler
from testbed.scenario.chaos import EvictSpec
from testbed.wire.protocol import EvictionNotice, FlushAggregate, NodeState, Resync
from tests.support.driver import Driver, launches, sends, up
from tests.support.scenarios import make_scenario


def test_the_same_events_give_the_same_commands() -> None:
    runs = []
    for _ in range(2):
        driver = Driver(make_scenario())
        driver.boot()
        driver.run_to_end()
        runs.append(driver.log)
    assert runs[0] == runs[1]
    assert [e["status"] for e in Driver.events_of(runs[0], "job_finished")] == ["succeeded"]


def test_a_whole_job_runs_and_each_partition_is_committed_once() -> None:
    driver = Driver(make_scenario())
    driver.boot()
    assert [c.job_id for c in driver.log if isinstance(c, cmd.PrepareJob)] == ["j000"]
    driver.run_to_end()
    commits = [(c.job_id, c.index) for c in driver.log if isinstance(c, cmd.CommitOutput)]
    assert sorted(commits) == [("j000", 0), ("j000", 1)]
    assert [c.ok for c in driver.log if isinstance(c, cmd.RunOver)] == [True]


class Overbooking(Scheduler):
    """A scheduler plugin that puts every pending task on one node, whatever it holds."""

    name = "overbooking"

    def __init__(self, node_id: str, memory_mb: int) -> None:
        self.node_id, self.memory_mb = node_id, memory_mb

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        return [Assign(t.task_id, self.node_id, self.memory_mb) for job in snapshot.jobs for t in job.pending]


def test_a_policy_that_overbooks_a_node_gets_only_what_fits() -> None:
    scenario = make_scenario()  # 4 maps; a transient node has 2 slots
    slots = scenario.cluster.transient.slots
    driver = Driver(scenario, scheduler=Overbooking("transient-0", 64))
    driver.boot()
    driver.do(Round())
    assert [n for n, _ in launches(driver.log)] == ["transient-0"] * slots  # the rest wait
    too_big = Driver(scenario, scheduler=Overbooking("transient-0", scenario.cluster.transient.memory_mb + 1))
    too_big.boot()
    too_big.do(Round())
    assert launches(too_big.log) == []


def test_a_duplicate_qos1_delivery_changes_nothing() -> None:
    driver = Driver(make_scenario())
    driver.boot()
    driver.do(Round())
    (node_id, spec), *_ = launches(driver.log)
    first = driver.finish(node_id, spec)
    assert [e["task"] for e in Driver.events_of(first, "task_finished")] == [spec.task_id]
    again = driver.finish(node_id, spec)  # the broker delivers the same update once more
    assert [c for c in again if not isinstance(c, cmd.WakeAt)] == []


def test_a_final_success_and_its_staging_delivered_twice_commit_once() -> None:
    driver = Driver(make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 1, "reduces": 1}]))
    driver.boot()
    driver.do(Round())
    ((node_id, spec),) = launches(driver.log)
    driver.finish(node_id, spec)
    driver.do(Round())
    ((node_id, final),) = launches(driver.log)[1:]
    first = driver.finish(node_id, final)
    commits = [(c.job_id, c.index, c.attempt) for c in first if isinstance(c, cmd.CommitOutput)]
    assert commits == [("j000", 0, final.attempt)]
    assert [c.ok for c in first if isinstance(c, cmd.RunOver)] == [True]
    again = driver.finish(node_id, final)  # the sink's report and the success, both redelivered
    assert [c for c in again if not isinstance(c, cmd.WakeAt)] == []


def test_the_worked_example_of_docs_architecture() -> None:
    """docs/architecture.md, "A worked example: a final task's success": these commands, in this order."""
    driver = Driver(make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 1, "reduces": 1}]))
    driver.boot()
    driver.do(Round())
    ((node_id, spec),) = launches(driver.log)
    driver.finish(node_id, spec)
    driver.do(Round())
    ((node_id, final),) = launches(driver.log)[1:]
    assert driver.do(OutputStaged(final.job_id, final.index, final.attempt)) == []
    out = driver.do(FromNode(node_id, _succeeded(node_id, final)))
    named = [(type(c).__name__, getattr(c, "kind", None)) for c in out]
    assert named == [
        ("CommitOutput", None),
        ("Journal", "output_committed"),
        ("Journal", "task_finished"),
        ("Journal", "job_finished"),
        ("RunOver", None),
        ("WantRound", None),
    ]


def test_an_output_not_staged_is_not_committed_and_the_task_runs_again() -> None:
    driver = Driver(make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 1, "reduces": 1}]))
    driver.boot()
    driver.do(Round())
    ((node_id, spec),) = launches(driver.log)
    driver.finish(node_id, spec)
    driver.do(Round())
    ((node_id, final),) = launches(driver.log)[1:]
    assert final.final
    out = driver.do(FromNode(node_id, _succeeded(node_id, final)))  # its upload never landed
    assert not any(isinstance(c, cmd.CommitOutput) for c in out)
    driver.do(Round())
    ((_, again),) = launches(driver.log)[2:]
    assert (again.task_id, again.attempt) == (final.task_id, final.attempt + 1)
    driver.do(OutputStaged(again.job_id, again.index, final.attempt))  # the old attempt's upload, late
    out = driver.do(FromNode(node_id, _succeeded(node_id, again)))
    assert not any(isinstance(c, cmd.CommitOutput) for c in out)  # not this attempt's: not committed


def test_an_eviction_notice_then_the_kill_relaunches_what_ran_there() -> None:
    storm = {"at": "1s", "evict": {"count": 1, "kind": "transient", "select": "busiest"}}
    chaos = {"transient": {"notice": "0.5s", "provisioning_delay": "2s"}, "storms": [storm]}
    driver = Driver(make_scenario(chaos=chaos))
    driver.boot()
    driver.do(Round())
    busy = {n for n, _ in launches(driver.log) if n.startswith("transient")}
    driver.advance(1.0)  # the storm: a notice to its victim, which drains
    notice = next(c for c in driver.log if isinstance(c, cmd.Send) and isinstance(c.message, EvictionNotice))
    victim = notice.node_id
    core = driver.core
    assert victim in busy and core.nodes[victim].status == "draining" and notice.message.seconds == 0.5
    assert [e["node"] for e in driver.events("node_draining")] == [victim]
    assert not any(isinstance(c, cmd.KillNode) for c in driver.log)
    spec = next(s for n, s in launches(driver.log) if n == victim)
    driver.advance(1.5)  # the kill, half a second later
    assert [c.node_id for c in driver.log if isinstance(c, cmd.KillNode)] == [victim]
    assert [(e["node"], e["reason"]) for e in driver.events("eviction")] == [(victim, "storm")]
    (timing,) = driver.events("eviction_timing")
    assert (timing["promised_s"], timing["lead_s"]) == (0.5, 0.5)
    lost = driver.do(FromNode(victim, _lost(victim, core)), at=1.6)  # its Will: no probe, we evicted it
    assert not any(isinstance(c, cmd.Probe) for c in lost)
    assert [e["reason"] for e in Driver.events_of(lost, "node_lost")] == ["evicted"]
    assert not driver.events("node_replacing")  # not a loss to replace: the chaos rules replace their own
    driver.do(Round())
    assert (spec.task_id, spec.attempt + 1) in driver.running()
    driver.advance(3.5)  # the replacement, after the provisioning delay
    assert [c.node_id for c in driver.log if isinstance(c, cmd.StartNode)][-1] == "transient-3"
    driver.run_to_end()
    assert [c.ok for c in driver.log if isinstance(c, cmd.RunOver)] == [True]


def test_a_will_is_checked_by_a_probe_and_a_live_agent_is_kept() -> None:
    driver = Driver(make_scenario())
    driver.boot()
    out = driver.do(FromNode("transient-0", _lost("transient-0", driver.core)), at=0.5)
    (probe,) = [c for c in out if isinstance(c, cmd.Probe)]
    assert (probe.node_id, probe.purpose, probe.incarnation) == ("transient-0", "will", "i-transient-0")
    kept = driver.do(ProbeAnswered("transient-0", "will", "answered", probe.session))
    assert Driver.events_of(kept, "will_ignored") and driver.core.nodes["transient-0"].status == "up"


def test_a_reserved_node_failure_mid_iteration_is_replaced_and_recomputed() -> None:
    pagerank = {"workload": "pagerank", "nodes": 50, "edges": 200, "iterations": 3, "maps": 2, "reduces": 2}
    cluster = {"reserved": 2, "transient": 1, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    driver = Driver(make_scenario(cluster=cluster, jobs=[pagerank]))
    driver.boot()
    for _ in range(3):  # the graph stage and two iterations done, the third running
        driver.do(Round())
        for node_id, spec in list(driver.running().values()):
            driver.finish(node_id, spec)
    driver.do(Round())
    (victim,) = {n for n, s in driver.running().values() if n.startswith("reserved")}
    held = sorted(s.task_id for n, s in launches(driver.log) if n == victim)
    assert held == ["j000.s0.t1", "j000.s1.t1", "j000.s2.t1", "j000.s3.t1"]
    before = len(driver.log)
    out = driver.do(FromNode(victim, _lost(victim, driver.core)), at=2.0)
    (probe,) = [c for c in out if isinstance(c, cmd.Probe)]
    gone = driver.do(ProbeAnswered(victim, "will", "refused", probe.session))
    assert [e["reason"] for e in Driver.events_of(gone, "node_lost")] == ["crashed"]
    assert [e["node"] for e in Driver.events_of(gone, "node_replacing")] == [victim]
    assert cmd.WakeAt(2.0) in gone  # its replacement's launch: no provisioning delay
    driver.advance(2.0)
    assert [c.node_id for c in driver.log if isinstance(c, cmd.StartNode)][-1] == "reserved-2"
    driver.run_to_end()
    again = [(s.task_id, s.attempt) for _, s in launches(driver.log[before:]) if s.attempt > 0]
    assert again == [(task, 1) for task in held]  # its lost outputs recomputed, parents first
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]


def test_a_broker_outage_is_replayed_as_resent_launches_and_a_resync() -> None:
    driver = Driver(make_scenario())
    driver.boot()
    driver.do(Round())
    running = driver.running()
    assert running
    driver.do(LinkDown(), at=0.5)
    driver.advance(5.0)  # everyone silent past the timeout: our own outage, nobody is probed
    assert not any(isinstance(c, cmd.Probe) for c in driver.log)
    out = driver.do(LinkUp(session=2))
    resent = {(m.task.task_id, m.task.attempt) for _, m in sends(out, type(next(iter(running.values()))[1]))}
    relaunched = {(spec.task_id, spec.attempt) for _, spec in launches(out)}
    assert relaunched == set(running) and not resent
    assert sorted(n for n, _ in sends(out, Resync)) == sorted(driver.core.nodes)
    assert Driver.events_of(out, "broker_reconnected")[0]["resent"] == len(running)


def test_a_silent_node_is_probed_then_lost_and_killed() -> None:
    driver = Driver(make_scenario())
    driver.boot()
    for node_id in driver.core.nodes:  # everyone but transient-2 keeps beating
        if node_id != "transient-2":
            driver.core.nodes[node_id].last_seen = 10.0
    driver.advance(2.5)
    probes = [c for c in driver.log if isinstance(c, cmd.Probe)]
    assert [(p.node_id, p.purpose) for p in probes] == [("transient-2", "silent")]
    out = driver.do(ProbeAnswered("transient-2", "silent", "refused"))
    assert [e["reason"] for e in Driver.events_of(out, "node_lost")] == ["heartbeat_timeout"]
    assert [c.node_id for c in out if isinstance(c, cmd.KillNode)] == ["transient-2"]


def test_a_probe_sent_into_a_freeze_of_every_agent_that_times_out_after_the_thaw_is_asked_again() -> None:
    """Every agent frozen: the silent probes go out while the whole cluster is quiet. One times
    out just after the thaw, when another node has been heard but not yet its own: that says
    nothing about its node alone (seen in CI: two nodes lost 0.13 s after a 10 s freeze)."""
    driver = Driver(make_scenario())
    driver.boot()
    driver.advance(2.5)  # nobody heard since 0: every node is probed, the cluster quiet
    probes = [c.node_id for c in driver.log if isinstance(c, cmd.Probe)]
    assert sorted(probes) == sorted(driver.core.nodes)
    driver.now = 4.6
    driver.core.nodes["reserved-0"].last_seen = 4.6  # thawed, and heard first
    out = driver.do(ProbeAnswered("transient-2", "silent", "silent"), at=4.6)
    assert not Driver.events_of(out, "node_lost")
    assert driver.core.nodes["transient-2"].status == "up"
    driver.advance(4.8)  # asked again, now that the others are heard
    assert [c.node_id for c in driver.log if isinstance(c, cmd.Probe)].count("transient-2") == 2
    for node_id in ("reserved-0", "transient-0", "transient-1"):
        driver.core.nodes[node_id].last_seen = 6.9  # the others beat again
    out = driver.do(ProbeAnswered("transient-2", "silent", "silent"), at=6.9)  # silent alone: lost
    assert [e["reason"] for e in Driver.events_of(out, "node_lost")] == ["heartbeat_timeout"]


def _succeeded(node_id: str, spec):  # type: ignore[no-untyped-def]
    from testbed.wire.protocol import TaskUpdate

    return TaskUpdate(node_id=node_id, task_id=spec.task_id, attempt=spec.attempt, state="succeeded")


def _lost(node_id: str, core) -> NodeState:  # type: ignore[no-untyped-def]
    state = up(node_id, core.nodes[node_id].node_class, core)
    return state.model_copy(update={"state": "lost"})


def test_a_master_crash_then_resume_keeps_the_committed_partitions(tmp_path: Path) -> None:
    scenario = make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 3}])
    first = Driver(scenario)
    first.boot()
    committed: set[int] = set()
    for _ in range(10):  # until one final partition is committed, then the master dies
        first.do(Round())
        for node_id, spec in list(first.running().values()):
            first.finish(node_id, spec)
            committed |= {c.index for c in first.log if isinstance(c, cmd.CommitOutput)}
            if committed:
                break
        if committed:
            break
    (kept,) = committed
    last = max(c.t for c in first.log if isinstance(c, cmd.Journal))
    journal = [{"t": c.t, "event": c.kind, **c.fields} for c in first.log if isinstance(c, cmd.Journal)]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in journal))
    found = recover(tmp_path)
    assert found.committed == {"j000": {kept: 0}} and found.crashed_at == last

    second = Driver(scenario, resume=found)
    second.now = found.crashed_at
    second.boot()
    assert [e["kept"] for e in second.events("job_restored")] == [1]
    assert [c.keep for c in second.log if isinstance(c, cmd.PrepareJob)] == [(kept,)]
    second.run_to_end()
    relaunched = {spec.index for _, spec in launches(second.log) if spec.final}
    assert kept not in relaunched and relaunched == {0, 1, 2} - {kept}
    assert all(spec.attempt >= 1 for _, spec in launches(second.log) if spec.stage == 0)  # numbers go on
    (finished,) = second.events("job_finished")
    assert finished["status"] == "succeeded"
    # no eviction, no lost node: what the crash made run again is no relaunch (jobs.csv)
    assert (finished["relaunched_tasks"], finished["error_relaunches"]) == (0, 0)


def _crash(driver: Driver, earlier: list[dict], run_dir: Path) -> list[dict]:
    """The master dies now: the journal so far (``earlier`` segments', then the driver's)."""
    journal = earlier + [
        {"t": c.t, "event": c.kind, **c.fields} for c in driver.log if isinstance(c, cmd.Journal)
    ]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in journal))
    return journal


def test_restarts_after_two_crashes_are_no_relaunches(tmp_path: Path) -> None:
    """The first crash cuts the maps short, the second (the resumed master's) a reduce; an
    eviction-free run that ends after two resumes has no relaunched task."""
    scenario = make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 3}])
    first = Driver(scenario)
    first.boot()
    first.do(Round())
    journal = _crash(first, [], tmp_path)  # both maps running
    second = Driver(scenario, resume=recover(tmp_path))
    second.now = max(e["t"] for e in journal)
    second.boot()
    for _ in range(5):  # the maps again, then one reduce; the others are cut short
        second.do(Round())
        node_id, spec = min(second.running().values(), key=lambda item: (item[1].stage, item[1].index))
        second.finish(node_id, spec)
        if spec.final:
            break
    journal = _crash(second, journal, tmp_path)
    found = recover(tmp_path)
    assert sum(found.restarts.values()) == 2  # the two maps, after the first crash
    third = Driver(scenario, resume=found)
    third.now = found.crashed_at
    third.boot()
    third.run_to_end()
    (finished,) = third.events("job_finished")
    assert finished["status"] == "succeeded"
    assert (finished["relaunched_tasks"], finished["error_relaunches"]) == (0, 0)


def test_an_eviction_during_a_pado_push_computes_the_block_again() -> None:
    driver = Driver(make_scenario(policy={"strategy": "pado"}))
    driver.boot()
    driver.advance(1.0)
    driver.do(Round())
    maps = [(n, s) for n, s in driver.running().values() if s.stage == 0 and n.startswith("transient")]
    node_id, spec = maps[0]
    driver.finish(node_id, spec)  # computed; Pado aggregates and pushes it to a reserved receiver
    driver.advance(driver.now + 5.0)
    (flush,) = [m for n, m in sends(driver.log, FlushAggregate) if n == node_id]
    assert [t.node_id for t in flush.push] == ["reserved-0"]
    record = driver.core.jobs["j000"].tasks[(spec.stage, spec.index)]
    assert record.status == "pushing"
    core = driver.core
    (answer,) = [
        c for c in driver.do(EvictRequest(EvictSpec(count=1), (node_id,))) if isinstance(c, cmd.Evicted)
    ]
    assert answer == cmd.Evicted((node_id,))
    out = driver.do(FromNode(node_id, _lost(node_id, core)))  # evicted before its PushDelivered
    assert [e["reason"] for e in Driver.events_of(out, "node_lost")] == ["evicted"]
    assert record.status == "pending"
    driver.run_to_end()
    again = [s for n, s in launches(driver.log) if s.task_id == spec.task_id]
    assert [s.attempt for s in again] == [spec.attempt, spec.attempt + 1]
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]
    # The computed attempt has its row of tasks.csv (succeeded); its lost push is no second row
    # (a lost one on the same slot would draw a 1-slot node with 2 lanes): a push_failed says it.
    rows = [(e["attempt"], e["status"]) for e in driver.events("task_finished") if e["task"] == spec.task_id]
    assert rows == [(spec.attempt, "succeeded"), (spec.attempt + 1, "succeeded")]
    (failed,) = [e for e in driver.events("push_failed") if e["task"] == spec.task_id]
    assert failed["error"] == f"its node {node_id} was lost (evicted)"


def test_a_will_unanswered_while_the_whole_cluster_is_quiet_is_asked_again() -> None:
    """Every agent frozen (SIGSTOP) past its keepalive: the broker publishes every Will at once
    and the probes time out. That is a pause, not the loss of every node: asked again until
    the patience runs out; an agent that answers after its thaw is kept."""
    driver = Driver(make_scenario())
    driver.boot()
    driver.advance(7.5)  # nobody heard since 0: the whole cluster is quiet
    will = driver.do(FromNode("transient-0", _lost("transient-0", driver.core)))
    (probe,) = [c for c in will if isinstance(c, cmd.Probe)]
    timed_out = driver.do(ProbeAnswered("transient-0", "will", "silent", probe.session), at=9.5)
    assert not Driver.events_of(timed_out, "node_lost")
    assert [(c.node_id, c.purpose) for c in timed_out if isinstance(c, cmd.Probe)] == [
        ("transient-0", "will")
    ]
    thawed = driver.do(ProbeAnswered("transient-0", "will", "answered", probe.session), at=10.1)
    assert Driver.events_of(thawed, "will_ignored") and driver.core.nodes["transient-0"].status == "up"


def test_a_will_unanswered_by_a_node_silent_alone_is_a_crash() -> None:
    driver = Driver(make_scenario())
    driver.boot()
    driver.advance(7.5)
    for node_id in ("reserved-0", "transient-1", "transient-2"):
        driver.core.nodes[node_id].last_seen = 7.5  # the others are heard as the Will comes
    will = driver.do(FromNode("transient-0", _lost("transient-0", driver.core)))
    (probe,) = [c for c in will if isinstance(c, cmd.Probe)]
    driver.advance(9.5)
    for node_id in ("reserved-0", "transient-1", "transient-2"):
        driver.core.nodes[node_id].last_seen = 9.5  # the others are heard
    out = driver.do(ProbeAnswered("transient-0", "will", "silent", probe.session))
    assert [e["reason"] for e in Driver.events_of(out, "node_lost")] == ["crashed"]
