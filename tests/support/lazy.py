"""A module imported on the first read of one of its names: scipy.stats, the independent
reference of the chaos tests, costs test collection seconds of CPU when imported at the top
of the five modules that all of a run collects.

Not the standard library's ``importlib.util.LazyLoader``: its module loads on any attribute
read, and pytest's collection reads ``__class__``, ``__bases__`` and ``__test__`` of every
object at a test module's top (each collection imported the whole of scipy.stats). Here a
dunder name is not looked up in the module, so collecting does not import it.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(importlib.import_module(self.name), attr)


def lazy_module(name: str) -> Any:
    """``name``'s module, imported when a test first reads one of its names."""
    return LazyModule(name)
