"""Types every part of the scenario schema shares: strict models, durations, rates, seeds."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from testbed.durations import parse_duration, parse_rate
from testbed.limits import within_max_duration

Duration = Annotated[float, BeforeValidator(lambda value: within_max_duration(parse_duration(value)))]
"""Seconds, written ``30s``, ``5m``, ``2h`` or as a number; at most ``MAX_DURATION_S``."""
MAX_SEED = 2**32 - 1
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
"""Seeds of numpy's generators are non-negative; the bound keeps every derived seed encodable."""
Rate = Annotated[float, BeforeValidator(parse_rate)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
