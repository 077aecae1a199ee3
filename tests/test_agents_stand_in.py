"""The tests' stand-in agents (``tests/support/agents_stand_in.py``) decide as the real agent
does, through its core (``agents.core.AgentCore``): a job run on them, then its launches
sent again, start nothing and repeat each attempt's recorded outcome."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from agents.core import Action
from testbed.wire.protocol import LaunchTask, Message, TaskUpdate
from tests.support.agents_stand_in import _ACTIONS, StandInAgents
from tests.support.masters import offline_master, shell_act
from tests.support.scenarios import make_scenario


class Recording(StandInAgents):
    """The stand-in, keeping each command it took and each message it answered."""

    def __post_init__(self) -> None:
        self.commands: list[tuple[str, Message]] = []
        self.answers: list[Message] = []
        super().__post_init__()

    def _command(self, node_id: str, message: Message) -> None:
        self.commands.append((node_id, message))
        super()._command(node_id, message)

    def _answer(self, node_id: str, message: Message) -> None:
        self.answers.append(message)
        super()._answer(node_id, message)


def test_the_stand_in_carries_out_every_action_of_the_core() -> None:
    assert set(get_args(Action)) == set(_ACTIONS)


def test_a_launch_sent_again_to_a_stand_in_repeats_its_outcome_and_runs_nothing(tmp_path: Path) -> None:
    scenario = make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 1}])
    master = offline_master(scenario, tmp_path, attach=True)
    try:
        agents = Recording(master)
        agents.announce("reserved-0", "reserved", 2, 1024)
        shell_act(master, master.core.submit_job, scenario.jobs[0], 0)
        agents.run()
        assert master.jobs["j000"].status == "succeeded"
        launches = [(node, m) for node, m in agents.commands if isinstance(m, LaunchTask)]
        updates = [m for m in agents.answers if isinstance(m, TaskUpdate)]
        ended = {(m.task_id, m.attempt): m for m in updates if m.state != "running"}
        assert len(launches) == len(ended) == 3
        agents.answers.clear()
        for node_id, launch in launches:
            agents._command(node_id, launch)
        assert not agents.running
        assert agents.answers == [ended[(m.task.task_id, m.task.attempt)] for _, m in launches]
    finally:
        master.journal.close()
