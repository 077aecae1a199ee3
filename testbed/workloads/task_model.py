"""What the memory-elastic scheduler knows about a task: ideal memory, ideal duration, penalty.

The YARN-ME paper (section 2) calls a task *well-sized* when its memory covers
its shuffle data, and *under-sized* (elastic) otherwise: it then spills to disk
and runs longer. The *penalty curve* maps the allocated fraction of the ideal
memory to a runtime multiplier, the *spill curve* to the megabytes spilled.
Curves are measured (``testbed profile`` writes them as JSON files, format in
docs/yarn-me.md) or derived from the paper's reducer model
``T(m) = T_ideal + spilledBytes(m) / diskRate`` (:class:`ReducerSpillModel`).
The spill over the penalized runtime is the disk bandwidth an elastic task
needs (paper, section 3: YARN-ME budgets each node's disk bandwidth).

The model lives in ``testbed``, beside the workloads, because ``testbed profile``
(``testbed.workloads.profile``) writes the files the scheduler reads, and ``testbed``
imports nothing of ``master``.

Curves are not monotone: a reducer whose input is just above a multiple of its
buffer spills almost everything, one with a slightly smaller buffer spills
less (the paper's sawtooth), so a smaller allocation can be the faster one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from testbed.scenario.curves import PenaltyCurve, SpillCurve

Role = Literal["map", "reduce"]
MB = 2**20
PROFILE_FORMAT = "testbed-task-profile/1"


@dataclass(frozen=True, slots=True)
class TaskModel:
    """The scheduler's model of one kind of task (a job's stage, or a workload role).

    What an under-sized task spills comes from ``spill`` (measured) when known,
    else from the paper's reducer model with the task's ``disk_rate_mb_s``:
    ``spilled(m) = (T(m) - T_ideal) * diskRate``; with neither it is unknown.
    """

    ideal_memory_mb: int
    ideal_duration_s: float
    penalty: PenaltyCurve = field(default_factory=PenaltyCurve.none)
    spill: SpillCurve | None = None
    disk_rate_mb_s: float | None = None
    """The paper's diskRate: how fast the task uses the disk while it spills."""

    def __post_init__(self) -> None:
        if self.ideal_memory_mb <= 0:
            raise ValueError(f"ideal_memory_mb must be positive, got {self.ideal_memory_mb}")
        if not (math.isfinite(self.ideal_duration_s) and self.ideal_duration_s >= 0):
            raise ValueError(f"ideal_duration_s must be >= 0, got {self.ideal_duration_s}")
        rate = self.disk_rate_mb_s
        if rate is not None and not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"disk_rate_mb_s must be positive, got {rate}")

    def penalized_duration(self, memory_mb: float) -> float:
        """Predicted runtime with ``memory_mb`` allocated (ideal duration if well-sized)."""
        return self.ideal_duration_s * self.penalty.multiplier(memory_mb / self.ideal_memory_mb)

    def expected_spill_mb(self, memory_mb: float) -> float | None:
        """Megabytes the task is expected to spill with ``memory_mb`` (None: unknown)."""
        fraction = memory_mb / self.ideal_memory_mb
        if fraction >= 1.0:
            return 0.0
        if self.spill is not None:
            return self.spill.spilled_mb(fraction)
        if self.disk_rate_mb_s is not None:
            return (self.penalized_duration(memory_mb) - self.ideal_duration_s) * self.disk_rate_mb_s
        return None

    def disk_bandwidth_mb_s(self, memory_mb: float) -> float | None:
        """Disk bandwidth the task needs with ``memory_mb``: its expected spill over its
        penalized runtime (None: unknown)."""
        spilled = self.expected_spill_mb(memory_mb)
        if spilled is None or spilled == 0:
            return spilled
        duration = self.penalized_duration(memory_mb)
        return spilled / duration if duration > 0 else math.inf

    def resized(self, ideal_memory_mb: int) -> TaskModel:
        """The same kind of task with another ideal memory (a larger or smaller partition).

        The curves are in fractions of the ideal memory, so they transfer; the
        measured spill grows in proportion (ideal memory and spill both follow
        the task's input). Duration and disk rate stay.
        """
        spill = None if self.spill is None else self.spill.scaled(ideal_memory_mb / self.ideal_memory_mb)
        return replace(self, ideal_memory_mb=ideal_memory_mb, spill=spill)

    def dilated(self, factor: float) -> TaskModel:
        """The same task on a node slowed by ``factor`` (time dilation): it takes ``factor``
        times longer and uses the disk ``factor`` times more slowly; what it spills stays."""
        rate = None if self.disk_rate_mb_s is None else self.disk_rate_mb_s / factor
        return replace(self, ideal_duration_s=self.ideal_duration_s * factor, disk_rate_mb_s=rate)


# ------------------------------------------------------------------ profile files


