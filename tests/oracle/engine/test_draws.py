"""exactdp._oracle.draws (exported by exactdp.audit): the lower bound on a sampler's epsilon from its
draws.  The certified Clopper-Pearson bounds against exact binomial sums in Fractions, the
planned event against a brute-force enumeration of every output's exact loss, the coverage by
simulation with exact draws (and a naive bound that must fail it), the verdicts, the draws
needed, and the errors."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit, testing
from exactdp._oracle.clopper_pearson import clopper_pearson
from exactdp._oracle.draws import ceil_text, floor_text
from exactdp._oracle.events import _planned
from exactdp.core.precision import mpf_fraction as as_fraction
from exactdp.certify.tail import binomial_sf
from exactdp.errors import ArgumentTypeError, InvalidOutputError, InvalidParameterError

A = exactdp.Joint([6, 5, 3, 0], 2, epsilon=1)
B = exactdp.Joint([7, 5, 3, 0], 2, epsilon=1)


# ---------------------------------------------------------------------------------------
# Clopper-Pearson, against exact binomial sums


def binomial_at_least(x, n, p):
    """P(Binomial(n, p) >= x), exactly (p a Fraction)."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(x, n + 1))


def check_cp(x, n, alpha):
    low, up = clopper_pearson(x, n, alpha, "lower"), clopper_pearson(x, n, alpha, "upper")
    assert 0 <= low <= Fraction(x, n) <= up <= 1
    if x == 0:
        assert low == 0
    else:  # outward: the tail at low is below alpha, and just above low (1 + 2**-40) it is not
        assert binomial_at_least(x, n, low) < alpha
        assert binomial_at_least(x, n, min(Fraction(1), low * (1 + Fraction(1, 2**40)))) > alpha
    if x == n:
        assert up == 1
    else:
        assert 1 - binomial_at_least(x + 1, n, up) < alpha
        assert 1 - binomial_at_least(x + 1, n, up * (1 - Fraction(1, 2**40))) > alpha


@pytest.mark.parametrize("alpha", [Fraction(1, 40), Fraction(1, 4)])
def test_clopper_pearson_exhaustive_small(alpha):
    for n in range(1, 9):
        for x in range(n + 1):
            check_cp(x, n, alpha)


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
       st.sampled_from([Fraction(1, 40), Fraction(1, 20), Fraction(1, 3)]))
def test_clopper_pearson_random(nx, alpha):
    check_cp(nx[1], nx[0], alpha)


def test_clopper_pearson_large_n_against_certified_tail():
    n, x, alpha = 20_000, 7_423, Fraction(1, 40)
    low = clopper_pearson(x, n, alpha, "lower")
    level = mpmath.mpf(1) / 40
    assert binomial_sf(x, n, low, dps=30) < level < binomial_sf(x, n, low * (1 + Fraction(1, 2**40)), dps=30)


def test_bound_from_counts_is_ln_of_the_two_ends():
    eps, delta = audit.lower_bound_from_counts(9_000, 1_000, 20_000, Fraction(19, 20), epsilon=1)
    low = clopper_pearson(9_000, 20_000, Fraction(1, 40), "lower")
    up = clopper_pearson(1_000, 20_000, Fraction(1, 40), "upper")
    with mpmath.workdps(50):
        exact = mpmath.log(mpmath.mpf(low.numerator) / low.denominator / (mpmath.mpf(up.numerator) / up.denominator))
        eps_m, delta_m = eps, delta
        assert exact - mpmath.mpf(10) ** -30 < eps_m <= exact
        d = mpmath.mpf(low.numerator) / low.denominator - mpmath.e * up.numerator / up.denominator
        assert d - mpmath.mpf(10) ** -30 < delta_m <= d
    assert audit.lower_bound_from_counts(10, 900, 1000) == (0, None)  # clipped at 0


def test_planning_score_at_integer_counts_is_the_bound():
    """The planning score continues lower_bound_from_counts to real counts: at integer
    expected counts it is that bound to its 26 bits."""
    from flint import arb

    for n, x_a, x_b in ((20_000, 9_000, 1_000), (500, 40, 3), (100, 100, 0)):
        score = _planned(arb(x_a) / n, arb(x_b) / n, n, Fraction(1, 20), None)
        bound, _ = audit.lower_bound_from_counts(x_a, x_b, n)
        assert abs(score - as_fraction(bound)) < Fraction(1, 2**18)


def test_directed_text():
    assert floor_text(Fraction(2, 3), 3) == "0.666" and ceil_text(Fraction(2, 3), 3) == "0.667"
    assert floor_text(Fraction(-2, 3), 3) == "-0.667" and ceil_text(Fraction(123456), 3) == "124000"
    for q in (Fraction(1, 7), Fraction(22, 7), Fraction(10**20, 3), Fraction(1, 3 * 10**20)):
        assert Fraction(floor_text(q, 5)) <= q <= Fraction(ceil_text(q, 5))


