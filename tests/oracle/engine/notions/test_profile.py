"""Tests of the privacy notions of exactdp.audit: privacy_profile, epsilon_for_delta,
renyi_divergence, zcdp_rho, over mechanisms and mappings.

References are the twins of tests/twins/notions.py (enumeration over exact rationals) fed
with the brute-force probabilities of tests/twins/ (rational base 1/2).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit
from exactdp.errors import ArgumentTypeError, InvalidParameterError

from twins import (brute_probabilities_base, delta_brute, epsilon_for_delta_brute, pnf_joint_brute, pure_loss_brute,
                   renyi_brute, renyi_sum_exact, set_brute_probabilities, total_variation_exact)
from twins.peeling import peel_exact

HALF = Fraction(1, 2)

# (name, mechanism from counts and k, its exact probabilities by brute force)
MECHANISMS = [
    ("Joint", lambda c, k: exactdp.Joint(c, k, base=HALF), lambda c, k: brute_probabilities_base(c, k, HALF)),
    ("PNFJoint", lambda c, k: exactdp.PNFJoint(c, k, base=HALF), pnf_joint_brute),
    ("JointSet", lambda c, k: exactdp.JointSet(c, k, base=HALF), lambda c, k: set_brute_probabilities(c, k, HALF)),
    ("Peeling", lambda c, k: exactdp.Peeling(c, k, base=HALF), lambda c, k: peel_exact(c, k, HALF, "gumbel")),
]


def frac(x) -> Fraction:
    """An mpf's exact binary value."""
    man, exp = mpmath.mpf(x).man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def mp(x) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def close(x, y, digits=25):
    """Equal to ``digits`` relative digits (both infinite, or both exactly 0, count)."""
    if mpmath.isinf(x) or mpmath.isinf(y):
        return x == y
    with mpmath.workdps(digits + 20):
        x, y = mpmath.mpf(x), mpmath.mpf(Fraction(y).numerator) / Fraction(y).denominator \
            if isinstance(y, (Fraction, int)) else mpmath.mpf(y)
        if y == 0:
            return x == 0
        return abs(x - y) <= abs(y) * mpmath.mpf(10) ** (-digits)


def check_pair(a, b, P, Q, digits=25):
    """Every notion of the pair (a, b) against the twins on (P, Q)."""
    for eps in (Fraction(0), Fraction(1, 3), Fraction(3, 2)):
        prof = audit.privacy_profile(a, b, eps, dps=digits)
        assert close(prof.delta, delta_brute(P, Q, eps), digits), (eps, prof)
        assert prof.exact_zero == (delta_brute(P, Q, eps) == 0)
    tv = max(total_variation_exact(P, Q), total_variation_exact(Q, P))
    for d in (Fraction(0), Fraction(1, 50), tv / 2, tv):
        got = audit.epsilon_for_delta(a, b, d, dps=digits)
        assert close(got.epsilon, epsilon_for_delta_brute(P, Q, d), digits), (d, got)
    for alpha in (2, 3):
        assert close(audit.renyi_divergence(a, b, alpha, dps=digits), renyi_brute(P, Q, alpha), digits)


SMALL = [c for d in (1, 2, 3) for c in itertools.product(range(4), repeat=d)]


@pytest.mark.slow
@pytest.mark.parametrize("name, make, brute", MECHANISMS, ids=[m[0] for m in MECHANISMS])
def test_exhaustive_small_instances_against_twins(name, make, brute):
    """Every count vector in {0..3}^d, d <= 3, every k, against its first two neighbours
    (one per symmetry class); d = 4 on a few vectors."""
    cases = [(c, k) for c in SMALL for k in range(1, len(c) + 1)]
    cases += [((3, 2, 2, 0), 2), ((3, 3, 1, 0), 3), ((1, 1, 1, 1), 4), ((2, 0, 3, 1), 1)]
    for counts, k in cases:
        for other in audit.neighbours(counts, "add_remove", up_to_symmetry=True)[:2]:
            a, b = make(list(counts), k), make(list(other), k)
            P, Q = brute(list(counts), k), brute(list(other), k)
            check_pair(a, b, P, Q, 20)


def test_the_twins_agree_with_each_other():
    """The twin epsilon at delta = 0 is the pure loss; the twin profile at the twin epsilon
    is delta (the located piece is right)."""
    P = brute_probabilities_base([3, 2, 2, 0], 2, HALF)
    Q = brute_probabilities_base([3, 3, 2, 0], 2, HALF)
    assert epsilon_for_delta_brute(P, Q, Fraction(0)) == pure_loss_brute(P, Q)
    for d in (Fraction(1, 100), Fraction(1, 20)):
        eps = epsilon_for_delta_brute(P, Q, d)
        with mpmath.workdps(80):
            e = frac(eps)  # binary value of the 80-digit eps
            assert abs(delta_brute(P, Q, e) - mp(d)) < mpmath.mpf(10) ** -60


