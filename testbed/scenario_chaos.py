"""The ``chaos`` section of a scenario: lifetimes per node class, and storms (docs/chaos.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from testbed.lifetimes import parse_lifetime
from testbed.limits import MAX_STORM_FIRINGS, too_large
from testbed.scenario_base import Duration, Rate, Strict


class EvictSpec(Strict):
    count: int | None = Field(default=None, ge=1)
    fraction: float | None = Field(default=None, gt=0, le=1)
    kind: Literal["transient", "reserved", "any"] = "transient"
    select: Literal["random", "oldest", "youngest", "busiest", "most-data"] = "random"

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


class ClassChaosSpec(Strict):
    lifetime: LifetimeModel = "none"
    notice: Duration = 0.0
    replace: bool = True
    provisioning_delay: Duration = 0.0

    @field_validator("lifetime", mode="before")
    @classmethod
    def _known_model(cls, value: Any, info: ValidationInfo) -> Any:
        """Parse the model now so a typo is a scenario error. A relative ``empirical`` path
        is relative to the validation context's ``base_dir`` (the scenario file's folder),
        else the working directory; with a ``base_dir`` it is kept made absolute, so the
        run's controller, its ``scenario.yaml`` and ``--resume`` read the same file."""
        base_dir = (info.context or {}).get("base_dir")
        parse_lifetime(value, base_dir)
        if base_dir is None or not isinstance(value, dict) or not isinstance(value.get("empirical"), str):
            return value
        path = Path(value["empirical"]).expanduser()
        return {"empirical": str(path if path.is_absolute() else Path(base_dir).resolve() / path)}


class ChaosSpec(Strict):
    transient: ClassChaosSpec = ClassChaosSpec()
    reserved: ClassChaosSpec = ClassChaosSpec()
    storms: list[StormSpec] = Field(default_factory=list)
