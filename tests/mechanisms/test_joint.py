"""Tests of exactdp.Joint (docs/definitions.md §1, §2.1 and §3) against independent brute force.

The reference values come from ``tests/twins.py``: every sequence of k distinct items is
enumerated and its utility / refined score computed from the formulas of docs/definitions.md directly.
"""

from __future__ import annotations

import decimal
import itertools
import math
from fractions import Fraction

import gmpy2
import mpmath
import numpy as np
import pytest
import sympy
from flint import ctx
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import errors
from exactdp.core.levels import Level

from twins import (
    brute_levels,
    brute_mtilde,
    brute_mtilde_direct,
    brute_probabilities_base,
    count_at_least,
    counts_and_k,
    joint_utility,
    mp_probabilities_eps,
    refined_matrix,
    sorted_counts,
    tied_counts,
)

SMALL = range(4)  # the exhaustive count alphabet {0, 1, 2, 3}


def all_vectors(d: int):
    return itertools.product(SMALL, repeat=d)


def as_pairs(levels):
    return [(lv.utility, lv.multiplicity) for lv in levels]


# ======================================================================================
# Exhaustive: every count vector in {0,1,2,3}^d, d <= 5, every k
# ======================================================================================
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_levels_exhaustive(d):
    for counts in all_vectors(d):
        for k in range(1, d + 1):
            m = exactdp.Joint(counts, k, base=Fraction(1, 2))
            levels = m.levels()
            assert as_pairs(levels) == brute_levels(counts, k), (counts, k)
            assert all(isinstance(lv, Level) for lv in levels)
            assert all(type(lv.utility) is int and type(lv.multiplicity) is int for lv in levels)
            assert sum(lv.multiplicity for lv in levels) == math.factorial(d) // math.factorial(d - k)
            assert m.support_size() == math.perm(d, k)
            assert levels[0].utility == 0  # the top-k sequence itself has utility 0


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_mtilde_exhaustive(d):
    """m̃ entries in order, Lemma 3.5 and Lemma 3.7 (t_r counted directly) per entry."""
    for counts in all_vectors(d):
        for k in range(1, d + 1):
            m = exactdp.Joint(counts, k, epsilon=1)
            got = list(m.mtilde())
            want = brute_mtilde(counts, k)
            assert got == want, (counts, k)
            assert all(type(i) is int and type(j) is int and type(u) is Fraction and type(mt) is int
                       for i, j, u, mt in got)
            den = 2 * d * k
            assert list(m.mtilde(keys=True)) == [(i, j, int(u * den), mt) for i, j, u, mt in want]
            U = refined_matrix(counts, k)
            for i, j, u, mt in got:
                assert m.refined_utility(i, j) == u == U[i][j]
            # every sequence has exactly one score entry
            assert sum(mt for *_, mt in got) == math.perm(d, k)
            # Lemma 3.5: m(U) = sum of m̃ over the entries with ceil(Ũ) = U
            by_ceiling: dict[int, int] = {}
            for _, _, u, mt in got:
                by_ceiling[math.ceil(u)] = by_ceiling.get(math.ceil(u), 0) + mt
            levels = dict(as_pairs(m.levels()))
            assert {u: s for u, s in by_ceiling.items() if s} == levels
            # Lemma 3.7 (0-based rows): m̃ = prod_{r != i} max(t_r - r, 0),
            # t_r = number of entries of row r that are >= Ũ[i][j]
            for i, j, u, mt in got:
                product = 1
                for r in range(k):
                    if r != i:
                        t_r = sum(1 for x in U[r] if x >= u)
                        product *= max(t_r - r, 0)
                assert product == mt, (counts, k, i, j)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_outputs_exhaustive(d):
    """outputs() is a bijection onto all d!/(d-k)! sequences, level by level."""
    for counts in all_vectors(d):
        for k in range(1, d + 1):
            m = exactdp.Joint(counts, k, base=Fraction(1, 2))
            outs = list(m.outputs())
            assert all(type(o) is tuple and all(type(x) is int for x in o) for o in outs)
            assert len(outs) == len(set(outs)) == math.perm(d, k)
            assert set(outs) == set(itertools.permutations(range(d), k))
            position = 0
            for level in m.levels():
                for o in outs[position: position + level.multiplicity]:
                    assert joint_utility(counts, o) == level.utility == m.utility(o), (counts, k, o)
                position += level.multiplicity
            assert position == len(outs)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_integer_level_shortcut(d):
    """docs/definitions.md §2.1: #{S : u(S) >= -M} = prod_r max(T_r(M) - (r-1), 0), for every M, and it
    matches the cumulative multiplicities of levels()."""
    for counts in all_vectors(d):
        top = sorted_counts(counts)
        for k in range(1, d + 1):
            levels = exactdp.Joint(counts, k, epsilon=1).levels()
            for M in range(-2, 5):
                product = 1
                for r in range(1, k + 1):
                    T = sum(1 for c in top if c >= top[r - 1] - M)
                    product *= max(T - (r - 1), 0)
                cumulative = sum(lv.multiplicity for lv in levels if lv.utility >= -M)
                assert product == cumulative, (counts, k, M)
                if d <= 4:
                    assert product == count_at_least(counts, k, M)