def test_twins_can_fail():
    """A wrong distribution changes every twin's answer."""
    P = {0: HALF, 1: HALF}
    Q = {0: Fraction(1, 3), 1: Fraction(2, 3)}
    assert delta_brute(P, Q, Fraction(0)) == Fraction(1, 6)
    assert renyi_sum_exact(P, Q, 2) == Fraction(1, 4) * 3 + Fraction(1, 4) * Fraction(3, 2)
    assert renyi_brute(P, {0: Fraction(1)}, 2) == mpmath.inf


# ---------------------------------------------------------------------------------------
# mappings

@st.composite
def mapping_pairs(draw):
    n = draw(st.integers(1, 6))
    def weights():
        w = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n).filter(any))
        s = sum(w)
        return {o: Fraction(x, s) for o, x in enumerate(w)}
    return weights(), weights()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping_pairs(), st.sampled_from([Fraction(0), Fraction(1, 7), Fraction(1), Fraction(5, 2)]),
       st.sampled_from([Fraction(0), Fraction(1, 100), Fraction(1, 5), Fraction(9, 10)]))
def test_random_mappings_against_twins(pq, eps, d):
    P, Q = pq
    prof = audit.privacy_profile(P, Q, eps, dps=25)
    assert close(prof.delta, delta_brute(P, Q, eps), 25)
    got = audit.epsilon_for_delta(P, Q, d, dps=25)
    assert close(got.epsilon, epsilon_for_delta_brute(P, Q, d), 25)
    for alpha in (2, 4):
        assert close(audit.renyi_divergence(P, Q, alpha, dps=25), renyi_brute(P, Q, alpha), 25)
    assert close(audit.epsilon_for_delta(P, Q, 0, dps=25).epsilon, pure_loss_brute(P, Q), 25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping_pairs())
def test_zcdp_bracket_contains_the_sampled_sup(pq):
    P, Q = pq
    z = audit.zcdp_rho(P, Q, dps=6)
    assert z.lower <= z.upper
    if mpmath.isinf(pure_loss_brute(P, Q)):
        assert z.lower == z.upper == mpmath.inf
        return
    with mpmath.workdps(40):
        sampled = max(max(renyi_brute(P, Q, al), renyi_brute(Q, P, al)) / al for al in (2, 3, 4, 6, 8))
        kl = max(mpmath.fsum(mp(p) * mpmath.log(mp(p) / mp(A2[o])) for o, p in A1.items() if p)
                 for A1, A2 in ((P, Q), (Q, P)))
        assert z.upper >= max(sampled, kl) * (1 - mpmath.mpf(10) ** -20)
        if z.converged and z.lower > 0:
            assert z.upper - z.lower <= z.lower * mpmath.mpf(10) ** -6


@pytest.mark.slow
def test_zcdp_of_a_nearly_flat_ratio_converges():
    """``P = (1/2 + 10^-3, 1/2 - 10^-3)`` against the uniform pair: ``D_alpha / alpha`` stays
    within a few millionths of ``2 * 10^-6`` over alphas from 1 to about 1,000, so the
    bracket needs thousands of halvings to meet to 6 digits (3,873).  Each step used to
    scan every interval for the largest bound, quadratic in the steps: 2,000 steps took
    about 20 s and stopped unconverged.  The bracket contains R at alphas across the flat
    range, computed here at 60 digits from the closed form."""
    x = Fraction(1, 1000)
    P, Q = {0: HALF + x, 1: HALF - x}, {0: HALF, 1: HALF}
    z = audit.zcdp_rho(P, Q)  # the default max_steps (it was 2,000: unconverged, and its text did not say so)
    assert z.converged and z.upper - z.lower <= z.lower * mpmath.mpf(10) ** -6
    assert z.steps == 3873 and "not converged" not in str(z)
    short = audit.zcdp_rho(P, Q, max_steps=2000)
    assert not short.converged and short.steps == 2000
    assert str(short).endswith("; not converged to 6 digits after 2000 steps (a larger max_steps goes further)")
    assert short.lower <= z.lower <= z.upper <= short.upper
    with mpmath.workdps(60):
        for al in (Fraction(11, 10), Fraction(3, 2), Fraction(2), Fraction(10), Fraction(300), Fraction(3000)):
            a = mp(al)
            for A1, A2 in ((P, Q), (Q, P)):
                r = mpmath.log(sum(mp(A1[o]) ** a * mp(A2[o]) ** (1 - a) for o in (0, 1))) / (a - 1) / a
                assert r <= z.upper
    assert z.lower >= mpmath.mpf(2) * 10**-6


