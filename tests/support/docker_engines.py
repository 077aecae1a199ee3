"""Several Docker engines on one machine, each in its own network namespace, as a Swarm.

Each engine is a real ``dockerd`` (the host's binary) started with ``nsenter --net`` into a
namespace of its own, with its own data root, exec root, socket, containerd namespace and
cgroup parent; a bridge on the host joins the namespaces (a veth each), so they reach one
another as separate hosts would: Swarm's control port, gossip and the VXLAN overlay.
The first engine initialises a Swarm, the others join it as workers, and each loads the
image from the host's engine (``docker save`` | ``docker load``: no registry).
``close`` removes all of it: swarm membership, engines, namespaces, links, the firewall
rule that lets the bridge forward, and the data roots.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import docker
from docker.errors import DockerException

READY_S = 90.0


class EnginesUnavailable(Exception):
    """This host cannot run engines in namespaces; the message says what failed, verbatim."""


@dataclass
class Engine:
    name: str
    address: str
    root: Path
    exec_root: Path
    process: subprocess.Popen[bytes] | None = None
    client: docker.DockerClient | None = None

    @property
    def socket(self) -> str:
        return str(self.exec_root / "docker.sock")

    @property
    def log(self) -> Path:
        return self.root / "dockerd.log"


@dataclass
class Engines:
    """``engines[0]`` is the Swarm manager, the others its workers."""

    prefix: str
    subnet: ipaddress.IPv4Network
    engines: list[Engine] = field(default_factory=list)
    firewall_rule: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"{self.prefix}br"

    @property
    def manager(self) -> Engine:
        return self.engines[0]

    def start(self, count: int, image_tar: Path) -> None:
        for tool in ("ip", "nsenter", "dockerd"):
            if shutil.which(tool) is None:
                raise EnginesUnavailable(f"{tool} is not installed")
        if os.geteuid() != 0:
            raise EnginesUnavailable("engines in network namespaces need root")
        hosts = list(self.subnet.hosts())
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{hosts[0]}/{self.subnet.prefixlen}", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        self._let_the_bridge_forward()
        for index in range(count):
            self.engines.append(self._namespace(index, str(hosts[index + 1])))
        for engine in self.engines:
            self._start_engine(engine)
        for engine in self.engines:
            engine.client = self._wait_ready(engine)
        self._form_swarm()
        for engine in self.engines:
            with image_tar.open("rb") as data:
                engine.client.api.load_image(data)  # type: ignore[union-attr]

    def _let_the_bridge_forward(self) -> None:
        """The host's engine sets FORWARD's policy to DROP, and bridged frames pass through it
        (br_netfilter): accept what stays on this bridge, and only that."""
        if shutil.which("iptables") is None:
            return
        rule = ["FORWARD", "-i", self.bridge, "-o", self.bridge, "-m", "comment", "--comment", self.prefix]
        _run("iptables", "-I", *rule[:1], "1", *rule[1:], "-j", "ACCEPT")
        self.firewall_rule = [*rule, "-j", "ACCEPT"]

    def _namespace(self, index: int, address: str) -> Engine:
        name = f"{self.prefix}{index}"
        _run("ip", "netns", "add", name)
        _run("ip", "link", "add", f"{name}h", "type", "veth", "peer", "name", "eth0", "netns", name)
        _run("ip", "link", "set", f"{name}h", "master", self.bridge, "up")
        _run("ip", "-n", name, "addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", "eth0")
        _run("ip", "-n", name, "link", "set", "eth0", "up")
        _run("ip", "-n", name, "link", "set", "lo", "up")
        root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir="/var/tmp"))
        exec_root = Path(f"/run/{name}")  # short: unix socket paths are limited to 108 bytes
        exec_root.mkdir(exist_ok=True)
        return Engine(name, address, root, exec_root)

    def _start_engine(self, engine: Engine) -> None:
        with engine.log.open("wb") as log:
            engine.process = subprocess.Popen(
                [
                    *("nsenter", f"--net=/run/netns/{engine.name}", "dockerd"),
                    *(
                        "--data-root",
                        str(engine.root / "data"),
                        "--exec-root",
                        str(engine.exec_root / "exec"),
                    ),
                    *("--pidfile", str(engine.exec_root / "dockerd.pid"), "-H", f"unix://{engine.socket}"),
                    *("--cgroup-parent", engine.name, "--containerd-namespace", engine.name),
                    *("--containerd-plugins-namespace", f"{engine.name}p"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                # a task's image is on every engine already: no registry lookup (there is none)
                env={**os.environ, "DOCKER_SERVICE_PREFER_OFFLINE_IMAGE": "1"},
                start_new_session=True,
            )

    def _wait_ready(self, engine: Engine) -> docker.DockerClient:
        """Poll the engine's socket until it answers (readiness of an external process)."""
        deadline = time.monotonic() + READY_S
        while True:
            assert engine.process is not None
            if engine.process.poll() is not None:
                raise EnginesUnavailable(f"dockerd in a network namespace exited: {_last_line(engine.log)}")
            with contextlib.suppress(DockerException):
                client = docker.DockerClient(base_url=f"unix://{engine.socket}", timeout=120)
                client.ping()
                return client
            if time.monotonic() > deadline:
                raise EnginesUnavailable(f"dockerd did not answer in {READY_S:g}s: {_last_line(engine.log)}")
            time.sleep(0.5)

    def _form_swarm(self) -> None:
        manager = self.manager.client
        assert manager is not None
        try:
            manager.swarm.init(
                advertise_addr=self.manager.address, listen_addr=f"{self.manager.address}:2377"
            )
            token = manager.swarm.attrs["JoinTokens"]["Worker"]
            for worker in self.engines[1:]:
                assert worker.client is not None
                worker.client.swarm.join(
                    remote_addrs=[f"{self.manager.address}:2377"],
                    join_token=token,
                    advertise_addr=worker.address,
                    listen_addr=f"{worker.address}:2377",
                )
        except DockerException as error:
            raise EnginesUnavailable(f"the engines cannot form a Swarm: {error}") from error
        deadline = time.monotonic() + READY_S
        while sum(n.attrs["Status"]["State"] == "ready" for n in manager.nodes.list()) < len(self.engines):
            if time.monotonic() > deadline:
                raise EnginesUnavailable(f"Swarm nodes not ready in {READY_S:g}s")
            time.sleep(0.5)

    def node_engine(self) -> dict[str, str]:
        """Swarm node id -> the engine's name."""
        return {e.client.info()["Swarm"]["NodeID"]: e.name for e in self.engines if e.client}

    def close(self) -> None:
        for engine in reversed(self.engines):  # workers first
            if engine.client is not None:
                with contextlib.suppress(DockerException):
                    engine.client.swarm.leave(force=True)
                engine.client.close()
        running = [e.process for e in self.engines if e.process is not None]
        for process in running:  # all at once: each stops its containers and containerd
            process.terminate()
        for process in running:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for engine in self.engines:
            subprocess.run(["ip", "netns", "del", engine.name], capture_output=True)
            subprocess.run(["ip", "link", "del", f"{engine.name}h"], capture_output=True)
            shutil.rmtree(engine.root, ignore_errors=True)
            shutil.rmtree(engine.exec_root, ignore_errors=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        if self.firewall_rule:
            subprocess.run(["iptables", "-D", *self.firewall_rule], capture_output=True)

    def leftovers(self) -> list[str]:
        """What ``close`` failed to remove."""
        found = [f"network namespace {e.name}" for e in self.engines if Path(f"/run/netns/{e.name}").exists()]
        found += [f"data root {e.root}" for e in self.engines if e.root.exists()]
        if subprocess.run(["ip", "link", "show", self.bridge], capture_output=True).returncode == 0:
            found.append(f"bridge {self.bridge}")
        return found


def _run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise EnginesUnavailable(f"`{' '.join(command)}` failed: {done.stderr.strip()}")


def _last_line(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(no output)"
