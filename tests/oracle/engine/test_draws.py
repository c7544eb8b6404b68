"""exactdp._oracle.draws (exported by exactdp.audit): the lower bound on a sampler's epsilon from its
draws.  The directed decimal text, the coverage by simulation with exact draws (and a naive
bound that must fail it), the verdicts end to end, and the errors.  The Clopper-Pearson
bounds and the planned event have their own files (test_clopper_pearson.py, test_events.py)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import audit
from exactdp._oracle.draws import ceil_text, floor_text
from exactdp.errors import ArgumentTypeError, InvalidOutputError, InvalidParameterError

from tests.oracle.engine.test_clopper_pearson import binomial_at_least

A = exactdp.Joint([6, 5, 3, 0], 2, epsilon=1)
B = exactdp.Joint([7, 5, 3, 0], 2, epsilon=1)


def test_directed_text():
    assert floor_text(Fraction(2, 3), 3) == "0.666" and ceil_text(Fraction(2, 3), 3) == "0.667"
    assert floor_text(Fraction(-2, 3), 3) == "-0.667" and ceil_text(Fraction(123456), 3) == "124000"
    for q in (Fraction(1, 7), Fraction(22, 7), Fraction(10**20, 3), Fraction(1, 3 * 10**20)):
        assert Fraction(floor_text(q, 5)) <= q <= Fraction(ceil_text(q, 5))


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
