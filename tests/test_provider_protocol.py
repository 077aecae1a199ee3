"""Every provider has every method of the provider protocol: the attach provider is matched to
``AdoptingProvider`` by ``isinstance`` (a runtime-checkable protocol), so one missing method
silently drops what its start-up failure says of the agents' tasks (it did, for ``straggle``)."""

from __future__ import annotations

import inspect

import pytest

from master.providers.attach import AttachProvider
from master.providers.base import AdoptingProvider, NodeProvider, NodeSpec
from master.providers.docker import DockerProvider
from master.providers.local import LocalProvider


def protocol_methods(protocol: type) -> set[str]:
    functions = (name for name, value in vars(protocol).items() if inspect.isfunction(value))
    return {name for name in functions if not name.startswith("_")}


@pytest.mark.parametrize("provider", [LocalProvider, DockerProvider, AttachProvider])
def test_every_provider_has_every_method_of_the_protocol(provider: type) -> None:
    missing = protocol_methods(NodeProvider) - set(dir(provider))
    assert not missing, f"{provider.__name__} lacks {sorted(missing)}"


@pytest.mark.parametrize("provider", [LocalProvider, DockerProvider, AttachProvider])
def test_every_provider_launches_one_node_spec(provider: type) -> None:
    """The protocol's one ``launch(spec)``: a provider with its own copy of the node's fields fails."""
    wanted = inspect.signature(NodeProvider.launch, eval_str=True)
    got = inspect.signature(provider.launch, eval_str=True)
    assert got == wanted, f"{provider.__name__}.launch{got}"
    assert list(wanted.parameters) == ["self", "spec"] and wanted.parameters["spec"].annotation is NodeSpec


def test_the_attach_provider_has_what_adopting_adds() -> None:
    assert protocol_methods(AdoptingProvider) - set(dir(AttachProvider)) == set()
