"""Tests of exactdp.core.validation: every bad input gets a clear error naming the argument
and value; every accepted input type is normalised exactly."""

from __future__ import annotations

import decimal
import re
import unicodedata
from fractions import Fraction

import gmpy2
import mpmath
import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

import exactdp
from exactdp import errors
from exactdp.core import validation
from exactdp.core.validation import (
    DEFAULT_DPS,
    MAX_NUMBER_DIGITS,
    as_base,
    as_counts,
    as_dps,
    as_epsilon,
    as_k,
    as_memory_budget,
    as_positive_int,
    as_rational,
    as_sensitivity,
    as_sequence_output,
    as_set_output,
)



# ======================================================================================
# validation
# ======================================================================================
@given(st.lists(st.integers(-(10**40), 10**40), min_size=1, max_size=20))
def test_as_counts_roundtrip(counts):
    assert as_counts(counts) == tuple(counts)
    assert as_counts(tuple(counts)) == tuple(counts)
    assert as_counts([gmpy2.mpz(c) for c in counts]) == tuple(counts)
    assert all(type(c) is int for c in as_counts([gmpy2.mpz(c) for c in counts]))


@given(st.lists(st.integers(-(2**53), 2**53), min_size=1, max_size=20))
def test_as_counts_integral_floats_and_numpy(counts):
    assert as_counts([float(c) for c in counts]) == tuple(counts)
    assert as_counts(np.array(counts, dtype=np.int64)) == tuple(counts)
    assert as_counts(np.array(counts, dtype=np.float64)) == tuple(counts)


def test_as_counts_large_integral_float_is_exact():
    assert as_counts([1e20, 2.0**70]) == (10**20, 2**70)


def test_as_k():
    assert as_k(1, 1) == 1 and as_k(3, 3) == 3 and as_k(np.int32(2), 5) == 2 and as_k(gmpy2.mpz(2), 3) == 2
    for bad in (0, 4, -1):
        with pytest.raises(errors.InvalidParameterError, match=r"^k="):
            as_k(bad, 3)
    with pytest.raises(errors.ArgumentTypeError):
        as_k(np.bool_(True), 3)


@pytest.mark.parametrize("bad, error", [
    (2.0, errors.InvalidParameterError), (np.float64(2.0), errors.InvalidParameterError),
    (Fraction(2), errors.InvalidParameterError), (decimal.Decimal(2), errors.InvalidParameterError),
    (sympy.Float(2), errors.InvalidParameterError), (1.5, errors.InvalidParameterError),
    ("2", errors.ArgumentTypeError), ([2], errors.ArgumentTypeError),
])
def test_as_k_refuses_non_integer_types(bad, error):
    # Counts accept integral floats (data often arrive as floats); k must be an int.
    with pytest.raises(error, match=r"^k=.*must be an integer \(int or numpy integer\), not") as info:
        as_k(bad, 3)
    assert info.value.argument == "k"
    with pytest.raises(error, match=r"^k="):
        exactdp.Joint([3, 2, 1], bad)
    assert as_counts([2.0, np.float64(3.0)]) == (2, 3)  # the counts contract is unchanged


@given(st.fractions())
def test_as_rational_fractions_and_strings(q):
    assert as_rational(q, "x") == q
    assert as_rational(str(q), "x") == q
    assert as_rational(sympy.Rational(q.numerator, q.denominator), "x") == q
    assert as_rational(gmpy2.mpq(q.numerator, q.denominator), "x") == q


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_as_rational_float_exact_binary_value(x):
    assert as_rational(x, "x") == Fraction(x)
    assert as_rational(np.float64(x), "x") == Fraction(x)
    assert as_rational(sympy.Float(x), "x") == Fraction(x)


@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_as_rational_decimal_strings_exact(x):
    assert as_rational(str(x), "x") == Fraction(x)
    assert as_rational(x, "x") == Fraction(x)


_DIGITS = st.text("0123456789", max_size=12)


@given(st.sampled_from(["", "+", "-"]), _DIGITS, st.none() | _DIGITS, st.none() | st.integers(-400, 400),
       st.sampled_from(["e", "E"]), st.sampled_from(["", " ", "\t"]))
