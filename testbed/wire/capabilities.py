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

Agents started by someone else (compose, Swarm) get the run secret itself and
derive their own key (``node_key``): there every agent could derive every key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
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


def name_proof(run_secret: str, host: str, incarnation: str, node_id: str) -> str:
    """What proves a ``NodeNamed`` comes from the master: an agent of compose or Swarm asks
    for its node id and takes only an answer that carries this."""
    return derive(run_secret, f"name {host} {incarnation} {node_id}")


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
        """``TESTBED_RUN_TOKEN`` when set (agents started by compose derive their keys from it)."""
        return cls(os.environ.get(RUN_SECRET_ENV) or secrets.token_urlsafe(24))

    def node_key(self, node_id: str) -> str:
        return node_key(self.run_secret, node_id)

    def output_cap(self, job_id: str, index: int, attempt: int) -> str:
        return derive(self.run_secret, f"PUT /outputs/{job_id}/{index}/{attempt}")
