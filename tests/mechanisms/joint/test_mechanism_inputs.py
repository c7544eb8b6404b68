"""Joint's inputs and invariants: bad inputs get a clear error naming the argument, every
accepted input type works, and the global precision of mpmath and flint is never changed
(docs/definitions.md §1 and §3)."""

from __future__ import annotations

import decimal
from fractions import Fraction

import gmpy2
import mpmath
import numpy as np
import pytest
import sympy
from flint import ctx

import exactdp
from exactdp import errors


# ======================================================================================
# Bad inputs (docs/definitions.md §1 and §3)
# ======================================================================================
J = exactdp.Joint
M4 = exactdp.Joint([3, 1, 1, 0], 2, epsilon=1)

BAD_CONSTRUCTION = [
    # (label, call, error class, argument named)
    ("bool count", lambda: J([1, True, 2], 1), errors.ArgumentTypeError, "counts[1]"),
    ("numpy bool counts", lambda: J(np.array([True, False]), 1), errors.ArgumentTypeError, "counts[0]"),
    ("NaN count", lambda: J([1, float("nan")], 1), errors.InvalidCountsError, "counts[1]"),
    ("numpy NaN count", lambda: J(np.array([1.0, np.nan]), 1), errors.InvalidCountsError, "counts[1]"),
    ("inf count", lambda: J([1, 2, float("inf")], 1), errors.InvalidCountsError, "counts[2]"),
    ("-inf count", lambda: J([float("-inf")], 1), errors.InvalidCountsError, "counts[0]"),
    ("non-integral float", lambda: J([1, 2.5], 1), errors.InvalidCountsError, "counts[1]"),
    ("numpy non-integral", lambda: J(np.array([1.0, 2.5]), 1), errors.InvalidCountsError, "counts[1]"),
    ("non-integral Fraction", lambda: J([0, Fraction(1, 2)], 1), errors.InvalidCountsError, "counts[1]"),
    ("empty", lambda: J([], 1), errors.InvalidCountsError, "counts"),
    ("empty numpy", lambda: J(np.array([], dtype=np.int64), 1), errors.InvalidCountsError, "counts"),
    ("nested list", lambda: J([[1, 2], [3, 4]], 1), errors.InvalidCountsError, "counts[0]"),
    ("ragged nested", lambda: J([1, (2, 3)], 1), errors.InvalidCountsError, "counts[1]"),
    ("2-D array", lambda: J(np.array([[1, 2], [3, 4]]), 1), errors.InvalidCountsError, "counts"),
    ("string counts", lambda: J("123", 1), errors.ArgumentTypeError, "counts"),
    ("string element", lambda: J([1, "2"], 1), errors.ArgumentTypeError, "counts[1]"),
    ("None counts", lambda: J(None, 1), errors.ArgumentTypeError, "counts"),
    ("scalar counts", lambda: J(5, 1), errors.ArgumentTypeError, "counts"),
    ("complex count", lambda: J([1, 2j], 1), errors.ArgumentTypeError, "counts[1]"),
    ("k = 0", lambda: J([1, 2], 0), errors.InvalidParameterError, "k"),
    ("k > d", lambda: J([1, 2], 3), errors.InvalidParameterError, "k"),
    ("k < 0", lambda: J([1, 2], -1), errors.InvalidParameterError, "k"),
    ("k = 1.5", lambda: J([1, 2], 1.5), errors.InvalidParameterError, "k"),
    ("k = True", lambda: J([1, 2], True), errors.ArgumentTypeError, "k"),
    ("k string", lambda: J([1, 2], "1"), errors.ArgumentTypeError, "k"),
    ("k None", lambda: J([1, 2], None), errors.ArgumentTypeError, "k"),
    ("epsilon 0", lambda: J([1, 2], 1, epsilon=0), errors.InvalidParameterError, "epsilon"),
    ("epsilon negative", lambda: J([1, 2], 1, epsilon=-1), errors.InvalidParameterError, "epsilon"),
    ("epsilon -0.0", lambda: J([1, 2], 1, epsilon=-0.0), errors.InvalidParameterError, "epsilon"),
    ("epsilon '-1/2'", lambda: J([1, 2], 1, epsilon="-1/2"), errors.InvalidParameterError, "epsilon"),
    ("epsilon NaN", lambda: J([1, 2], 1, epsilon=float("nan")), errors.InvalidParameterError, "epsilon"),
    ("epsilon numpy NaN", lambda: J([1, 2], 1, epsilon=np.float64("nan")), errors.InvalidParameterError, "epsilon"),
    ("epsilon Decimal NaN", lambda: J([1, 2], 1, epsilon=decimal.Decimal("NaN")), errors.InvalidParameterError, "epsilon"),
    ("epsilon inf", lambda: J([1, 2], 1, epsilon=float("inf")), errors.InvalidParameterError, "epsilon"),
    ("epsilon 'inf'", lambda: J([1, 2], 1, epsilon="inf"), errors.InvalidParameterError, "epsilon"),
    ("epsilon sympy oo", lambda: J([1, 2], 1, epsilon=sympy.oo), errors.InvalidParameterError, "epsilon"),
    ("epsilon bad string", lambda: J([1, 2], 1, epsilon="abc"), errors.InvalidParameterError, "epsilon"),
    ("epsilon list", lambda: J([1, 2], 1, epsilon=[1]), errors.ArgumentTypeError, "epsilon"),
    ("epsilon complex", lambda: J([1, 2], 1, epsilon=1j), errors.ArgumentTypeError, "epsilon"),
    ("epsilon bool", lambda: J([1, 2], 1, epsilon=True), errors.ArgumentTypeError, "epsilon"),
    ("epsilon sympy sqrt(2)", lambda: J([1, 2], 1, epsilon=sympy.sqrt(2)), errors.ArgumentTypeError, "epsilon"),
    ("epsilon and base", lambda: J([1, 2], 1, epsilon=1, base=Fraction(1, 2)), errors.InvalidParameterError, "base"),
    ("base 0", lambda: J([1, 2], 1, base=0), errors.InvalidParameterError, "base"),
    ("base 1", lambda: J([1, 2], 1, base=1), errors.InvalidParameterError, "base"),
    ("base > 1", lambda: J([1, 2], 1, base=Fraction(3, 2)), errors.InvalidParameterError, "base"),
    ("base negative", lambda: J([1, 2], 1, base=Fraction(-1, 2)), errors.InvalidParameterError, "base"),
    ("base NaN", lambda: J([1, 2], 1, base=float("nan")), errors.InvalidParameterError, "base"),
    ("base string", lambda: J([1, 2], 1, base="half"), errors.InvalidParameterError, "base"),
    ("sensitivity 0", lambda: J([1, 2], 1, sensitivity=0), errors.InvalidParameterError, "sensitivity"),
    ("sensitivity negative", lambda: J([1, 2], 1, sensitivity=-1), errors.InvalidParameterError, "sensitivity"),
    ("sensitivity inf", lambda: J([1, 2], 1, sensitivity=float("inf")), errors.InvalidParameterError, "sensitivity"),
]

