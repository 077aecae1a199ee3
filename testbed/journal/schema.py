"""The run journal's schema: every event kind and every table, with its fields and their types.

A run directory holds ``events.jsonl`` (one JSON object per event: ``t``, the
seconds since the run started, ``event``, its kind, and the kind's fields) and
one CSV table per kind of finished thing (``tasks``, ``jobs``, ``nodes``,
``decisions``, ``evictions``). This module and its two parts are the one
description of both:

- ``testbed.journal.events`` declares every event kind with its fields (``EVENTS``;
  the kinds are imported from here);
- the master's writer (``master.shell.journal_file.Journal``) checks every event against
  them (``check_event``: a kind or a field not declared, or a value of the wrong
  type, is a bug and raises);
- ``testbed.journal.tables`` declares each table's columns (``TABLES``) and makes
  every row from one event (``ROWS_FROM_EVENTS``): the core journals events only,
  the writer adds the rows they make, and ``rebuild_tables`` makes the same CSVs
  from ``events.jsonl`` alone;
- the readers (``testbed report``'s ``rundir``, ``summarize``, resume) read events
  with ``read_events`` and select them by kind with ``events_of``, typed.

It lives in ``testbed``, not ``master``, so that the report reads runs without
importing the master. Readers stay tolerant: a field a past version did not
write is missing, so they use ``.get`` and their own defaults.
"""

import json
import math
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    Literal,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from testbed.journal.events import *  # noqa: F403  (the event kinds are part of this module's API)
from testbed.journal.events import EVENTS, Event

# --------------------------------------------------------------------- checking


class JournalSchemaError(ValueError):
    """An event that does not match its kind in this schema (a bug in the writer)."""


@dataclass(frozen=True)
class _Kind:
    required: frozenset[str]
    types: dict[str, tuple[type, ...]]


def runtime_types(annotation: Any) -> tuple[type, ...]:
    """The classes a JSON value of the annotated type may be (a float field takes an int too)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return tuple(t for arg in get_args(annotation) for t in runtime_types(arg))
    if origin is Literal:
        return tuple({type(value) for value in get_args(annotation)})
    if origin is not None:
        return (origin,)
    if annotation is float:
        return (int, float)
    return (annotation,)


def _kind(event: type[Event]) -> _Kind:
    hints = get_type_hints(event)
    fields = {name: runtime_types(hint) for name, hint in hints.items() if name not in ("t", "event")}
    required = frozenset(event.__required_keys__) - {"t", "event"}  # type: ignore[attr-defined]
    return _Kind(required, fields)


_KINDS = {name: _kind(event) for name, event in EVENTS.items()}


class ShapeMemo:
    """The shapes of the records that passed a check: their kind (event) or table (row),
    field names and the type of each value, which is all either check reads (``isinstance``
    of a value is its type's). A simulation journals millions of records of a few hundred
    shapes; the field-by-field check was 5% of sim-10k's CPU."""

    def __init__(self, check: Callable[[str, Mapping[str, Any]], None]) -> None:
        self._check = check
        self.passed: set[tuple[Any, ...]] = set()

    def __call__(self, name: str, fields: Mapping[str, Any]) -> None:
        """The check of ``fields`` of the kind or table ``name``, skipped for a shape that passed it."""
        shape = (name, *fields, *map(type, fields.values()))
        if shape not in self.passed:
            self._check(name, fields)
            self.passed.add(shape)


def check_event(name: str, fields: Mapping[str, Any]) -> None:
    """Raise ``JournalSchemaError`` unless ``fields`` are those of the event kind ``name``; an
    event of a shape that passed before passes at once (``ShapeMemo``)."""
    _EVENT_SHAPES(name, fields)


def _check_event(name: str, fields: Mapping[str, Any]) -> None:
    kind = _KINDS.get(name)
    if kind is None:
        raise JournalSchemaError(f"journal event {name!r} is not a kind of testbed.journal.events")
    missing = kind.required - fields.keys()
    if missing:
        raise JournalSchemaError(f"journal event {name!r} lacks {sorted(missing)}")
    for field, value in fields.items():
        allowed = kind.types.get(field)
        if allowed is None:
            where = "testbed/journal/events.py"
            raise JournalSchemaError(f"journal event {name!r} has no field {field!r} ({where})")
        if not isinstance(value, allowed):
            expected = " | ".join(t.__name__ for t in allowed)
            raise JournalSchemaError(f"journal event {name!r}: {field}={value!r} is not of type {expected}")


_EVENT_SHAPES = ShapeMemo(_check_event)


# --------------------------------------------------------------------- reading


@dataclass(frozen=True)
class ReadEvents:
    events: list[dict[str, Any]]
    malformed: int
    """Lines that are not an event: a torn last line after a crash, or junk."""


def read_events(path: Path) -> ReadEvents:
    """Every whole event of an ``events.jsonl`` (a JSON object with a numeric ``t`` and an
    ``event``), in file order; events of kinds this schema does not know are kept."""
    events: list[dict[str, Any]] = []
    malformed = 0
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                malformed += 1
                continue
            if isinstance(event, dict) and _is_time(event.get("t")) and "event" in event:
                events.append(event)
            else:
                malformed += 1
    return ReadEvents(events, malformed)


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_NAMES = {event: name for name, event in EVENTS.items()}
E = TypeVar("E", bound=Event)


def events_of(events: Iterable[Mapping[str, Any]], kind: type[E]) -> Iterator[E]:
    """The events of one kind, typed (``events_of(events, TaskStarted)``)."""
    name = _NAMES[kind]
    for event in events:
        if event.get("event") == name:
            yield cast(E, event)
