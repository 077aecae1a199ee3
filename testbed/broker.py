"""The embedded MQTT broker (amqtt), run as its own process for the length of a run.

Running it in a child process keeps broker work off the master's event loop
and lets tests restart it mid-run like any real broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys

from testbed.processes import child_env


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def amqtt_config(host: str, port: int) -> dict[str, object]:
    return {
        "listeners": {"default": {"type": "tcp", "bind": f"{host}:{port}", "max_connections": 0}},
        "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
    }


async def serve(host: str, port: int) -> None:
    """Run an amqtt broker until SIGTERM/SIGINT."""
    import logging

    from amqtt.broker import Broker

    logging.getLogger("amqtt").setLevel(logging.CRITICAL)  # connection probes log as errors
    logging.getLogger("transitions").setLevel(logging.WARNING)
    broker = Broker(amqtt_config(host, port))
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    with contextlib.suppress(Exception):
        await broker.shutdown()


class EmbeddedBroker:
    """Start/stop the broker process; ``url`` is what agents and the master connect to."""

    def __init__(self, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    async def start(self, timeout: float = 15.0) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "testbed.cli",
            "broker",
            "--host",
            self.host,
            "--port",
            str(self.port),
            stdin=asyncio.subprocess.DEVNULL,
            env=child_env(),
            start_new_session=True,
        )
        await wait_for_port(self.host, self.port, timeout, self.process)

    async def stop(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


async def wait_for_port(
    host: str, port: int, timeout: float, process: asyncio.subprocess.Process | None = None
) -> None:
    """Until something accepts on host:port (or the process died, or the time is up)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    delay = 0.01
    while True:
        try:
            _, writer = await asyncio.open_connection(host, port)
            writer.close()
            return
        except OSError:
            if process is not None and process.returncode is not None:
                raise RuntimeError(f"the broker exited with status {process.returncode}") from None
            if loop.time() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s") from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)