BAD_CALLS = [
    ("output too short", lambda: M4.probability((0,)), errors.InvalidOutputError, "output"),
    ("output too long", lambda: M4.probability((0, 1, 2)), errors.InvalidOutputError, "output"),
    ("output repeat", lambda: M4.probability((1, 1)), errors.InvalidOutputError, "output[1]"),
    ("output unknown id", lambda: M4.probability((0, 4)), errors.InvalidOutputError, "output[1]"),
    ("output negative id", lambda: M4.log_probability((-1, 0)), errors.InvalidOutputError, "output[0]"),
    ("output float id", lambda: M4.probability_exact((0, 1.0)), errors.ArgumentTypeError, "output[1]"),
    ("output bool id", lambda: M4.utility((True, 0)), errors.ArgumentTypeError, "output[0]"),
    ("output string id", lambda: M4.probability((0, "1")), errors.ArgumentTypeError, "output[1]"),
    ("output string", lambda: M4.probability("01"), errors.ArgumentTypeError, "output"),
    ("output None", lambda: M4.probability(None), errors.ArgumentTypeError, "output"),
    ("output int", lambda: M4.utility(3), errors.ArgumentTypeError, "output"),
    ("utility repeat", lambda: M4.utility([2, 2]), errors.InvalidOutputError, "output[1]"),
    ("dps 0", lambda: M4.probability((0, 1), dps=0), errors.InvalidParameterError, "dps"),
    ("dps negative", lambda: M4.log_probability((0, 1), dps=-3), errors.InvalidParameterError, "dps"),
    ("dps float", lambda: M4.level_probabilities(dps=2.5), errors.InvalidParameterError, "dps"),
    ("dps bool", lambda: M4.distribution(dps=True), errors.ArgumentTypeError, "dps"),
    ("dps 0 distribution", lambda: M4.distribution(dps=0), errors.InvalidParameterError, "dps"),
    ("dps 0 levels", lambda: M4.level_probabilities(dps=0), errors.InvalidParameterError, "dps"),
    ("max_outputs exceeded", lambda: M4.distribution(max_outputs=11), errors.TooManyOutputsError, "max_outputs"),
    ("max_outputs 0", lambda: M4.distribution(max_outputs=0), errors.InvalidParameterError, "max_outputs"),
    ("outputs() max_outputs exceeded", lambda: list(M4.outputs(max_outputs=5)), errors.TooManyOutputsError, "max_outputs"),
    ("rng string", lambda: M4.sample(rng="x"), errors.ArgumentTypeError, "rng"),
    ("rng bool", lambda: M4.sample(rng=True), errors.ArgumentTypeError, "rng"),
    ("samples n = -1", lambda: M4.samples(-1, rng=1), errors.InvalidParameterError, "n"),
    # refined_utility took True for the row index 1 and raised a bare TypeError for 1.0
    ("refined_utility bool row", lambda: M4.refined_utility(True, 0), errors.ArgumentTypeError, "row"),
    ("refined_utility float col", lambda: M4.refined_utility(0, 1.0), errors.ArgumentTypeError, "col"),
    ("refined_utility Fraction row", lambda: M4.refined_utility(Fraction(1), 0), errors.ArgumentTypeError, "row"),
    ("refined_utility string col", lambda: M4.refined_utility(0, "1"), errors.ArgumentTypeError, "col"),
    ("refined_utility row = k", lambda: M4.refined_utility(2, 0), errors.InvalidParameterError, "(row, col)"),
]


