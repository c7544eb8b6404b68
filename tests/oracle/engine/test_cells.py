"""exactdp._oracle.cells: pair audits of Joint, PNFJoint and JointSet give the same results with the
pair cells hook as with the orbit enumeration; the orbit and neighbour shortcuts are taken only for
mechanisms whose law does not depend on the tie rule (``ties_exchangeable``)."""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import Joint, JointSet, PNFJoint, audit
from exactdp.mechanisms.joint import pairs as joint_pairs
from exactdp.mechanisms.joint.mechanism import Joint as JointClass
from exactdp.mechanisms.joint_set.mechanism import JointSet as JointSetClass

from twins.canonical import canon_gamma1_exact
from twins.notions import delta_brute, pure_loss_brute
from twins.worst import worst_case_brute

CASES = [
    # (counts a, counts b, k, mechanism class, parameters)
    ([9, 7, 7, 4, 2, 0], [9, 8, 7, 4, 2, 0], 2, Joint, {"epsilon": 1}),  # add
    ([9, 7, 7, 4, 2, 0], [9, 7, 7, 3, 2, 0], 3, Joint, {"epsilon": 2}),  # remove
    ([6, 5, 5, 3, 1], [6, 4, 5, 3, 2], 2, Joint, {"base": Fraction(2, 3)}),  # swap
    ([4, 4, 4, 1], [5, 4, 3, 1], 3, PNFJoint, {"epsilon": 1}),  # swap within a tie
    ([10, 6, 3, 3, 1, 0, 0], [10, 6, 4, 3, 1, 0, 0], 4, PNFJoint, {"base": Fraction(1, 2)}),
    ([9, 7, 7, 4, 2, 0], [9, 8, 7, 4, 2, 0], 2, JointSet, {"epsilon": 1}),  # sets: add
    ([9, 7, 7, 4, 2, 0], [9, 7, 7, 3, 2, 0], 3, JointSet, {"epsilon": 2}),  # remove
    ([6, 5, 5, 3, 1], [6, 4, 5, 3, 2], 2, JointSet, {"base": Fraction(2, 3)}),  # swap
    ([4, 4, 4, 1], [5, 4, 3, 1], 3, JointSet, {"epsilon": 1}),  # swap within a tie
    ([10, 6, 3, 3, 1, 0, 0], [10, 6, 4, 3, 1, 0, 0], 4, JointSet, {"base": Fraction(1, 2)}),
]


@pytest.fixture
def without_sweep(monkeypatch):
    """Run a block with the hook switched off (the oracle then visits orbits)."""
    def off():
        monkeypatch.setattr(JointClass, "pair_cells", lambda self, other: None)
        monkeypatch.setattr(JointSetClass, "pair_cells", lambda self, other: None)
    return off


def _run(case, what):
    ca, cb, k, cls, params = case
    a, b = cls(ca, k, **params), cls(cb, k, **params)
    if what == "loss":
        return audit.privacy_loss(a, b, 20), a, b
    if what == "profile":
        return audit.privacy_profile(a, b, Fraction(1, 2), 20), a, b
    if what == "renyi":
        return audit.renyi_divergence(a, b, 2, 20), a, b
    if what == "epsilon":
        return audit.epsilon_for_delta(a, b, Fraction(1, 100), 20), a, b
    return audit.zcdp_rho(a, b, 6), a, b


def _close(x, y, dps=18):
    if x == y:
        return True
    return abs(x - y) <= mpmath.mpf(10) ** (-dps) * abs(y)


@pytest.mark.parametrize("case", CASES)
def test_privacy_loss_same_with_and_without_sweep(case, without_sweep):
    fast, a, b = _run(case, "loss")
    without_sweep()
    slow, _, _ = _run(case, "loss")
    assert fast.orbits == 0 and slow.orbits > 0
    assert fast.value == slow.value and fast.direction == slow.direction
    assert (a.group_index(fast.witness), b.group_index(fast.witness)) == (
        a.group_index(slow.witness), b.group_index(slow.witness))
    assert fast.witness_outputs == slow.witness_outputs
    rows = lambda r: sorted((p.level_a, p.level_b, p.outputs, mpmath.nstr(p.signed, 15)) for p in r.pairs)
    assert rows(fast) == rows(slow)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("what", ["profile", "renyi", "epsilon", "zcdp"])
def test_notions_same_with_and_without_sweep(case, what, without_sweep):
    fast, a, b = _run(case, what)
    without_sweep()
    slow, _, _ = _run(case, what)
    if what == "profile":
        assert _close(fast.delta, slow.delta) and fast.direction == slow.direction
        assert fast.exact_zero == slow.exact_zero
        key = lambda r: sorted((a.group_index(o), b.group_index(o), n) for o, n in r.carriers)
        assert key(fast) == key(slow)
    elif what == "renyi":
        assert _close(fast, slow)
    elif what == "epsilon":
        assert _close(fast.epsilon, slow.epsilon) and fast.direction == slow.direction
    else:
        assert _close(fast.lower, slow.lower, 5) and _close(fast.upper, slow.upper, 5)


def test_sweep_is_what_makes_a_large_pair_feasible():
    """All-distinct counts: every output is its own orbit, so the enumeration refuses;
    the sweep counts the cells (0 outputs visited)."""
    counts = [3 * i + (i % 2) for i in range(60)]
    other = list(counts)
    other[50] += 1
    a, b = Joint(counts, 6, epsilon=1), Joint(other, 6, epsilon=1)
    loss = audit.privacy_loss(a, b, 20, max_outputs=1000)
    assert loss.orbits == 0 and loss.value <= 1
    with pytest.raises(audit.AuditLimitError):
        audit.privacy_loss(a, b, 20, max_outputs=1000, symmetric=False)


@pytest.mark.parametrize("cls, changes, reason", [
    (JointSet, lambda i: 1 if i < 20 else 0, "20 items differ, more than JointSet's count handles (8"),
    (Joint, lambda i: i % 10, "change by 10 different amounts, more than MAX_DIFFERENCES = 8"),
])
def test_the_limit_says_when_the_pair_count_declined(cls, changes, reason):
    """A user adding to 20 items got "raise max_outputs" alone, as if the pair count had
    been tried and merely the limit were low: the message now says the count without
    enumeration declined this pair and what it cannot handle, so enumeration is what the
    limit bounds; a pair it takes needs no max_outputs at all."""
    counts = list(range(40))
    many = [c + changes(i) for i, c in enumerate(counts)]
    with pytest.raises(audit.AuditLimitError, match="pair count without enumeration does not apply") as info:
        audit.privacy_loss(cls(counts, 3), cls(many, 3), max_outputs=1000)
    assert info.value.argument == "max_outputs" and "raise max_outputs" in str(info.value)
    assert reason in str(info.value)
    one = [c + 1 if c == 0 else c for c in counts]
    assert audit.privacy_loss(cls(counts, 3), cls(one, 3), max_outputs=1).value <= 1
    with pytest.raises(audit.AuditLimitError) as plain:  # orbits requested: no pair count was tried
        audit.privacy_loss(cls(counts, 3), cls(one, 3), max_outputs=1000, symmetric=False)
    assert "does not apply" not in str(plain.value)


def _five_notions(a, b):
    return (audit.privacy_loss(a, b, 20, max_outputs=10**6).value,
            audit.privacy_profile(a, b, Fraction(1, 5), 20, max_outputs=10**6).delta,
            audit.epsilon_for_delta(a, b, Fraction(1, 1000), 20, max_outputs=10**6).epsilon,
            audit.renyi_divergence(a, b, 2, 20, max_outputs=10**6),
            audit.zcdp_rho(a, b, 20, max_outputs=10**6).lower)


@pytest.mark.parametrize("cls", [Joint, PNFJoint])
def test_a_user_changing_many_items_is_audited_without_enumeration(cls, monkeypatch):
    """Joint and PNFJoint: a user adding to 18 of 27 items, and a swap moving 18 counts, are
    counted by the diagonal count (no output visited; the item-by-item count declines
    them): the five notions equal those of the orbit enumeration (one output per orbit of tied items)."""
    counts = [3 * i + (i % 4) for i in range(27)]
    add = [c + (i % 3 != 0) for i, c in enumerate(counts)]
    swap = [c + (1 if i % 3 == 0 else -1 if i % 3 == 1 else 0) for i, c in enumerate(counts)]
    for other in (add, swap):
        a, b = cls(counts, 2, epsilon=1), cls(other, 2, epsilon=1)
        assert joint_pairs.joint_pair_cells(a, b, method="items") is None
        assert audit.privacy_loss(a, b, 20, max_outputs=1).orbits == 0
        fast = _five_notions(a, b)
        with monkeypatch.context() as m:
            m.setattr(JointClass, "pair_cells", lambda self, other: None)
            assert audit.privacy_loss(a, b, 20, max_outputs=10**6).orbits > 0
            slow = _five_notions(cls(counts, 2, epsilon=1), cls(other, 2, epsilon=1))
        assert all(_close(x, y) for x, y in zip(fast, slow)), (fast, slow)


def test_enclosure_sums_without_two_gaps_from_the_tree():
    """A permute-and-flip output's enclosure at gaps g_a != g_b sums the level tables'
    terms without its own two gaps: from a tree of partial sums (every run of terms a few
    nodes) instead of all terms again per output.  Each run's two sums enclose the plain
    sums, and each enclosure overlaps the one summed term by term."""
    import random

    from flint import arb

    from exactdp._oracle.engines.permute_and_flip import _RangeSums, _log1m_bounds, enclosure_ball, enclosure_shape, table_differences
    from exactdp._oracle.groups import Groups
    from exactdp.core.precision import flint_workprec

    rng = random.Random(7)
    with flint_workprec(200):
        pairs = [(arb(rng.random()), arb(-rng.random())) for _ in range(41)]
        tree = _RangeSums(pairs)
        for start in range(0, 42, 5):
            for stop in range(start, 42, 7):
                lo, hi = tree.total(start, stop)
                assert lo.overlaps(sum((p[0] for p in pairs[start:stop]), arb(0)))
                assert hi.overlaps(sum((p[1] for p in pairs[start:stop]), arb(0)))
        counts = rng.sample(range(400), 60)
        other = [c + (1 if i % 3 == 0 else -1 if i % 3 == 1 else 0) for i, c in enumerate(counts)]
        ga, gb = Groups(PNFJoint(counts, 3, epsilon=1), 20), Groups(PNFJoint(other, 3, epsilon=1), 20)
        shape = enclosure_shape(ga, gb, table_differences(ga, gb))
        totals: list = []
        enclosure_ball(0, 0, shape, totals)  # fills the cache: terms, sums, tree, positions

        class Plain:  # the twin: every run summed term by term
            def __init__(self, terms):
                self.terms = terms

            def total(self, start, stop):
                return (sum((t[0] for t in self.terms[start:stop]), arb(0)),
                        sum((t[1] for t in self.terms[start:stop]), arb(0)))

        plain = list(totals)
        plain[3] = Plain(list(totals[0].values()))
        gaps = sorted(g for g in shape.sizes if g)
        assert len(gaps) > 20
        for g_a, g_b in [(gaps[0], gaps[1]), (gaps[-1], gaps[3]), (gaps[5], gaps[-2]), (gaps[2], 0), (0, gaps[7])]:
            fast, slow = enclosure_ball(g_a, g_b, shape, totals), enclosure_ball(g_a, g_b, shape, plain)
            assert fast.overlaps(slow) and fast.rad() <= 2 * slow.rad() + arb(2) ** -150, (g_a, g_b, fast, slow)


# ---------------------------------------------------------------------------------------
# Tied items: the symmetry shortcuts only where the law allows them (ties_exchangeable)
#
# Tests that the audits' symmetry shortcuts (one output per orbit of tied items, one
# neighbour per class of tied items) are taken only for mechanisms that treat tied items
# alike: CanonicalGamma1 with ``rho < 1`` depends on the tie rule, so its pair notions and
# worst cases must equal those over every output and every neighbour.
#
# References: the two-stage twin ``canon_gamma1_exact`` (exact Fractions, base ``2**-q``) and
# the brute-force pair values and neighbours of tests/twins/.


DPS = 20
TOL = mpmath.mpf(10) ** -15


def gamma1(counts, k, rho):
    """CanonicalGamma1 with the base of the twin (``2**-q`` for ``rho = p/q``)."""
    return exactdp.CanonicalGamma1(counts, k, base=Fraction(1, 2 ** rho.denominator), rho=rho)


def tied_pairs():
    """Every pair (c, c + v) with c in {0, 1, 2}^4 having a tie, v in {-1, 0, 1}^4 non-zero
    and k in 1..3 where the default audit and the full one once differed, plus a sample."""
    yield (1, 2, 2, 1), (1, 1, 1, 1), 3, Fraction(1, 2)
    yield (1, 1, 2, 2, 1), (2, 1, 2, 3, 2), 2, Fraction(1, 2)
    yield (2, 1, 0, 2, 1), (3, 2, 0, 1, 2), 2, Fraction(1, 3)
    for c in itertools.product(range(3), repeat=4):
        if len(set(c)) == 4 or sum(c) % 5:
            continue
        for k in (2, 3):
            yield c, tuple(x + (1 if i % 2 else -1) for i, x in enumerate(c)), k, Fraction(1, 2)


@pytest.mark.parametrize("a, b, k, rho", list(tied_pairs()))
def test_gamma1_pair_notions_equal_brute_force_over_every_output(a, b, k, rho):
    P, Q = canon_gamma1_exact(a, k, rho), canon_gamma1_exact(b, k, rho)
    A, B = gamma1(a, k, rho), gamma1(b, k, rho)
    loss = audit.privacy_loss(A, B, dps=DPS)
    assert abs(loss.value - pure_loss_brute(P, Q)) <= TOL * max(1, loss.value)
    ratio = Fraction(P[loss.witness]) / Fraction(Q[loss.witness])
    with mpmath.workdps(40):
        witness_loss = abs(mpmath.log(mpmath.mpf(ratio.numerator) / ratio.denominator))
    assert abs(witness_loss - loss.value) <= TOL * max(1, loss.value)
    assert loss.direction == ("a>b" if ratio > 1 else "b>a")
    profile = audit.privacy_profile(A, B, 0, dps=DPS)
    expected = delta_brute(P, Q, Fraction(0))
    assert abs(profile.delta - mpmath.mpf(expected.numerator) / expected.denominator) <= TOL


def test_the_shortcut_would_have_been_wrong_here():
    """Negative control: the orbit shortcut forced on (treating Gamma1 as tie-symmetric)
    gives a smaller loss than brute force on this pair, so the test above can fail."""
    a, b, k, rho = (1, 2, 2, 1), (1, 1, 1, 1), 3, Fraction(1, 2)
    A, B = gamma1(a, k, rho), gamma1(b, k, rho)
    truth = pure_loss_brute(canon_gamma1_exact(a, k, rho), canon_gamma1_exact(b, k, rho))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(A), "ties_exchangeable", True)
        assert audit.privacy_loss(A, B, dps=DPS).value < truth - mpmath.mpf("0.01")
    assert abs(audit.privacy_loss(A, B, dps=DPS).value - truth) <= TOL


@pytest.mark.parametrize("relation", ["add_remove", "swap"])
@pytest.mark.parametrize("counts, k", [((2, 0, 2, 2), 3), ((1, 1, 0), 1), ((1, 1, 0), 2), ((2, 1, 1, 0), 2)])
def test_gamma1_worst_case_equals_the_maximum_over_every_neighbour(counts, k, relation):
    rho = Fraction(1, 2)
    factory = functools.partial(gamma1, k=k, rho=rho)
    w = audit.worst_case(factory, counts, relation, dps=DPS)
    brute, _ = worst_case_brute(lambda c: canon_gamma1_exact(c, k, rho), counts, relation, "pure")
    assert abs(w.value - brute) <= TOL * max(1, brute)
    assert len(w.results) == len(audit.neighbours(counts, relation))


def test_ties_exchangeable_says_whether_the_law_depends_on_the_tie_rule():
    """The attribute is True exactly where reversing the item ids of tied counts maps the
    distribution to itself (Gamma1: rho = 1 only; every other mechanism: always)."""
    counts, k = (2, 2, 1, 1, 0), 3
    rev = tuple(reversed(counts))

    def symmetric(make):
        m, r = make(counts), make(rev)
        d = len(counts)
        return all(m.probability_exact(S) == r.probability_exact(frozenset(d - 1 - i for i in S))
                   for S in map(frozenset, itertools.combinations(range(d), k)))

    for rho in (Fraction(0), Fraction(1, 2), Fraction(1)):
        make = functools.partial(gamma1, k=k, rho=rho)
        assert make(counts).ties_exchangeable == (rho == 1) == symmetric(make)
    for make in (lambda c: exactdp.Canonical(c, k, base=Fraction(1, 4)),
                 lambda c: exactdp.JointSet(c, k, base=Fraction(1, 2))):
        assert make(counts).ties_exchangeable and symmetric(make)


def test_the_output_limit_says_why_tied_items_are_not_grouped():
    counts = [1] * 30
    a, b = gamma1(counts, 3, Fraction(1, 2)), gamma1([2] + counts[1:], 3, Fraction(1, 2))
    with pytest.raises(audit.AuditLimitError, match="CanonicalGamma1 depends on the tie rule, so every one of the 30 items"):
        audit.privacy_loss(a, b, max_outputs=1000)
    canon = exactdp.Canonical(counts, 3), exactdp.Canonical([2] + counts[1:], 3)
    assert audit.privacy_loss(*canon, max_outputs=1000).value >= 0  # tied items grouped: a few orbits
