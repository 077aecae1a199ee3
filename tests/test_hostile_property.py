"""Property: any scenario built from the schema's own types, then mutated the way an attacker
would (deep nesting, aliases, huge and tiny numbers, special files), and any ``--set`` value,
ends with exit status 0 or 2 and, for 2, one message line per problem: never a traceback,
within a bounded time (a SIGALRM guard turns a hang into a failure) and memory (tracemalloc).

Values are drawn per field from its annotation (``Scenario.model_fields``, recursively), so a
field added to the schema is generated without changing this test.
"""

from __future__ import annotations

import copy
import os
import signal
import tracemalloc
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from annotated_types import Ge, Gt, Le, Lt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from testbed.app.cli import main
from testbed.scenario.schema import Scenario

PROPERTY = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
GUARD_S = 60
MAX_PEAK_BYTES = 256 << 20
"""Python allocations of one CLI call (a scenario is at most 1 MiB; every count is bounded)."""
SPECIAL_FILES = ("/dev/zero", "/dev/null", "/dev/stdin", "/proc/self/mem", "FIFO")
EXTREME_NUMBERS = st.sampled_from([0, -1, 1e-320, 5e-324, 1e308, 1.7e308, 2**63, 10**30, 1e9, 1e15, 0.0001])
DURATIONS = st.sampled_from(["1ms", "30s", "5m", "2h", "1e9h", "1e300s", "0s", "400d"])
LEAVES = st.one_of(
    st.booleans(), st.integers(-5, 50), st.floats(-1e3, 1e3), st.text(max_size=8), EXTREME_NUMBERS
)


def _bounds(metadata: list[Any]) -> tuple[float | None, float | None]:
    low = next(
        (getattr(m, "ge", None) or getattr(m, "gt", None) for m in metadata if isinstance(m, Ge | Gt)), None
    )
    high = next(
        (getattr(m, "le", None) or getattr(m, "lt", None) for m in metadata if isinstance(m, Le | Lt)), None
    )
    return low, high


def of_type(annotation: Any, metadata: list[Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of ``annotation``: in range mostly, at and beyond its bounds sometimes."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return of_type(args[0], [*metadata, *args[1:]], depth)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(of_type(arg, metadata, depth) for arg in args))
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is list or origin is tuple:
        item = of_type(args[0], [], depth + 1) if args else LEAVES
        return st.lists(item, max_size=3 if depth < 3 else 0)
    if origin is dict:
        return st.dictionaries(st.text(max_size=6), LEAVES, max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_values(annotation, depth + 1)
    if annotation is type(None):
        return st.none()
    low, high = _bounds(metadata)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.one_of(st.integers(int(low or 0), int(min(high or 64, 64))), EXTREME_NUMBERS)
    if annotation is float:
        return st.one_of(st.floats(low or 0.0, min(high or 100.0, 100.0)), EXTREME_NUMBERS, DURATIONS)
    return st.one_of(st.text(max_size=12), DURATIONS, st.sampled_from(SPECIAL_FILES))


def field_types(
    model: type[BaseModel], prefix: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], Any, list[Any]]]:
    """(path, annotation, metadata) of every field of ``model``, descending into nested models
    (a list of models through its first item, a union through each model member)."""
    found = []
    for name, info in model.model_fields.items():
        path = (*prefix, info.alias or name)
        found.append((path, info.annotation, list(info.metadata)))
        for sub, at in _models_in(info.annotation):
            found += field_types(sub, (*path, *at))
    return found


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], tuple[Any, ...]]]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, ())]
    if origin is typing.Annotated or origin in (typing.Union, types.UnionType):
        return [found for arg in args for found in _models_in(arg)]
    if origin is list:
        return [(model, (0, *at)) for model, at in _models_in(args[0])]
    return []


FIELDS = field_types(Scenario)
BASE: dict[str, Any] = {
    "name": "generated",
    "seed": 3,
    "time_scale": 60,
    "cluster": {"reserved": {"count": 1}, "transient": {"count": 2}},
    "policy": {"scheduler": "yarn-me", "strategy": "pado", "options": {"k": 1}},
    "chaos": {
        "transient": {"lifetime": {"weibull": {"shape": 0.8, "scale": "20m"}}, "notice": "30s"},
        "reserved": {"lifetime": "none"},
        "storms": [{"at": "4m", "every": "1m", "times": 3, "evict": {"count": 1}}],
    },
    "jobs": [{"workload": "sleep", "tasks": 4, "duration": "20s", "repeat": 2, "every": "1m"}],
    "profiles": [],
}


