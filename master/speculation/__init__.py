"""Speculative execution, the fourth policy axis (``policy.speculation``). The built-ins are in
``testbed.registry.BUILTINS`` and built as a plugin is: their ``Options`` validated (a bad one
exits 2 naming ``policy.options.<name>.<option>``), their trace-time durations given to them in
wall seconds by ``from_scenario``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from testbed.api.speculation import Speculate, SpeculationSnapshot


class NoSpeculation:
    """``speculation: none``: one attempt per task at a time (the default)."""

    name = "none"

    class Options(BaseModel, extra="forbid"):
        """``policy.options.none``: it takes none."""

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Any) -> NoSpeculation:
        return cls()

    def speculate(self, snapshot: SpeculationSnapshot) -> list[Speculate]:
        return []
