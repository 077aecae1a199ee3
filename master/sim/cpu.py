"""A node's CPU in the simulator: its cores shared by the work running on it (processor sharing).

The real node's CPU is a quota (``testbed.node.cgroups``): ``cpus`` emulated cores for the node,
at most one for each task slot (a task is one thread), and its agent beside the slots under
the node's quota only: one Python process (its event loop and the threads it hands file
reads, CRC checks and fsyncs to, one at a time under its interpreter lock), so at most one
core for all it serves, sends and receives. Here an attempt's compute and each piece of the
agent's work are jobs of so many CPU seconds. The node's cores go max-min fairly to its
attempts (each at most one core) and its agent (at most one core, split evenly over its
jobs): while the attempts and the agent fit the cores each runs at its cap, else each gets
an equal share and a capped one's unused share goes to the others, as the kernel's fair
scheduler shares a group's quota among its runnable threads. A job ends when its work is
done; its rate changes only when the jobs beside it change, and only then is its end moved
(the event of its old end is ignored by its token), so a node whose attempts fit its cores
and whose agent is idle costs one event per attempt, as a fixed duration does. The blocks a
node serves, which nobody waits for, are one job of its agent's: each block's work is added to
it without an event, and its end is checked when its last scheduled one comes (one event per
block served had nearly tripled a shuffle-heavy simulation's events).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from master.event_heap import EventHeap
from master.sim.clock import DELIVER

EPS = 1e-12


def _nothing() -> None:
    """A finished job's ``done``: it lets go of what its callback held (an attempt that holds
    the job would otherwise be a cycle, left to a collector the simulator runs rarely and
    freezes: ``master.sim.shell``)."""


@dataclass(slots=True, eq=False)
class CpuJob:
    work: float
    """CPU seconds left at ``since``."""
    done: Callable[[], None]
    agent: bool
    started: float
    since: float
    rate: float = 0.0
    token: int = 0


class NodeCpu:
    def __init__(self, heap: EventHeap, cores: float) -> None:
        self.heap = heap
        self.cores = cores
        self.cap = min(1.0, cores)
        """One thread's cores: an attempt's, the agent's."""
        self.tasks: list[CpuJob] = []
        self.agent: list[CpuJob] = []
        self.serving: CpuJob | None = None
        """The agent's job of serving blocks, while it has work left."""
        self.speed = 1.0
        """Of each core: 1 / a slowdown episode's factor while one holds (``slow``), else 1."""

    def slow(self, factor: float) -> None:
        """From now on each core runs ``factor`` times slower (1: full speed again): every
        job's rate is divided by it, its work done so far kept."""
        self.speed = 1.0 / factor
        if self.tasks or self.agent:
            self._share()

    def run(self, work: float, done: Callable[[], None], agent: bool = False) -> CpuJob:
        """Start ``work`` CPU seconds of an attempt (or of the agent); ``done()`` when through."""
        now = self.heap.now
        job = CpuJob(work, done, agent, started=now, since=now)
        if agent:
            self.agent.append(job)
            self._share()
        else:
            self.tasks.append(job)
            if self._demand() <= self.cores + EPS:  # nobody's rate moves: only the new one is scheduled
                self._schedule(job, self.cap * self.speed)
            else:
                self._share()
        return job

    def serve(self, work: float) -> None:
        """Add ``work`` CPU seconds of blocks served to the agent's serving job (started if none)."""
        if self.serving is not None:
            self.serving.work += work  # its rate is unchanged: only its end moves, checked lazily
        else:
            self.serving = self.run(work, lambda: None, agent=True)

    def stop(self, job: CpuJob) -> None:
        """Drop a job before its end (its attempt cancelled): the others get its share."""
        jobs = self.agent if job.agent else self.tasks
        if job in jobs:
            self._remove(job)
        job.done = _nothing

    def clear(self) -> None:
        """The node is gone: its attempts' work with it (their ends are ignored); its agent's
        transfers end now, failed (``done`` checks who is alive)."""
        for job in self.tasks + self.agent:
            job.token += 1
        for job in self.agent:
            self.heap.after(0.0, DELIVER, job.done)
        for job in self.tasks + self.agent:
            job.done = _nothing
        self.tasks.clear()
        self.agent.clear()
        self.serving = None

    def _demand(self) -> float:
        return self.cap * (len(self.tasks) + (1 if self.agent else 0))

    def _remove(self, job: CpuJob) -> None:
        shared = job.agent or self._demand() > self.cores + EPS
        (self.agent if job.agent else self.tasks).remove(job)
        job.token += 1
        if job is self.serving:
            self.serving = None
        if shared:
            self._share()

    def _schedule(self, job: CpuJob, rate: float) -> None:
        now = self.heap.now
        left = job.work - job.rate * (now - job.since)
        job.work = left if left > 0.0 else 0.0  # ``max(0.0, left)``'s result, without its call
        job.since, job.rate = now, rate
        job.token += 1
        self.heap.after(job.work / rate, DELIVER, partial(self._end, job, job.token))  # no frame of its own

    def _end(self, job: CpuJob, token: int) -> None:
        if token != job.token:
            return
        if job is self.serving and job.work - job.rate * (self.heap.now - job.since) > EPS:
            self._schedule(job, job.rate)  # work was added since it was scheduled
            return
        self._remove(job)
        done, job.done = job.done, _nothing
        done()

    def _share(self) -> None:
        """Every thread (attempt, agent) ``min(cap, cores / threads)``: they all have the same
        cap, so max-min fairness is an equal share; the agent's split over its jobs. Only jobs
        whose rate changes are rescheduled."""
        threads = len(self.tasks) + (1 if self.agent else 0)
        if not threads:
            return
        rate = min(self.cap, self.cores / threads) * self.speed
        schedule = self._schedule
        for job in self.tasks:  # ``abs(rate - job.rate) > EPS`` without a builtin's call per job
            moved = rate - job.rate
            if moved > EPS or moved < -EPS:
                schedule(job, rate)
        for job in self.agent:
            if abs(rate / len(self.agent) - job.rate) > EPS:
                schedule(job, rate / len(self.agent))