def test_levels_and_mtilde_exhaustive_d6():
    """d = 6 over the alphabet {0, 1, 2}: levels for every k, m̃ for k <= 4."""
    for counts in itertools.product(range(3), repeat=6):
        for k in range(1, 7):
            m = exactdp.Joint(counts, k)
            assert as_pairs(m.levels()) == brute_levels(counts, k), (counts, k)
            if k <= 4:
                assert list(m.mtilde()) == brute_mtilde(counts, k), (counts, k)


@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_event_chunk_boundaries(monkeypatch, chunk):
    """The event sweeps hand events out in chunks of _events._CHUNK; with tiny chunks every
    chunk boundary falls inside or between levels (numpy and pure-Python paths)."""
    import exactdp.mechanisms.joint_sweep as events

    monkeypatch.setattr(events, "_CHUNK", chunk)
    for d in range(1, 5):
        for counts in all_vectors(d):
            for shift in (0, 10**30):
                shifted = [c + shift for c in counts]
                for k in range(1, d + 1):
                    m = exactdp.Joint(shifted, k)
                    assert as_pairs(m.levels()) == brute_levels(counts, k), (counts, k, shift)
                    assert list(m.mtilde()) == brute_mtilde(counts, k), (counts, k, shift)


def test_refined_entries_distinct_and_helper_consistent():
    """The helpers' own assumptions: all d*k entries of Ũ are distinct, and the fast brute
    m̃ (min over entry positions) equals a min over Fractions."""
    for d in range(1, 5):
        for counts in all_vectors(d):
            for k in range(1, d + 1):
                U = refined_matrix(counts, k)
                flat = [x for row in U for x in row]
                assert len(set(flat)) == len(flat)
                direct = brute_mtilde_direct(counts, k)
                fast = {(i, j): mt for i, j, _, mt in brute_mtilde(counts, k) if mt}
                assert direct == fast


# ======================================================================================
# Probabilities
# ======================================================================================
@pytest.mark.parametrize("base", [Fraction(1, 2), Fraction(2, 3)])
def test_probability_exact_rational_base_exhaustive(base):
    for d in range(1, 5):
        for counts in all_vectors(d):
            for k in range(1, d + 1):
                m = exactdp.Joint(counts, k, base=base)
                want = brute_probabilities_base(counts, k, base)
                total = sympy.Integer(0)
                for o in m.outputs():
                    p = m.probability_exact(o)
                    assert isinstance(p, sympy.Rational)
                    assert Fraction(int(p.p), int(p.q)) == want[o], (counts, k, o)
                    total += p
                assert total == 1


@settings(max_examples=150, deadline=None)
@given(
    counts_and_k(max_d=6, max_sequences=360, values=st.integers(-4, 12)),
    st.fractions(min_value=Fraction(1, 1000), max_value=Fraction(999, 1000), max_denominator=1000),
)
def test_random_probability_exact_rational_base(ck, base):
    counts, k = ck
    assume(0 < base < 1)
    m = exactdp.Joint(counts, k, base=base)
    want = brute_probabilities_base(counts, k, base)
    got = {o: m.probability_exact(o) for o in m.outputs()}
    assert {o: Fraction(int(p.p), int(p.q)) for o, p in got.items()} == want
    assert sympy.Add(*got.values()) == 1


def test_base_ignores_sensitivity_and_matches_epsilon_scale():
    counts = (4, 2, 2, 1, 0)
    a = exactdp.Joint(counts, 2, base=Fraction(1, 3))
    b = exactdp.Joint(counts, 2, base=Fraction(1, 3), sensitivity=7)
    for o in a.outputs():
        assert a.probability_exact(o) == b.probability_exact(o)
    # epsilon with sensitivity Δ equals epsilon/Δ with sensitivity 1
    e1 = exactdp.Joint(counts, 2, epsilon=Fraction(3, 2), sensitivity=3)
    e2 = exactdp.Joint(counts, 2, epsilon=Fraction(1, 2))
    for o in e1.outputs():
        assert sympy.simplify(e1.probability_exact(o) - e2.probability_exact(o)) == 0
        assert e1.probability(o, dps=40) == e2.probability(o, dps=40)


