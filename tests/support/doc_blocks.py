"""The code blocks of the docs, parsed for tests/test_doc_examples.py: each with its doc, line,
language, text, and the name of the ``<!-- example: NAME -->`` comment just above it."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support.plugins import write_doc_files

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"^(?:<!-- example: (?P<example>[\w-]+)[^>]*-->\n)?( *)```(?P<lang>\w*)\n(?P<text>.*?)^\2```", re.M | re.S
)


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int
    lang: str
    text: str
    example: str | None

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(docs: list[Path] = DOCS) -> list[Block]:
    found = []
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start("lang")) + 1
            found.append(Block(doc, line, match["lang"], match["text"], match["example"]))
    return found


def example(name: str) -> Block:
    """The one block marked ``<!-- example: name -->``."""
    (block,) = [b for b in blocks() if b.example == name]
    return block


def commands(block: Block) -> list[list[str]]:
    """A shell block's commands, each as argv: comments dropped, ``cd`` lines left out (the
    test chooses the directory), ``a && b`` as two commands."""
    found = []
    for line in block.text.splitlines():
        command: list[str] = []
        for word in [*shlex.split(line, comments=True), "&&"]:
            if word != "&&":
                command.append(word)
                continue
            if command and command[0] != "cd":
                found.append(command)
            command = []
    return found


def user_project(directory: Path) -> Path:
    """docs/plugins.md's files in a directory of their own, with a pytest configuration of its
    own, as in a new user's project."""
    directory.mkdir(parents=True, exist_ok=True)
    write_doc_files(directory)
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return directory


def user_env() -> dict[str, str]:
    """This checkout importable (as if installed), the user's directory not otherwise."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def cli_argv(argv: list[str]) -> list[str]:
    assert argv[0] == "testbed", f"not a testbed command: {argv}"
    script = shutil.which("testbed")
    assert script, "the testbed command is not installed (pip install .)"
    return [script, *argv[1:]]
