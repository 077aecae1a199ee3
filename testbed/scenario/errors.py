"""The error of a scenario that cannot be used, in a module of its own: what raises it or
catches it need not import the YAML loader (a task worker loading a workload plugin)."""

from __future__ import annotations


class ScenarioError(Exception):
    """A scenario could not be used; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems
