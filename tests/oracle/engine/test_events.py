"""exactdp._oracle.events (exported by exactdp.audit): the event of a draws audit.  The
planned event against a brute-force enumeration of every super-level set of the exact loss
(screened by Wilson's score interval, then the largest planned Clopper-Pearson bound), the
delta-carrying set, the planning score against the bound at integer counts, and the least
number of draws that catches a sampler spending more than its claim."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit, testing
from exactdp._oracle.events import _planned
from exactdp.core.precision import mpf_fraction as as_fraction

A = exactdp.Joint([6, 5, 3, 0], 2, epsilon=1)
B = exactdp.Joint([7, 5, 3, 0], 2, epsilon=1)


def test_planning_score_at_integer_counts_is_the_bound():
    """The planning score continues lower_bound_from_counts to real counts: at integer
    expected counts it is that bound to its 26 bits."""
    from flint import arb

    for n, x_a, x_b in ((20_000, 9_000, 1_000), (500, 40, 3), (100, 100, 0)):
        score = _planned(arb(x_a) / n, arb(x_b) / n, n, Fraction(1, 20), None)
        bound, _ = audit.lower_bound_from_counts(x_a, x_b, n)
        assert abs(score - as_fraction(bound)) < Fraction(1, 2**18)


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
