"""What every node lifetime model is (``LifetimeModel``), and how the models write a duration.

The families (``testbed.chaosmodels.lifetimes``) and the interruption traces
(``testbed.chaosmodels.traces``) both build on it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np


def format_seconds(seconds: float) -> str:
    """``90`` -> ``1m30s``, ``0.25`` -> ``0.25s``, ``7200`` -> ``2h``."""
    if not math.isfinite(seconds):
        return "never"
    if seconds < 59.95:  # what rounds to 60 at 3 digits is a minute
        return f"{seconds:.3g}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{value}{unit}" for value, unit in parts if value) or "0s"


class LifetimeModel(ABC):
    """A distribution of node lifetimes in trace seconds."""

    default_notice: float = 0.0
    """Warning period implied by the model when the scenario sets no ``notice``."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` lifetimes in seconds (``inf`` means never evicted)."""

    @abstractmethod
    def describe(self) -> str:
        """One line naming the model and its parameters."""

    @abstractmethod
    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        """P(lifetime <= seconds), elementwise."""

    def cdf_before(self, seconds: np.ndarray) -> np.ndarray:
        """P(lifetime < seconds): differs from ``cdf_at`` only at an atom."""
        return self.cdf_at(seconds)

    def lifetime_of(self, rng: np.random.Generator, ordinal: int) -> float:
        """The lifetime of the class's node ``ordinal``, from its own generator (a trace
        replayed node by node takes the ordinal's row instead)."""
        return float(self.sample(rng, 1)[0])

    @property
    def evicts(self) -> bool:
        return True
