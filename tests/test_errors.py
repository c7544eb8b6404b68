"""Tests of exactdp.errors: each error names the argument and the value, is a ValueError or
TypeError (or ArithmeticError) subclass, and quotes a value in a bounded length whatever its size."""

from __future__ import annotations

from fractions import Fraction

import pytest

from exactdp import errors
from exactdp.errors import show_value


def test_error_message_and_attributes():
    err = errors.InvalidParameterError("k", 7, "must satisfy 1 <= k <= d = 4")
    assert str(err) == "k=7: must satisfy 1 <= k <= d = 4"
    assert (err.argument, err.value, err.reason) == ("k", 7, "must satisfy 1 <= k <= d = 4")
    assert isinstance(err, ValueError) and isinstance(err, errors.ExactDPError)
    long = errors.InvalidCountsError("counts", list(range(1000)), "bad")
    assert len(str(long)) < 100 and str(long).endswith("...: bad")
    free = errors.NoClosedFormError(None, None, "limit LIMIT = 3 exceeded")
    assert str(free) == "limit LIMIT = 3 exceeded"
    assert isinstance(errors.ArgumentTypeError("x", 1, "r"), TypeError)
    assert isinstance(errors.PrecisionError("dps", 5, "r"), ArithmeticError)


def test_show_value_cuts_long_reprs_to_the_limit():
    assert show_value([1, 2]) == "[1, 2]"
    text = show_value("x" * 200)
    assert len(text) == 80 and text.endswith("...") and text.startswith("'xxx")
    assert show_value(list(range(100)), limit=20) == repr(list(range(100)))[:17] + "..."
    assert len(show_value(list(range(100)), limit=20)) == 20


@pytest.mark.parametrize("value, expected", [
    (10**5000, "1.000...e+5000 (5001 digits)"),
    (-(10**5000) - 7, "-1.000...e+5000 (5001 digits)"),
    (Fraction(1, 10**5000), "Fraction(1, 1.000...e+5000 (5001 digits))"),
], ids=["int", "negative int", "Fraction"])
def test_show_value_abbreviates_integers_past_the_int_str_digit_limit(value, expected):
    """``repr`` of such an int raises ValueError (CPython's int/str digit limit): the error
    message abbreviates it instead of failing while it reports another error."""
    with pytest.raises(ValueError):
        repr(value)
    assert show_value(value, limit=200) == expected


def test_an_error_on_a_huge_value_has_a_short_message():
    err = errors.InvalidParameterError("epsilon", 10**5000, "must be small")
    assert str(err) == "epsilon=1.000...e+5000 (5001 digits): must be small"
