"""``exactdp audit --mechanism-file`` at its edges: a claim within the certified band of the
pair's value, files as spreadsheets write them (a byte-order mark, CRLF line ends).

References: the pair's values from the exact tables by hand (``ln(3/2)`` from the ratio of
two probabilities, evaluated in mpmath at 120 digits), never from exactdp's code.
"""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest

from exactdp import audit

from tests.cli.cli_helpers import assert_error, run, run_json
from twins.worst import rho_estimate

PAIR_CSV = ("counts,output,probability\n"
            "2 1 0,0 1,1/2\n2 1 0,1 0,1/2\n"
            "3 1 0,0 1,1/3\n3 1 0,1 0,2/3\n")


def ln_three_halves_below(bits: int) -> Fraction:
    """The dyadic rational ``floor(ln(3/2) * 2**bits) / 2**bits``: below ``ln(3/2)``, the
    pair's privacy loss (ratio 1/2 : 1/3 at output 0,1), by less than ``2**-bits``."""
    with mpmath.workdps(120):
        return Fraction(int(mpmath.floor(mpmath.log(mpmath.mpf(3) / 2) * 2**bits)), 2**bits)


@pytest.mark.parametrize("shift, verdict, status", [(0, "violated", 1), (1, "below", 0)])
def test_pair_claim_within_the_band_is_decided(capsys, tmp_path, shift, verdict, status):
    """A claim 2**-110 below ln(3/2) (within the band 3e-30 of dps 30) is violated, one
    2**-110 above holds: the value is computed again with more digits, not called attained."""
    path = tmp_path / "pair.csv"
    path.write_text(PAIR_CSV)
    claim = ln_three_halves_below(110) + shift * Fraction(1, 2**109)
    got, out, err = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", str(claim), "--json")
    assert got == status, err
    assert json.loads(out)["verdict"] == verdict


def test_worst_case_claim_within_the_band_is_decided(capsys, tmp_path):
    """The same through --counts: the worst case over the neighbours of 2,1,0 whose tables
    all equal the pair's second table except the base: the worst loss is ln(3/2)."""
    rows = ["counts,output,probability", "2 1 0,0 1,1/2", "2 1 0,1 0,1/2"]
    for n in ["3 1 0", "2 2 0", "2 1 1", "3 2 0", "3 1 1", "2 2 1", "3 2 1",
              "1 1 0", "2 0 0", "2 1 -1", "1 0 0", "1 1 -1", "2 0 -1", "1 0 -1"]:
        rows += [f"{n},0 1,1/3", f"{n},1 0,2/3"]
    path = tmp_path / "tables.csv"
    path.write_text("\n".join(rows) + "\n")
    claim = ln_three_halves_below(110)
    got = run(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0", "--claimed-epsilon", str(claim))
    assert got[0] == 1 and "VIOLATED" in got[1], got


def test_a_byte_order_mark_and_crlf_are_read(capsys, tmp_path):
    """Spreadsheets save CSV as UTF-8 with a byte-order mark and CRLF line ends: the header
    must still be recognised (the mark made it 'not the header')."""
    path = tmp_path / "pair.csv"
    path.write_bytes(b"\xef\xbb\xbf" + PAIR_CSV.replace("\n", "\r\n").encode())
    obj = run_json(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1")
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(obj["value"]) - mpmath.log(mpmath.mpf(3) / 2)) < mpmath.mpf(10) ** -29
    json_path = tmp_path / "pair.json"
    json_path.write_bytes(b"\xef\xbb\xbf" + b'{"k": 2, "tables": [{"counts": [2, 1, 0], "probabilities": '
                          b'{"0,1": "1/2", "1,0": "1/2"}}, {"counts": [3, 1, 0], "probabilities": '
                          b'{"0,1": "1/3", "1,0": "2/3"}}]}')
    assert run_json(capsys, "audit", "--mechanism-file", json_path, "--claimed-epsilon", "1")["value"] == obj["value"]


def test_a_file_that_is_not_utf8_is_one_line_error(capsys, tmp_path):
    path = tmp_path / "pair.csv"
    path.write_bytes(b"\xff\xfe" + PAIR_CSV.encode("utf-16-le"))
    assert_error(*run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1"), "pair.csv")


def test_claimed_epsilon_zero_audits_the_total_variation(capsys, tmp_path):
    """--notion approx at --claimed-epsilon 0 is delta(0), the total variation (1/6 for the
    pair: |1/2 - 1/3| + ... over one direction); the Python API takes epsilon=0 there, the
    command line refused it as 'must be positive'."""
    path = tmp_path / "pair.csv"
    path.write_text(PAIR_CSV)
    obj = run_json(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "0", "--notion", "approx",
                   "--claimed-delta", "1/6")
    assert obj["epsilon"] == "0" and obj["verdict"] == "attained"
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(obj["value"]) - mpmath.mpf(1) / 6) < mpmath.mpf(10) ** -30
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "0", "--notion", "approx",
                           "--claimed-delta", "1/7", "--json")
    assert status == 1 and json.loads(out)["verdict"] == "violated"


