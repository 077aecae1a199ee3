"""An agent's shuffle server: its own blocks, to callers with the capability to read that
block on that node (minted by the master from the node's key), nothing else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from agents.shuffle import make_app
from testbed.wire.blocks import BlockWriter
from testbed.wire.capabilities import RunKeys, block_cap
from testbed.workloads.base import TOKEN_HEADER

KEYS = RunKeys("the-run-secret")
NODE_KEY = KEYS.node_key("transient-0")
BLOCK = "j000.s0.t0.a0"
TOKEN = block_cap(NODE_KEY, "GET", BLOCK)


def write_block(directory: Path, block_id: str, payload: bytes) -> None:
    writer = BlockWriter(directory, block_id, 2)
    writer.write(0, payload)
    writer.commit()


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[TestClient]:
    blocks = tmp_path / "node" / "blocks"
    write_block(blocks, BLOCK, b"our own block")
    # A valid block *outside* the blocks directory: serving it would mean a traversal worked.
    write_block(tmp_path / "node", "secret", b"SECRET")
    write_block(tmp_path, "secret", b"SECRET")
    async with TestClient(TestServer(make_app(blocks, NODE_KEY))) as test_client:
        yield test_client


async def test_the_capability_gets_the_block(client: TestClient) -> None:
    response = await client.get(f"/blocks/{BLOCK}/0", headers={TOKEN_HEADER: TOKEN})
    assert response.status == 200
    assert b"our own block" in await response.read()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {TOKEN_HEADER: ""},
        {TOKEN_HEADER: "token-of-another-run"},
        {TOKEN_HEADER: TOKEN + "x"},
        {TOKEN_HEADER: TOKEN[:-1]},
        {TOKEN_HEADER: "r\u00e9n-token"},  # not ASCII: must be refused, not crash the handler
        {TOKEN_HEADER: KEYS.api_token},
        {TOKEN_HEADER: KEYS.run_secret},
        {TOKEN_HEADER: NODE_KEY},
        {TOKEN_HEADER: block_cap(KEYS.node_key("transient-1"), "GET", BLOCK)},
        {TOKEN_HEADER: block_cap(NODE_KEY, "GET", "j000.s0.t1.a0")},
        {TOKEN_HEADER: block_cap(NODE_KEY, "PUT", BLOCK)},
    ],
    ids=[
        "none",
        "empty",
        "other-run",
        "longer",
        "prefix",
        "non-ascii",
        "master-api-token",
        "run-secret",
        "node-key",
        "other-node",
        "other-block",
        "put-not-get",
    ],
)
async def test_without_the_run_token_nothing_is_served(client: TestClient, headers: dict[str, str]) -> None:
    response = await client.get(f"/blocks/{BLOCK}/0", headers=headers)
    assert response.status == 403
    assert b"our own block" not in await response.read()


@pytest.mark.parametrize(
    "path",
    [
        "/blocks/..%2Fsecret/0",
        "/blocks/..%2F..%2Fsecret/0",
        "/blocks/%2E%2E%2Fsecret/0",
        "/blocks/../secret/0",
        "/blocks/..%5Csecret/0",
        f"/blocks/{BLOCK}%2F..%2F..%2Fsecret/0",
        "/blocks/.%2E/secret/0",
        "/blocks/%2Fetc%2Fpasswd/0",
        "/blocks/secret%00/0",
        "/blocks/.secret/0",
        "/blocks/secret%0A/0",
        f"/blocks/{BLOCK}/0%0A",
        f"/blocks/{BLOCK}/-1",
        f"/blocks/{BLOCK}/2",
        f"/blocks/{BLOCK}/1e3",
        f"/blocks/{BLOCK}/99999999999999999999999",
        f"/blocks/{BLOCK}/%D9%A3",  # an Arabic-Indic digit: isdigit() but not an index
        f"/blocks/{BLOCK}/%C2%B2",  # a superscript two: isdigit(), but int() fails
    ],
)
async def test_paths_that_leave_the_blocks_directory_are_refused(client: TestClient, path: str) -> None:
    response = await client.get(URL(path, encoded=True), headers={TOKEN_HEADER: TOKEN})
    body = await response.read()
    assert response.status in (400, 403, 404), (response.status, body)
    assert b"SECRET" not in body