def test_rational_string_parser_matches_fraction(sign, num, frac, exp, e, pad):
    """Brute-force twin: the size-checked parser agrees with Python's Fraction on every
    decimal string within the limit, and refuses exactly the strings Fraction refuses."""
    text = pad + sign + num + ("" if frac is None else "." + frac) + ("" if exp is None else f"{e}{exp}") + pad
    try:
        expected = Fraction(text)
    except ValueError:
        with pytest.raises(errors.InvalidParameterError, match=r"^x="):
            as_rational(text, "x")
        return
    assert as_rational(text, "x") == expected


@given(st.integers(-10**30, 10**30), st.integers(1, 10**30))
def test_rational_string_parser_fractions(p, q):
    assert as_rational(f"{p}/{q}", "x") == Fraction(p, q)
    assert as_rational(f" {p} / {q} ", "x") == Fraction(p, q)


@pytest.mark.parametrize("text", ["1_0", "0.000_1", "1_0/3", "1e1_0", "_1"])
def test_as_rational_refuses_underscores(text):
    # Python's Fraction reads "1_0" as 10; underscores are not decimal notation.
    with pytest.raises(errors.InvalidParameterError, match="underscores are not decimal notation|finite number"):
        as_rational(text, "epsilon")
    with pytest.raises(errors.InvalidParameterError, match=r"^epsilon="):
        exactdp.Joint([3, 2, 1], 2, epsilon=text)


_UNICODE_DIGITS = [chr(c) for c in range(0x80, 0x110000) if unicodedata.category(chr(c)) == "Nd"]


def test_as_rational_refuses_every_non_ascii_digit():
    # Python's \d, int() and Fraction() read every Unicode decimal digit ("١/٣" was 1/3,
    # "０.５" 1/2): a number is ASCII decimal or fraction syntax, and the error names the
    # first character that is not ASCII.
    assert len(_UNICODE_DIGITS) > 600
    for c in _UNICODE_DIGITS:
        value = unicodedata.digit(c)
        for text in (c, f"{c}/7", f"1/{c}", f"0.{c}", f"1e{c}", f" {c} "):
            ascii_text = text.replace(c, str(value))
            if ascii_text != "1/0":  # the ASCII spelling is a number, and read as one
                assert as_rational(ascii_text, "x") == Fraction(ascii_text)
            with pytest.raises(errors.InvalidParameterError, match=re.escape(f"character U+{ord(c):04X} ")):
                as_rational(text, "x")
    for text in ("\u00a01/3", "1\u2009/3", "1/3\u3000"):  # non-ASCII spaces too
        with pytest.raises(errors.InvalidParameterError, match=r"^x=.*must be written in ASCII"):
            as_rational(text, "x")
    with pytest.raises(errors.InvalidParameterError, match=r"^epsilon='\u0661': must be written in ASCII "
                       r"\(character U\+0661 ARABIC-INDIC DIGIT ONE at position 0\)"):
        exactdp.Joint([3, 2, 1], 2, epsilon="\u0661")
    with pytest.raises(errors.InvalidParameterError, match="memory_budget"):
        as_memory_budget("\u0662\u0660\u0660\u0660")
    assert as_rational(" 1 / 3 ", "x") == Fraction(1, 3) and as_memory_budget("2_000") == 2000  # ASCII as before


_TOO_LARGE = ["1e100000000", "1e-100000000", "-1e1000000000", "1e" + "9" * 40, "0.5e1000000000",
              "1" * 100_000, "1/" + "3" * 100_000, "0." + "0" * 100_000 + "1",
              decimal.Decimal("1e100000000"), decimal.Decimal("1e-100000000"),
              # sympy.Float("1e100000000") itself takes minutes to parse: build it from bits
              sympy.Float(mpmath.mpf((1, 332_192_810)), 15), sympy.Float(mpmath.mpf((1, -332_192_810)), 15)]


@pytest.mark.parametrize("value", _TOO_LARGE, ids=lambda v: f"{type(v).__name__}-{str(v)[:14]}")
@pytest.mark.parametrize("argument", ["epsilon", "base", "sensitivity", "rho", "delta", "x"])
def test_numbers_past_the_digit_limit_fail_before_being_built(argument, value):
    """Each of these used to build a number of 10**8 digits or more (minutes, or memory
    exhaustion): now an InputLimitError naming the argument and the limit, at once."""
    build = {
        "epsilon": lambda v: exactdp.Joint([3, 2, 1], 2, epsilon=v),
        "base": lambda v: exactdp.Joint([3, 2, 1], 2, base=v),
        "sensitivity": lambda v: exactdp.Joint([3, 2, 1], 2, sensitivity=v),
        "rho": lambda v: exactdp.Canonical([3, 2, 1], 2, rho=v),
        "delta": lambda v: exactdp.accounting.cdp_peel_epsilon(Fraction(1, 10), v, 10),
        "x": lambda v: as_rational(v, "x"),
    }[argument]
    with pytest.raises(errors.InputLimitError) as info:
        build(value)
    assert info.value.argument == argument and info.value.limit == MAX_NUMBER_DIGITS == 1000
    assert isinstance(info.value, errors.InvalidParameterError)
    message = str(info.value)
    assert "MAX_NUMBER_DIGITS" in message and "limit of 1000" in message and len(message) < 400


