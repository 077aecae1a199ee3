"""A task forkserver whose socket was deleted under a live agent is replaced, not mourned.

CPython's forkserver (``multiprocessing.forkserver``) listens on
``$TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX`` and every worker start connects to that path.
Whatever deletes it (a cleanup of ``pymp-*``, a wipe of the node's temporary directory, an
age-based cleaner), the forkserver lives on unreachable and every start fails
``FileNotFoundError`` while the agent heartbeats. ``forget_unreachable_forkserver`` makes the
next start launch a new forkserver: it recreates the directory the socket was in and drops
the old server's address, pid and alive pipe from CPython's ``ForkServer``. The old server is
left running, its alive pipe open on purpose: closing it would stop the server, and the
workers it forked die with it (``agents.forkserver_guard``); it exits with the agent.

This reads three private attributes of CPython's ``ForkServer`` (the same from 3.8 to 3.13);
where they are missing nothing is changed and the start fails as before.
"""

from __future__ import annotations

import os
from multiprocessing import forkserver, util

_STATE = ("_forkserver_address", "_forkserver_pid", "_forkserver_alive_fd")


def unreachable_socket() -> str | None:
    """The path of this process's forkserver socket if the server runs and the path is gone."""
    server = forkserver._forkserver
    if not all(hasattr(server, name) for name in _STATE) or server._forkserver_pid is None:
        return None
    address = server._forkserver_address
    if not isinstance(address, str) or util.is_abstract_socket_namespace(address):
        return None
    return None if os.path.exists(address) else address


def forget_unreachable_forkserver() -> str | None:
    """Make the next worker start launch a new forkserver if the socket of this one is gone;
    the deleted path, or None (nothing done) when the socket is there or not a path."""
    address = unreachable_socket()
    if address is None:
        return None
    server = forkserver._forkserver
    with server._lock:
        os.makedirs(os.path.dirname(address), mode=0o700, exist_ok=True)  # where the new one listens
        for name in _STATE:
            setattr(server, name, None)
    return address