def test_zcdp_of_a_known_pair():
    """Two Bernoullis: the sup of D_alpha / alpha is attained near alpha = 2.3; the bracket
    is tight and contains R at rational alphas nearby."""
    P = {0: HALF, 1: Fraction(1, 3), 2: Fraction(1, 6)}
    Q = {0: Fraction(1, 3), 1: Fraction(1, 3), 2: Fraction(1, 3)}
    z = audit.zcdp_rho(P, Q, dps=12)
    assert z.converged and z.upper - z.lower <= z.lower * mpmath.mpf(10) ** -12
    for al in (Fraction(9, 4), Fraction(7, 3), Fraction(23, 10)):
        r = max(audit.renyi_divergence(P, Q, al, dps=30), audit.renyi_divergence(Q, P, al, dps=30)) / al
        assert r <= z.upper
    assert 2 < z.alpha < Fraction(5, 2)
    assert audit.zcdp_rho(P, P).upper == 0
    assert audit.zcdp_rho(P, {0: Fraction(1)}).lower == mpmath.inf


def test_floats_taken_at_their_binary_value_and_renormalised():
    P = {"x": 0.1, "y": 0.2, "z": 0.7}   # sums to 1.0000000000000000555 in binary
    exactP = {o: Fraction(v) for o, v in P.items()}
    s = sum(exactP.values())
    norm = {o: v / s for o, v in exactP.items()}
    Q = {"x": Fraction(1, 3), "y": Fraction(1, 3), "z": Fraction(1, 3)}
    assert close(audit.privacy_profile(P, Q, 0).delta, delta_brute(norm, Q, Fraction(0)), 28)
    with pytest.raises(InvalidParameterError, match="within 2\\*\\*-40"):
        audit.privacy_profile({"x": 0.5, "y": 0.4}, Q, 0)


def test_mechanism_against_its_own_mapping_is_exactly_zero():
    counts, k = [3, 1, 1, 0], 2
    for name, make, brute in MECHANISMS:
        m, P = make(counts, k), brute(counts, k)
        prof = audit.privacy_profile(m, P, 0)
        assert prof.delta == 0 and prof.exact_zero, name
        assert audit.renyi_divergence(P, m, 2) == 0
        assert audit.epsilon_for_delta(m, P, 0).epsilon == 0
    # a mapping that drops an output: the mechanism's output has Q = 0 < P
    P = brute_probabilities_base(counts, k, HALF)
    worst = min(P, key=P.get)
    Q = dict(P)
    del Q[worst]
    Q[max(P, key=P.get)] += P[worst]
    m = exactdp.Joint(counts, k, base=HALF)
    assert audit.renyi_divergence(m, Q, 2) == mpmath.inf
    assert audit.epsilon_for_delta(m, Q, 0).epsilon == mpmath.inf
    assert close(audit.epsilon_for_delta(m, Q, P[worst]).epsilon, epsilon_for_delta_brute(P, Q, P[worst]), 25)


def test_sympy_rational_and_int_values():
    P = {(0,): sympy.Rational(1, 4), (1,): sympy.Rational(3, 4)}
    Q = {(0,): 1, (1,): 0}
    assert close(audit.privacy_profile(P, Q, 0).delta, Fraction(3, 4), 28)
    assert audit.privacy_profile(P, Q, 0).carriers == (((1,), 1),)


# ---------------------------------------------------------------------------------------
# negative controls: a wrong claim is detected

def test_profile_below_the_pure_loss_is_positive_and_zero_above():
    a = exactdp.Joint([3, 2, 2, 0], 2, base=HALF)
    b = exactdp.Joint([3, 3, 2, 0], 2, base=HALF)
    pure = audit.privacy_loss(a, b, dps=40).value
    with mpmath.workdps(60):
        below = frac(pure - mpmath.mpf(10) ** -20)
        above = frac(pure + mpmath.mpf(10) ** -20)
    low = audit.privacy_profile(a, b, below, dps=20)
    assert low.delta > 0 and not low.exact_zero and low.carriers
    assert audit.privacy_profile(a, b, above).exact_zero
    assert close(audit.epsilon_for_delta(a, b, 0, dps=30).epsilon, pure, 30)