SYMBOLIC_CASES = [
    ((10, 5, 1, 1), 2),
    ((3, 1, 1, 0), 2),
    ((2, 2, 2), 3),
    ((5, 0, -3), 1),
    ((7,), 1),
    ((4, 3, 3, 1, 0), 3),
]


@pytest.mark.parametrize("counts,k", SYMBOLIC_CASES)
@pytest.mark.parametrize("epsilon,sensitivity", [(1, 1), (Fraction(1, 3), 1), (1, 2)])
def test_probability_exact_epsilon_sums_to_one(counts, k, epsilon, sensitivity):
    """Exact symbolic check: sum of P over all outputs is 1 (numerator - denominator of the
    combined fraction expands to 0), and each P equals the brute-force expression."""
    m = exactdp.Joint(counts, k, epsilon=epsilon, sensitivity=sensitivity)
    lam = sympy.Rational(Fraction(epsilon).numerator, Fraction(epsilon).denominator) / (2 * sensitivity)
    utils = {o: joint_utility(counts, o) for o in itertools.permutations(range(len(counts)), k)}
    best = max(utils.values())
    z_ref = sympy.Add(*[sympy.exp(lam * (u - best)) for u in utils.values()])
    ps = {}
    for o in m.outputs():
        p = m.probability_exact(o)
        w_ref = sympy.exp(lam * (utils[o] - best))
        num, den = sympy.fraction(sympy.together(p * z_ref - w_ref))
        assert sympy.expand(num) == 0, (o, p)
        ps[o] = p
    assert set(ps) == set(utils)
    num, den = sympy.fraction(sympy.together(sympy.Add(*ps.values())))
    assert sympy.expand(num - den) == 0
    assert sympy.simplify(sympy.Add(*ps.values())) == 1


def _mp_eval(expr, dps):
    """Evaluate a sympy expression with mpmath at ``dps`` digits."""
    f = sympy.lambdify([], expr, modules="mpmath")
    with mpmath.workdps(dps):
        return +f()


def _rel_err(x, ref, dps):
    with mpmath.workdps(dps):
        return abs(mpmath.mpf(x) - ref) / abs(ref)


NUMERIC_CASES = [
    ((10, 5, 1, 1), 2, 1),
    ((10, 5, 1, 1), 2, Fraction(1, 3)),
    ((3, 3, 1, 0, 0), 3, 1),
    ((100, 0), 1, 1),  # P(best) = 1/(1 + e^-50): its log is ~ -e^-50, relative accuracy matters
    ((9, 8, 8, 2, 0, -1), 2, Fraction(7, 5)),
]


@pytest.mark.parametrize("counts,k,epsilon", NUMERIC_CASES)
@pytest.mark.parametrize("dps", [15, 30, 60])
def test_numeric_probabilities_certified(counts, k, epsilon, dps):
    m = exactdp.Joint(counts, k, epsilon=epsilon)
    ref_dps = dps + 40
    # levels sum to 1 within 10**-dps
    lp = m.level_probabilities(dps)
    assert [lv for lv, _ in lp] == list(m.levels())
    assert all(isinstance(p, mpmath.mpf) for _, p in lp)
    with mpmath.workdps(ref_dps):
        assert abs(mpmath.fsum(p for _, p in lp) - 1) <= mpmath.mpf(10) ** -dps
    # an independent reference for every output
    ref = mp_probabilities_eps(counts, k, Fraction(epsilon), ref_dps)
    seen_levels = set()
    for o in m.outputs():
        u = m.utility(o)
        if u in seen_levels and len(counts) > 3:
            continue  # one output per level is enough for the bigger cases
        seen_levels.add(u)
        p = m.probability(o, dps=dps)
        exact = _mp_eval(m.probability_exact(o), ref_dps)
        assert _rel_err(exact, ref[o], ref_dps) <= mpmath.mpf(10) ** -(dps + 30)
        assert _rel_err(p, exact, ref_dps) <= mpmath.mpf(10) ** -dps
        lg = m.log_probability(o, dps=dps)
        with mpmath.workdps(ref_dps):
            log_ref = mpmath.log(exact)
        assert _rel_err(lg, log_ref, ref_dps) <= mpmath.mpf(10) ** -dps
    dist = m.distribution(dps=dps)
    assert [o for o, _ in dist] == list(m.outputs())
    for o, p in dist:
        assert _rel_err(p, ref[o], ref_dps) <= mpmath.mpf(10) ** -dps


