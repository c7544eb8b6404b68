"""``exactdp check`` on a terminal: a progress bar on stderr (only when stderr is a terminal,
never with ``--json`` or ``--no-progress``), and Ctrl-C stops it at once at any ``--jobs``
(exit status 130, no traceback, no worker process left behind)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from tests.cli.cli_helpers import ROOT, run_with_tty_stderr

ONE = ("check", "--only", "joint.lemma_3_4", "--jobs", "1")


@pytest.mark.slow
def test_progress_bar_only_on_a_terminal():
    status, out, tty = run_with_tty_stderr(*ONE)
    assert status == 0
    assert "exactdp check:" in tty and "/1 [" in tty
    quiet_status, quiet_out, quiet_tty = run_with_tty_stderr(*ONE, "--no-progress")
    assert quiet_status == 0 and "exactdp check" not in quiet_tty
    # stdout is the same with or without the bar (only the time column may differ)
    assert [line.split()[:3] for line in out.splitlines()] == [line.split()[:3] for line in quiet_out.splitlines()]
    proc = subprocess.run([sys.executable, "-m", "exactdp", *ONE], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0 and proc.stderr == ""  # not a terminal: no bar


def _processes() -> list[tuple[int, int, int]]:
    """``(pid, parent pid, process group)`` of every live process, from ``/proc``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        if fields[0] != "Z":  # a zombie has exited
            out.append((int(entry), int(fields[1]), int(fields[2])))
    return out


def _group_alive(pgid: int) -> list[int]:
    return [pid for pid, _, group in _processes() if group == pgid]


def _children(pid: int) -> list[int]:
    return [child for child, parent, _ in _processes() if parent == pid]


# A Ctrl-C at a terminal sends SIGINT to the whole foreground process group (the command and
# its workers); the child gets its own session so that the group is the command's alone.
# The full instance spaces take minutes, so the checks are still running when it arrives.
# Before, the pool's exit waited for every queued check (minutes with --full).
BOUND = 30  # seconds: generous; the command stops in well under a second


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")
@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_ctrl_c_stops_at_once(jobs):
    main_fd, sub_fd = pty.openpty()
    fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "exactdp", "check", "--full", "--jobs", str(jobs)],
                            stdout=subprocess.PIPE, stderr=sub_fd, start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80"))
    os.close(sub_fd)
    terminal = b""
    try:
        # ready when the checks run: the workers exist, or (in-process) the bar is drawn
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if select.select([main_fd], [], [], 0.2)[0]:
                terminal += os.read(main_fd, 65536)
            if len(_children(proc.pid)) >= jobs if jobs > 1 else b"exactdp check:" in terminal:
                break
            assert proc.poll() is None, terminal.decode(errors="replace")
        else:
            pytest.fail("the checks did not start")
        time.sleep(1)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail(f"exactdp check --jobs {jobs} still running {BOUND} s after Ctrl-C")
        while select.select([main_fd], [], [], 0.2)[0]:
            try:
                data = os.read(main_fd, 65536)
            except OSError:
                break
            if not data:
                break
            terminal += data
    finally:
        if proc.poll() is None or _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(main_fd)
    text = terminal.decode(errors="replace")
    assert proc.returncode == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    time.sleep(0.5)
    assert _group_alive(proc.pid) == []  # no worker left