def test_digit_limit_boundary_and_raising_it(monkeypatch):
    assert as_rational("1e999", "x") == 10**999  # 1000 digits: at the limit
    assert as_rational("1e-999", "x") == Fraction(1, 10**999)
    assert as_rational("1000e996", "x") == 10**999
    assert as_rational("0e99999999999999999999", "x") == 0  # zero whatever the exponent
    for text in ("1e1000", "1e-1000", "1" * 1001, "1/" + "1" * 1001, "12.5e999"):
        with pytest.raises(errors.InputLimitError, match="would have 10"):
            as_rational(text, "x")
    assert as_epsilon(Fraction(10**5000)) == 10**5000  # exact values are not limited
    monkeypatch.setattr(validation, "MAX_NUMBER_DIGITS", 5000)
    assert as_rational("1e4000", "x") == 10**4000


@pytest.mark.slow
def test_decimal_counts_past_the_digit_limit():
    assert as_counts([decimal.Decimal("1e5"), decimal.Decimal("3.000")]) == (10**5, 3)
    with pytest.raises(errors.InputLimitError, match=r"^counts\[1\]=.*MAX_INTEGER_DIGITS") as info:
        as_counts([1, decimal.Decimal("1e100000000")])
    assert info.value.limit == validation.MAX_INTEGER_DIGITS
    with pytest.raises(errors.InvalidCountsError, match=r"^counts\[0\]="):
        as_counts([decimal.Decimal("1e-100000000")])  # not integral; refused without building it


def test_a_decimal_zero_of_any_exponent_is_zero():
    # 0E-100000000 and 0E+100000000 built 10**100000000 before being read as 0
    for zero in ("0E-100000000", "-0E+100000000", "0.000"):
        assert as_counts([decimal.Decimal(zero), 2]) == (0, 2)
        assert validation.as_rational(decimal.Decimal(zero), "epsilon") == 0
    assert validation.as_rational(decimal.Decimal("-2.50E-3"), "epsilon") == Fraction(-1, 400)


def test_count_digit_limit_boundary_and_raising_it(monkeypatch):
    """A count of more than MAX_COUNT_DIGITS digits, an exact int included, is refused
    naming the limit (a 20,000-digit count kept Joint's probabilities busy for minutes)."""
    assert validation.MAX_COUNT_DIGITS == 5000
    assert as_counts([10**5000 - 1, -(10**5000 - 1), 0]) == (10**5000 - 1, -(10**5000 - 1), 0)  # at the limit
    for count in (10**5000, -(10**5000), 10**20000):
        with pytest.raises(errors.InputLimitError, match=r"^counts\[1\]=.*MAX_COUNT_DIGITS; raise it") as info:
            exactdp.Joint([0, count], 1, epsilon=1)
        assert info.value.limit == 5000 and isinstance(info.value, errors.InvalidParameterError)
        assert len(str(info.value)) < 300
    monkeypatch.setattr(validation, "MAX_COUNT_DIGITS", 6000)  # raised: read at each call
    assert as_counts([10**5000]) == (10**5000,)


