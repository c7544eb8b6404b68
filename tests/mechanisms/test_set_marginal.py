"""Set outputs of the sequence mechanisms (``as_sets()`` on Joint, PNFJoint and Peeling).

Against the brute-force twins: ``P(S)`` equals the sum over the ``k!`` orderings of ``S`` of
the twins' exact sequence probabilities (rational bases, so every value is an exact
Fraction), exhaustively on small instances (ties, ``k = 1``, ``k = d``, ``d = 1``) and on
hypothesis instances; Joint's orderings per level by enumeration; groups consistent;
certified values, logs (near 1 too), samplers (goodness of fit at ``alpha = 1e-6``: a
correct sampler fails with probability ``1e-6`` per test), the audit, and the errors.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from itertools import combinations, permutations, product

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import audit, certify, errors, testing
from exactdp.mechanisms import set_marginal as sm
from twins import (brute_probabilities_base, orderings_by_level, peel_exact, pnf_joint_brute, pure_loss_brute,
                   set_marginal, tied_counts)

HALF = Fraction(1, 2)
DPS = 30

#: name -> (sequence mechanism with base 1/2, its twin {sequence: exact probability})
MECHANISMS = {
    "Joint": (lambda c, k: exactdp.Joint(c, k, base=HALF), lambda c, k: brute_probabilities_base(c, k, HALF)),
    "PNFJoint": (lambda c, k: exactdp.PNFJoint(c, k, base=HALF), pnf_joint_brute),
    "Peeling-gumbel": (lambda c, k: exactdp.Peeling(c, k, base=HALF), lambda c, k: peel_exact(c, k, HALF, "gumbel")),
    "Peeling-exponential": (lambda c, k: exactdp.Peeling(c, k, base=HALF, noise="exponential"),
                            lambda c, k: peel_exact(c, k, HALF, "exponential")),
}


def _fraction(x) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def _instances():
    """Every count vector in {0..3}^d for d <= 3; for d = 4, 5 the non-increasing ones
    and their reversals (the tie rule by item id is then exercised both ways)."""
    for d in (1, 2, 3):
        yield from product(range(4), repeat=d)
    for d in (4, 5):
        for c in product(range(4), repeat=d):
            if list(c) == sorted(c, reverse=True):
                yield c
                if c != c[::-1]:
                    yield c[::-1]


def _check_view(name: str, counts, k: int) -> None:
    build, twin = MECHANISMS[name]
    view = build(counts, k).as_sets()
    expected = set_marginal(twin(counts, k))
    assert len(expected) == view.support_size() == math.comb(len(counts), k)
    for S, p in expected.items():
        assert _fraction(view.probability_exact(S)) == p, (name, counts, k, sorted(S))
    # groups: every set of a group has the group's probability, the sizes are exact
    groups = view.groups()
    assert sum(g.multiplicity for g in groups) == len(expected)
    per_group = Counter(view.group_index(S) for S in expected)
    assert per_group == {a: g.multiplicity for a, g in enumerate(groups)}
    for a, g in enumerate(groups):
        values = {expected[S] for S in expected if view.group_index(S) == a}
        assert len(values) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_exhaustive_small_instances_equal_the_sum_over_orderings(name):
    cases = 0
    for counts in _instances():
        d = len(counts)
        # the permute-and-flip twins cost k! polynomial products per set at d = 5
        ks = range(1, d + 1) if d <= 4 or name in ("Joint", "Peeling-gumbel") else (1, 2)
        for k in ks:
            _check_view(name, counts, k)
            cases += 1
    assert cases > 200


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_hypothesis_instances_equal_the_sum_over_orderings(data):
    counts = data.draw(tied_counts(1, 6, st.integers(-4, 9)))
    d = len(counts)
    k = data.draw(st.integers(1, min(d, 4)))
    name = data.draw(st.sampled_from(sorted(MECHANISMS)))
    base = data.draw(st.sampled_from([Fraction(1, 2), Fraction(2, 3), Fraction(1, 5)]))
    kwargs = {"noise": "exponential"} if name == "Peeling-exponential" else {}
    cls = {"Joint": exactdp.Joint, "PNFJoint": exactdp.PNFJoint}.get(name, exactdp.Peeling)
    seq = cls(counts, k, base=base, **kwargs)
    view = seq.as_sets()
    S = frozenset(data.draw(st.lists(st.integers(0, d - 1), min_size=k, max_size=k, unique=True)))
    exact = sum(seq.probability_exact(o) for o in permutations(sorted(S)))
    assert view.probability_exact(S) == exact
    with mpmath.workdps(DPS + 10):
        value = mpmath.mpf(int(exact.p)) / int(exact.q)
        assert abs(view.probability(S, DPS) - value) <= mpmath.mpf(10) ** -DPS * value
        assert abs(view.log_probability(S, DPS) - mpmath.log(value)) <= mpmath.mpf(10) ** -DPS * abs(mpmath.log(value))


@pytest.mark.parametrize("counts", [(3, 1, 0, 2, 2), (0, 0, 0, 0), (5, 1, 1, 1, 0), (3, 2, 1, 0, -2), (7,)])
def test_joint_orderings_per_level_equal_enumeration(counts):
    for k in range(1, len(counts) + 1):
        view = exactdp.Joint(counts, k, epsilon=1).as_sets()
        for S in combinations(range(len(counts)), k):
            assert view._orderings(view._key(S)) == orderings_by_level(counts, S), (counts, k, S)


def test_with_epsilon_the_certified_values_match_the_sum_over_sequences():
    for seq in (exactdp.Joint([4, 2, 2, 0, 1], 3, epsilon=Fraction(3, 2)),
                exactdp.PNFJoint([4, 2, 2, 0, 1], 3, epsilon=Fraction(3, 2)),
                exactdp.Peeling([4, 2, 2, 0, 1], 3, epsilon=Fraction(3, 2)),
                exactdp.Peeling([4, 2, 2, 0, 1], 3, epsilon=Fraction(3, 2), noise="exponential")):
        view = seq.as_sets()
        total = mpmath.mpf(0)
        with mpmath.workdps(DPS + 10):
            for S in combinations(range(5), 3):
                p = mpmath.fsum(seq.probability(o, DPS + 5) for o in permutations(S))
                assert abs(view.probability(S, DPS) - p) <= mpmath.mpf(10) ** -(DPS - 1) * p
                total += view.probability(S, DPS)
            assert abs(total - 1) < mpmath.mpf(10) ** -(DPS - 2)
        assert view.sequence_mechanism is seq and view.output_kind == "set"


@pytest.mark.parametrize("build", [
    lambda: exactdp.Joint([40, 30, 1, 0], 2, base=Fraction(1, 1000)),
    lambda: exactdp.PNFJoint([40, 30, 1, 0], 2, base=Fraction(1, 1000)),
    lambda: exactdp.Peeling([40, 30, 1, 0], 2, base=Fraction(1, 1000)),
    lambda: exactdp.Peeling([40, 30, 1, 0], 2, base=Fraction(1, 1000), noise="exponential"),
])
def test_log_probability_near_one_keeps_relative_accuracy(build):
    view = build().as_sets()
    exact = view.probability_exact({0, 1})
    with mpmath.workdps(400):
        log_p = mpmath.log(mpmath.mpf(int(exact.p)) / int(exact.q))
        assert -1e-20 < log_p < 0  # so close to 1 that log P cancels: the complement route
        assert abs(view.log_probability({0, 1}, DPS) - log_p) <= mpmath.mpf(10) ** -DPS * abs(log_p)


def test_outputs_distribution_and_levels_are_the_groups():
    view = exactdp.Peeling([3, 1, 1, 0, 0], 2, base=HALF).as_sets()
    outs = list(view.outputs())
    assert sorted(map(sorted, outs)) == sorted(map(sorted, combinations(range(5), 2)))
    assert view.levels() == view.groups()
    assert view.utility({1, 0}) == (3, 1) == view.groups()[view.group_index([0, 2])].utility
    with mpmath.workdps(DPS):
        assert abs(mpmath.fsum(p for _, p in view.distribution(DPS)) - 1) < 1e-25
        assert abs(mpmath.fsum(p for _, p in view.level_probabilities(DPS)) - 1) < 1e-25
    assert repr(view) == "Peeling([3, 1, 1, 0, 0], k=2, base=1/2, noise='gumbel').as_sets()"


def test_sampling_reads_a_sequence_as_its_set():
    seq = exactdp.Joint([5, 3, 3, 1, 0], 3, epsilon=1)
    view = seq.as_sets()
    assert view.samples(50, rng=7) == [frozenset(o) for o in seq.samples(50, rng=7)]
    assert view.sample(rng=3) == frozenset(seq.sample(rng=3))
    array = view.samples(40, rng=7, as_array=True)
    assert array.shape == (40, 3) and [frozenset(r) for r in array.tolist()] == view.samples(40, rng=7)
    assert all(list(r) == sorted(r) for r in array.tolist())


@pytest.mark.slow
@pytest.mark.parametrize("build", [
    lambda: exactdp.Joint([4, 2, 2, 1, 0], 2, epsilon=1),
    lambda: exactdp.PNFJoint([4, 2, 2, 1, 0], 2, epsilon=1),
    lambda: exactdp.Peeling([4, 2, 2, 1, 0], 2, epsilon=2),
    lambda: exactdp.Peeling([4, 2, 2, 1, 0], 2, epsilon=2, noise="exponential"),
])
def test_set_sampler_fits_the_set_marginal(build):
    # alpha = 1e-6: a correct sampler fails with probability 1e-6
    view = build().as_sets()
    n = certify.samples_needed(view)
    fit = certify.goodness_of_fit(view.samples(n, rng=11), view, alpha=1e-6)
    assert fit.verdict == "pass", fit.summary()


@pytest.mark.slow
def test_a_wrong_marginal_is_rejected():
    # negative control: draws of JointSet (another set mechanism) against Joint's set view
    view = exactdp.Joint([4, 2, 2, 1, 0], 2, epsilon=1).as_sets()
    other = exactdp.JointSet([4, 2, 2, 1, 0], 2, epsilon=1)
    fit = certify.goodness_of_fit(other.samples(20_000, rng=5), view, alpha=1e-6)
    assert fit.verdict == "fail"


@pytest.mark.slow
def test_set_samplers_certified_against_the_view_and_refused_against_sequences():
    # another library's sampler, one draw per call (here exact draws made in advance)
    seq = exactdp.Peeling([3, 1, 0, 0], 2, epsilon=1)
    view = seq.as_sets()
    draws = iter(seq.samples(200_000, rng=3))
    for shape in (frozenset, set, sorted):
        def sampler(rng, shape=shape):
            return shape(next(draws))
        assert testing.assert_sampler_matches(sampler, view, n=20_000).verdict == "pass"
    # sets against the sequences: refused at once, pointing at as_sets()
    with pytest.raises(AssertionError, match=r"returns sets.*as_sets\(\)"):
        testing.assert_sampler_matches(lambda rng: frozenset(next(draws)), seq, n=2000)
    # sorted lists against the sequences: rejected, and the message suggests as_sets()
    with pytest.raises(AssertionError, match=r"increasing order.*as_sets\(\)"):
        testing.assert_sampler_matches(lambda rng: sorted(next(draws)), seq, n=20_000)
    # the same draws as sequences pass: the test is not rejecting everything
    assert testing.assert_sampler_matches(lambda rng: next(draws), seq, n=20_000).verdict == "pass"
    # k = 1: a set and a sequence are the same output, nothing to refuse
    one = exactdp.Peeling([3, 1, 0, 0], 1, epsilon=1)
    singles = iter(one.samples(20_000, rng=4))
    fit = testing.assert_sampler_matches(lambda rng: frozenset(next(singles)), one, n=20_000)
    assert fit.verdict == "pass"


def test_privacy_loss_between_set_views_matches_brute_force():
    for (a, b), k in ((((3, 1, 0, 0), (3, 1, 1, 0)), 2), (((2, 2, 1), (2, 1, 1)), 2), (((4, 0, 1), (4, 1, 1)), 1)):
        for name in sorted(MECHANISMS):
            build, twin = MECHANISMS[name]
            loss = audit.privacy_loss(build(a, k).as_sets(), build(b, k).as_sets())
            expected = pure_loss_brute(set_marginal(twin(a, k)), set_marginal(twin(b, k)))
            with mpmath.workdps(DPS):
                assert abs(loss.value - expected) <= mpmath.mpf(10) ** -(DPS - 3) * expected, (name, a, b)
            assert loss.witness == frozenset(loss.witness)


def test_errors_name_the_argument_and_the_limit(monkeypatch):
    view = exactdp.Joint([3, 1, 0], 2, epsilon=1).as_sets()
    with pytest.raises(errors.InvalidOutputError):
        view.probability({0, 0})
    with pytest.raises(errors.InvalidOutputError):
        view.probability({0, 5})
    with pytest.raises(errors.InvalidOutputError):
        view.probability({0})
    wide = exactdp.Peeling(list(range(16)), 15, epsilon=1).as_sets()
    with pytest.raises(errors.InputLimitError, match="SET_STATES_LIMIT"):
        wide.probability(range(15))
    monkeypatch.setattr(sm, "SET_STATES_LIMIT", 8)
    small = exactdp.Peeling([3, 2, 1, 0], 4, epsilon=1).as_sets()
    with pytest.raises(errors.InputLimitError, match="16 states"):
        small.probability(range(4))
    monkeypatch.setattr(sm, "SET_STATES_LIMIT", 16)
    assert abs(small.probability(range(4)) - 1) < 1e-25
    monkeypatch.setattr(sm, "SET_GROUPS_LIMIT", 3)
    with pytest.raises(errors.TooManyOutputsError, match="SET_GROUPS_LIMIT"):
        exactdp.Joint([5, 4, 3, 2], 2, epsilon=1).as_sets().groups()


@pytest.mark.parametrize("counts", [(0, 0, 0, -1), (2, 2, 2, 0, 0), (3, 3, 1, 1), (1, 1, 1, 1, 1, 0)])
def test_peeling_gumbel_log_probability_with_tied_items_in_the_set(counts):
    """log P(S) near 1 goes through the complement Q = 1 - P(S) (Gumbel noise): with tied
    counts inside S every subset of S with the same profile must be counted (a missing
    binomial factor once gave log 0.72 for P = 0.457)."""
    seq = exactdp.Peeling(counts, 3, base=Fraction(1, 2))
    view = seq.as_sets()
    for S in combinations(range(len(counts)), 3):
        exact = view.probability_exact(frozenset(S))
        with mpmath.workdps(DPS + 10):
            value = mpmath.log(mpmath.mpf(int(exact.p)) / int(exact.q))
            assert abs(view.log_probability(frozenset(S), DPS) - value) <= mpmath.mpf(10) ** -DPS * abs(value)


@pytest.mark.parametrize("make", [
    lambda c: exactdp.Joint(c, len(c)), lambda c: exactdp.PNFJoint(c, len(c)),
    lambda c: exactdp.Peeling(c, len(c)), lambda c: exactdp.Peeling(c, len(c), noise="exponential"),
])
def test_k_equal_d_the_one_set_has_exact_probability_one(make):
    """With k = d the only set holds every sequence, so its exact probability is 1, as a
    sympy 1 (the sum of the sequences' closed forms is 1 too, but sympy need not see it, and
    an audit against JointSet then could not prove the two point masses equal)."""
    counts = [1, 1, 1, 3, 2]
    view = make(counts).as_sets()
    assert view.probability_exact(range(5)) == 1 and view.probability_exact(range(5)).is_Integer
    loss = audit.privacy_loss(view, exactdp.JointSet([1, 0, 2, 3, 3], 5), dps=25)
    assert loss.value == 0 and loss.direction == "equal"


@pytest.mark.slow
def test_groups_of_a_thousand_distinct_counts():
    """Regression: the count multisets were listed by a recursion one call deep per distinct
    count taken, and ``levels()``, ``groups()``, ``outputs()`` and ``group_index()`` of every
    set view raised ``RecursionError`` from about k = 1,000 distinct counts."""
    d = 1101
    view = exactdp.Peeling(list(range(d)), d - 1).as_sets()
    groups = view.groups()
    # one group per left-out item, the smallest left out first (lexicographically decreasing)
    assert [g.utility for g in groups] == [tuple(c for c in range(d - 1, -1, -1) if c != out) for out in range(d)]
    assert {g.multiplicity for g in groups} == {1}
    assert view.group_index(range(1, d)) == 0 and view.group_index(range(d - 1)) == d - 1


@given(st.lists(st.integers(-2, 3), min_size=1, max_size=8), st.data())
@settings(max_examples=60, deadline=None)
def test_groups_are_the_count_multisets_of_every_set(counts, data):
    """The walk over count multisets against enumeration: every k-subset's multiset, with
    its number of subsets, lexicographically decreasing."""
    k = data.draw(st.integers(1, len(counts)))
    sizes = Counter(tuple(sorted((counts[i] for i in S), reverse=True)) for S in combinations(range(len(counts)), k))
    expected = sorted(sizes.items(), reverse=True)
    assert [(g.utility, g.multiplicity) for g in exactdp.Joint(counts, k).as_sets().groups()] == expected