# ---------------------------------------------------------------------------------------
# the planned event, against every output's exact loss


def brute_events(a, b, dps=40):
    """Every super-level set of ln P_a/P_b (both directions) by enumeration, with its masses."""
    with mpmath.workdps(dps):
        rows = [(o, a.probability(o, dps=dps), b.probability(o, dps=dps)) for o in a.outputs()]
        out = []
        for sign in (1, -1):
            ratio = {o: sign * (mpmath.log(p) - mpmath.log(q)) for o, p, q in rows}
            levels = sorted({mpmath.nstr(r, 25) for r in ratio.values()}, key=lambda s: -mpmath.mpf(s))
            for t in levels[:-1]:
                event = {o for o in ratio if ratio[o] >= mpmath.mpf(t) - mpmath.mpf(10) ** -20}
                pa = sum(p for o, p, _ in rows if o in event)
                pb = sum(q for o, _, q in rows if o in event)
                out.append((sign, frozenset(event), pa, pb))
        return out


def wilson_screen(sign, pa, pb, n, alpha=Fraction(1, 20)):
    """Wilson's score interval (Wilson, JASA 1927) at 1 - alpha/2 per side: ln(lower / upper)."""
    first, second = (pa, pb) if sign > 0 else (pb, pa)
    with mpmath.workdps(30):
        z = mpmath.sqrt(2) * mpmath.erfinv(1 - mpmath.mpf(alpha.numerator) / alpha.denominator)
        ends = []
        for p, side in ((first, -1), (second, 1)):
            centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
            half = z / (1 + z**2 / n) * mpmath.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
            ends.append(min(max(centre + side * half, 0), 1))
        return mpmath.log(ends[0] / ends[1]) if ends[0] > 0 else -mpmath.inf


def best_planned(candidates, n):
    """The rule, from its definition: the 4 best by the Wilson screen, then the largest
    planned Clopper-Pearson bound among them."""
    from flint import arb

    def planned(sign, pa, pb):
        first, second = (pa, pb) if sign > 0 else (pb, pa)
        return _planned(arb(str(first)), arb(str(second)), n, Fraction(1, 20), None)

    screened = sorted(candidates, key=lambda c: -wilson_screen(c[0], c[2], c[3], n))[:4]
    return max(planned(s, x, y) for s, _, x, y in screened)


PAIRS = [
    (A, B),
    (exactdp.Joint([3, 2, 2, 0], 2, epsilon=1), exactdp.Joint([3, 3, 2, 0], 2, epsilon=1)),
    (exactdp.PNFJoint([3, 1, 0], 2, epsilon=1), exactdp.PNFJoint([4, 1, 1], 2, epsilon=1)),
    (exactdp.JointSet([3, 2, 1, 0], 2, epsilon=1), exactdp.JointSet([3, 3, 1, 0], 2, epsilon=1)),
    (exactdp.Joint([2, 1, 0], 1, epsilon=2), exactdp.Joint([2, 0, 0], 1, epsilon=2)),
]


@pytest.mark.parametrize("pair", range(len(PAIRS)))
@pytest.mark.parametrize("n", [50, 2_000])
def test_planned_event_is_the_best_super_level_set(pair, n):
    a, b = PAIRS[pair]
    e = audit.plan_event(a, b, n)
    members = frozenset(o for o in a.outputs() if (a.group_index(o), b.group_index(o)) in e.cells)
    assert len(members) == e.outputs
    candidates = brute_events(a, b)
    mine = [c for c in candidates if c[1] == members and c[0] == (1 if e.direction == "a>b" else -1)]
    assert mine, "the event is not a super-level set of the loss in its direction"
    _, _, pa, pb = mine[0]
    assert abs(pa - e.p_a) <= 1e-25 and abs(pb - e.p_b) <= 1e-25
    assert abs(e.planned - best_planned(candidates, n)) <= Fraction(1, 10**5)
    assert abs(e.model_loss - audit.privacy_loss(a, b).value) < 1e-20


def check_planned_event(a, b, n):
    e = audit.plan_event(a, b, n)
    members = frozenset(o for o in a.outputs() if (a.group_index(o), b.group_index(o)) in e.cells)
    candidates = brute_events(a, b)
    sign = 1 if e.direction == "a>b" else -1
    mine = [c for c in candidates if c[1] == members and c[0] == sign]
    if not candidates:  # equal laws: the whole space, planned 0
        assert e.planned == 0 and e.outputs == len(list(a.outputs()))
        return
    assert mine, "the event is not a super-level set of the loss in its direction"
    assert abs(e.planned - best_planned(candidates, n)) <= Fraction(1, 10**5)