def test_long_numbers_past_the_int_str_digit_limit_are_converted(monkeypatch):
    """Decimal counts and, with MAX_NUMBER_DIGITS raised, strings and Decimals of more than
    4300 digits raised CPython's ValueError (int/str conversion limit): converted exactly."""
    assert as_counts([decimal.Decimal("9" * 5000), decimal.Decimal("-5" + "0" * 4500 + ".000")]) == (
        10**5000 - 1, -5 * 10**4500)
    with pytest.raises(errors.InputLimitError, match="MAX_COUNT_DIGITS"):
        as_counts([decimal.Decimal("9" * 5001)])
    with pytest.raises(errors.InvalidCountsError, match="must be an integer"):
        as_counts([decimal.Decimal("9" * 5000 + ".5")])
    monkeypatch.setattr(validation, "MAX_NUMBER_DIGITS", 12_000)
    big = 10**5000 - 1
    assert as_rational("9" * 5000, "x") == big and as_rational("1/" + "9" * 5000, "x") == Fraction(1, big)
    assert as_rational("0." + "9" * 5000, "x") == Fraction(big, 10**5000)
    assert as_rational("-" + "9" * 5000 + "e3", "x") == -big * 1000
    assert as_rational(decimal.Decimal("-0." + "9" * 5000), "x") == -Fraction(big, 10**5000)
    with pytest.raises(errors.InvalidParameterError, match="division by zero"):
        as_rational("1/" + "0" * 5000, "x")


def test_as_rational_high_precision_sympy_float():
    f = sympy.Float("0.1", 50)
    assert as_rational(f, "x") == Fraction(int(sympy.Rational(f).p), int(sympy.Rational(f).q))
    assert as_rational(f, "x") != Fraction(1, 10)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "nan", "inf", "1/0", "x",
                                 decimal.Decimal("NaN"), decimal.Decimal("-Infinity"), sympy.oo, sympy.nan, sympy.zoo])
def test_as_rational_rejects_non_finite(bad):
    with pytest.raises(errors.InvalidParameterError) as info:
        as_rational(bad, "rho")
    assert info.value.argument == "rho"


@pytest.mark.parametrize("bad", [None, [1], 1j, True, np.bool_(False), object(), sympy.pi, sympy.Symbol("x")])
def test_as_rational_rejects_types(bad):
    with pytest.raises(errors.ArgumentTypeError) as info:
        as_rational(bad, "rho")
    assert info.value.argument == "rho"


def test_as_epsilon_base_sensitivity():
    assert as_epsilon("0.1") == Fraction(1, 10)
    assert as_epsilon(0.5) == Fraction(1, 2)
    assert as_base("0.999") == Fraction(999, 1000)
    assert as_sensitivity(2) == 2
    for fn, arg in ((as_epsilon, "epsilon"), (as_sensitivity, "sensitivity")):
        for bad in (0, -1, "-0.5", -0.0):
            with pytest.raises(errors.InvalidParameterError) as info:
                fn(bad)
            assert info.value.argument == arg
    for bad in (0, 1, 2, -Fraction(1, 2), "1.0"):
        with pytest.raises(errors.InvalidParameterError, match=r"^base="):
            as_base(bad)


def test_as_dps_and_positive_int():
    assert as_dps(None) == DEFAULT_DPS == 30
    assert as_dps(1) == 1 and as_dps(100_000) == 100_000 and as_dps(np.int64(7)) == 7
    for bad in (0, -1, 100_001):
        with pytest.raises(errors.InvalidParameterError, match=r"^dps="):
            as_dps(bad)
    with pytest.raises(errors.ArgumentTypeError, match=r"^dps="):
        as_dps("30")
    assert as_positive_int(5, "n") == 5
    with pytest.raises(errors.InvalidParameterError, match=r"^n="):
        as_positive_int(0, "n")


def test_as_outputs():
    assert as_sequence_output([2, 0], 3, 2) == (2, 0)
    assert as_sequence_output(np.array([2, 0]), 3, 2) == (2, 0)
    assert as_set_output([2, 0], 3, 2) == frozenset({0, 2})
    assert type(as_set_output((1,), 3, 1)) is frozenset
    cases = [
        (([0], 3, 2), errors.InvalidOutputError, "output"),
        (([0, 0], 3, 2), errors.InvalidOutputError, "output[1]"),
        (([0, 1, 0], 3, 3), errors.InvalidOutputError, "output[2]"),
        (([0, 3], 3, 2), errors.InvalidOutputError, "output[1]"),
        (([0, -1], 3, 2), errors.InvalidOutputError, "output[1]"),
        (([0.0, 1], 3, 2), errors.ArgumentTypeError, "output[0]"),
        (([False, 1], 3, 2), errors.ArgumentTypeError, "output[0]"),
        (("01", 3, 2), errors.ArgumentTypeError, "output"),
        ((7, 3, 1), errors.ArgumentTypeError, "output"),
    ]
    for args, cls, argument in cases:
        for fn in (as_sequence_output, as_set_output):
            with pytest.raises(cls) as info:
                fn(*args)
            assert info.value.argument == argument, (args, str(info.value))
