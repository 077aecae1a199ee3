"""Finding a policy plugin named in a scenario, building it with its options, and naming it.

``policy.scheduler`` (and ``policy.autoscaler``) is a built-in name, an import path
``package.module:Name``, or a name an installed package registers as an entry point
(group ``transient_testbed.schedulers``, ``.autoscalers``, ...). Every failure is a
``ScenarioError`` with one line naming the scenario field and the cause (exit 2).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from testbed.scenario_yaml import ScenarioError

ENTRY_POINT_GROUP = "transient_testbed.{kind}s"
REQUIRED_METHODS = {"scheduler": ("schedule",), "autoscaler": ("decide",)}


@dataclass(frozen=True)
class Plugin:
    """A policy class found by name, with what the run records about it."""

    field: str
    """The scenario field that named it (``policy.scheduler``)."""
    name: str
    """The name as the scenario gives it (an import path or an entry-point name)."""
    target: Any
    """The class (or factory) to call with the options."""

    @property
    def import_path(self) -> str:
        return f"{self.target.__module__}:{self.target.__qualname__}"

    @property
    def version(self) -> str:
        return plugin_version(self.target)

    def provenance(self) -> dict[str, str]:
        return {"name": self.name, "import_path": self.import_path, "version": self.version}

    def build(self, options: Mapping[str, Any]) -> Any:
        """The plugin built with ``policy.options.<name>`` as keyword arguments (validated
        by its pydantic ``Options`` model when it declares one)."""
        knobs = self.checked_options(options)
        try:
            return self.target(**knobs)
        except (TypeError, ValueError) as exc:
            raise ScenarioError(
                [f"policy.options.{self.name}: {self.import_path} rejects its options: {exc}"]
            ) from None

    def checked_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        model = getattr(self.target, "Options", None)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return dict(options)
        try:
            return dict(model.model_validate(dict(options)))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(all)"
            raise ScenarioError([f"policy.options.{self.name}.{where}: {first['msg']}"]) from None


def find_plugin(kind: str, name: str, field: str) -> Plugin:
    """The plugin ``name`` (an import path or an entry point) of ``kind`` (``scheduler``, ...)."""
    target = _by_import_path(name, field) if ":" in name else _by_entry_point(kind, name, field)
    for method in REQUIRED_METHODS.get(kind, ()):
        if not callable(getattr(target, method, None)):
            raise ScenarioError([f"{field}: {name} is no {kind}: it lacks the method {method}()"])
    return Plugin(field, name, target)


def _by_import_path(name: str, field: str) -> Any:
    module_name, _, attribute = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any error while importing plugin code is the plugin's
        raise ScenarioError(
            [f"{field}: cannot import {module_name!r}: {type(exc).__name__}: {exc}"]
        ) from None
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ScenarioError([f"{field}: module {module_name!r} has no {attribute!r}"])
    return target


def _by_entry_point(kind: str, name: str, field: str) -> Any:
    group = ENTRY_POINT_GROUP.format(kind=kind)
    found = metadata.entry_points(group=group, name=name)
    if not found:
        raise ScenarioError(
            [f"{field}: {name!r} is neither a built-in {kind}, an import path package.module:Name, "
             f"nor an installed entry point of group {group}"]
        )  # fmt: skip
    entry = next(iter(found))
    try:
        return entry.load()
    except Exception as exc:
        raise ScenarioError([f"{field}: entry point {name!r} ({entry.value}) fails to load: {exc}"]) from None


def plugin_version(target: Any) -> str:
    """The version of the installed package that ships ``target``; else ``sha256:<12 hex>``
    of its source file (a module beside the scenario, not installed)."""
    top = target.__module__.partition(".")[0]
    for distribution in metadata.packages_distributions().get(top, []):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    try:
        source = Path(inspect.getfile(target)).read_bytes()
    except (TypeError, OSError):
        return "unknown"
    return "sha256:" + hashlib.sha256(source).hexdigest()[:12]


def add_plugin_dir(directory: Path) -> None:
    """Make modules in ``directory`` (the scenario's) importable here and in every agent
    started later (``testbed.processes.child_env`` passes ``PYTHONPATH`` on)."""
    path = str(directory.resolve())
    if path not in sys.path:
        sys.path.append(path)
    existing = os.environ.get("PYTHONPATH", "")
    if path not in existing.split(os.pathsep):
        os.environ["PYTHONPATH"] = f"{existing}{os.pathsep}{path}" if existing else path
