"""Script eviction storms into a running scenario from Python.

    from testbed.chaos_client import ChaosClient
    chaos = ChaosClient("runs/latest")          # or "latest": a name is looked up under runs/
    chaos.evict(fraction=0.5)                 # half the live transient nodes, at random
    chaos.evict(count=1, select="busiest")
    chaos.evict(nodes=["t002"])               # by name; refused unless it is a node of this run

Each call returns the evicted node ids. The run's ``master.json`` (readable by
its owner only) tells where the master listens and the token it expects.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from testbed.wire.blocks import TOKEN_HEADER


class ChaosError(Exception):
    """The master refused the request, or no run is reachable."""


def run_directory(run: str | Path) -> Path:
    """The run directory ``run`` names: a path, else a run's name under ``runs/`` (``latest``)."""
    path = Path(run)
    under_runs = Path("runs") / path
    if not path.exists() and not path.is_absolute() and under_runs.exists():
        return under_runs
    return path


class ChaosClient:
    def __init__(self, run_dir: str | Path) -> None:
        info_path = run_directory(run_dir) / "master.json"
        try:
            info = json.loads(info_path.read_text())
        except (OSError, ValueError) as exc:
            raise ChaosError(f"{info_path}: not the directory of a running run ({exc})") from None
        self.url = info["url"]
        self.token = info["token"]

    def evict(
        self,
        count: int | None = None,
        fraction: float | None = None,
        kind: str = "transient",
        select: str = "random",
        nodes: list[str] | None = None,
        zone: str | None = None,
    ) -> list[str]:
        body: dict[str, Any] = {"kind": kind, "select": select}
        if zone is not None:
            body["zone"] = zone
        if nodes:
            body["nodes"] = nodes
        elif count is not None:
            body["count"] = count
        elif fraction is not None:
            body["fraction"] = fraction
        return self._post("/chaos/evict", body)["evicted"]

    def status(self) -> dict[str, Any]:
        return self._request(urllib.request.Request(self.url + "/status", headers={TOKEN_HEADER: self.token}))

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", TOKEN_HEADER: self.token},
        )
        return self._request(request)

    def _request(self, request: urllib.request.Request) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError, KeyError):
                detail = json.loads(detail)["error"]
            raise ChaosError(detail) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ChaosError(f"cannot reach the run's master at {self.url}: {exc}") from None