@settings(max_examples=8, deadline=None)
@given(testing.neighbour_pairs("swap", 2, 4, 0, 4), st.sampled_from([1, 2]), st.sampled_from([30, 3000]),
       st.sampled_from(["Joint", "PNFJoint"]))
def test_planned_event_random_pairs(pair, k, n, kind):
    counts, neighbour = pair
    k = min(k, len(counts))
    cls = getattr(exactdp, kind)
    check_planned_event(cls(list(counts), k, epsilon=1), cls(list(neighbour), k, epsilon=1), n)


def test_delta_event_is_the_delta_carrying_set():
    e = audit.plan_event(A, B, 20_000, epsilon=Fraction(1, 10))
    profile = audit.privacy_profile(A, B, Fraction(1, 10))
    first, second = (e.p_a, e.p_b) if e.direction == "a>b" else (e.p_b, e.p_a)
    with mpmath.workdps(40):
        delta = first - mpmath.exp(mpmath.mpf(1) / 10) * second
        assert abs(delta - max(profile.delta_a_b, profile.delta_b_a)) < 1e-25


# ---------------------------------------------------------------------------------------
# coverage by simulation, exact draws


def exceedances(bound, n, runs, seed, confidence, epsilon=None):
    """Runs (of ``runs``, each n exact draws per side of A and B) whose bound exceeds the
    event's true ln(P_a(E)/P_b(E)) (with ``epsilon``: its P_a(E) - e^epsilon P_b(E), in the
    event's direction); the truth here: exactdp's own samplers."""
    e = audit.plan_event(A, B, n, confidence, epsilon)
    if epsilon is None:
        truth = e.event_epsilon
    else:
        first, second = (e.p_a, e.p_b) if e.direction == "a>b" else (e.p_b, e.p_a)
        truth = first - mpmath.exp(mpmath.mpf(epsilon.numerator) / epsilon.denominator) * second
    draws_a = A.samples(n * runs, rng=seed)
    draws_b = B.samples(n * runs, rng=seed + 1)

    def inside(o, m):
        return (A.group_index(o), B.group_index(o)) in e.cells

    hits_a = [inside(o, A) for o in draws_a]
    hits_b = [inside(o, B) for o in draws_b]
    over = 0
    for r in range(runs):
        x_a, x_b = sum(hits_a[r * n:(r + 1) * n]), sum(hits_b[r * n:(r + 1) * n])
        first, second = (x_a, x_b) if e.direction == "a>b" else (x_b, x_a)
        over += bound(first, second, n, confidence, epsilon) > truth
    return over


def cp_bound(first, second, n, confidence, epsilon=None):
    eps, delta = audit.lower_bound_from_counts(first, second, n, confidence, epsilon)
    return eps if epsilon is None else delta


def naive_bound(first, second, n, confidence, epsilon=None):
    if epsilon is not None:
        return max(0, first / n - math.exp(epsilon) * second / n)
    return Fraction(0) if first == 0 or second == 0 else max(0, math.log(first / second))


def too_many(over, runs, rate, false_alarm=Fraction(1, 10**4)):
    """Whether ``over`` exceedances in ``runs`` reject "rate <= ``rate``" at ``false_alarm``:
    P(Binomial(runs, rate) >= over) < false_alarm (exact)."""
    return binomial_at_least(over, runs, rate) < false_alarm


@pytest.mark.slow
def test_coverage_by_simulation():
    """The bound exceeds the truth in at most 1 - confidence of runs: with 300 runs the
    count of exceedances is tested against Binomial(300, 1/10) at a false-alarm rate of
    1e-4; the naive ln(x_a/x_b) exceeds the truth in about half the runs and is caught."""
    confidence, runs, n = Fraction(9, 10), 300, 200
    over = exceedances(cp_bound, n, runs, 5, confidence)
    assert not too_many(over, runs, 1 - confidence), over
    naive = exceedances(naive_bound, n, runs, 5, confidence)
    assert too_many(naive, runs, 1 - confidence), naive


@pytest.mark.slow
def test_delta_coverage_by_simulation():
    """The same for delta at epsilon 1/10 on the delta-carrying set."""
    confidence, runs, n, eps = Fraction(9, 10), 300, 200, Fraction(1, 10)
    over = exceedances(cp_bound, n, runs, 7, confidence, eps)
    assert not too_many(over, runs, 1 - confidence), over
    naive = exceedances(naive_bound, n, runs, 7, confidence, eps)
    assert too_many(naive, runs, 1 - confidence), naive


