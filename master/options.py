"""The base of a built-in policy's ``Options``: the pydantic model its ``policy.options.<name>``
is validated against when it loads (``testbed.scenario.plugins.Plugin.checked_options``),
exactly as a plugin's ``Options`` is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


class PolicyOptions(BaseModel):
    """Unknown names are refused, and no value is coerced (``true`` is no number, ``"3"`` none)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def validated(model: type[PolicyOptions], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked against ``model``, each with its default when not given (a
    ``pydantic.ValidationError``, a ``ValueError``, naming the field otherwise)."""
    return dict(model.model_validate(dict(options)))