@pytest.mark.parametrize("notion", [[], ["--notion", "renyi", "--alpha", "2"], ["--notion", "zcdp"]])
def test_claimed_epsilon_zero_is_refused_for_the_other_notions(capsys, tmp_path, notion):
    path = tmp_path / "pair.csv"
    path.write_text(PAIR_CSV)
    assert_error(*run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "0", *notion),
                 "--claimed-epsilon 0 is for --notion approx")
    assert_error(*run(capsys, "audit", "joint", "--counts", "2,1,0", "-k", "2", "--epsilon", "1",
                      "--claimed-epsilon", "0", *notion), "--claimed-epsilon 0 is for --notion approx")
    assert_error(*run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "-1"), "must be >= 0")


@pytest.mark.parametrize("notion", [[], ["--notion", "approx", "--claimed-delta", "1/10"],
                                    ["--notion", "renyi", "--alpha", "2"], ["--notion", "zcdp"]])
def test_pair_json_has_the_documented_fields(capsys, tmp_path, notion):
    """The pair's JSON object: the head of every object, then the fields docs/cli.md lists
    for a pair (not those of a worst case, which has neighbours), in that order."""
    path = tmp_path / "pair.csv"
    path.write_text(PAIR_CSV)
    obj = run_json(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1", *notion)
    assert list(obj) == ["mechanism", "class", "description", "output_kind", "parameters", "source", "tables",
                         "notion", "pair", "dps", "value", "lower", "upper", "claim", "claim_value", "epsilon",
                         "alpha", "verdict", "margin", "witness", "direction"]
    assert obj["pair"] == [["2", "1", "0"], ["3", "1", "0"]]


@pytest.mark.parametrize("shift, verdict, status", [(-1, "violated", 1), (1, "below", 0)])
def test_pair_zcdp_claim_inside_the_bracket_is_decided(capsys, tmp_path, shift, verdict, status):
    """--notion zcdp on the pair: a claimed rho 1e-14 from the true rho (the twin's sup over
    alpha at 30 digits) is inside the default 6-digit bracket; it is bracketed again with
    more digits instead of being called attained."""
    path = tmp_path / "pair.csv"
    path.write_text(PAIR_CSV)
    P, Q = {(0, 1): Fraction(1, 2), (1, 0): Fraction(1, 2)}, {(0, 1): Fraction(1, 3), (1, 0): Fraction(2, 3)}
    with mpmath.workdps(40):
        claim = Fraction(int(mpmath.floor(rho_estimate(P, Q) * 10**20)), 10**20) + shift * Fraction(1, 10**14)
        bracket = audit.zcdp_rho(P, Q)
        assert bracket.lower < mpmath.mpf(claim.numerator) / claim.denominator < bracket.upper
    status_, out, err = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1", "--notion", "zcdp",
                            "--claimed-rho", str(claim), "--json")
    assert (status_, json.loads(out)["verdict"]) == (status, verdict), err


def test_other_unicode_whitespace_in_a_cell_is_a_one_line_error(capsys, tmp_path):
    """A no-break space after a probability (as some spreadsheets write) was trimmed by
    ``str.strip()`` and the value read, while other scripts' digits were refused: only
    spaces and tabs are trimmed, the error names the character."""
    path = tmp_path / "pair.csv"
    path.write_text(PAIR_CSV.replace("3 1 0,0 1,1/3", "3 1 0,0 1,1/3\u00a0"), encoding="utf-8")
    assert_error(*run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1"),
                 "pair.csv: line 4: probability '1/3\\xa0' has the character U+00A0 NO-BREAK SPACE at position 3")
    path.write_text(PAIR_CSV.replace("3 1 0,0 1,1/3", " 3 1 0\t,\t0 1 , 1/3\t"), encoding="utf-8")
    assert run_json(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1")["verdict"] == "below"
