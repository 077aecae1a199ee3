"""A scheduler with a model of its round's time (``Scheduler.modelled_round_s``): FIFO's
placements, each round modelled to take ``ROUND_S`` (the charged-time tests' plugin)."""

from __future__ import annotations

from master.schedulers.fifo import FifoScheduler

ROUND_S = 2.0


class TwoSecondFifo(FifoScheduler):
    def modelled_round_s(self) -> float | None:
        return ROUND_S
