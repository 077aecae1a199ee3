"""Plugins in tests: a module a test writes beside its scenario, the files docs/plugins.md
ships (``write_doc_files``), the iterative workload plugin and its graph."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest


def plugin_module(
    directory: Path, source: str, prefix: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> str:
    """Write ``source`` as a module of a name of its own (modules are cached) in ``directory``,
    importable the way a module beside a scenario is; it is forgotten after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    module = prefix + re.sub(r"\W", "_", request.node.name)
    (directory / f"{module}.py").write_text(source, encoding="utf-8")
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    return module


DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
BLOCK = re.compile(r"```(?:python|yaml)\n# file: (\S+)\n(.*?)```", re.DOTALL)


def doc_files() -> dict[str, str]:
    """``{file name: text}`` of the doc's code blocks that start with ``# file: NAME``."""
    return {name: text for name, text in BLOCK.findall(DOC.read_text(encoding="utf-8"))}


def write_doc_files(directory: Path) -> None:
    for name, text in doc_files().items():
        (directory / name).write_text(text, encoding="utf-8")


def reruns(events: list[dict]) -> list[tuple[str, str]]:
    """(task, node class) of every attempt after a task's first."""
    return [(e["task"], e["class"]) for e in events if e["event"] == "task_started" and e["attempt"] > 0]


ITERATIVE = '''
from pydantic import BaseModel

from testbed.api import Workload


class MinLabel(Workload):
    """Connected components by label propagation: every node of an undirected edge list
    ("u v" lines) ends with the least node id within ``iterations`` hops; the adjacency
    travels in the pairs from round to round, as in Hadoop's iterative jobs."""

    class Options(BaseModel, extra="forbid"):
        iterations: int = 3

    def __init__(self, iterations: int = 3) -> None:
        self.iterations = iterations

    def map(self, record):
        u, v = (int(x) for x in record.split())
        yield u, ("n", v)
        yield v, ("n", u)
        yield u, ("l", u)
        yield v, ("l", v)

    def step(self, round, key, values):
        values = list(values)
        label = min(x for kind, x in values if kind == "l")
        yield key, ("l", label)
        for kind, neighbour in values:
            if kind == "n":
                yield key, ("n", neighbour)
                yield neighbour, ("l", label)

    def reduce(self, key, values):
        return f"{key}\\t{min(x for kind, x in values if kind == 'l')}"

    def reference(self, records):
        adjacency = {}
        for record in records:
            u, v = (int(x) for x in record.split())
            adjacency.setdefault(u, set()).add(v)
            adjacency.setdefault(v, set()).add(u)
        labels = {node: node for node in adjacency}
        for _ in range(self.iterations):
            labels = {n: min([labels[n], *(labels[m] for m in adjacency[n])]) for n in adjacency}
        return (f"{node}\\t{label}" for node, label in labels.items())
'''


def path_graph(directory: Path) -> Path:
    """Two paths, 0-1-...-59 and 100-...-139, in shuffled lines: labels need 59 hops to settle."""
    edges = [f"{i} {i + 1}" for i in range(59)] + [f"{i + 1} {i}" for i in range(100, 139)]
    edges = edges[1::2] + edges[::2]
    path = directory / "graph.txt"
    path.write_text("\n".join(edges) + "\n", encoding="utf-8")
    return path
