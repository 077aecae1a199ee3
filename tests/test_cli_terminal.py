"""``testbed run --backend sim`` on a terminal draws its progress line (rich, redrawn in place),
and in a pipe draws none: the display checked through a real pseudo-terminal, not a stub."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = "pado-vs-spark.yaml"
"""Over 256 simulated events (the line is drawn every 256; quickstart has fewer), in seconds."""
CLI = "import sys; from testbed.app.cli import main; sys.exit(main(sys.argv[1:]))"


def run_sim(out: Path, stderr: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-c", CLI, "run", str(REPO / "scenarios" / SCENARIO)]
    command += ["--backend", "sim", "--out", str(out)]
    return subprocess.Popen(
        command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
    )


def read_until_closed(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every writer of the terminal is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_simulated_run_on_a_terminal_draws_its_progress_line(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    try:
        process = run_sim(tmp_path / "run", follower)
        os.close(follower)
        shown = read_until_closed(leader).decode(errors="replace")
    finally:
        os.close(leader)
    assert process.wait(timeout=120) == 0, shown
    assert "[sim " in shown and " trace, " in shown and " events, " in shown, shown
    assert "Traceback" not in shown, shown


def test_in_a_pipe_a_simulated_run_draws_no_progress_line(tmp_path: Path) -> None:
    process = run_sim(tmp_path / "run", subprocess.PIPE)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert b"[sim " not in err, err
