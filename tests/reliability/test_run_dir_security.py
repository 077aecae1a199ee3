"""Another local user and the run directory; the master API with and without its token.

Where the point is about other users, they are played by uid 65534 (``setpriv``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from master.shell.run import run_scenario
from master.shell.secure_dir import RunDirError, secure_run_dir, write_secret_file
from testbed.wire.blocks import TOKEN_HEADER
from tests.support.masters import offline_master, shell_act
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

OTHER_USER = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
needs_other_user = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="playing another user needs root and setpriv"
)
SCENARIO = "name: tiny\njobs: [{workload: sleep, tasks: 1, duration: 0.1s}]\n"


def as_other_user(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OTHER_USER, *argv], capture_output=True, text=True, timeout=30)


@pytest.fixture
def shared_parent() -> Iterator[Path]:
    """A directory every user may enter (0755, in /tmp), as a user's home or project is."""
    parent = Path(tempfile.mkdtemp(prefix="testbed-shared-"))
    parent.chmod(0o755)
    try:
        yield parent
    finally:
        shutil.rmtree(parent)


def run_cli(scenario: Path, out: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "testbed.app.cli", "run", str(scenario), "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_a_run_directory_others_may_write_is_refused(shared_parent: Path, mode: int) -> None:
    scenario = shared_parent / "s.yaml"
    scenario.write_text(SCENARIO)
    out = shared_parent / "run"
    out.mkdir()
    out.chmod(mode)
    done = run_cli(scenario, out)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "writable by other users" in done.stderr, done.stderr
    assert str(out) in done.stderr and not list(out.iterdir())


def test_a_run_directory_in_a_parent_others_may_write_is_refused(shared_parent: Path) -> None:
    shared_parent.chmod(0o777)  # not sticky: another user could swap the run directory
    with pytest.raises(RunDirError, match="its parent is writable by other users"):
        secure_run_dir(shared_parent / "run")


@needs_other_user
def test_a_master_json_planted_by_another_user_is_refused(shared_parent: Path) -> None:
    """Planted (with umask 000) while the directory was open: never written through."""
    planted = shared_parent / "master.json"
    shared_parent.chmod(0o777)
    made = as_other_user("sh", "-c", f"umask 000; : > {planted}")
    shared_parent.chmod(0o755)
    assert made.returncode == 0, made.stderr
    with pytest.raises(RunDirError, match="planted by someone else"):
        write_secret_file(planted, '{"token": "secret"}')
    assert planted.read_text() == ""


def test_a_secret_file_of_ours_is_replaced_by_a_new_private_one(tmp_path: Path) -> None:
    old = tmp_path / "master.json"
    old.write_text("old")
    old.chmod(0o666)
    write_secret_file(old, "new")
    assert old.read_text() == "new" and (old.stat().st_mode & 0o777) == 0o600


@needs_other_user
async def test_another_user_reads_nothing_of_a_run(shared_parent: Path) -> None:
    """The run directory is 0700: events, outputs, master.json are out of reach, though
    the parent (0755) is not (the control shows the other user could read a file there)."""
    (shared_parent / "control").write_text("readable")
    run_dir = shared_parent / "run"
    jobs = [{"workload": "wordcount", "size_mb": 1, "maps": 2}]
    result = await run_scenario(settings_of(make_scenario(jobs=jobs)), run_dir)
    assert result.ok
    assert (run_dir.stat().st_mode & 0o777) == 0o700
    assert as_other_user("cat", str(shared_parent / "control")).stdout == "readable"
    for target in ("events.jsonl", "summary.json", "outputs/j000/part-00000", "master.json"):
        assert (run_dir / target).exists()
        read = as_other_user("cat", str(run_dir / target))
        assert read.returncode != 0 and "Permission denied" in read.stderr
    assert as_other_user("ls", str(run_dir)).returncode != 0


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[tuple[str, Any]]:
    master = offline_master(make_scenario(), tmp_path)
    shell_act(master, master.core.submit_job, master.scenario.jobs[0], 0)
    runner = await master.api.start()
    try:
        yield master.api.url, master
    finally:
        await runner.cleanup()
        master.journal.close()


async def test_the_api_token_is_needed_for_status_and_evictions(api: tuple[str, Any]) -> None:
    url, master = api
    token = json.loads((master.run_dir / "master.json").read_text())["token"]
    async with aiohttp.ClientSession() as http:
        secret = master.keys.run_secret
        for headers in ({}, {TOKEN_HEADER: "wrong"}, {TOKEN_HEADER: secret}):
            async with http.get(f"{url}/status", headers=headers) as response:
                assert response.status == 403
            async with http.post(f"{url}/chaos/evict", json={"count": 1}, headers=headers) as response:
                assert response.status == 403
        async with http.get(f"{url}/status", headers={TOKEN_HEADER: token}) as response:
            assert response.status == 200 and (await response.json())["forged_messages"] == 0


@pytest.mark.parametrize("body", [b"x", b"[1, 2]", b'"x"', b"{", b"null", b'{"count": "many"}'])
async def test_a_malformed_eviction_request_gets_400(api: tuple[str, Any], body: bytes) -> None:
    url, master = api
    headers = {TOKEN_HEADER: master.keys.api_token, "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/chaos/evict", data=body, headers=headers) as response,
    ):
        assert response.status == 400, await response.text()


@pytest.mark.parametrize("index", ["%C2%B2", "%D9%A3", "-1", "1e3", "99999999999999999999", "0%0A"])
async def test_a_malformed_output_upload_gets_400(api: tuple[str, Any], index: str) -> None:
    url, master = api
    headers = {TOKEN_HEADER: master.keys.api_token}
    async with aiohttp.ClientSession() as http:
        target = aiohttp.client.URL(f"{url}/outputs/j000/{index}/0", encoded=True)
        async with http.put(target, data=b"data", headers=headers) as r:
            assert r.status == 400, await r.text()


async def test_an_output_upload_needs_the_capability_of_that_attempt(api: tuple[str, Any]) -> None:
    url, master = api
    keys = master.keys
    async with aiohttp.ClientSession() as http:
        for token in (keys.api_token, keys.output_cap("j000", 0, 1), keys.output_cap("j000", 1, 0)):
            headers = {TOKEN_HEADER: token}
            async with http.put(f"{url}/outputs/j000/0/0", data=b"forged", headers=headers) as r:
                assert r.status == 403
        cap = keys.output_cap("j000", 0, 0)
        async with http.put(f"{url}/outputs/j000/0/0", data=b"real", headers={TOKEN_HEADER: cap}) as r:
            assert r.status == 201
    assert ("j000", 0, 0) in master.core.staged  # the sink told the core (``OutputStaged``)
    assert shell_act(master, master.core.commit_output, "j000", 0, 0)
    part = master.run_dir / "outputs" / "j000" / "part-00000"
    assert part.read_bytes() == b"real"
