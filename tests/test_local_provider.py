"""The local provider: real process groups, SIGKILL evictions, and refusal of foreign nodes."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from master.providers.base import ForeignNodeError, NodeSpec
from master.providers.local import TEMP_RECORD, LocalProvider, remove_recorded_temp
from tests.support.processes import process_alive

SLEEPER = (sys.executable, "-c", "import time; time.sleep(600)")


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[LocalProvider]:
    """A provider of nodes under ``tmp_path / "nodes"``, closed after the test: its private
    temporary directory goes with it."""
    local = LocalProvider("run-a", tmp_path / "nodes")
    yield local
    await local.close()


async def test_evict_kills_the_group_and_wipes_the_disk(tmp_path: Path, provider: LocalProvider) -> None:
    await provider.launch(NodeSpec("transient-0", "transient", 1, 64, None, SLEEPER))
    pid = provider.pid("transient-0")
    (tmp_path / "nodes/transient-0/blocks").mkdir()
    await provider.evict("transient-0")
    assert not process_alive(pid)
    assert not (tmp_path / "nodes/transient-0").exists()
    assert not provider.owns("transient-0")


async def test_evict_kills_as_it_is_called_not_a_loop_turn_later(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """The master's ``KillNode`` follows the eviction's journal entry in the same step: the
    SIGKILL must not wait for the event loop (it did, once: docs/benchmarks.md)."""
    await provider.launch(NodeSpec("transient-0", "transient", 1, 64, None, SLEEPER))
    pid = provider.pid("transient-0")
    cleanup = provider.evict("transient-0")
    deadline = time.monotonic() + 10
    while process_alive(pid) and time.monotonic() < deadline:  # no await: the loop never runs
        time.sleep(0.001)
    assert not process_alive(pid)
    await cleanup
    assert not (tmp_path / "nodes/transient-0").exists() and not provider.owns("transient-0")


async def test_two_concurrent_evictions_of_a_node_both_end_cleanly(provider: LocalProvider) -> None:
    """A lifetime expiry and a heartbeat timeout may evict the same node at once."""
    await provider.launch(NodeSpec("transient-0", "transient", 1, 64, None, SLEEPER))
    pid = provider.pid("transient-0")
    await asyncio.gather(provider.evict("transient-0"), provider.evict("transient-0"))
    assert not process_alive(pid) and not provider.owns("transient-0")


async def test_foreign_nodes_are_refused_and_survive(tmp_path: Path) -> None:
    mine = LocalProvider("run-a", tmp_path / "a")
    other = LocalProvider("run-b", tmp_path / "b")
    await other.launch(NodeSpec("transient-0", "transient", 1, 64, None, SLEEPER))
    try:
        with pytest.raises(ForeignNodeError, match="refusing to touch it"):
            await mine.evict("transient-0")
        with pytest.raises(ForeignNodeError):
            await mine.release(str(other.pid("transient-0")))
        await mine.close()
        assert process_alive(other.pid("transient-0"))
    finally:
        await other.close()


async def test_close_stops_every_node(tmp_path: Path) -> None:
    provider = LocalProvider("run-a", tmp_path / "nodes")
    for i in range(3):
        await provider.launch(NodeSpec(f"reserved-{i}", "reserved", 1, 64, None, SLEEPER))
    pids = [provider.pid(f"reserved-{i}") for i in range(3)]
    await provider.close()
    assert not any(process_alive(pid) for pid in pids)
    assert not provider.nodes


async def test_a_provider_dir_left_by_a_dead_master_is_removed_and_nothing_else(tmp_path: Path) -> None:
    """A master SIGKILLed before ``close`` leaves its private directory: the tidy-up at the end
    of the resumed run deletes it from the record, and only a directory a provider could have
    made (``testbed-*`` right under the temporary directory, no link, this user's)."""
    provider = LocalProvider("run-a", tmp_path / "nodes")
    await provider.launch(NodeSpec("transient-0", "transient", 1, 64, None, SLEEPER))
    await provider.evict("transient-0")  # the node is gone; the master dies before close()
    left = Path((tmp_path / "nodes" / TEMP_RECORD).read_text().strip())
    assert left.is_dir() and left.name.startswith("testbed-")

    foreign = tmp_path / "testbed-foreign"  # not right under the temporary directory
    foreign.mkdir()
    target = Path(tempfile.mkdtemp(prefix="kept-"))
    link = Path(tempfile.gettempdir()) / f"testbed-link-{os.getpid()}"
    link.symlink_to(target)
    try:
        with open(tmp_path / "nodes" / TEMP_RECORD, "a") as record:
            record.write(f"{foreign}\n{link}\nrelative/testbed-x\n")
        remove_recorded_temp(tmp_path / "nodes")
        assert not left.exists()
        assert foreign.is_dir() and link.is_symlink() and target.is_dir()
    finally:
        link.unlink()
        target.rmdir()


WAITS_FOR_SIGTERM = """
import signal, sys, time
from pathlib import Path
signal.signal(signal.SIGTERM, lambda *_: (Path(sys.argv[1]).write_text("term"), sys.exit(0)))
Path(sys.argv[2]).write_text("ready")
time.sleep(600)
"""


async def test_release_signals_the_agent_alone_then_kills_its_group(
    tmp_path: Path, provider: LocalProvider
) -> None:
    """A task worker must not die of the release's SIGTERM before its agent cancels it (it was
    then reported "killed", not "cancelled"): only the agent gets the SIGTERM, as ``docker
    stop`` signals a container's first process; its workers go with the group's SIGKILL."""
    worker = [sys.executable, "-c", WAITS_FOR_SIGTERM, str(tmp_path / "worker-term"), str(tmp_path / "ready")]
    agent = f"import subprocess, sys, time; subprocess.Popen({worker!r}); time.sleep(600)"
    await provider.launch(NodeSpec("reserved-0", "reserved", 1, 64, None, (sys.executable, "-c", agent)))
    deadline = time.monotonic() + 30
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert (tmp_path / "ready").exists()
    pid = provider.pid("reserved-0")
    await provider.release("reserved-0", grace_s=10)
    assert not process_alive(pid) and not provider.owns("reserved-0")
    assert not (tmp_path / "worker-term").exists()
