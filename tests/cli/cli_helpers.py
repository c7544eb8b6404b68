"""Shared helpers of the command-line tests: run ``main`` in-process and check its output.

Imported explicitly (``from cli_helpers import ...``) by the tests in this folder.
"""

from __future__ import annotations

import json

import mpmath

from exactdp.cli import main

SMALL = ["--counts", "10,5,1,1", "-k", "2", "--epsilon", "1"]
BIG = ["--counts", "30,15,1x998", "-k", "2", "--epsilon", "1"]
# The papers' check values (Joint paper, Appendix D.3), P(best sequence) of Joint, to 40 digits.
CHECK_SMALL = "0.6314807521482704346657540926168464414723"
CHECK_BIG = "0.3372197782751415944042076182712139472626"


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
