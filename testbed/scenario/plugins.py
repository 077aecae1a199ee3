"""Finding a policy plugin named in a scenario, building it with its options, and naming it.

``policy.scheduler`` (and ``policy.strategy``, ``policy.autoscaler``, ``policy.speculation``) is a
built-in name (``testbed.registry.BUILTINS``), an import path ``package.module:Name``, or a name
an installed package registers as an entry point (group ``transient_testbed.schedulers``,
``.autoscalers``, ...). Built-ins and plugins are found, checked and built by the same code.
Every failure is a ``ScenarioError`` with one line naming the scenario field and the cause (exit 2).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, Protocol

from pydantic import BaseModel, ValidationError

from testbed import registry
from testbed.api import API_VERSION
from testbed.scenario.errors import ScenarioError


@dataclass(frozen=True)
class Kind:
    """What a kind of plugin is checked against when it loads."""

    interface: str
    """Its interface in ``testbed.api``: the members it declares, with their defaults."""
    required: tuple[str, ...]
    """The methods a plugin must have."""
    implemented: bool = False
    """Whether the interface implements the required methods (``Strategy``: lineage recovery), so
    that a subclass may inherit them; else the interface only names them."""
    instead: str | None = None
    """A member that replaces the required methods (a workload's ``dag``)."""
    arguments: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The arguments of the optional methods the interface declares as ``None`` (no default
    method to read them from); every other method takes those of the interface's own."""


KINDS = {
    "scheduler": Kind("Scheduler", ("schedule",)),
    "strategy": Kind("Strategy", ("plan", "launch"), implemented=True),
    "autoscaler": Kind("Autoscaler", ("decide",)),
    "speculation": Kind("Speculator", ("speculate",)),
    "workload": Kind(
        "Workload",
        ("map", "reduce"),
        instead="dag",
        arguments={
            "step": ("round", "key", "values"),
            "combine": ("key", "values"),
            "generate": ("split", "splits", "seed"),
            "reference": ("records",),
            "sim_model": (),
            "dag": ("job",),
        },
    ),
}
DESCRIPTIVE = frozenset({"api_version", "name"})
"""Members that describe a plugin rather than what the core reads of it: ``api_version`` is
checked on the class (``check_api_version``), ``name`` labels a built-in; neither is supplied."""


def interface_of(kind: str) -> type:
    """The class in ``testbed.api`` that plugins of ``kind`` implement."""
    import testbed.api  # late: testbed.api imports the policy types

    interface: type = getattr(testbed.api, KINDS[kind].interface)
    return interface


def declared(interface: type) -> dict[str, Any]:
    """The public members ``interface`` declares (itself and its bases short of ``Protocol``),
    each with its default."""
    own = [c for c in interface.__mro__ if c not in (object, Protocol, Generic)]
    names = {name for c in own for name in vars(c) if not name.startswith("_")} - DESCRIPTIVE
    return {name: inspect.getattr_static(interface, name) for name in sorted(names)}


def arguments_of(kind: str) -> dict[str, tuple[str, ...]]:
    """The arguments the testbed passes (positionally) to each method of a ``kind`` plugin."""
    methods = {
        name: tuple(inspect.signature(default).parameters)[1:]
        for name, default in declared(interface_of(kind)).items()
        if inspect.isfunction(default)
    }
    return {**methods, **KINDS[kind].arguments}


@dataclass(frozen=True)
class Plugin:
    """A policy class found by name, with what the run records about it."""

    field: str
    """The scenario field that named it (``policy.scheduler``)."""
    name: str
    """The name as the scenario gives it (an import path or an entry-point name)."""
    target: Any
    """The class (or factory) to call with the options."""
    kind: str
    """``scheduler``, ``strategy``, ``autoscaler``, ``speculation`` or ``workload`` (``KINDS``)."""

    @property
    def import_path(self) -> str:
        return f"{self.target.__module__}:{self.target.__qualname__}"

    @property
    def version(self) -> str:
        return plugin_version(self.target)

    def provenance(self) -> dict[str, str]:
        return {"name": self.name, "import_path": self.import_path, "version": self.version}

    def build(self, options: Mapping[str, Any], scenario: Any = None) -> Any:
        """The plugin built with ``policy.options.<name>`` (validated by its pydantic
        ``Options`` model when it declares one): by ``target.from_scenario(options, scenario)``
        when it defines that (a policy that needs the scenario: its seed, profiles, cluster),
        else as keyword arguments ``target(**options)``."""
        knobs = self.checked_options(options)
        factory = getattr(self.target, "from_scenario", None)
        try:
            built = factory(knobs, scenario) if factory is not None else self.target(**knobs)
        except (TypeError, ValueError) as exc:
            raise ScenarioError(
                [f"{self.options_field}: {self.import_path} rejects its options: {exc}"]
            ) from None
        self.conform(built)
        self.check_signatures(built)
        return built

    @property
    def options_path(self) -> tuple[str, ...]:
        """A policy's keys under ``policy.options``: its name, a speculation rule's under
        ``speculation`` (its names, ``spark``, are other kinds' names too)."""
        return ("speculation", self.name) if self.kind == "speculation" else (self.name,)

    @property
    def options_field(self) -> str:
        """Where the scenario gives the plugin's options."""
        if self.field.endswith(".workload"):
            return self.field.removesuffix(".workload") + ".options"
        return ".".join(("policy.options", *self.options_path))

    def conform(self, built: Any) -> None:
        """Each member the interface declares (``declared``) is the plugin's own, of the kind the
        interface gives it (a flag a bool, a method callable), or the interface's default, given
        to ``built`` here: the core then reads every member it declares, never probing. A
        ScenarioError naming the member and the fix otherwise."""
        interface = interface_of(self.kind)
        for name, default in declared(interface).items():
            if not hasattr(built, name):
                self._supply(built, name, default, interface)
                continue
            fits, shape = _shape(default)
            if not fits(getattr(built, name)):
                raise ScenarioError(
                    [f"{self.field}: {self.import_path}.{name} ({source_of(self.target)}) is "
                     f"{getattr(built, name)!r:.60}, but testbed.api.{interface.__name__} declares it "
                     f"{shape}: make it {shape}"]
                )  # fmt: skip

    def _supply(self, built: Any, name: str, default: Any, interface: type) -> None:
        """Give ``built`` the interface's default of ``name`` (a method bound to it)."""
        value = types.MethodType(default, built) if inspect.isfunction(default) else default
        try:
            setattr(built, name, value)
        except (AttributeError, TypeError) as exc:
            raise ScenarioError(
                [f"{self.field}: {self.import_path} ({source_of(self.target)}) lacks {name} and cannot "
                 f"take the default of testbed.api.{interface.__name__} ({exc}): subclass "
                 f"testbed.api.{interface.__name__}, or define {name}"]
            ) from None  # fmt: skip

    def check_signatures(self, built: Any) -> None:
        """Each method the testbed calls accepts the arguments it passes (a ScenarioError
        naming the method, its file and the signature to define otherwise)."""
        for method, arguments in arguments_of(self.kind).items():
            function = getattr(built, method, None)
            if not callable(function):
                continue
            try:
                signature = inspect.signature(function)
                signature.bind(*arguments)
            except (TypeError, ValueError):
                where = source_of(function)
                wanted = ", ".join(("self", *arguments))
                raise ScenarioError(
                    [f"{self.field}: {self.import_path}.{method}{_shown(function)} ({where}) does not take "
                     f"the testbed's arguments: define {method}({wanted})"]
                ) from None  # fmt: skip

    def checked_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        model = getattr(self.target, "Options", None)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return dict(options)
        try:
            return dict(model.model_validate(dict(options)))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(all)"
            raise ScenarioError([f"{self.options_field}.{where}: {first['msg']}"]) from None


def _shown(function: Any) -> str:
    try:
        return str(inspect.signature(function))
    except (TypeError, ValueError):
        return "(?)"


def source_of(target: Any) -> str:
    """``file:line`` of a plugin's class or function, as far as Python knows it."""
    try:
        lines = inspect.getsourcelines(target)[1]
        return f"{inspect.getsourcefile(target)}:{lines}"
    except (TypeError, OSError):
        return getattr(inspect.getmodule(target), "__file__", None) or "unknown file"


def find_plugin(kind: str, name: str, field: str) -> Plugin:
    """The part ``name`` (a built-in, an import path or an entry point) of ``kind``
    (``scheduler``, ...), checked against its interface (a workload that plans its own DAG
    needs no map and reduce: ``KINDS[kind].instead``)."""
    if registry.is_builtin(kind, name):
        target = _by_import_path(registry.BUILTINS[kind][name], field)
    elif ":" in name:
        target = _by_import_path(name, field)
    else:
        target = _by_entry_point(kind, name, field)
    instead = KINDS[kind].instead
    required = () if instead and callable(getattr(target, instead, None)) else KINDS[kind].required
    for method in required:
        if not _defines(target, method, kind):
            raise ScenarioError(
                [f"{field}: {name} ({source_of(target)}) is no {kind}: it lacks the method {method}(); "
                 f"define {method}({', '.join(('self', *arguments_of(kind)[method]))})"]
            )  # fmt: skip
    check_api_version(target, name, field)
    return Plugin(field, name, target, kind)


def _defines(target: Any, method: str, kind: str) -> bool:
    """Whether ``target`` has the required ``method``: its own, or inherited from an interface
    that implements it (not one that only names it, as ``Scheduler.schedule``)."""
    if not callable(getattr(target, method, None)):
        return False
    found = inspect.getattr_static(target, method, None)
    return KINDS[kind].implemented or found is not inspect.getattr_static(interface_of(kind), method)


def _shape(default: Any) -> tuple[Callable[[Any], bool], str]:
    """How a member must look, judged by the interface's default: whether a value fits, and
    what it must be, in words."""
    if inspect.isfunction(default):
        return callable, "a method"
    if default is None:
        return (lambda value: value is None or callable(value)), "None or a method"
    if isinstance(default, bool):
        return (lambda value: isinstance(value, bool)), "True or False"
    if isinstance(default, int | float):
        return (lambda value: isinstance(value, int | float) and not isinstance(value, bool)), "a number"
    return (lambda value: isinstance(value, type(default))), f"a {type(default).__name__}"


def check_api_version(target: Any, name: str, field: str) -> None:
    """A plugin declaring ``api_version`` needs this testbed's major version and at most
    its minor one."""
    wanted = getattr(target, "api_version", None)
    if wanted is None or wanted == API_VERSION:
        return
    try:
        major, minor = (int(part) for part in str(wanted).split("."))
    except ValueError:
        raise ScenarioError(
            [f"{field}: {name} ({source_of(target)}) declares api_version {wanted!r}; "
             f"write it as major.minor, e.g. {API_VERSION!r}"]
        ) from None  # fmt: skip
    have_major, have_minor = (int(part) for part in API_VERSION.split("."))
    if major != have_major or minor > have_minor:
        raise ScenarioError(
            [f"{field}: {name} ({source_of(target)}) is written for testbed.api {wanted}, this testbed has "
             f"{API_VERSION}: install a testbed with API {major}.x (x >= {minor}) or port the plugin"]
        )  # fmt: skip


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
    entry = registry.installed(kind, name)
    if entry is None:
        group = registry.GROUPS[kind]
        listed = f" ({registry.listed(kind)})" if registry.BUILTINS[kind] else ""
        raise ScenarioError(
            [f"{field}: {name!r} is neither a built-in {kind}{listed}, an import path package.module:Name, "
             f"nor an installed entry point of group {group}"]
        )  # fmt: skip
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
    started later (``testbed.node.processes.child_env`` passes ``PYTHONPATH`` on)."""
    path = str(directory.resolve())
    if path not in sys.path:
        sys.path.append(path)
    existing = os.environ.get("PYTHONPATH", "")
    if path not in existing.split(os.pathsep):
        os.environ["PYTHONPATH"] = f"{existing}{os.pathsep}{path}" if existing else path