def test_epsilon_minus_a_little_violates_delta():
    a = exactdp.PNFJoint([3, 2, 2, 0], 2, base=HALF)
    b = exactdp.PNFJoint([4, 2, 1, 0], 2, base=HALF)
    d = Fraction(1, 40)
    e = audit.epsilon_for_delta(a, b, d, dps=30).epsilon
    with mpmath.workdps(60):
        smaller, larger = frac(e - mpmath.mpf(10) ** -25), frac(e + mpmath.mpf(10) ** -25)
    with mpmath.workdps(50):  # the delta moves by about 1e-26: compare at 40 digits
        assert audit.privacy_profile(a, b, smaller, dps=40).delta > mp(d)
        assert audit.privacy_profile(a, b, larger, dps=40).delta < mp(d)


def test_epsilon_for_delta_ends():
    P = {0: HALF, 1: Fraction(1, 3), 2: Fraction(1, 6)}
    Q = {0: Fraction(1, 3), 1: Fraction(1, 3), 2: Fraction(1, 3)}
    assert audit.epsilon_for_delta(P, Q, Fraction(1, 6)).epsilon == 0     # delta = TV
    assert audit.epsilon_for_delta(P, Q, 1).epsilon == 0
    r = audit.epsilon_for_delta(P, Q, 0)
    with mpmath.workdps(40):
        assert r.direction == "b>a" and close(r.epsilon, mpmath.log(2), 28)


# ---------------------------------------------------------------------------------------
# bad input

def test_bad_input_names_the_argument():
    P = {0: HALF, 1: HALF}
    with pytest.raises(InvalidParameterError, match="epsilon"):
        audit.privacy_profile(P, P, -1)
    with pytest.raises(InvalidParameterError, match="delta"):
        audit.epsilon_for_delta(P, P, Fraction(-1, 2))
    with pytest.raises(InvalidParameterError, match="alpha"):
        audit.renyi_divergence(P, P, 1)
    with pytest.raises(InvalidParameterError, match="sum to exactly 1"):
        audit.privacy_profile({0: HALF}, P, 0)
    with pytest.raises(InvalidParameterError, match="non-negative"):
        audit.privacy_profile({0: Fraction(3, 2), 1: -HALF}, P, 0)
    with pytest.raises(ArgumentTypeError, match="mapping"):
        audit.privacy_profile([0.5, 0.5], P, 0)
    with pytest.raises(ArgumentTypeError, match="probability of 0"):
        audit.privacy_profile({0: "1/2", 1: HALF}, P, 0)
    with pytest.raises(InvalidParameterError, match="output space"):
        audit.privacy_profile(exactdp.Joint([1, 0], 1, epsilon=1), exactdp.Joint([1, 0, 0], 1, epsilon=1), 0)


def test_bad_input_names_the_argument_as_called():
    """The notions take ``a`` and ``b`` (``privacy_loss`` takes ``mechanism_a``/``_b``), and
    a delta is a probability: past 1 it is refused, like a negative one."""
    P = {0: HALF, 1: HALF}
    j2, j3 = exactdp.Joint([1, 0], 1, epsilon=1), exactdp.Joint([1, 0, 0], 1, epsilon=1)
    for call in (lambda: audit.privacy_profile(j2, j3, 0), lambda: audit.epsilon_for_delta(j2, j3, 0),
                 lambda: audit.renyi_divergence(j2, j3, 2), lambda: audit.zcdp_rho(j2, j3)):
        with pytest.raises(InvalidParameterError, match=r"^b=.*output space of a \(d=2"):
            call()
    with pytest.raises(InvalidParameterError, match=r"^mechanism_b=.*output space of mechanism_a"):
        audit.privacy_loss(j2, j3)
    with pytest.raises(InvalidParameterError, match=r"^delta=2: must satisfy 0 <= delta <= 1"):
        audit.epsilon_for_delta(P, P, 2)
    assert audit.epsilon_for_delta(P, P, 1).epsilon == 0


def test_privacy_loss_of_mappings_against_twins():
    P = brute_probabilities_base([3, 2, 2, 0], 2, HALF)
    Q = brute_probabilities_base([3, 3, 2, 0], 2, HALF)
    a, b = exactdp.Joint([3, 2, 2, 0], 2, base=HALF), exactdp.Joint([3, 3, 2, 0], 2, base=HALF)
    want = audit.privacy_loss(a, b, dps=30)
    for x, y in ((P, Q), (a, Q), (P, b)):
        got = audit.privacy_loss(x, y, dps=30)
        assert close(got.value, pure_loss_brute(P, Q), 30) and close(got.value, want.value, 28)
        assert got.direction == want.direction and P[got.witness] < Q[got.witness]
    same = audit.privacy_loss(a, P)
    assert same.exact_zero and same.value == 0 and same.direction == "equal"
    assert audit.privacy_loss({"x": HALF, "y": HALF}, {"x": Fraction(1)}).value == mpmath.inf


