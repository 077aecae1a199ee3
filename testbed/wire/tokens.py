"""Checking the run token that HTTP callers (agents, the CLI) present."""

from __future__ import annotations

import hmac


def token_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison that also refuses (rather than fails on) non-ASCII input.

    ``hmac.compare_digest`` raises on non-ASCII *strings*; header values can be
    anything a client sends, so compare their bytes instead.
    """
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))