def model_values(model: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping with some of ``model``'s fields."""
    if depth > 3:
        return st.just({})
    fields = {
        (info.alias or name): of_type(info.annotation, list(info.metadata), depth)
        for name, info in model.model_fields.items()
    }
    return st.fixed_dictionaries({}, optional=fields)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """``BASE`` with one to three fields replaced by values of their own type."""
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path, annotation, metadata = draw(st.sampled_from(FIELDS))
        value = draw(of_type(annotation, metadata))
        node = data
        for step in path[:-1]:
            if isinstance(node, list):
                node = node[step] if step < len(node) else {}
            else:
                node = node.setdefault(step, {}) if isinstance(node.get(step, {}), dict | list) else {}
        if isinstance(node, dict):
            node[path[-1]] = value
    return data


def nest(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


def render(data: dict[str, Any], mutation: str, fifo: str) -> str:
    """The scenario as YAML text, mutated."""
    text = yaml.safe_dump(data, sort_keys=False).replace("FIFO", fifo)
    if mutation == "deep":
        return text + "deep: " + "[" * 200 + "]" * 200 + "\n"
    if mutation == "alias bomb":
        items = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        items += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
        return text + "bomb: {" + ", ".join(items) + "}\n"
    if mutation == "self alias":
        return text + "loop: &r {x: *r}\n"
    if mutation == "bytes":
        return text + "binary: !!binary AAAA\nwhen: 2001-12-14\n"
    return text


@pytest.fixture
def guard() -> Iterator[None]:
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {GUARD_S}s: a hang")

    previous = signal.signal(signal.SIGALRM, hung)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    signal.alarm(GUARD_S)
    tracemalloc.start()
    try:
        code = main(argv)  # an exception here fails the test: that is the point
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        signal.alarm(0)
    assert peak < MAX_PEAK_BYTES, f"{peak >> 20} MiB allocated"
    return code, capsys.readouterr().err


def assert_exit_0_or_2(code: int, err: str) -> None:
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert err.strip(), "exit 2 without a message"


FIELD_PATHS = [
    "seed",
    "time_scale",
    "timeout",
    "broker",
    "cluster.transient",
    "cluster.heartbeat_timeout",
    "policy.options",
    "jobs.0.tasks",
    "jobs.0.durations",
    "chaos.transient.lifetime",
    "chaos.storms",
    "arrivals",
]
SET_VALUES = st.one_of(
    st.sampled_from(
        ["[" * 100 + "]" * 100, "&r {x: *r}", "{a: &a [1,1,1,1,1,1,1,1,1,1], b: [*a,*a,*a]}", "1e308"]
    ),
    st.sampled_from(
        ["-1", "0", "1e-320", ".nan", ".inf", "1e9h", "mqtt://127.0.0.1:0", "{empirical: /dev/zero}"]
    ),
    st.sampled_from(["[{at: 0s, every: 1ms, times: 1000000000}]", "{synthetic: {horizon_s: 1e300}}", "{"]),
    st.text(max_size=20),
)


@PROPERTY
@given(
    data=scenarios(),
    mutation=st.sampled_from(["none", "deep", "alias bomb", "self alias", "bytes"]),
    command=st.sampled_from([["validate"], ["run", "--dry-run"], ["chaos", "plan"]]),
)
def test_generated_scenarios_exit_0_or_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    guard: None,
    data: dict[str, Any],
    mutation: str,
    command: list[str],
) -> None:
    fifo = tmp_path / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    path = tmp_path / "generated.yaml"
    path.write_text(render(data, mutation, str(fifo)))
    assert_exit_0_or_2(*call([*command, str(path)], capsys))


@PROPERTY
@given(field=st.sampled_from(FIELD_PATHS), value=SET_VALUES)
def test_set_values_exit_0_or_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], guard: None, field: str, value: str
) -> None:
    path = tmp_path / "base.yaml"
    path.write_text(yaml.safe_dump({"name": "base", "jobs": [{"workload": "sleep", "tasks": 2}]}))
    assert_exit_0_or_2(*call(["run", "--dry-run", str(path), "--set", f"{field}={value}"], capsys))