def test_delta_equal_to_the_mass_where_q_is_zero():
    """delta equals P(Q = 0) exactly: the answer is the largest log-ratio, certified with
    the exact mass (found by hypothesis)."""
    P = {3: Fraction(1, 4), 4: Fraction(1, 4), 5: HALF}
    Q = {2: Fraction(1, 5), 3: Fraction(2, 15), 4: Fraction(1, 3), 5: Fraction(1, 3)}
    got = audit.epsilon_for_delta(P, Q, Fraction(1, 5), dps=25)
    assert got.direction == "b>a" and close(got.epsilon, epsilon_for_delta_brute(P, Q, Fraction(1, 5)), 25)
    with mpmath.workdps(40):
        assert close(got.epsilon, mpmath.log(mpmath.mpf(4) / 3), 25)


def test_delta_equal_to_the_total_variation_is_epsilon_zero():
    """delta equals delta(0), the total variation, exactly: epsilon is 0, decided with the
    exact values (the balls of P - Q and of delta overlap at every precision; found by a
    search over small mappings, it raised PrecisionError)."""
    P = {0: Fraction(1)}
    Q = {0: Fraction(5, 17), 1: Fraction(5, 17), 2: Fraction(7, 17)}
    assert total_variation_exact(P, Q) == Fraction(12, 17)
    for x, y in ((P, Q), (Q, P)):
        for dps in (10, 30):
            assert audit.epsilon_for_delta(x, y, Fraction(12, 17), dps=dps).epsilon == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping_pairs(), st.integers(-1, 1))
def test_epsilon_for_delta_at_the_breakpoints_of_the_profile(pq, shift):
    """delta at a breakpoint of the profile, ``sum max(0, P - r Q)`` for a ratio ``r = P/Q``
    of some output (and 2**-100 either side): the exact breakpoints where balls cannot
    decide which piece the answer is on."""
    P, Q = pq
    for A, B in ((P, Q), (Q, P)):
        for o in A:
            if A[o] and B.get(o):
                r = A[o] / B[o]
                d = sum((max(Fraction(0), A[x] - r * B.get(x, 0)) for x in A), Fraction(0))
                d = max(Fraction(0), d + shift * Fraction(1, 2**100))
                assert close(audit.epsilon_for_delta(P, Q, d, dps=20).epsilon, epsilon_for_delta_brute(P, Q, d), 20)


@pytest.mark.parametrize("counts_a, counts_b, k", [([3, 2, 2, 0], [3, 3, 2, 0], 2), ([5, 1, 0], [4, 1, 1], 1),
                                                   ([2, 2, 2], [2, 3, 2], 3)])
def test_irrational_probabilities_against_mpmath_enumeration(counts_a, counts_b, k):
    """epsilon = 1: transcendental probabilities, compared with every sequence enumerated
    at 60 digits (twins.mp_probabilities_eps)."""
    from twins import mp_probabilities_eps
    a, b = exactdp.Joint(counts_a, k, epsilon=1), exactdp.Joint(counts_b, k, epsilon=1)
    P = mp_probabilities_eps(counts_a, k, Fraction(1), 60)
    Q = mp_probabilities_eps(counts_b, k, Fraction(1), 60)
    with mpmath.workdps(60):
        g = mpmath.exp(mpmath.mpf(1) / 3)
        want = max(mpmath.fsum(max(0, x[o] - g * y[o]) for o in P) for x, y in ((P, Q), (Q, P)))
        ren = mpmath.log(mpmath.fsum(P[o] ** 3 / Q[o] ** 2 for o in P)) / 2
        assert close(audit.privacy_profile(a, b, Fraction(1, 3), dps=40).delta, want, 40)
        assert close(audit.renyi_divergence(a, b, 3, dps=40), ren, 40)
        e = audit.epsilon_for_delta(a, b, Fraction(1, 100), dps=40).epsilon
        for sign in (-1, 1):
            x = mpmath.exp(e + sign * mpmath.mpf(10) ** -30)
            at = max(mpmath.fsum(max(0, p[o] - x * q[o]) for o in P) for p, q in ((P, Q), (Q, P)))
            assert (at > mpmath.mpf(1) / 100) == (sign < 0)


def test_a_mechanism_against_a_mapping_is_refused_past_max_outputs():
    m = exactdp.Joint([3, 2, 1, 0], 2, epsilon=1)
    with pytest.raises(InvalidParameterError, match="max_outputs"):
        audit.privacy_profile(m, {(0, 1): 1}, 0, max_outputs=5)