def test_coverage_check_can_fail():
    assert too_many(60, 300, Fraction(1, 10)) and not too_many(35, 300, Fraction(1, 10))


# ---------------------------------------------------------------------------------------
# end to end


def test_own_sampler_bound_stays_below_the_exact_loss():
    r = audit.lower_bound_from_draws(A, B, A, B, 20_000, rng=3)
    assert r.verdict == "no evidence" and r.passed
    assert 0 < r.epsilon_lower <= audit.privacy_loss(A, B).value
    assert r.n_needed is not None and r.count_a + r.count_b > 0
    with pytest.raises(TypeError, match="passed or .verdict"):
        bool(r)


def test_three_times_the_claim_is_violated_at_20000():
    spender_a, spender_b = exactdp.Joint([6, 5, 3, 0], 2, epsilon=3), exactdp.Joint([7, 5, 3, 0], 2, epsilon=3)
    r = audit.lower_bound_from_draws(spender_a, spender_b, A, B, 20_000, rng=1)
    assert r.verdict == "violated" and not r.passed and r.epsilon_lower > 1 and r.n_needed is None
    same = audit.lower_bound_from_draws(spender_a, spender_b, A, B, 20_000, rng=1)
    assert (same.count_a, same.count_b, same.epsilon_lower) == (r.count_a, r.count_b, r.epsilon_lower)


def test_delta_mode():
    r = audit.lower_bound_from_draws(A, B, A, B, 20_000, rng=2, epsilon=Fraction(1, 10))
    assert r.delta_lower is not None and r.epsilon == Fraction(1, 10)
    profile = audit.privacy_profile(A, B, Fraction(1, 10))
    assert r.delta_lower <= max(profile.delta_a_b, profile.delta_b_a)
    assert r.verdict == "violated"  # a claimed delta 0 at epsilon 1/10 < the loss
    ok = audit.lower_bound_from_draws(A, B, A, B, 2_000, rng=2, epsilon=Fraction(1, 10), claim=Fraction(1, 2))
    assert ok.verdict == "no evidence"


def test_draws_to_detect_is_the_least_n_caught():
    """At the n returned, the reported bound at the counts floor(n q_1), ceil(n q_2) (each
    sampler's count reaches that far with probability >= 1/2) exceeds the claim; at 97% of
    it, it does not."""
    e = audit.plan_event(A, B, 1000)
    n = audit.draws_to_detect(e, 1, 1)
    p = e.p_a if e.direction == "a>b" else e.p_b
    with mpmath.workdps(50):
        q_1, q_2 = p, p * mpmath.exp(-2)

        def bound(m):
            x_1, x_2 = int(mpmath.floor(m * q_1)), int(mpmath.ceil(m * q_2))
            return audit.lower_bound_from_counts(x_1, x_2, m)[0]

        assert bound(n) > 1 and bound(n * 97 // 100) <= 1
    assert audit.draws_to_detect(e, 1, Fraction(1, 2)) > n


def test_labels_and_callables():
    def labelled(counts, rng):
        return [("x", "y", "z", "w")[i] for i in exactdp.Joint(counts, 2, epsilon=1).sample(rng=int(rng.integers(9)))]

    r = audit.lower_bound_from_draws(labelled, labelled, A, B, 300, rng=1, data_a=[6, 5, 3, 0], data_b=[7, 5, 3, 0],
                                     id_map={"x": 0, "y": 1, "z": 2, "w": 3})
    assert r.n == 300 and 0 <= r.count_a <= 300


# ---------------------------------------------------------------------------------------
# errors


def test_errors():
    with pytest.raises(InvalidParameterError, match="n=0"):
        audit.lower_bound_from_draws(A, B, A, B, 0)
    for c in (0, 1, "1.5", -1):
        with pytest.raises(InvalidParameterError, match="confidence"):
            audit.lower_bound_from_draws(A, B, A, B, 10, confidence=c)
    with pytest.raises(ArgumentTypeError, match="exactdp mechanism"):
        audit.lower_bound_from_draws(A, B, {(0, 1): 1}, B, 10)
    with pytest.raises(InvalidOutputError, match=r"sampler_b.*draw 1 .*sequences of k = 2 distinct item ids in 0\.\.3"):
        audit.lower_bound_from_draws(A, lambda: [0, 0], A, B, 10, rng=1)
    with pytest.raises(InvalidOutputError, match=r"sampler_a.*draw 1 "):
        audit.lower_bound_from_draws(lambda: [0, 7], B, A, B, 10, rng=1)
    with pytest.raises(InvalidParameterError, match="count"):
        clopper_pearson(5, 4, Fraction(1, 10), "lower")
    with pytest.raises(InvalidParameterError, match="alpha"):
        clopper_pearson(1, 4, 1, "lower")
