"""The window of ready tasks a head-placing scheduler sees, on hand-built free nodes."""

from __future__ import annotations

from master.schedulers.window import FreeNode, PendingWindow

RESERVED = frozenset({"reserved"})
TRANSIENT = frozenset({"transient"})
BOTH = RESERVED | TRANSIENT
NONE: frozenset[str] = frozenset()


def cluster() -> PendingWindow:
    return PendingWindow([FreeNode("r0", "reserved", 2, 1000), FreeNode("t0", "transient", 2, 1000)])


def test_tasks_confined_to_one_class_do_not_fill_the_other_classes_places() -> None:
    window = cluster()
    assert [window.admits(RESERVED, NONE, 100) for _ in range(4)] == [True, True, False, False]
    assert not window.full
    assert [window.admits(TRANSIENT, NONE, 100) for _ in range(3)] == [True, True, False]
    assert window.full


def test_a_task_that_could_start_nowhere_now_takes_no_place() -> None:
    window = cluster()
    assert not window.admits(RESERVED, frozenset({"r0"}), 100)  # excluded from the only reserved node
    assert not window.admits(BOTH, NONE, 2000)  # fits no node's free memory
    assert window.admits(RESERVED, NONE, 100) and window.admits(RESERVED, NONE, 100)


def test_a_task_allowed_anywhere_takes_a_place_in_each_class_it_could_use() -> None:
    window = cluster()
    assert window.admits(BOTH, NONE, 100) and window.admits(BOTH, NONE, 100)
    assert window.full