def test_identity_is_refuted_by_enclosures_before_any_symbolic_work(monkeypatch):
    """Distributions that differ are told apart by their balls; sympy is never asked (it
    could take hours on a sum over many levels), and a divergence too small for the
    per-cell computation is a clear PrecisionError stating its magnitude bound (the
    per-delta computation, tested in engine/test_cells.py, certifies it)."""
    from exactdp._oracle import cells as _cells
    from exactdp._oracle.engines import exponential as _exponential
    from exactdp._oracle.notions import basics as _notion_basics
    from exactdp.errors import PrecisionError

    asked = []
    real_exact = _cells.Pair.exact

    def recording_exact(self, cell):
        asked.append(cell)
        return real_exact(self, cell)

    monkeypatch.setattr(_cells.Pair, "exact", recording_exact)
    c = [int(10**5 / r**1.1) for r in range(1, 31)]
    n = list(c)
    n[3] += 1
    a, b = exactdp.Joint(c, 3, epsilon=1), exactdp.Joint(n, 3, epsilon=1)
    assert not _notion_basics.identical_laws(_cells.pair_cells(a, b, 30, 10**6))
    monkeypatch.setattr(_exponential.ExponentialPair, "of", classmethod(lambda cls, *args: None))
    with pytest.raises(PrecisionError, match=r"D_2 <= 1e-399, so small .* needs more than 215 digits"):
        audit.renyi_divergence(a, b, 2, dps=30)
    assert asked == []
    # negative control: equal distributions are not refuted by balls, so an exact check
    # runs: for shifted counts the level tables prove it (no sympy either) ...
    shifted = exactdp.Joint([x + 1 for x in c], 3, epsilon=1)
    assert _notion_basics.identical_laws(_cells.pair_cells(a, shifted, 30, 10**6))
    assert asked == []
    # ... and against a mapping the exact probabilities do
    small = exactdp.Joint([3, 1, 0], 2, base=HALF)
    table = {o: Fraction(int(p.p), int(p.q)) for o in small.outputs() for p in [small.probability_exact(o)]}
    assert _notion_basics.identical_laws(_cells.pair_cells(small, table, 30, 10**6))
    assert asked


@pytest.mark.slow
def test_proven_zero_is_the_one_bounded_symbolic_equality(monkeypatch):
    """Small differences are simplified (exp(1)*exp(-2) - exp(-1) is 0); a sum over many
    terms is left undecided without calling sympy.simplify at all."""
    import sympy

    from exactdp._oracle.notions import basics as _notion_basics

    x = sympy.Symbol("x", positive=True)
    assert _notion_basics.proven_zero(sympy.exp(1) * sympy.exp(-2) - sympy.exp(-1)) is True
    assert _notion_basics.proven_zero(sympy.exp(-1) - sympy.Rational(1, 3)) is None
    big = sum(sympy.exp(-x * i) for i in range(1, 400)) - sum(sympy.exp(-x * i) for i in range(1, 399)) - sympy.exp(-399 * x)
    monkeypatch.setattr(sympy, "simplify", lambda e: (_ for _ in ()).throw(AssertionError("simplify called")))
    assert _notion_basics.proven_zero(big) in (True, None)  # auto-cancelled to 0, or undecided: never simplified
    assert _notion_basics.proven_zero(sum(sympy.exp(-x * i) for i in range(1, 400)) - 1) is None


def test_profile_precision_error_states_a_proven_bound(monkeypatch):
    """When delta(eps) is 0 in truth because a cell attains eps exactly, and neither the
    per-delta route nor the exact values can decide it (forced here, as for PNFJoint at
    scale), the error states a proven upper bound per direction and the undecided cells."""
    import re
    from fractions import Fraction

    import exactdp._oracle.notions.profile as notions
    from exactdp import errors

    a = exactdp.Joint([3, 1, 0], 2, epsilon=1)
    b = exactdp.Joint([3, 2, 0], 2, epsilon=1)
    assert abs(audit.privacy_loss(a, b, dps=20).value - mpmath.mpf(1) / 2) < 1e-15  # attained by some cell
    monkeypatch.setattr(notions, "_profile_by_delta", lambda *args: None)
    assert audit.privacy_profile(a, b, Fraction(1, 2), dps=10).delta == 0  # decided exactly
    monkeypatch.setattr(notions, "exact_equal", lambda *args: False)
    with pytest.raises(errors.PrecisionError) as info:
        audit.privacy_profile(a, b, Fraction(1, 2), dps=10)
    text = str(info.value)
    bounds = re.findall(r"delta_(a>b|b>a)\(1/2\) <= 1e(-?\d+) \(proven\)", text)
    assert {d for d, _ in bounds} == {"a>b", "b>a"}
    assert all(int(e) <= -100 for _, e in bounds)  # far below any delta a claim would state
    assert "1 cell with P within" in text and "neither proved equal nor different" in text


