"""Imported by the agent's task forkserver as it starts (``set_forkserver_preload``), never
by the agent: the forkserver, and every worker it forks, die with their parent.

An agent dies with its master (``testbed.node.processes.die_with_parent``), but that reaches only
the agent: its forkserver, a worker it had forked and the resource tracker they keep open
were left to init, alive, when a master was SIGKILLed (an eviction kills the agent's whole
process group instead). Linux's parent-death signal is cleared by ``fork``, so each worker
asks for it again as it starts (``multiprocessing.util.register_after_fork`` runs in every
process the forkserver forks).
"""

from __future__ import annotations

import os
from multiprocessing import util

from testbed.node.processes import die_with


class _Guard:
    """What ``register_after_fork`` holds (weakly) to call ``_after_fork`` in each worker."""


def _after_fork(guard: _Guard) -> None:
    del guard
    die_with(FORKSERVER_PID)  # or at once, if the forkserver died before this worker asked


FORKSERVER_PID = os.getpid()
_GUARD = _Guard()
die_with(os.getppid())
util.register_after_fork(_GUARD, _after_fork)