def test_numeric_matches_exact_rational_with_base():
    for counts, k in [((10, 5, 1, 1), 2), ((2, 2, 1, 0), 4), ((6, 1, 1, 1, 0), 2)]:
        for base in (Fraction(1, 2), Fraction(2, 3), Fraction(999, 1000)):
            m = exactdp.Joint(counts, k, base=base)
            want = brute_probabilities_base(counts, k, base)
            for o in m.outputs():
                with mpmath.workdps(120):
                    ref = mpmath.mpf(want[o].numerator) / want[o].denominator
                    log_ref = mpmath.log(ref)
                assert _rel_err(m.probability(o, dps=50), ref, 120) <= mpmath.mpf(10) ** -50
                assert _rel_err(m.log_probability(o, dps=50), log_ref, 120) <= mpmath.mpf(10) ** -50


def test_single_output_mechanisms():
    m = exactdp.Joint([5], 1)
    assert m.levels() == (Level(0, 1),)
    assert m.probability((0,)) == 1
    assert m.log_probability((0,)) == 0
    assert m.probability_exact([0]) == 1
    assert m.sample(rng=1) == (0,)
    m = exactdp.Joint([2, 2, 2], 3, epsilon=Fraction(1, 7))
    assert m.levels() == (Level(0, 6),)
    assert m.probability_exact((2, 0, 1)) == sympy.Rational(1, 6)
    with mpmath.workdps(60):
        assert abs(m.log_probability((1, 0, 2), dps=50) + mpmath.log(6)) <= mpmath.log(6) * mpmath.mpf(10) ** -50


# --------------------------------------------------------------------------------------
# Paper check values (Appendix D.3, Joint column) and 40-digit regression constants
# --------------------------------------------------------------------------------------
#: 1 / (1 + 2e^-2 + 3e^-5/2 + 6e^-9/2), levels (0:1, -4:2, -5:3, -9:6) worked out by hand.
P_10_5_1_1 = "0.6314807521482704346657540926168464414723"
#: 1 / (1 + 998e^-7 + 999e^-15/2 + 997002e^-29/2), levels (0:1, -14:998, -15:999, -29:998*999).
P_30_15_998 = "0.3372197782751415944042076182712139472626"


def _hand_reference(terms):
    with mpmath.workdps(60):
        z = mpmath.fsum(m * mpmath.exp(mpmath.mpf(e) / 2) for m, e in terms)
        return 1 / z


def test_paper_value_10_5_1_1():
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert as_pairs(m.levels()) == [(0, 1), (-4, 2), (-5, 3), (-9, 6)]
    p = m.probability((0, 1), dps=40)
    assert mpmath.nstr(p, 2) == "0.63"
    ref = _hand_reference([(1, 0), (2, -4), (3, -5), (6, -9)])
    with mpmath.workdps(60):
        assert mpmath.nstr(ref, 40) == P_10_5_1_1
        assert abs(p - ref) <= ref * mpmath.mpf(10) ** -40
        assert abs(p - mpmath.mpf(P_10_5_1_1)) <= mpmath.mpf(10) ** -40


def test_paper_value_30_15_and_998_ones():
    counts = [30, 15] + [1] * 998
    m = exactdp.Joint(counts, 2, epsilon=1)
    assert as_pairs(m.levels()) == [(0, 1), (-14, 998), (-15, 999), (-29, 998 * 999)]
    p = m.probability((0, 1), dps=40)
    assert mpmath.nstr(p, 2) == "0.34"
    ref = _hand_reference([(1, 0), (998, -14), (999, -15), (998 * 999, -29)])
    with mpmath.workdps(60):
        assert mpmath.nstr(ref, 40) == P_30_15_998
        assert abs(p - ref) <= ref * mpmath.mpf(10) ** -40
        assert abs(p - mpmath.mpf(P_30_15_998)) <= mpmath.mpf(10) ** -40
    with mpmath.workdps(60):
        assert abs(m.log_probability((0, 1), dps=40) - mpmath.log(ref)) <= abs(mpmath.log(ref)) * mpmath.mpf(10) ** -40


