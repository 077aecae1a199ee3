"""The ``chaos`` section of a scenario: lifetimes per node class, and storms (docs/chaos.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from testbed.chaosmodels.capacity import parse_capacity
from testbed.chaosmodels.lifetimes import parse_lifetime
from testbed.limits import MAX_STORM_FIRINGS, too_large
from testbed.scenario.base import Duration, Rate, Strict


class EvictSpec(Strict):
    count: int | None = Field(default=None, ge=1)
    fraction: float | None = Field(default=None, gt=0, le=1)
    kind: Literal["transient", "reserved", "any"] = "transient"
    select: Literal["random", "oldest", "youngest", "busiest", "most-data"] = "random"
    zone: str | None = None
    """Only nodes of this zone (``cluster.<class>.zones``); with ``fraction: 1`` a zone-wide revocation."""

    @model_validator(mode="after")
    def _one_amount(self) -> EvictSpec:
        if (self.count is None) == (self.fraction is None):
            raise ValueError("give exactly one of count or fraction")
        return self


class StormSpec(Strict):
    """A scripted storm: once ``at``, repeated ``every`` ``times``, or Poisson ``rate`` in a window."""

    at: Duration | None = None
    every: Duration | None = Field(default=None, gt=0)
    times: int = Field(default=1, ge=1, le=MAX_STORM_FIRINGS)
    start: Duration | None = Field(default=None, alias="from")
    to: Duration | None = None
    rate: Rate | None = Field(default=None, gt=0)
    evict: EvictSpec = EvictSpec(count=1)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _one_shape(self) -> StormSpec:
        window = self.start is not None or self.to is not None or self.rate is not None
        if window and (self.start is None or self.to is None or self.rate is None):
            raise ValueError("a storm window needs from, to and rate together")
        if window and self.at is not None:
            raise ValueError("give either at (a scheduled storm) or from/to/rate (a window)")
        if not window and self.at is None:
            raise ValueError("a storm needs at: TIME, or from/to/rate")
        if window and self.to <= self.start:  # type: ignore[operator]
            raise ValueError("to must come after from")
        expected = self.rate * (self.to - self.start) if window else 0.0  # type: ignore[operator]
        if expected > MAX_STORM_FIRINGS:
            raise ValueError(too_large("rate x (to - from)", expected, MAX_STORM_FIRINGS))
        if self.every is not None and self.at is None:
            raise ValueError("every repeats a scheduled storm: give at (the first time) with it")
        if self.times > 1 and self.every is None:
            raise ValueError("times > 1 needs every (the gap between repeats)")
        return self


LifetimeModel = str | dict[str, Any]


def anchored(value: Any, key: str, base_dir: str | Path | None) -> Any:
    """``value`` with its relative file path ``value[key]`` made absolute against ``base_dir``
    (the scenario file's folder), so the run's controller, its ``scenario.yaml`` and
    ``--resume`` read the same file; unchanged without a ``base_dir`` or a path."""
    if base_dir is None or not isinstance(value, dict) or not isinstance(value.get(key), str):
        return value
    path = Path(value[key]).expanduser()
    return {**value, key: str(path if path.is_absolute() else Path(base_dir).resolve() / path)}


def _lifetime(value: Any, info: ValidationInfo) -> Any:
    """Parse the model now so a typo is a scenario error. A relative ``empirical`` path
    is relative to the validation context's ``base_dir``, else the working directory."""
    base_dir = (info.context or {}).get("base_dir")
    parse_lifetime(value, base_dir)
    if isinstance(value, dict) and isinstance(value.get("trace"), dict):
        return {"trace": anchored(value["trace"], "file", base_dir)}
    return anchored(anchored(value, "empirical", base_dir), "trace", base_dir)


class ZoneChaosSpec(Strict):
    """A zone's own lifetime model (``chaos.<class>.zones.<zone>``); its nodes' notice is the class's."""

    lifetime: LifetimeModel = "none"

    _known_model = field_validator("lifetime", mode="before")(_lifetime)


class ClassChaosSpec(Strict):
    lifetime: LifetimeModel = "none"
    notice: Duration = 0.0
    replace: bool = True
    provisioning_delay: Duration = 0.0
    capacity: dict[str, Any] | None = None
    """When the class's nodes cannot be launched (``testbed.chaosmodels.capacity``); None: never runs out."""
    zones: dict[str, ZoneChaosSpec] = Field(default_factory=dict)
    """Per-zone lifetime models, overriding ``lifetime`` for the nodes of those zones."""

    _known_model = field_validator("lifetime", mode="before")(_lifetime)

    @field_validator("capacity", mode="before")
    @classmethod
    def _known_capacity(cls, value: Any, info: ValidationInfo) -> Any:
        base_dir = (info.context or {}).get("base_dir")
        parse_capacity(value, base_dir)
        return anchored(value, "trace", base_dir)


class FactorChoice(Strict):
    """A factor drawn per node: ``choice: [[factor, weight], ...]`` (weights need not sum to 1)."""

    choice: list[tuple[float, float]] = Field(min_length=1, max_length=100)

    @field_validator("choice")
    @classmethod
    def _factors(cls, choice: list[tuple[float, float]]) -> list[tuple[float, float]]:
        for factor, weight in choice:
            if factor < 1:
                raise ValueError(f"a slowdown factor is >= 1 (1: full speed), found {factor}")
            if weight <= 0:
                raise ValueError(f"a weight is > 0, found {weight}")
        return choice


class ClassSlowdown(Strict):
    factor: Any = 1.0
    """A number >= 1, or ``{choice: [[factor, weight], ...]}`` (a ``FactorChoice``)."""

    @field_validator("factor", mode="before")
    @classmethod
    def _factor(cls, factor: Any) -> float | FactorChoice:
        if isinstance(factor, dict):
            try:
                return FactorChoice.model_validate(factor)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                raise ValueError(f"{where}: {first['msg']}") from None
        if isinstance(factor, bool) or not isinstance(factor, int | float):
            raise ValueError(f"a number >= 1 or {{choice: [[factor, weight], ...]}}, not {factor!r}")
        if factor < 1:
            raise ValueError(f"a slowdown factor is >= 1 (1: full speed, 3: 3x slower), not {factor}")
        return float(factor)


class SlowdownEpisode(Strict):
    """Time-limited contention: from ``at`` for ``for`` (trace time) the nodes ``nodes`` picks
    then (as a storm picks its victims) are ``factor`` times slower on top of their own factor."""

    at: Duration = Field(ge=0)
    duration: Duration = Field(gt=0, alias="for")
    nodes: EvictSpec = EvictSpec(count=1)
    factor: float = Field(ge=1)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class SlowdownSpec(Strict):
    """Slow nodes (``testbed.chaosmodels.slowdown``): a factor per class, or per node by id, and
    time-limited ``episodes`` of contention."""

    transient: ClassSlowdown = ClassSlowdown()
    reserved: ClassSlowdown = ClassSlowdown()
    nodes: dict[str, float] = Field(default_factory=dict, max_length=100_000)
    episodes: list[SlowdownEpisode] = Field(default_factory=list, max_length=MAX_STORM_FIRINGS)
    colocation: Literal["ec2-2008"] | None = None
    """A preset of co-located VMs: ``ec2-2008`` lays each class's nodes over LATE's Table 3 (243
    VMs on 99 hosts) and multiplies a node's class factor by its host's disk slowdown (Table 2)
    (``testbed.chaosmodels.colocation``); None: no co-location."""
    straggler: Literal["quota", "processes"] = "quota"
    """How a real node is made slow by its own factor: its CPU quota and token buckets divided
    by it, or (``processes``, local nodes) LATE's busy loops and disk writer beside its tasks
    (``testbed.node.stragglers``). The simulator models both as the factor on its cores and
    spills, and on its links only under ``quota`` (the straggler processes leave the NIC alone)."""

    @field_validator("nodes")
    @classmethod
    def _each_at_least_one(cls, nodes: dict[str, float]) -> dict[str, float]:
        for node_id, factor in nodes.items():
            if factor < 1:
                raise ValueError(f"{node_id}: a slowdown factor is >= 1 (1: full speed), found {factor}")
        return nodes


class ChaosSpec(Strict):
    transient: ClassChaosSpec = ClassChaosSpec()
    reserved: ClassChaosSpec = ClassChaosSpec()
    storms: list[StormSpec] = Field(default_factory=list)
    slowdown: SlowdownSpec | None = None
    """Slow nodes (docs/speculation.md); None: every node at full speed."""
