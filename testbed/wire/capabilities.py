"""Who may do what over HTTP in a run: keys derived from the run secret, and capabilities.

The master holds the run secret. From it it derives (HMAC-SHA256, one label each):

- the API token, for the master's own HTTP API (``master.json``);
- one key per node, handed to that node's agent only;
- one capability per output upload (``PUT /outputs/<job>/<index>/<attempt>``).

An agent verifies requests to its shuffle server with its own node key: a
capability to read (``GET``) or to store (``PUT``) one block there is
``HMAC(node key, "<verb> <block>")``. The master mints them into the commands it
sends (``BlockRef.caps``, ``PushTarget.token``, ``TaskSpec.output_token``), and
only the node the command is for can read it (the broker's access rules). So a
node can read the blocks it was told to read, store the blocks it was told to
push, and upload the outputs of its own final tasks; nothing else, and the API
token opens no agent.

Agents started by someone else (compose, Swarm) hold no key of the run until they are
named: each makes a random key of its own and sends it in its ``NameRequest``, which
only the master may read (the broker's rules); the answer carries that node's broker
login and node key sealed under it (``seal``) and a proof made with it (``name_proof``).
So no agent holds the run secret, and none can read or forge another's answer.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets

RUN_SECRET_ENV = "TESTBED_RUN_TOKEN"
NODE_KEY_ENV = "TESTBED_NODE_KEY"


def derive(key: str, label: str) -> str:
    """A 128-bit HMAC-SHA256 tag of ``label`` under ``key``, URL-safe text."""
    digest = hmac.new(key.encode(), label.encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def node_key(run_secret: str, node_id: str) -> str:
    return derive(run_secret, f"node {node_id}")


def name_proof(key: str, host: str, incarnation: str, node_id: str, sealed: str) -> str:
    """What proves a ``NodeNamed`` comes from the master: an agent of compose or Swarm asks
    for its node id with a random ``key`` of its own, which only the master reads, and takes
    only an answer that carries this (over the name and what is sealed for it)."""
    return derive(key, f"name {host} {incarnation} {node_id} {sealed}")


def _keystream(key: str, label: str, size: int) -> bytes:
    blocks = range((size + 31) // 32)
    stream = b"".join(
        hmac.new(key.encode(), f"seal {label} {i}".encode(), hashlib.sha256).digest() for i in blocks
    )
    return stream[:size]


def seal(key: str, label: str, values: dict[str, str]) -> str:
    """``values`` encrypted under ``key`` (HMAC-SHA256 in counter mode as the keystream; one
    message per key and label), URL-safe text. Not authenticated: ``name_proof`` covers it."""
    plain = json.dumps(values, sort_keys=True).encode()
    cipher = bytes(a ^ b for a, b in zip(plain, _keystream(key, label, len(plain)), strict=True))
    return base64.urlsafe_b64encode(cipher).decode()


def unseal(key: str, label: str, sealed: str) -> dict[str, str]:
    """What ``seal`` sealed; ``ValueError`` when it is no such text."""
    try:
        cipher = base64.urlsafe_b64decode(sealed.encode())
        plain = bytes(a ^ b for a, b in zip(cipher, _keystream(key, label, len(cipher)), strict=True))
        values = json.loads(plain)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not sealed values: {exc}") from None
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise ValueError("not sealed values")
    return values


def block_cap(key: str, verb: str, block: str) -> str:
    """The capability to ``GET`` or ``PUT`` the block ``block`` on the node whose key is ``key``."""
    return derive(key, f"{verb} {block}")


class RunKeys:
    """The run secret (the master's) and what it derives."""

    def __init__(self, run_secret: str) -> None:
        self.run_secret = run_secret
        self.api_token = derive(run_secret, "api")

    @classmethod
    def from_environment(cls) -> RunKeys:
        """``TESTBED_RUN_TOKEN`` when set (a compose run's master has it from its secret file)."""
        return cls(os.environ.get(RUN_SECRET_ENV) or secrets.token_urlsafe(24))

    def node_key(self, node_id: str) -> str:
        return node_key(self.run_secret, node_id)

    def output_cap(self, job_id: str, index: int, attempt: int) -> str:
        return derive(self.run_secret, f"PUT /outputs/{job_id}/{index}/{attempt}")
