"""``strategy: auto``: Musketeer's back-end choice re-aimed at the recovery strategies.

When a job arrives, the cost model (``master/recovery/auto_cost.py``) predicts its makespan
under each candidate (``spark``, ``spark-checkpoint``, ``pado``) and the cheapest runs it, for
good: the choice is journaled (``strategy_chosen``, with every prediction) and the job's
queries and events go to that strategy alone. The three are built as the scenario would build
each alone (``policy.options.<name>`` their options) and each sees only its own jobs (``Owned``):
one run mixes strategies, job by job, and each keeps its bookkeeping as if it ran alone.
A job resumed after a master crash arrives again and is given the same choice (a pure
function of its plan and the scenario).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

from pydantic import Field, field_validator

from master.options import PolicyOptions
from master.policy_setup import make_strategy
from master.recovery.auto_cost import STRATEGIES, Prediction, Setting, choose, predict, setting_of
from testbed.api import (
    JobPlan,
    JobSubmitted,
    LiveJob,
    LiveNode,
    Note,
    Ready,
    Strategy,
    StrategyDecision,
    StrategyView,
    TaskKey,
    TaskLaunch,
    TaskStarted,
    TaskSucceeded,
)
from testbed.api.strategy import BlockReported, NodeLost, PushReported, Reconnected, Tick
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import Scenario
from testbed.settings.policies import options_for

Candidate = Literal["spark", "spark-checkpoint", "pado"]


class Owned(Mapping[str, LiveJob]):
    """The view's jobs that one strategy runs (in the core's order)."""

    def __init__(self, jobs: Mapping[str, LiveJob], owned: set[str]) -> None:
        self._jobs, self._owned = jobs, owned

    def __getitem__(self, job_id: str) -> LiveJob:
        if job_id not in self._owned:
            raise KeyError(job_id)
        return self._jobs[job_id]

    def __iter__(self) -> Iterator[str]:
        return (job_id for job_id in self._jobs if job_id in self._owned)

    def __len__(self) -> int:
        return len(self._owned)


class OwnView:
    """A ``StrategyView`` with only one strategy's jobs."""

    def __init__(self, view: StrategyView, owned: set[str]) -> None:
        self._view = view
        self._jobs = Owned(view.jobs, owned)

    @property
    def nodes(self) -> Mapping[str, LiveNode]:
        return self._view.nodes

    @property
    def jobs(self) -> Mapping[str, LiveJob]:
        return self._jobs

    def now(self) -> float:
        return self._view.now()


def _both_classes(scenario: Scenario) -> bool:
    return scenario.kind_count("reserved") > 0 and scenario.kind_count("transient") > 0


