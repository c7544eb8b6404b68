"""Tests of exactdp.Joint (docs/definitions.md §1, §2.1 and §3) against independent brute force.

The reference values come from ``tests/twins/joint.py``: every sequence of k distinct items is
enumerated and its utility / refined score computed from the formulas of docs/definitions.md directly.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import exactdp
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
@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_levels_and_mtilde_exhaustive_d6():
    """d = 6 over the alphabet {0, 1, 2}: levels for every k, m̃ for k <= 4."""
    for counts in itertools.product(range(3), repeat=6):
        for k in range(1, 7):
            m = exactdp.Joint(counts, k)
            assert as_pairs(m.levels()) == brute_levels(counts, k), (counts, k)
            if k <= 4:
                assert list(m.mtilde()) == brute_mtilde(counts, k), (counts, k)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_event_chunk_boundaries(monkeypatch, chunk):
    """The event sweeps hand events out in chunks of _events._CHUNK; with tiny chunks every
    chunk boundary falls inside or between levels (numpy and pure-Python paths)."""
    import exactdp.mechanisms.joint.sweep as events

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
@pytest.mark.slow
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


@pytest.mark.slow
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
@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=8, max_sequences=1700))
def test_random_levels_and_mtilde_match_brute_force(ck):
    counts, k = ck
    m = exactdp.Joint(counts, k, epsilon=1)
    assert as_pairs(m.levels()) == brute_levels(counts, k)
    assert list(m.mtilde()) == brute_mtilde(counts, k)


@pytest.mark.slow
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


@pytest.mark.slow
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
@pytest.mark.slow
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


@settings(max_examples=80, deadline=None)
@given(counts_and_k(max_d=8, max_sequences=10**9))
def test_thresholds_in_int64_equal_the_bisections(ck):
    """``T_r(M)`` and ``T_r(M^-)`` of every row from two ``searchsorted`` calls on the
    ranking's arrays equal the per-row bisections (counts past 2**61: the bisections)."""
    counts, k = ck
    m = exactdp.Joint(counts, k)
    r = m.ranking
    assert (r.arrays is not None) == all(abs(c) < 2**61 for c in counts)  # the int64 path where it fits
    for M in sorted({0, 1, max(counts) - min(counts)} | {r.sorted_counts[0] - v for v in r.values}):
        want = ([r.at_least(r.sorted_counts[x] - M) for x in range(k)],
                [r.greater_than(r.sorted_counts[x] - M) for x in range(k)])
        got = m._thresholds(M)
        assert got == want and all(type(t) is int for t in got[0] + got[1])
