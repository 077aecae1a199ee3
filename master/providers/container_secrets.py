"""An agent container's secrets in a file, never in its environment.

A container's environment is in ``docker inspect`` for anyone who may use the engine,
and in every process of the container. So the agent's broker login and node key
(``testbed.node.processes.SECRET_ENV``) go into a file written into the container before it
starts (``put_archive``: nothing on the host, works with a remote engine too), in a
directory owned by the image's user with mode 0700, the file 0600; the environment
names only its path (``TESTBED_SECRETS_FILE``). The agent reads and deletes it as it
starts (``take_secrets``), before any task worker exists.
"""

from __future__ import annotations

import io
import json
import tarfile
import time

from docker.models.containers import Container

from testbed.node.processes import SECRET_ENV, SECRETS_FILE_ENV

SECRETS_PARENT = "/run"
SECRETS_DIR = "testbed-secrets"
SECRETS_FILE = f"{SECRETS_PARENT}/{SECRETS_DIR}/agent.json"


def split_secrets(env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the container's environment, the secrets for its file): the environment names the
    file when there are secrets."""
    secrets = {k: v for k, v in env.items() if k in SECRET_ENV}
    plain = {k: v for k, v in env.items() if k not in SECRET_ENV}
    if secrets:
        plain[SECRETS_FILE_ENV] = SECRETS_FILE
    return plain, secrets


def put_secrets(container: Container, secrets: dict[str, str], uid: int) -> None:
    """Write ``secrets`` to ``SECRETS_FILE`` in the created (not yet started) container."""
    body = json.dumps(secrets).encode()
    now = time.time()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        directory = tarfile.TarInfo(SECRETS_DIR)
        directory.type, directory.mode, directory.uid, directory.gid, directory.mtime = (
            tarfile.DIRTYPE,
            0o700,
            uid,
            uid,
            now,
        )
        tar.addfile(directory)
        file = tarfile.TarInfo(f"{SECRETS_DIR}/agent.json")
        file.size, file.mode, file.uid, file.gid, file.mtime = len(body), 0o600, uid, uid, now
        tar.addfile(file, io.BytesIO(body))
    if not container.put_archive(SECRETS_PARENT, archive.getvalue()):
        raise RuntimeError(f"the engine did not take the secrets of container {container.name}")


def image_uid(container: Container) -> int:
    """The uid the container's processes run as: its image's user, numeric or looked up in
    the image's /etc/passwd."""
    user = (container.attrs["Config"].get("User") or "0").split(":")[0]
    return int(user) if user.isdigit() else _passwd_uid(container, user)


def _passwd_uid(container: Container, user: str) -> int:
    stream, _ = container.get_archive("/etc/passwd")
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
        member = archive.extractfile("passwd")
        entries = member.read().decode() if member is not None else ""
    for entry in entries.splitlines():
        fields = entry.split(":")
        if fields[0] == user and len(fields) > 2:
            return int(fields[2])
    raise RuntimeError(f"the image's user {user!r} is not in its /etc/passwd")
