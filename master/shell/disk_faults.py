"""Full disks at the master: its output sink and its journal (the nodes' are the core's:
``master.core.disk_full``).

A full disk at the master's output sink fails the job whose output did not fit at
once (``output_disk_full``): a retry at once would meet the same full disk, and the
half-written upload is deleted.

A full disk under the journal ends the run (``journal_disk_full``): the journal gives
back the space it held in reserve, so the unfinished jobs' failure, the end of the
run and summary.json are still recorded.
"""

from __future__ import annotations

import asyncio
import logging
import shutil

from master.shell.master_ports import DiskFaultsPort

log = logging.getLogger(__name__)


def output_disk_full(master: DiskFaultsPort, job_id: str, error: OSError) -> None:
    """An upload of the job's output hit ENOSPC at the master: the job fails now, saying so."""
    if not master.view.job_active(job_id):
        return
    outputs = master.run_dir / "outputs" / job_id
    free = shutil.disk_usage(outputs).free
    master.journal.event("output_disk_full", job=job_id, free_bytes=free)
    master.fail_job(
        job_id,
        f"the master's output disk is full ({outputs}: {free / 1e6:.1f} MB free, {error.strerror}); "
        "free space there and run the job again",
    )


def journal_disk_full(master: DiskFaultsPort, error: OSError) -> None:
    """The journal's disk is full: fail the unfinished jobs and so end the run (after the
    handler that was writing, which may be half-way through a change of state)."""
    reason = (
        f"the journal's disk is full ({master.run_dir}: {error.strerror}); "
        "free space there and run the scenario again"
    )
    log.error("%s", reason)

    def fail() -> None:
        master.journal.event("journal_disk_full", error=str(error))
        master.fail_unfinished(reason)

    try:
        asyncio.get_running_loop().call_soon(fail)
    except RuntimeError:  # no event loop: nothing is half-way
        fail()
