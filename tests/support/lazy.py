"""A module imported on its first use (the standard library's ``importlib.util.LazyLoader``):
scipy.stats, the independent reference of the chaos tests, costs test collection about a
second of CPU when imported at the top of five modules that all of a run collects."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None, f"no module {name}"
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