# ======================================================================================
# hypothesis: random instances with ties, negative and huge counts
# ======================================================================================
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=8, max_sequences=1700))
def test_random_levels_and_mtilde_match_brute_force(ck):
    counts, k = ck
    m = exactdp.Joint(counts, k, epsilon=1)
    assert as_pairs(m.levels()) == brute_levels(counts, k)
    assert list(m.mtilde()) == brute_mtilde(counts, k)


@settings(max_examples=300, deadline=None)
@given(tied_counts(max_d=12), st.integers(0, 11), st.sampled_from([10**30, -(10**30), 2**61, 2**60, 7]))
def test_shift_invariance_numpy_and_python_paths(counts, k_index, shift):
    """Utilities are differences: shifting every count by a constant (moving the counts
    from the numpy int64 event path to the pure-Python one, or back) changes nothing."""
    d = len(counts)
    k = 1 + k_index % d
    a = exactdp.Joint(counts, k, base=Fraction(1, 2))
    b = exactdp.Joint([c + shift for c in counts], k, base=Fraction(1, 2))
    assert a.levels() == b.levels()
    assert list(a.mtilde(keys=True)) == list(b.mtilde(keys=True))
    if math.perm(d, k) <= 200:
        assert list(a.outputs()) == list(b.outputs())


@pytest.mark.parametrize(
    "counts",
    [
        [2**60 - 1, -(2**60 - 1), 0, 0, 2**60 - 1],
        [2**60 - 1, 2**60 - 2, -(2**60) + 1, 5],
        [2**60, -(2**60), 1, 1],  # just past the numpy limit
        [2**62, 2**63, -(2**63), 0, 2**64],
        [10**30, -(10**30), 10**30 - 1, 3],
        [-5, -5, -7, -100, -5],
    ],
)
def test_extreme_counts_match_brute_force(counts):
    for k in range(1, len(counts) + 1):
        m = exactdp.Joint(counts, k, epsilon=1)
        assert as_pairs(m.levels()) == brute_levels(counts, k)
        assert list(m.mtilde()) == brute_mtilde(counts, k)
        assert sorted(m.outputs()) == sorted(itertools.permutations(range(len(counts)), k))


@settings(max_examples=120, deadline=None)
@given(counts_and_k(max_d=6, max_sequences=120), st.sampled_from([1, Fraction(1, 3), Fraction(5, 2)]))
def test_random_probabilities_numeric(ck, epsilon):
    """Certified probabilities against an mpmath reference (huge counts included: the
    weights of far levels are astronomically small but must keep their relative accuracy)."""
    counts, k = ck
    m = exactdp.Joint(counts, k, epsilon=epsilon)
    ref = mp_probabilities_eps(counts, k, Fraction(epsilon), 80)
    for o, p in m.distribution(dps=30):
        assert _rel_err(p, ref[o], 80) <= mpmath.mpf(10) ** -30
    with mpmath.workdps(80):
        assert abs(mpmath.fsum(p for _, p in m.level_probabilities(30)) - 1) <= mpmath.mpf(10) ** -30


# ======================================================================================
# Tie invariance
# ======================================================================================
@settings(max_examples=150, deadline=None)
@given(tied_counts(max_d=5, values=st.integers(0, 3)), st.data())
def test_tie_invariance(counts, data):
    """Permuting the input counts permutes the item ids of the outputs and nothing else."""
    d = len(counts)
    k = data.draw(st.integers(1, d))
    perm = data.draw(st.permutations(range(d)))
    permuted = [counts[perm[i]] for i in range(d)]  # new item i is old item perm[i]
    a = exactdp.Joint(counts, k, base=Fraction(1, 2))
    b = exactdp.Joint(permuted, k, base=Fraction(1, 2))
    assert a.levels() == b.levels()
    dist_a = {o: a.probability_exact(o) for o in a.outputs()}
    dist_b = {tuple(perm[i] for i in o): b.probability_exact(o) for o in b.outputs()}
    assert dist_a == dist_b
    for o in b.outputs():
        old = tuple(perm[i] for i in o)
        assert b.utility(o) == a.utility(old)
        assert b.probability(o) == a.probability(old)


def test_tie_invariance_epsilon_exact_expressions():
    counts = [1, 3, 3, 0, 3]
    perm = [4, 0, 3, 2, 1]
    permuted = [counts[perm[i]] for i in range(5)]
    a = exactdp.Joint(counts, 3, epsilon=Fraction(2, 3))
    b = exactdp.Joint(permuted, 3, epsilon=Fraction(2, 3))
    for o in b.outputs():
        old = tuple(perm[i] for i in o)
        assert b.probability_exact(o) == a.probability_exact(old)


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
]


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
