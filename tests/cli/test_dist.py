"""``exactdp dist``'s running count of the rows computed: drawn on stderr only when stderr
is a terminal (never with ``--json`` or ``--no-progress``), redrawn by a heartbeat while one
row is being computed (the first level's probability can need a pass over every level),
and stdout byte-identical with or without it."""

from __future__ import annotations

import threading

import pytest

from exactdp.cli.render import RowProgress

from cli_helpers import run, run_with_tty_stderr

ARGV = ("dist", "peeling", "--counts", "5,3,3,1,0", "-k", "3", "--epsilon", "1")


class _Tty:
    """A stderr stand-in that says it is a terminal (tqdm draws only on one)."""

    def __init__(self, tty=True):
        self.text = ""
        self.tty = tty
        self.lock = threading.Lock()

    def write(self, s):
        with self.lock:
            self.text += s

    def flush(self):
        pass

    def isatty(self):
        return self.tty


def test_rows_are_counted_on_a_terminal_and_passed_through_unchanged():
    tty = _Tty()
    progress = RowProgress("exactdp dist", "levels", stream=tty)
    assert list(progress.rows(iter(range(7)))) == list(range(7))
    assert progress._bar.n == 7
    progress.hide()
    assert tty.text.endswith("\r")  # cleared: stdout lines start at the line's beginning
    progress.close()
    assert "exactdp dist: 0 levels" in tty.text


def test_heartbeat_redraws_while_a_row_is_computed():
    """A row that does not come until the bar was redrawn twice: only the heartbeat thread
    can redraw it meanwhile (the generator is blocked), so this fails without it."""
    tty = _Tty()
    progress = RowProgress("exactdp dist", "levels", stream=tty)
    progress.interval = 0.01

    def slow_rows():
        start = tty.text.count("\r")
        redrawn = threading.Event()
        for _ in range(3000):  # at most 30 s; the heartbeat redraws within milliseconds
            if tty.text.count("\r") >= start + 2:
                redrawn.set()
                break
            redrawn.wait(0.01)
        yield redrawn.is_set()

    assert list(progress.rows(slow_rows())) == [True]
    progress.close()


def test_nothing_drawn_off_a_terminal_or_when_disabled():
    off = _Tty(tty=False)
    progress = RowProgress("exactdp dist", "levels", stream=off)
    assert list(progress.rows(iter(range(3)))) == [0, 1, 2]
    progress.close()
    disabled = _Tty()
    progress = RowProgress("exactdp dist", "levels", enabled=False, stream=disabled)
    assert list(progress.rows(iter(range(3)))) == [0, 1, 2]
    progress.hide()
    progress.close()
    assert off.text == "" and disabled.text == ""



@pytest.mark.slow
def test_dist_on_a_terminal_stdout_unchanged(capsys):
    status, plain, err = run(capsys, *ARGV)
    assert status == 0 and err == ""  # captured stderr is no terminal: nothing drawn
    status, out, err = run_with_tty_stderr(*ARGV)
    assert status == 0 and out == plain and "exactdp dist" in err and "levels" in err
    status, out, err = run_with_tty_stderr(*ARGV, "--no-progress")
    assert status == 0 and out == plain and err == ""
    status, out, err = run_with_tty_stderr(*ARGV, "--json")
    assert status == 0 and err == "" and out.startswith("{")