def test_refined_utility_takes_numpy_indices():
    assert M4.refined_utility(np.int64(1), np.uint8(3)) == M4.refined_utility(1, 3)



@pytest.mark.parametrize("label,call,cls,argument", BAD_CONSTRUCTION + BAD_CALLS,
                         ids=[c[0] for c in BAD_CONSTRUCTION + BAD_CALLS])
def test_bad_inputs(label, call, cls, argument):
    with pytest.raises(cls) as info:
        call()
    err = info.value
    assert isinstance(err, errors.ExactDPError)
    assert isinstance(err, (ValueError, TypeError))
    assert err.argument == argument
    assert str(err).startswith(argument + "="), str(err)
    assert err.reason and err.reason in str(err)


def test_error_hierarchy():
    assert issubclass(errors.InvalidCountsError, ValueError)
    assert issubclass(errors.InvalidParameterError, ValueError)
    assert issubclass(errors.InvalidOutputError, ValueError)
    assert issubclass(errors.TooManyOutputsError, ValueError)
    assert issubclass(errors.NoClosedFormError, ValueError)
    assert issubclass(errors.ArgumentTypeError, TypeError)
    assert issubclass(errors.PrecisionError, ArithmeticError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.ExactDPError)


def test_distribution_within_max_outputs():
    assert len(M4.distribution(max_outputs=12)) == 12
    assert len(list(M4.outputs(max_outputs=12))) == 12


# --------------------------------------------------------------------------------------
# Accepted input types
# --------------------------------------------------------------------------------------
REFERENCE = exactdp.Joint([3, 1, 1, 0], 2, base=Fraction(1, 2))


@pytest.mark.parametrize(
    "counts",
    [
        np.array([3, 1, 1, 0]),
        np.array([3, 1, 1, 0], dtype=np.int8),
        np.array([3, 1, 1, 0], dtype=np.uint64),
        np.array([3.0, 1.0, 1.0, 0.0]),
        np.array([3.0, 1.0, 1.0, 0.0], dtype=np.float32),
        [np.int64(3), np.int32(1), np.uint8(1), np.int16(0)],
        [gmpy2.mpz(3), gmpy2.mpz(1), gmpy2.mpz(1), gmpy2.mpz(0)],
        [3.0, 1, 1.0, -0.0],
        (3, 1, 1, 0),
        iter([3, 1, 1, 0]),
        [sympy.Integer(3), 1, 1, 0],
        [Fraction(3), 1, 1, 0],
    ],
)
def test_accepted_counts(counts):
    m = exactdp.Joint(counts, 2, base=Fraction(1, 2))
    assert m.counts == (3, 1, 1, 0)
    assert all(type(c) is int for c in m.counts)
    assert m.levels() == REFERENCE.levels()
    assert m.probability_exact((0, 2)) == REFERENCE.probability_exact((0, 2))


def test_accepted_k():
    assert exactdp.Joint([1, 2, 3], np.int64(2)).k == 2
    assert exactdp.Joint([1, 2, 3], gmpy2.mpz(3)).k == 3
    assert type(exactdp.Joint([1, 2, 3], np.int64(2)).k) is int


@pytest.mark.parametrize(
    "epsilon,exact",
    [
        (1, Fraction(1)),
        (Fraction("1/10"), Fraction(1, 10)),
        ("0.1", Fraction(1, 10)),
        (" 1/3 ", Fraction(1, 3)),
        ("1e-3", Fraction(1, 1000)),
        (sympy.Rational(2, 7), Fraction(2, 7)),
        (sympy.Integer(3), Fraction(3)),
        (decimal.Decimal("0.25"), Fraction(1, 4)),
        (0.1, Fraction(3602879701896397, 36028797018963968)),  # the exact binary value
        (np.float64(0.5), Fraction(1, 2)),
        (np.int64(2), Fraction(2)),
        (gmpy2.mpq(3, 4), Fraction(3, 4)),
    ],
)
def test_accepted_epsilon(epsilon, exact):
    m = exactdp.Joint([3, 1, 1, 0], 2, epsilon=epsilon)
    assert type(m.epsilon) is Fraction
    assert m.epsilon == exact
    assert m.base is None


