"""Owning a run directory: one master at a time, a fresh run only in an empty directory,
its inputs fingerprinted for a resume, and nothing stale left when it ends.

- ``owning(run_dir)``: the master holds an exclusive ``flock`` on
  ``master.lock`` in the directory for as long as it runs; the kernel releases
  it when the process dies, however it dies. A second master (a run or a resume
  of the same directory) is refused while the lock is held.
- ``fresh_run_dir(out, clean)``: ``testbed run --out DIR`` refuses a directory
  that is not empty (a second run would mix its journal, tables and outputs
  with the first's) unless ``clean`` asks to delete what is in it, which is
  done only for a run directory.
- ``record_inputs``/``check_inputs``: ``inputs.json`` holds a fingerprint of
  every input file when the run starts; a resume refuses inputs that changed.
- ``tidy(run_dir)``: at the end of a run (fresh or resumed), the scratch
  directories of nodes (the local provider's ``nodes/``, including those of
  nodes that died with an earlier master), the private temporary directories the run's
  local providers recorded there (one a SIGKILLed master could not delete) and the staged uploads left in
  ``outputs/`` by attempts that never committed are deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from master.providers.local import remove_recorded_temp
from master.shell.secure_dir import RunDirError, secure_run_dir
from testbed.scenario.inputs import first_change, input_fingerprints
from testbed.scenario.schema import Scenario, input_files

__all__ = ["RunDirError", "check_inputs", "fresh_run_dir", "owning", "record_inputs", "tidy"]

LOCK_FILE = "master.lock"
INPUTS_FILE = "inputs.json"
RUN_MARKERS = ("events.jsonl", "scenario.yaml", LOCK_FILE)
"""Files only a run directory has: ``--clean`` deletes nothing else."""
STAGED_OUTPUTS = (".part-*.tmp", ".part-*.partial")
"""Uploads of final outputs not (or not yet) committed (see ``master.shell.http_api``)."""


_held: dict[Path, list[int]] = {}
"""Directories this process owns -> [lock file descriptor, nesting depth]."""


@contextlib.contextmanager
def owning(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's lock (re-entrant within this process)."""
    key = run_dir.resolve()
    if key in _held:
        _held[key][1] += 1
        try:
            yield
        finally:
            _held[key][1] -= 1
        return
    fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise RunDirError(
            f"{run_dir}: in use by another testbed master (pid {holder}); "
            "wait for it to end or stop it, or choose another directory"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = [fd, 1]
    try:
        yield
    finally:
        del _held[key]
        os.close(fd)  # releases the lock


def _lock_holder(fd: int) -> str:
    """The pid holding the ``flock`` on ``fd``'s file, as the kernel's lock table names it.

    The pid the holder writes into the file comes just after its ``flock``: read in between,
    the file still names the master that held it before (a dead one, for a resume) or nothing.
    """
    st = os.fstat(fd)
    file_id = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with contextlib.suppress(OSError), open("/proc/locks") as locks:  # Linux; else the file's word
        for line in locks:
            fields = line.split()  # "1: FLOCK ADVISORY WRITE <pid> <maj:min:inode> 0 EOF"
            if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == file_id:
                return fields[4]
    return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"


@contextlib.contextmanager
def fresh_run_dir(out: Path, clean: bool = False) -> Iterator[Path]:
    """An empty directory for a new run, owned while the context lasts."""
    _refuse_unusable(out, clean)  # before anything is written into it
    secure_run_dir(out)
    with owning(out):
        _refuse_unusable(out, clean)  # again under the lock: another run may have used it meanwhile
        for entry in _contents(out):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        yield out


def _contents(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.name != LOCK_FILE)


def _refuse_unusable(out: Path, clean: bool) -> None:
    if out.exists() and not out.is_dir():
        raise RunDirError(f"{out}: not a directory; choose a new directory")
    contents = _contents(out)
    if not contents:
        return
    is_run = any((out / name).exists() for name in RUN_MARKERS)
    if not clean and is_run:
        raise RunDirError(
            f"{out} already holds a run; choose a new directory, continue a crashed run with "
            f"--resume {out}, or add --clean to delete that run first"
        )
    if not clean:
        found = ", ".join(p.name for p in contents[:3]) + (", ..." if len(contents) > 3 else "")
        raise RunDirError(f"{out} is not empty ({found}); choose a new or empty directory")
    if not is_run:
        raise RunDirError(
            f"{out} is not a run directory (no {', '.join(RUN_MARKERS[:2])}): --clean deletes only runs; "
            "choose a new directory"
        )


# ------------------------------------------------------------------ inputs


def record_inputs(run_dir: Path, scenario: Scenario) -> None:
    """``inputs.json``: the fingerprint of every input file of the scenario, as the run starts."""
    fingerprints = input_fingerprints(input_files(scenario))
    (run_dir / INPUTS_FILE).write_text(json.dumps(fingerprints, indent=1) + "\n", encoding="utf-8")


def check_inputs(run_dir: Path, scenario: Scenario) -> None:
    """Refuse a resume whose input files differ from those the run started with."""
    files = input_files(scenario)
    path = run_dir / INPUTS_FILE
    if not path.is_file():
        if files:
            raise RunDirError(
                f"{run_dir}: no {INPUTS_FILE} (the run predates input fingerprints), so its input "
                "files cannot be checked; start a new run"
            )
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: unreadable ({exc}); start a new run") from None
    change = first_change(recorded, files)
    if change is not None:
        raise RunDirError(f"{run_dir}: {change}; restore it or start a new run")


# ------------------------------------------------------------------ the end of a run


def tidy(run_dir: Path) -> None:
    """Delete node scratch directories, the local providers' private temporary directories and
    uncommitted staged outputs (call once every node is gone)."""
    remove_recorded_temp(run_dir / "nodes")
    shutil.rmtree(run_dir / "nodes", ignore_errors=True)
    outputs = run_dir / "outputs"
    if outputs.is_dir():
        for pattern in STAGED_OUTPUTS:
            for staged in outputs.glob(f"*/{pattern}"):
                staged.unlink(missing_ok=True)


def chained_outputs(scenario: Scenario, run_dir: Path) -> list[Path]:
    """The run's ``outputs/`` when a job reads another job's output (``jobs[].after``), made
    now: Docker nodes mount it read-only at the same path, as they mount the input files."""
    if not any(job.after is not None for job in scenario.jobs):
        return []
    outputs = run_dir / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    return [outputs]
