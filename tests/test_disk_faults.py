"""The pure decision for a node drained because its disk was full."""

from __future__ import annotations

from master.core.disk_full import BACKOFF_S, MAX_DISK_FULL, disk_full_verdict


def test_a_node_is_taken_back_once_idle_after_a_back_off_that_doubles() -> None:
    assert disk_full_verdict(1, BACKOFF_S - 0.01, running=0) == "wait"
    assert disk_full_verdict(1, BACKOFF_S, running=1) == "wait"  # its failed attempts may hold space
    assert disk_full_verdict(1, BACKOFF_S, running=0) == "undrain"
    assert disk_full_verdict(2, 2 * BACKOFF_S - 0.01, running=0) == "wait"
    assert disk_full_verdict(2, 2 * BACKOFF_S, running=0) == "undrain"


def test_a_node_full_too_often_is_drained_for_good() -> None:
    assert disk_full_verdict(MAX_DISK_FULL, 1e9, running=0) == "retire"