@pytest.mark.parametrize("a, b, eps, carried", [
    # (0, 2, 1) has P = Q = 1/6 exactly: its ball straddles 0 at eps = 0, but it carries nothing
    (exactdp.Peeling([1, 1, 2], 3, base=HALF), exactdp.Peeling([1, 1, 1], 3, base=HALF), 0, 2),
    # item 1 keeps its probability (the normalisers are equal by symmetry): irrational, proved equal by sympy
    (exactdp.Joint([2, 4, 3], 1, epsilon=5), exactdp.Joint([3, 4, 2], 1, epsilon=5), 0, 1),
])
def test_profile_carriers_leave_out_cells_with_p_equal_to_e_eps_q(a, b, eps, carried):
    """A cell with ``P = e^eps Q`` exactly adds 0 to delta and is no carrier, even when the
    other cells already certify the value (it was listed when its ball merely contained 0)."""
    prof = audit.privacy_profile(a, b, eps, dps=20)
    p, q = (a, b) if prof.direction == "a>b" else (b, a)
    growth = sympy.exp(sympy.Integer(eps))
    carrying = [o for o in a.outputs() if sympy.N(p.probability_exact(o) - growth * q.probability_exact(o), 50) > 0]
    assert sum(n for _, n in prof.carriers) == len(carrying) == carried
    assert all(output in carrying for output, _ in prof.carriers)


