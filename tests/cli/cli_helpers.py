"""Shared helpers of the command-line tests: run ``main`` in-process and check its output.

Imported explicitly (``from tests.cli.cli_helpers import ...``) by the tests in this folder.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import mpmath

from exactdp.cli import main
from exactdp.core.validation import as_rng

SMALL = ["--counts", "10,5,1,1", "-k", "2", "--epsilon", "1"]
BIG = ["--counts", "30,15,1x998", "-k", "2", "--epsilon", "1"]
# The papers' check values (Joint paper, Appendix D.3), P(best sequence) of Joint, to 40 digits.
CHECK_SMALL = "0.6314807521482704346657540926168464414723"
CHECK_BIG = "0.3372197782751415944042076182712139472626"
ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys, *argv):
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    assert err == ""
    return json.loads(out)


def nstr(x, digits):
    return mpmath.nstr(x, digits, strip_zeros=False)


def assert_error(status, out, err, *fragments):
    assert status == 2
    assert out == ""
    assert err.startswith("exactdp: error: ")
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


def run_with_tty_stderr(*argv):
    """``python -m exactdp ARGV`` in a child whose standard error is a pseudo-terminal (80
    columns), so that progress bars are drawn: ``(exit status, stdout, what the terminal
    received)``."""
    main_fd, sub_fd = pty.openpty()
    fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
    proc = subprocess.run([sys.executable, "-m", "exactdp", *argv], stdout=subprocess.PIPE, stderr=sub_fd,
                          env=env, timeout=300)
    os.close(sub_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    return proc.returncode, proc.stdout.decode(), b"".join(chunks).decode(errors="replace")


def one_at_a_time(m, n, seed):
    """What ``exactdp sample -n N --seed S`` prints: ``sample`` n times on one generator
    (``samples`` draws in batches, in another order of the generator)."""
    gen = as_rng(seed)
    return [m.sample(gen) for _ in range(n)]