class AutoStrategy(Strategy):
    """``auto``: each job on the strategy its cost model predicts fastest."""

    name = "auto"

    class Options(PolicyOptions):
        """``policy.options.auto``."""

        candidates: list[Candidate] | None = Field(default=None, min_length=1)
        """The strategies it chooses among, each needing what it needs alone (spark-checkpoint
        and pado a reserved and a transient node); None: the three, but those the cluster
        cannot run."""

        @field_validator("candidates")
        @classmethod
        def _once_each(cls, candidates: list[Candidate] | None) -> list[Candidate] | None:
            if candidates is not None and len(set(candidates)) != len(candidates):
                raise ValueError(f"each strategy at most once, not {candidates}")
            return candidates

    def __init__(self, strategies: dict[str, Strategy], setting: Setting) -> None:
        self.strategies = strategies
        self.setting = setting
        self.owner: dict[str, str] = {}
        """Job -> the strategy chosen for it."""
        self.owned: dict[str, set[str]] = {name: set() for name in strategies}

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> AutoStrategy:
        """Each candidate built as ``policy.strategy: <name>`` would be (a ScenarioError when
        the cluster cannot run it, or its options are wrong)."""
        names = options["candidates"] or [n for n in STRATEGIES if n == "spark" or _both_classes(scenario)]
        strategies = {
            name: find_plugin("strategy", name, "policy.options.auto.candidates").build(
                options_for(scenario, name), scenario
            )
            for name in names
        }
        return cls(strategies, setting_of(scenario))

    def predictions(self, plan: JobPlan) -> list[Prediction]:
        """Each candidate's prediction for a job of this plan."""
        return predict(plan, self.setting, tuple(self.strategies))

    def _view(self, view: StrategyView, name: str) -> OwnView:
        return OwnView(view, self.owned[name])

    def _of(self, view: StrategyView, job_id: str) -> tuple[Strategy, OwnView]:
        name = self.owner[job_id]
        return self.strategies[name], self._view(view, name)

    # ------------------------------------------------------------ queries

    def plan(self, view: StrategyView, job: LiveJob) -> Iterable[Ready]:
        strategy, own = self._of(view, job.job_id)
        return strategy.plan(own, job)

    def launch(self, view: StrategyView, job: LiveJob, key: TaskKey) -> TaskLaunch:
        strategy, own = self._of(view, job.job_id)
        return strategy.launch(own, job, key)

    # ------------------------------------------------------------ events

    def on_job_submitted(self, view: StrategyView, event: JobSubmitted) -> list[StrategyDecision]:
        """The choice, made once (a resumed job's is the same), journaled with every prediction."""
        predictions = self.predictions(view.jobs[event.job_id].plan)
        chosen = self.owner.setdefault(event.job_id, choose(predictions).strategy)
        self.owned[chosen].add(event.job_id)
        note = Note(
            "strategy_chosen",
            {
                "job": event.job_id,
                "strategy": chosen,
                "predicted_s": {p.strategy: round(p.seconds, 4) for p in predictions},
                "eviction_free_s": {p.strategy: round(p.eviction_free_s, 4) for p in predictions},
                "evictions": {p.strategy: round(p.evictions, 4) for p in predictions},
                "per_eviction_s": {p.strategy: round(p.per_eviction_s, 4) for p in predictions},
            },
        )
        strategy, own = self._of(view, event.job_id)
        return [note, *strategy.on_job_submitted(own, event)]

    def on_task_started(self, view: StrategyView, event: TaskStarted) -> list[StrategyDecision]:
        strategy, own = self._of(view, event.job_id)
        return strategy.on_task_started(own, event)

    def on_task_succeeded(self, view: StrategyView, event: TaskSucceeded) -> list[StrategyDecision]:
        strategy, own = self._of(view, event.job_id)
        return strategy.on_task_succeeded(own, event)

    def _each(self, view: StrategyView, handler: str, event: Any) -> list[StrategyDecision]:
        """An event of no one job, to every strategy (each acts on its own jobs only)."""
        out: list[StrategyDecision] = []
        for name, strategy in self.strategies.items():
            out += getattr(strategy, handler)(self._view(view, name), event)
        return out

    def on_block_reported(self, view: StrategyView, event: BlockReported) -> list[StrategyDecision]:
        return self._each(view, "on_block_reported", event)

    def on_push_reported(self, view: StrategyView, event: PushReported) -> list[StrategyDecision]:
        return self._each(view, "on_push_reported", event)

    def on_tick(self, view: StrategyView, event: Tick) -> list[StrategyDecision]:
        return self._each(view, "on_tick", event)

    def on_reconnected(self, view: StrategyView, event: Reconnected) -> list[StrategyDecision]:
        return self._each(view, "on_reconnected", event)

    def on_node_lost(self, view: StrategyView, event: NodeLost) -> list[StrategyDecision]:
        return self._each(view, "on_node_lost", event)


def strategy_describer(scenario: Scenario) -> Callable[[JobPlan], str] | None:
    """``testbed plan``'s line for each job under ``strategy: auto`` (None under any other):
    the choice and every candidate's prediction, as ``strategy_chosen`` journals them."""
    if scenario.policy.strategy != AutoStrategy.name:
        return None
    auto = make_strategy(scenario)
    assert isinstance(auto, AutoStrategy)

    def describe(plan: JobPlan) -> str:
        predictions = auto.predictions(plan)
        each = ", ".join(
            f"{p.strategy} {p.seconds:.2f} s ({p.evictions:.2f} evictions x {p.per_eviction_s:.2f} s)"
            for p in predictions
        )
        return f"  strategy auto: {choose(predictions).strategy} (predicted {each})"

    return describe
