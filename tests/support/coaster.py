"""CloudCoaster scenarios for tests: the scenario and the interruption trace it replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.scenarios import make_scenario


def coaster_scenario(trace: Path, **fields: Any):
    return make_scenario(
        time_scale=10,
        cluster={
            "reserved": {"count": 4, "slots": 1},
            "transient": {"count": 0, "slots": 1},
            "heartbeat_interval": 0.2,
            "heartbeat_timeout": 3,
        },
        policy={
            "scheduler": "eagle",
            "autoscaler": "cloudcoaster",
            "options": {
                "eagle": {"short_fraction": 0.5},
                "cloudcoaster": {"r": 2, "p": 0.5, "threshold": 0.4, "provisioning_delay": "20s"},
            },
        },
        jobs=[],
        arrivals={"trace": str(trace)},
        **fields,
    )


def write_trace(path: Path, lines: list[str]) -> Path:
    path.write_text("# submit tasks estimate durations...\n" + "\n".join(lines) + "\n")
    return path
