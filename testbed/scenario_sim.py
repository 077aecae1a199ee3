"""The ``simulation`` section of a scenario: the execution model of ``--backend sim``.

Every parameter has a default measured on this testbed; docs/simulation.md says where each
comes from and what the model cannot know. Times are the run's seconds (the same clock as
``events.jsonl``); a sleep task's pinned duration is used as it is.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from testbed.scenario_base import Duration, Strict


class OpModel(Strict):
    """One task operation (``wordcount.map``, ``pagerank.iterate``, ...)."""

    s_per_mb: float = Field(ge=0, description="compute seconds per MB of input, with the ideal memory")
    output_ratio: float = Field(ge=0, description="output bytes per input byte")


OP_MODELS: dict[str, OpModel] = {
    # compute_s / bytes_in and bytes_out / bytes_in of tasks.csv, one real run of one job
    # of each workload (wordcount 16 MB / 4 maps, sort 32 MB / 4 maps, pagerank 50,000
    # nodes / 400,000 edges / 3 iterations) on 1 reserved + 2 transient local agents
    "wordcount.map": OpModel(s_per_mb=0.1229, output_ratio=0.0434),
    "wordcount.reduce": OpModel(s_per_mb=0.0923, output_ratio=0.0),
    "sort.map": OpModel(s_per_mb=0.0140, output_ratio=1.0),
    "sort.reduce": OpModel(s_per_mb=0.0182, output_ratio=1.0),
    "pagerank.edges": OpModel(s_per_mb=0.0248, output_ratio=1.2230),
    "pagerank.links": OpModel(s_per_mb=0.0661, output_ratio=0.8454),
    "pagerank.scatter": OpModel(s_per_mb=0.0242, output_ratio=0.1646),
    "pagerank.iterate": OpModel(s_per_mb=0.0333, output_ratio=0.1413),
}


class SimulationSpec(Strict):
    launch_overhead: Duration = Field(
        default=0.06,
        ge=0,
        description="a launch command to the task's work starting (message, worker fork, its setup)",
    )
    node_startup: Duration = Field(
        default=1.45, ge=0, description="a node's start to its announcement (agent and forkserver warm)"
    )
    detection: Literal["will", "heartbeat"] = Field(
        default="will",
        description="how a killed node's loss is heard: its Last Will, or missed heartbeats",
    )
    will_delay: Duration = Field(
        default=0.008, ge=0, description="a SIGKILL to its Last Will at the master (detection: will)"
    )
    round_gap: Duration = Field(
        default=0.0,
        ge=0,
        description="least time between two scheduling rounds (0: a round after every instant "
        "with news, as a master whose round takes no time)",
    )
    ops: dict[str, OpModel] = Field(
        default_factory=dict, description="task models per op, over the measured defaults"
    )
    memory_penalty: bool = Field(
        default=True,
        description="stretch a task given less than its ideal memory by the scenario's profile curve",
    )

    def op(self, name: str) -> OpModel:
        """The model of an op: the scenario's, else the measured default, else no cost."""
        return self.ops.get(name) or OP_MODELS.get(name) or OpModel(s_per_mb=0.0, output_ratio=1.0)
