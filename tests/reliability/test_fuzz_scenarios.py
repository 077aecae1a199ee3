"""Malformed scenarios through the CLI: exit status 0 or 2 and a message, never a traceback.

Hypothesis mutates valid scenarios: any field (at any depth) replaced by a
value of another type or an extreme one, deleted, or joined by an unknown
field; and the YAML text itself cut, spliced or garbled.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.app.cli import main

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

BASES: list[dict[str, Any]] = [
    {
        "name": "small",
        "seed": 7,
        "cluster": {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        "jobs": [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2}],
        "timeout": 120,
    },
    {
        "name": "rich",
        "seed": 3,
        "time_scale": 60,
        "broker": "embedded",
        "cluster": {
            "reserved": {"count": 1, "slots": 2, "memory_mb": 2048, "price_per_hour": 1.0},
            "transient": {"count": 4, "slots": 2, "memory_mb": 1024, "cpus": 1.5},
            "memory_increment_mb": 100,
        },
        "policy": {"scheduler": "yarn-me", "strategy": "pado", "autoscaler": "static", "options": {"k": 1}},
        "chaos": {
            "transient": {"lifetime": "high", "notice": "30s", "replace": True, "provisioning_delay": "2m"},
            "reserved": {"lifetime": {"weibull": {"shape": 0.8, "scale": "2h"}}},
            "storms": [
                {"at": "4m", "evict": {"fraction": 0.5, "kind": "transient", "select": "busiest"}},
                {"from": "1m", "to": "9m", "rate": "2/min", "evict": {"count": 1}},
                {"at": "1m", "every": "2m", "times": 3},
            ],
        },
        "jobs": [
            {"workload": "wordcount", "size_mb": 24, "maps": 6, "reduces": 3, "submit_at": "0s"},
            {"workload": "sleep", "tasks": 8, "duration": "20s", "repeat": 3, "every": "1m"},
            {"workload": "sort", "size_mb": 8, "memory_mb": 512},
            {"workload": "pagerank", "nodes": 1000, "edges": 5000, "iterations": 3},
        ],
    },
]

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "abc", "-5s", "1e999", "nan", "inf", "-inf", "30s", "2/min", "0", "/", "1/0s"]),
    st.sampled_from(["embedded", "mosquitto", "mqtt://", "high", "none", "../../etc/passwd", "*"]),
    st.text(max_size=12),
    st.lists(st.integers(min_value=-3, max_value=3), max_size=3),
    st.dictionaries(st.sampled_from(["count", "at", "weibull", "fixed", "empirical"]), st.integers(-2, 5)),
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path and list index path inside a scenario mapping."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((*prefix, key))
            found += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((*prefix, index))
            found += paths(value, (*prefix, index))
    return found


def mutate(base: dict[str, Any], path: tuple[Any, ...], how: str, junk: Any) -> dict[str, Any]:
    scenario = copy.deepcopy(base)
    parent = scenario
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "replace":
        parent[last] = junk
    elif how == "delete":
        del parent[last]
    elif how == "add" and isinstance(parent, dict):
        parent[f"unknown_{last}"] = junk
    elif how == "wrap":
        parent[last] = [parent[last]] if not isinstance(parent[last], list) else {"x": parent[last]}
    return scenario


def validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate", str(path)])  # an exception here fails the test: that is the point
    return code, capsys.readouterr().err


@FUZZ
@given(data=st.data(), how=st.sampled_from(["replace", "delete", "add", "wrap"]), junk=JUNK)
def test_mutated_scenarios_exit_0_or_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject, how: str, junk: Any
) -> None:
    base = data.draw(st.sampled_from(BASES), label="base")
    path = data.draw(st.sampled_from(paths(base)), label="path")
    file = tmp_path / "fuzzed.yaml"
    file.write_text(yaml.safe_dump(mutate(base, path, how, junk)))
    code, err = validate(file, capsys)
    assert code in (0, 2)
    if code == 2:
        assert err.strip() and "Traceback" not in err
        assert all(line.startswith(str(file)) for line in err.strip().splitlines()), err


@FUZZ
@given(data=st.data())
def test_garbled_yaml_exits_0_or_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    text = yaml.safe_dump(data.draw(st.sampled_from(BASES)))
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 40)))
    splice = data.draw(st.text(alphabet=st.characters(codec="utf-8"), max_size=20))
    file = tmp_path / "garbled.yaml"
    file.write_text(text[:start] + splice + text[end:])
    code, err = validate(file, capsys)
    assert code in (0, 2)
    if code == 2:
        assert err.strip() and "Traceback" not in err


def test_the_bases_are_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for base in BASES:
        file = tmp_path / "base.yaml"
        file.write_text(yaml.safe_dump(base))
        assert validate(file, capsys) == (0, "")
