"""The requirements the testbed image installs: the project's dependencies and its ``node``
extra (what a node or the master in a container needs to run every built-in workload), read
from pyproject.toml, one per line; with ``--sha``, their SHA-256 instead, which
containers/build-images.sh writes into the image's label LABEL_REQUIREMENTS so that an image
built from other requirements is told apart (tests/docker/conftest.py refuses one).

Usage: python3 containers/requirements.py [--sha] [PYPROJECT]"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from pathlib import Path

LABEL_REQUIREMENTS = "org.transient-testbed.requirements"
IMAGE_EXTRA = "node"


def requirements(pyproject: Path) -> list[str]:
    with pyproject.open("rb") as handle:
        project = tomllib.load(handle)["project"]
    return [*project["dependencies"], *project["optional-dependencies"][IMAGE_EXTRA]]


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def main(argv: list[str]) -> int:
    sha = "--sha" in argv
    paths = [a for a in argv if a != "--sha"]
    pyproject = Path(paths[0]) if paths else Path(__file__).resolve().parent.parent / "pyproject.toml"
    lines = requirements(pyproject)
    print(digest(lines) if sha else "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
