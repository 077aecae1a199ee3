"""Scenarios for tests: a small valid one, with fields replaced."""

from __future__ import annotations

from typing import Any

from testbed.scenario.schema import Scenario, parse_scenario


def make_scenario(**fields: Any) -> Scenario:
    """A small valid scenario; keyword arguments replace top-level fields."""
    data: dict[str, Any] = {
        "name": "test",
        "seed": 7,
        "cluster": {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        "jobs": [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2}],
        "timeout": 120,
    }
    data.update(fields)
    return parse_scenario(data)