@pytest.mark.slow
def test_exact_equality_of_high_degree_exponentials_is_left_undecided():
    """delta(0) between Joint at counts 100000,5,1 and 100001,5,1 sends the cells the balls
    cannot separate to sympy, whose simplify turned ``exp(-99995/4)`` into a polynomial of
    degree 99995 and aborted the whole process in GMP ("overflow in mpz type"; counts near
    1000 took a minute).  Such equalities are now left undecided (the audit then raises
    PrecisionError with its proven bound, or certifies the value another way), in a process
    that survives (run apart, so a regression cannot take the test session down)."""
    import subprocess
    import sys
    code = ("import exactdp\n"
            "from exactdp import audit\n"
            "from exactdp.errors import PrecisionError\n"
            "a = exactdp.Joint([100000, 5, 1], 2, epsilon='1/2')\n"
            "b = exactdp.Joint([100001, 5, 1], 2, epsilon='1/2')\n"
            "try:\n"
            "    print(audit.privacy_profile(a, b, 0, dps=5).delta > 0)\n"
            "except PrecisionError as e:\n"
            "    print('proven' in str(e))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == ["True"]
    from exactdp._oracle.notions.basics import _exp_degree, proven_zero
    e = sympy.exp(-sympy.Rational(1, 4))
    big = sympy.exp(-sympy.Rational(99995, 4))
    x = big / (1 + e) - big
    assert _exp_degree(x) == 99995 and proven_zero(x) is None
    small = (sympy.exp(-sympy.Rational(1, 2)) - 1) / (e - 1) - (e + 1)
    assert small != 0 and _exp_degree(small) == 2 and proven_zero(small) is True


def test_epsilon_for_delta_zero_with_a_tiny_direction():
    """epsilon_for_delta(a, b, 0) is the pure loss per direction, ``max(0, max_o ln(P/Q))``.
    Joint at counts 1000,1 and 1001,1 (k = 1): one direction's largest log-ratio is
    ``ln(Z_b / Z_a)``, about ``-e^(-500)``, which the prefix search could not certify at any
    precision it tried (PrecisionError "at or near a breakpoint") while privacy_loss gave
    1/2.  With ``x = e^(-1/2)`` and ``s = log1p(x^999 (1 - x) / (1 + x^1000))``:
    ``epsilon_a>b = 1/2 - s`` and ``epsilon_b>a = s``."""
    a, b = exactdp.Joint([1000, 1], 1, epsilon=1), exactdp.Joint([1001, 1], 1, epsilon=1)
    with mpmath.workdps(60):
        x = mpmath.exp(-mpmath.mpf(1) / 2)
        s = mpmath.log1p(x**999 * (1 - x) / (1 + x**1000))
        e = audit.epsilon_for_delta(a, b, 0, dps=30)
        assert e.direction == "a>b"
        for got, want in ((e.epsilon_a_b, mpmath.mpf(1) / 2 - s), (e.epsilon_b_a, s)):
            assert abs(got - want) <= mpmath.mpf(10) ** -30 * want


def test_shifted_counts_under_permute_and_flip_are_one_law():
    """PNFJoint at counts shifted by a constant has the same level table up to the shift,
    so the same law: every notion is an exact 0.  The permute-and-flip sum of
    exponentials has degree about 4 * 10^6 here (no closed form within its limits), and
    P and Q agree to every digit the balls have: before the tables were compared,
    privacy_loss and privacy_profile raised PrecisionError and epsilon_for_delta leaked
    the NoClosedFormError of probability_exact."""
    a = exactdp.PNFJoint([10**6, 3, 2], 2, epsilon=1)
    b = exactdp.PNFJoint([10**6 + 7, 10, 9], 2, epsilon=1)
    loss = audit.privacy_loss(a, b)
    assert loss.value == 0 and loss.exact_zero
    assert audit.privacy_profile(a, b, 0).delta == 0
    assert audit.epsilon_for_delta(a, b, 0).epsilon == 0
    assert audit.renyi_divergence(a, b, 2) == 0
    z = audit.zcdp_rho(a, b)
    assert z.lower == z.upper == 0
    # the same tables with another epsilon, and the same counts under the other rule, are
    # not one law: the loss is positive (the comparison can fail)
    c = exactdp.PNFJoint([10**6 + 7, 10, 9], 2, epsilon=2)
    assert audit.privacy_loss(a, c).value > 0


@pytest.mark.slow
def test_one_law_up_to_a_shift_against_the_exact_probabilities():
    """``Groups.same_law_as`` (a level table equal up to a shift of the utilities, one rule,
    one lam) against the twin: wherever it says so, the exact probabilities of every
    output agree on both sides (PNFJoint and Joint with a rational base, every pair of
    count vectors in {0..3}^d, d <= 3, shifted by 0..2, every k); and it says so for
    every shifted pair (the check is not vacuous) and for no pair of different laws."""
    from exactdp._oracle.groups import Groups
    said = 0
    for name, make, brute in MECHANISMS[:2]:
        for counts in SMALL:
            for k in range(1, len(counts) + 1):
                P = brute(list(counts), k)
                for other in SMALL:
                    if len(other) != len(counts) or other < counts:
                        continue
                    same = Groups(make(list(counts), k), 5).same_law_as(Groups(make(list(other), k), 5))
                    Q = brute(list(other), k)
                    shifted = len({o - c for o, c in zip(other, counts)}) == 1
                    if shifted:
                        assert same, (name, counts, other, k)
                    if same:
                        said += 1
                        # one law on the diagonal cells: the outputs whose levels have one index
                        a, b = make(list(counts), k), make(list(other), k)
                        for o in P:
                            if a.group_index(o) == b.group_index(o):
                                assert P[o] == Q[o], (name, counts, other, k, o)
                    if P != Q:
                        assert not (same and all(make(list(counts), k).group_index(o)
                                                 == make(list(other), k).group_index(o) for o in P))
    assert said > 100


def test_epsilon_for_delta_of_a_pair_equal_to_every_digit_says_so(monkeypatch, request):
    """PNFJoint at 10^6,3,2,0 and 10^6+1,3,2,0: one direction's delta(0) is far below
    anything the balls resolve (P and Q agree to hundreds of digits in three cells).  The
    other direction is 1/2, certified, and the first is proven below it: the maximum is
    decided (with the level tables' enclosure and without).  Where the maximum is not
    decided (forced here), the level tables prove every sign and the error states each
    direction's proven bracket; without them (any other pair), the error states the proven
    bound and the undecided cells; never "a breakpoint of the profile"."""
    from exactdp._oracle import cells as _cells
    from exactdp._oracle.engines import exponential as _exponential
    from exactdp.errors import PrecisionError
    a = exactdp.PNFJoint([10**6, 3, 2, 0], 2, epsilon=1)
    b = exactdp.PNFJoint([10**6 + 1, 3, 2, 0], 2, epsilon=1)
    for enclosure in (True, False):
        with monkeypatch.context() as patch:
            if not enclosure:
                patch.setattr(_cells.Pair, "has_log_ratio_enclosure", lambda self: False)
            e = audit.epsilon_for_delta(a, b, 0)
            assert (e.direction, e.undecided, e.epsilon_b_a) == ("a>b", "b>a", None)
            assert abs(e.epsilon - mpmath.mpf(1) / 2) <= mpmath.mpf(10) ** -30 and e.undecided_at_most < 1e-150
    request.getfixturevalue("every_direction_certified")  # a maximum decided only when every direction is certified
    with pytest.raises(PrecisionError) as e:
        audit.epsilon_for_delta(a, b, 0)
    text = str(e.value)
    assert "breakpoint" not in text and "epsilon_b>a(0) in [" in text and "prove the sign" in text, text
    monkeypatch.setattr(_cells.Pair, "has_log_ratio_enclosure", lambda self: False)
    with pytest.raises(PrecisionError) as e:
        audit.epsilon_for_delta(a, b, 0)
    text = str(e.value)
    assert "breakpoint" not in text and "(0) <= 1e-" in text and "neither proved equal nor different" in text