def test_float_epsilon_is_not_its_decimal():
    assert exactdp.Joint([1, 0], 1, epsilon=0.1).epsilon != Fraction(1, 10)
    assert exactdp.Joint([1, 0], 1, epsilon=0.1).epsilon == Fraction(0.1)
    assert exactdp.Joint([1, 0], 1, epsilon="0.1").epsilon == Fraction(1, 10)
    assert exactdp.Joint([1, 0], 1).epsilon == 1  # default


@pytest.mark.parametrize("base", [Fraction(1, 2), "1/2", "0.5", 0.5, sympy.Rational(1, 2), decimal.Decimal("0.5")])
def test_accepted_base(base):
    m = exactdp.Joint([3, 1, 1, 0], 2, base=base)
    assert m.base == Fraction(1, 2) and type(m.base) is Fraction
    assert m.epsilon is None
    assert m.levels() == REFERENCE.levels()
    assert m.probability_exact((0, 1)) == REFERENCE.probability_exact((0, 1))


def test_accepted_outputs():
    p = REFERENCE.probability_exact((0, 1))
    for o in ([0, 1], np.array([0, 1]), iter([0, 1]), (np.int64(0), gmpy2.mpz(1)), range(2)):
        assert REFERENCE.probability_exact(o) == p
    assert REFERENCE.utility((1, 0)) == -2


# ======================================================================================
# Global precision is never changed
# ======================================================================================
def _every_public_call(m):
    out = next(iter(m.outputs()))
    yield lambda: m.levels()
    yield lambda: m.support_size()
    yield lambda: m.utility(out)
    yield lambda: m.probability(out)
    yield lambda: m.probability(out, dps=80)
    yield lambda: m.log_probability(out, dps=50)
    yield lambda: m.probability_exact(out)
    yield lambda: m.level_probabilities(40)
    yield lambda: list(m.outputs())
    yield lambda: m.distribution(dps=20)
    yield lambda: m.sample(rng=3)
    yield lambda: m.samples(20, rng=4)
    yield lambda: list(m.mtilde())
    yield lambda: m.refined_utility(0, 0)


@pytest.mark.parametrize("kwargs", [{"epsilon": 1}, {"base": Fraction(2, 3)}, {"epsilon": Fraction(1, 3), "sensitivity": 2}])
def test_global_precision_unchanged(kwargs):
    assert mpmath.mp.prec == 53 and ctx.prec == 53
    m = exactdp.Joint([10, 5, 1, 1, 3], 2, **kwargs)
    assert mpmath.mp.prec == 53 and ctx.prec == 53
    for call in _every_public_call(m):
        call()
        assert mpmath.mp.prec == 53
        assert ctx.prec == 53


def test_global_precision_unchanged_when_not_default():
    """With the caller's own global settings, exactdp neither changes them nor depends on
    them: probabilities are identical."""
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    p_default = m.probability((0, 1), dps=30)
    old_mp, old_ctx = mpmath.mp.prec, ctx.prec
    try:
        for mp_prec, flint_prec in [(300, 20), (20, 400)]:
            mpmath.mp.prec = mp_prec
            ctx.prec = flint_prec
            fresh = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
            for call in _every_public_call(fresh):
                call()
                assert mpmath.mp.prec == mp_prec
                assert ctx.prec == flint_prec
            p = fresh.probability((0, 1), dps=30)
            with mpmath.workprec(400):
                assert p == p_default
    finally:
        mpmath.mp.prec, ctx.prec = old_mp, old_ctx
    assert mpmath.mp.prec == 53 and ctx.prec == 53


def test_samples_zero_is_empty_and_sets_are_not_sequences():
    m = exactdp.Joint([3, 2, 2, 0], 2, epsilon=1)
    assert m.samples(0, rng=1) == []
    with pytest.raises(errors.ArgumentTypeError, match="output"):
        m.probability({0, 1})
    with pytest.raises(errors.ArgumentTypeError, match="output"):
        m.utility(frozenset({0, 1}))


def test_integral_decimal_counts_are_accepted():
    import decimal

    assert exactdp.Joint([decimal.Decimal("2"), 1], 1).counts == (2, 1)
    with pytest.raises(errors.InvalidCountsError, match=r"counts\[0\]"):
        exactdp.Joint([decimal.Decimal("2.5"), 1], 1)
