"""The one error the report commands turn into a one-line message and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """A run directory (or another argument) cannot be used; the message says why."""
