"""Tests of the probability values a mapping may hold in the audits: numpy's scalars as
another library hands them over (numpy integers as ints, numpy floats of any width at their
exact binary value), and the errors for the values that are not probabilities.

References: the twins of tests/twins/notions.py (exact Fractions, plain enumeration)
evaluated on the same mapping with every value converted by hand to its exact Fraction.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from exactdp import audit
from exactdp.errors import ArgumentTypeError, InvalidParameterError

from twins.notions import pure_loss_brute, total_variation_exact

Q = {"x": Fraction(1, 4), "y": Fraction(3, 4)}


@pytest.mark.parametrize("kind", [np.float16, np.float32, np.float64, np.longdouble])
def test_numpy_floats_at_their_exact_binary_value(kind):
    """0.375 and 0.625 are exact in every width: the audit sees 3/8 and 5/8."""
    P = {"x": kind(0.375), "y": kind(0.625)}
    exact = {"x": Fraction(3, 8), "y": Fraction(5, 8)}
    assert rel(audit.privacy_loss(P, Q, dps=20).value, pure_loss_brute(exact, Q))
    assert audit.privacy_profile(P, Q, 0).delta == mp(total_variation_exact(exact, Q))
    assert audit.privacy_profile({"x": kind(0.25), "y": kind(0.75)}, Q, 0).delta == 0


def test_numpy_integers_are_ints():
    P = {"x": np.int64(0), "y": np.uint8(1)}
    assert audit.privacy_profile(P, {"y": 1}, 0).delta == 0
    assert audit.privacy_loss(P, Q).value == mpmath.inf


@pytest.mark.parametrize("value, error, match", [
    (np.float32("nan"), InvalidParameterError, "finite"),
    (np.float64("inf"), InvalidParameterError, "finite"),
    (np.bool_(True), ArgumentTypeError, "booleans"),
    (np.int64(-1), InvalidParameterError, "non-negative"),
    ("1/2", ArgumentTypeError, "int, Fraction"),
])
def test_bad_numpy_values_name_the_argument(value, error, match):
    with pytest.raises(error, match=match) as info:
        audit.privacy_loss({"x": value, "y": 0.5}, Q)
    assert info.value.argument == "a"


def mp(x) -> mpmath.mpf:
    with mpmath.workdps(60):
        return mpmath.mpf(x.numerator) / x.denominator


def rel(x, y) -> bool:
    with mpmath.workdps(60):
        return abs(x - y) <= abs(y) * mpmath.mpf(10) ** -19


def test_a_float32_table_that_misses_one_says_how_to_fix_it():
    # the error named only the 2**-40 rule, which float32 values (about 7 digits) cannot meet
    import numpy as np

    from exactdp import audit
    from exactdp.errors import InvalidParameterError

    p = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)
    table = {(i,): p[i] for i in range(4)}
    assert abs(sum(float(x) for x in p) - 1) > 2.0**-40
    with pytest.raises(InvalidParameterError, match="convert them to float64 and divide by their sum first"):
        audit.privacy_loss(table, {(i,): 0.25 for i in range(4)})
    fixed = {o: float(v) / sum(float(x) for x in p) for o, v in table.items()}
    assert audit.privacy_loss(fixed, {(i,): 0.25 for i in range(4)}).value > 0
