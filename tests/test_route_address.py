"""The address a containerised agent or master advertises: the source address of its route to a peer."""

from __future__ import annotations

import re

import pytest

from agents.cli import route_address


def test_the_route_to_loopback_starts_at_loopback() -> None:
    assert route_address("127.0.0.1") == "127.0.0.1"


def test_a_name_that_never_resolves_is_a_clear_error_after_the_wait() -> None:
    with pytest.raises(ValueError, match=re.escape("'no-such-peer.invalid' did not resolve within 0s")):
        route_address("no-such-peer.invalid", wait_s=0)
