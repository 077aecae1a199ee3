"""Reading a scenario's YAML within bounds, and applying ``--set`` overrides to it.

``load_raw`` reads at most ``MAX_SCENARIO_BYTES`` and parses with libyaml's
parser and a composer that refuses nesting deeper than ``MAX_YAML_DEPTH``, an
alias to a node that contains it, and aliases adding more than
``MAX_ALIAS_NODES`` nodes (an alias bomb): every problem is a ``ScenarioError``
of one line, in bounded time and memory, never a RecursionError or a hang.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml._yaml import CParser as _Parser  # libyaml: the pure-Python parser is 5x slower
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.error import MarkedYAMLError
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from testbed.limits import MAX_ALIAS_NODES, MAX_SCENARIO_BYTES, MAX_YAML_DEPTH
from testbed.scenario.errors import ScenarioError


class YamlLimitError(MarkedYAMLError):
    """Valid YAML beyond a limit (``testbed.limits``)."""


class _BoundedComposer(Composer):
    """PyYAML's composer, counting depth and the nodes aliases add."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._nodes = 0  # nodes composed so far, an alias counting its anchor's nodes
        self._alias_nodes = 0
        self._sizes: dict[int, int] = {}  # id(anchored node) -> its nodes, aliases expanded
        self._open: set[str] = set()  # anchors of collections being composed

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            return self._compose_alias(event, parent, index)
        if event.anchor is not None and isinstance(event, CollectionStartEvent):
            self._open.add(event.anchor)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise YamlLimitError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark)
        before = self._nodes
        self._nodes += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._open.discard(event.anchor)
            self._sizes[id(node)] = self._nodes - before
        return node

    def compose_mapping_node(self, anchor: Any) -> Any:
        """A mapping, refusing a key given twice (YAML would keep the last one silently: two
        ``cluster.classes`` of one name, say)."""
        node = super().compose_mapping_node(anchor)
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if key.value in seen:
                    raise YamlLimitError(
                        None,
                        None,
                        f"the key {key.value!r} is given twice in one mapping; keep one",
                        key.start_mark,
                    )
                seen.add(key.value)
        return node

    def _compose_alias(self, event: AliasEvent, parent: Any, index: Any) -> Any:
        if event.anchor in self._open:
            raise YamlLimitError(
                None, None, f"the alias *{event.anchor} refers to a node that contains it", event.start_mark
            )
        node = super().compose_node(parent, index)  # the anchored node, or "found undefined alias"
        added = self._sizes.get(id(node), 1)
        self._nodes += added
        self._alias_nodes += added
        if self._alias_nodes > MAX_ALIAS_NODES:
            raise YamlLimitError(
                None,
                None,
                f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes (a testbed limit); "
                "write the repeated parts out or use fewer aliases",
                event.start_mark,
            )
        return node


class BoundedLoader(_BoundedComposer, _Parser, SafeConstructor, Resolver):  # type: ignore[misc, valid-type]
    """``yaml.SafeLoader`` with libyaml's parser and the bounded composer."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _BoundedComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


def parse_yaml(text: str) -> Any:
    """``text`` as Python data within the limits; ``yaml.YAMLError`` or ``ValueError`` if not.

    (``ValueError``: a YAML integer longer than Python's 4,300-digit conversion limit.)"""
    loader = BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def describe_yaml_error(exc: yaml.YAMLError | ValueError) -> str:
    """``line L, column C: problem`` for a YAML error (no place when it has none)."""
    if isinstance(exc, ValueError):
        return f"not valid YAML: {exc}"
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or "invalid YAML"
    return f"{where}{problem}" if isinstance(exc, YamlLimitError) else f"{where}not valid YAML: {problem}"


def load_raw(path: str | Path) -> dict[str, Any]:
    """A scenario file's mapping, read and parsed within the limits."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SCENARIO_BYTES + 1)
    except OSError as exc:
        raise ScenarioError([f"{path}: cannot read the file: {exc.strerror}"]) from None
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ScenarioError(
            [
                f"{path}: a scenario file is at most {MAX_SCENARIO_BYTES >> 20} MiB (a testbed limit); "
                "put long job lists in an arrivals trace file"
            ]
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        found = f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
        raise ScenarioError([f"{path}: cannot read the file: not UTF-8 text ({found})"]) from None
    try:
        data = parse_yaml(text)
    except (yaml.YAMLError, ValueError) as exc:
        raise ScenarioError([f"{path}: {describe_yaml_error(exc)}"]) from None
    if not isinstance(data, dict):
        found = type(data).__name__ if data is not None else "an empty file"
        raise ScenarioError([f"{path}: expected a mapping of scenario fields, found {found}"])
    return data


# --------------------------------------------------------------------- --set


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply ``key.path=value`` (value parsed as YAML) to a raw scenario mapping."""
    key, sep, raw = assignment.partition("=")
    shown = assignment if len(assignment) <= 60 else assignment[:57] + "..."
    if not sep or not key.strip():
        raise ScenarioError([f"--set {shown!r}: expected KEY.PATH=VALUE, e.g. seed=3"])
    try:
        value = parse_yaml(raw) if raw.strip() else ""
    except (yaml.YAMLError, ValueError) as exc:
        problem = "at " + describe_yaml_error(exc)
        if not isinstance(exc, YamlLimitError):
            problem = "is not valid YAML: " + (getattr(exc, "problem", None) or str(exc))
        raise ScenarioError([f"--set {shown!r}: the value {problem}"]) from None
    node: Any = data
    parts = key.strip().split(".")
    if len(parts) > MAX_YAML_DEPTH:
        raise ScenarioError([f"--set {shown!r}: the path is deeper than {MAX_YAML_DEPTH} levels"])
    for depth, part in enumerate(parts[:-1]):
        child = _child(node, part)
        if child is None:
            child = {}
            _set(node, part, child, shown)
        if not isinstance(child, dict | list):
            where = ".".join(parts[: depth + 1])
            raise ScenarioError([f"--set {shown!r}: {where} is not a mapping or a list"])
        node = child
    _set(node, parts[-1], value, shown)


def expand_node_counts(data: dict[str, Any]) -> None:
    """``transient: 3`` becomes ``transient: {count: 3}`` so ``--set cluster.transient.slots=4`` works."""
    cluster = data.get("cluster")
    if isinstance(cluster, dict):
        for node_class in ("reserved", "transient"):
            value = cluster.get(node_class)
            if isinstance(value, int) and not isinstance(value, bool):
                cluster[node_class] = {"count": value}


def _index(part: str) -> int | None:
    return int(part) if part.isascii() and part.isdigit() else None


def _child(node: Any, part: str) -> Any:
    if isinstance(node, list):
        index = _index(part)
        return node[index] if index is not None and index < len(node) else None
    return node.get(part)


def _set(node: Any, part: str, value: Any, shown: str) -> None:
    if isinstance(node, list):
        index = _index(part)
        if index is None or index >= len(node):
            raise ScenarioError([f"--set {shown!r}: no list item {part}"])
        node[index] = value
    else:
        node[part] = value