@dataclass(frozen=True, slots=True)
class TaskProfile:
    """A measured model with what it was measured on: the content of one profile file.

    ``stage_ideal_memory_mb`` (optional) is the ideal memory of every stage of
    the profiled job: the most any task of the stage needs not to spill. The
    master gives it to the tasks of jobs that do not set their own memory.
    """

    workload: str
    role: Role
    model: TaskModel
    stage_ideal_memory_mb: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": PROFILE_FORMAT,
            "workload": self.workload,
            "role": self.role,
            "ideal_memory_mb": self.model.ideal_memory_mb,
            "ideal_duration_s": self.model.ideal_duration_s,
            "points": [list(p) for p in self.model.penalty.points],
        }
        if self.model.spill is not None:
            data["spill_mb"] = [list(p) for p in self.model.spill.points]
        if self.model.disk_rate_mb_s is not None:
            data["disk_rate_mb_s"] = self.model.disk_rate_mb_s
        if self.stage_ideal_memory_mb:
            data["stage_ideal_memory_mb"] = list(self.stage_ideal_memory_mb)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskProfile:
        """Parse a profile; unknown keys are ignored so profilers may add measurements.

        The spill curve is ``spill_mb`` when given, else the ``measurements``
        ``testbed profile`` records (spilled bytes at each profiled fraction)."""
        fmt = data.get("format", PROFILE_FORMAT)
        if fmt != PROFILE_FORMAT:
            raise ValueError(f"unsupported profile format {fmt!r}, expected {PROFILE_FORMAT!r}")
        missing = {"workload", "role", "ideal_memory_mb", "ideal_duration_s", "points"} - set(data)
        if missing:
            raise ValueError(f"profile lacks {sorted(missing)}")
        if data["role"] not in ("map", "reduce"):
            raise ValueError(f"profile role must be 'map' or 'reduce', got {data['role']!r}")
        curve = PenaltyCurve(tuple((f, m) for f, m in data["points"]))
        rate = data.get("disk_rate_mb_s")
        model = TaskModel(
            int(data["ideal_memory_mb"]),
            float(data["ideal_duration_s"]),
            curve,
            _spill_curve(data),
            None if rate is None else float(rate),
        )
        stages = tuple(int(mb) for mb in data.get("stage_ideal_memory_mb", ()))
        if any(mb <= 0 for mb in stages):
            raise ValueError(f"stage_ideal_memory_mb must be positive, got {list(stages)}")
        return cls(str(data["workload"]), data["role"], model, stages)


def _spill_curve(data: dict[str, Any]) -> SpillCurve | None:
    if "spill_mb" in data:
        return SpillCurve(tuple((f, mb) for f, mb in data["spill_mb"]))
    try:
        measured = sorted((float(m["fraction"]), m["spill_bytes"] / MB) for m in data.get("measurements", ()))
    except KeyError as missing:
        raise ValueError(f"a measurement lacks {missing}") from None
    under = tuple(point for point in measured if point[0] < 1.0)
    return SpillCurve(under) if under else None


Profiles = dict[tuple[str, Role], TaskProfile]
"""A run's task profiles by (workload, role) (``RunSettings.profiles``)."""


def load_profile(path: str | Path) -> TaskProfile:
    try:
        return TaskProfile.from_dict(json.loads(Path(path).read_text()))
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path}: {error}") from error


def save_profile(profile: TaskProfile, path: str | Path) -> None:
    Path(path).write_text(json.dumps(profile.to_dict(), indent=2) + "\n")


# ------------------------------------------------------------ the reducer model


def spilled_mb(input_mb: float, buffer_mb: float) -> float:
    """Data a Hadoop-style reducer spills: every full buffer goes to disk, the rest stays.

    With a 2010 MB input, a 500 MB or a 2000 MB buffer spills 2000 MB, a 1500 MB
    buffer only 1500 MB (the paper's example of the sawtooth).
    """
    if input_mb <= buffer_mb:
        return 0.0
    if buffer_mb <= 0:
        return input_mb
    return math.floor(input_mb / buffer_mb) * buffer_mb


@dataclass(frozen=True, slots=True)
class ReducerSpillModel:
    """The paper's reducer model: ``T(m) = T_ideal + spilledBytes(m) / diskRate``.

    ``buffer_fraction`` is the share of the task's memory used as shuffle buffer,
    so the ideal memory is the input divided by it.
    """

    input_mb: float
    ideal_duration_s: float
    disk_rate_mb_s: float
    buffer_fraction: float = 1.0

    @classmethod
    def from_profiling_runs(
        cls,
        input_mb: float,
        ideal_duration_s: float,
        undersized_memory_mb: float,
        undersized_duration_s: float,
        buffer_fraction: float = 1.0,
    ) -> ReducerSpillModel:
        """Learn the disk rate from one well-sized and one under-sized run (paper, 2.3)."""
        spilled = spilled_mb(input_mb, undersized_memory_mb * buffer_fraction)
        extra = undersized_duration_s - ideal_duration_s
        if spilled <= 0 or extra <= 0:
            raise ValueError("the under-sized run must spill and take longer than the ideal one")
        return cls(input_mb, ideal_duration_s, spilled / extra, buffer_fraction)

    @property
    def ideal_memory_mb(self) -> int:
        return math.ceil(self.input_mb / self.buffer_fraction)

    def runtime_s(self, memory_mb: float) -> float:
        spilled = spilled_mb(self.input_mb, memory_mb * self.buffer_fraction)
        return self.ideal_duration_s + spilled / self.disk_rate_mb_s

    def task_model(self, step: float = 0.01) -> TaskModel:
        """Sample the model into a :class:`TaskModel` (fractions 0.1, 0.1+step, ... below 1).

        A last point just below 1.0 keeps the jump at the ideal memory: one byte
        less than ideal spills a whole buffer. The model keeps the disk rate, so
        its expected spill at a sampled fraction is the reducer model's.
        """
        ideal = self.ideal_memory_mb
        fractions = [round(0.1 + i * step, 10) for i in range(math.ceil(0.9 / step))]
        points = [(f, self._multiplier(f * ideal)) for f in fractions if f < 1.0]
        points += [(1.0, self._multiplier(ideal * (1.0 - 1e-9))), (1.0, 1.0)]
        curve = PenaltyCurve(tuple(points))
        return TaskModel(ideal, self.ideal_duration_s, curve, disk_rate_mb_s=self.disk_rate_mb_s)

    def _multiplier(self, memory_mb: float) -> float:
        if self.ideal_duration_s <= 0:
            return 1.0
        return self.runtime_s(memory_mb) / self.ideal_duration_s
