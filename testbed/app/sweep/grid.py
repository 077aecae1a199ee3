"""A sweep's grid: the varied values (``--vary``) and the cells, one per combination, seed and
repeat, in the order they run (``testbed/app/sweep/run.py`` runs them)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from testbed.scenario.schema import ScenarioError


@dataclass(frozen=True)
class Variation:
    key: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Variation:
        key, sep, values = text.partition("=")
        parts = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not key.strip() or not parts:
            raise ScenarioError([f"--vary {text!r}: expected KEY.PATH=V1,V2,..."])
        return cls(key.strip(), parts)


@dataclass(frozen=True)
class Cell:
    values: tuple[tuple[str, str], ...]
    seed: int
    repeat: int = 0
    """0 for the first run of a seed, 1, 2, ... for its repeats (``--repeats``)."""

    @property
    def name(self) -> str:
        label = "_".join(f"{key.rsplit('.', 1)[-1]}-{value}" for key, value in self.values)
        name = f"{label}_seed-{self.seed}" if label else f"seed-{self.seed}"
        return re.sub(r"[^A-Za-z0-9_.-]", "-", f"{name}_rep-{self.repeat}" if self.repeat else name)

    def overrides(self) -> list[str]:
        return [f"{key}={value}" for key, value in self.values] + [f"seed={self.seed}"]


def grid(variations: list[Variation], seeds: list[int], repeats: int = 1) -> list[Cell]:
    """Every combination of the varied values, each run with every seed, each seed
    ``repeats`` times, in the order they run: seed by seed, each seed's combinations one after
    the other (a cell's repeats back to back), so that the runs a paired comparison sets side
    by side (one seed, two variants) are minutes apart, not the whole sweep: a host drifts
    (docs/simulation.md, "Evening cross-checks")."""
    combos = list(itertools.product(*[[(v.key, value) for value in v.values] for v in variations]))
    return [Cell(tuple(combo), seed, r) for seed in seeds for combo in combos for r in range(repeats)]
