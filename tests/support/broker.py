"""The real Mosquitto broker the tests start: when it listens."""

from __future__ import annotations

import contextlib
import socket
import subprocess


def wait_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Poll until the broker accepts connections (readiness, not a timed sleep)."""
    for _ in range(500):
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"mosquitto exited: {stderr}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(0.02)
    raise TimeoutError(f"mosquitto did not listen on {port}")
