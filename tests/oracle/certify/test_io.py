"""exactdp.certify.io: draws and sample files read into outputs (CSV, JSON, byte order marks,
bare ids of k = 1, sets against sequence mechanisms), and callers' numbers read exactly."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy

import exactdp
from exactdp import certify
from exactdp.certify import io
from exactdp.cli import main
from exactdp.errors import InvalidParameterError


SMALL = ([10, 5, 1, 1], 2)


def test_read_samples_formats():
    assert certify.read_samples("0,1\n# c\n\n2 3\n[4, 5]\n") == [[0, 1], [2, 3], [4, 5]]
    assert certify.read_samples("[[0, 1], [1, 0]]") == [[0, 1], [1, 0]]
    for text, fragment in [("0,x\n", "line 1"), ("[0, 'a']\n", "line 1"), ("", "no draws"), ("[[0], [true]]", "integers")]:
        with pytest.raises(ValueError, match=fragment):
            certify.read_samples(text)


def test_single_ids_are_the_outputs_of_k_1():
    # a k = 1 sampler's draws as bare ids (ints, numpy integers, a 1-D array) were all
    # "invalid draws" and a correct sampler FAILed; a table keyed by ids was refused
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    draws = m.samples(certify.samples_needed(m), rng=1, as_array=True)
    for flat in (draws[:, 0], draws[:, 0].tolist()):
        fit = certify.goodness_of_fit(flat, m)
        assert fit.verdict == "pass" and not fit.invalid
    exact = {o[0]: float(p) for o, p in m.distribution()}
    assert certify.compare_probabilities(exact, m).verdict == "pass"
    # k = 2: a bare id has the wrong length (an invalid draw); a bool is no id
    m2 = exactdp.Joint([3, 1, 0, 2], 2, epsilon=1)
    fit = certify.goodness_of_fit([1] + [list(o) for o in m2.samples(50, rng=1)], m2)
    assert fit.verdict == "fail" and "exactly k = 2 item ids" in fit.invalid[0][1]
    assert "is not an integer" in certify.goodness_of_fit([True, 0], m).invalid[0][1]


def test_sample_files_with_a_byte_order_mark(capsys, tmp_path):
    # a CSV saved by a spreadsheet starts with U+FEFF: it was refused ("'\ufeff3' is not an item id")
    assert certify.read_samples("\ufeff3,1\n0 2\n") == [[3, 1], [0, 2]]
    assert certify.read_samples("\ufeff[[3, 1]]") == [[3, 1]]
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = m.samples(3000, rng=9)
    csv = tmp_path / "draws.csv"
    csv.write_bytes(("\ufeff" + "".join(f"{a},{b}\n" for a, b in draws)).encode("utf-8"))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", str(csv), "--delta", "0.1"])
    out, err = capsys.readouterr()
    assert status == 0 and err == "" and "verdict: PASS" in out
    with pytest.raises(ValueError, match=r"line 1: 'a' is not an item id"):
        certify.read_samples("\ufeffa,b\n")  # negative control: a header is still refused


def test_a_set_is_not_read_as_a_sequence_in_its_hash_order():
    # a frozenset key or draw against a sequence mechanism (k > 1) was read in the set's
    # iteration order: a claimed set probability became the claim of one ordering
    from exactdp.errors import InvalidOutputError

    j = exactdp.Joint([2, 1, 0], 2, epsilon=1)
    claimed = {frozenset(o): float(p) for o, p in j.as_sets().distribution(dps=20)}
    with pytest.raises(InvalidOutputError, match=r"needs an ordered output .*\.as_sets\(\)"):
        certify.compare_probabilities(claimed, j)
    assert certify.compare_probabilities(claimed, j.as_sets()).verdict == "pass"
    fit = certify.goodness_of_fit([frozenset(o) for o in j.samples(300, rng=1)], j)
    assert fit.verdict == "fail" and "not a set" in fit.summary()
    assert certify.normalise_output({2}) == (2,)  # one id: a k = 1 output, either way
    with pytest.raises(InvalidOutputError, match="not a set"):
        certify.normalise_output(frozenset({0, 1}))


def test_to_mpf_reads_numbers_exactly_at_the_working_precision():
    # a Decimal or sympy number keeps its digits, a Fraction its value: not their float roundings
    with mpmath.workdps(40):
        tenth = mpmath.mpf(1) / 10
        for x in (Decimal("0.1"), Fraction(1, 10), sympy.Rational(1, 10), "0.1"):
            assert io.to_mpf(x) == tenth, x
        assert io.to_mpf(0.1) == mpmath.mpf(0.1) != tenth  # a float is its binary value
        assert io.to_mpf(sympy.exp(-1)) == mpmath.exp(-1)
        assert io.to_mpf(np.float32(0.5)) == mpmath.mpf("0.5")
    with pytest.raises(InvalidParameterError) as info:
        io.to_mpf(sympy.Symbol("p"), "alternative")
    assert info.value.argument == "alternative"
