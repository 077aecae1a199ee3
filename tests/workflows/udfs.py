"""Row UDFs the workflow tests MAP with (a module the task workers can import)."""

from __future__ import annotations

from typing import Any


def label(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """(key, qty) -> (key, 'big' or 'small', qty * 3)."""
    key, qty = row
    return key, "big" if qty is not None and qty >= 3 else "small", None if qty is None else qty * 3
