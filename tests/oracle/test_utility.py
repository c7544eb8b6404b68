"""exactdp.utility against brute force: every output of every mechanism visited, exact
equality with a rational base (exhaustive small instances with ties, k = 1, k = d, d = 1, and
hypothesis), certified equality with epsilon, the positional threshold product and its
negative control, the paper's l_1 error against the signed sum (negative control), and the
errors."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
import exactdp.utility as utility
from exactdp.core.ranking import Ranking
from exactdp.errors import ArgumentTypeError, InvalidParameterError, TooManyOutputsError
from exactdp.utility import METRIC_KEYS, Metrics, joint_level_sums, metrics, output_errors, set_level_sums
from twins import (
    all_k,
    brute_probabilities_base,
    canon_em_exact,
    canon_gamma1_exact,
    canon_weights,
    counts_and_k,
    k_subsets,
    mp_probabilities_eps,
    peel_exact,
    pnf_by_integral,
    pnf_joint_brute,
    rel_close,
    set_brute_probabilities,
    set_maxdiff,
)
from twins.utility import brute_metrics, joint_sums_by_positions, positional_count, positional_count_brute

HALF = Fraction(1, 2)
#: Ties, a negative count, all equal, d = 1.
CASES = [(5,), (3, 1, 0), (2, 2, 1, 0), (4, -1, 2, 2, 7), (1, 1, 1, 1), (3, 3, 3, 0)]


def _assert_equal(got: Metrics, want: dict) -> None:
    for key in METRIC_KEYS[:-1]:
        assert got[key] == want[key], key
    assert dict(got["linf_distribution"]) == want["linf_distribution"]


def _exact_cases():
    """``(name, mechanism, brute distribution)`` for every mechanism on every case and k."""
    for counts in CASES:
        counts = list(counts)
        for k in all_k(len(counts)):
            yield "joint", exactdp.Joint(counts, k, base=HALF), brute_probabilities_base(counts, k, HALF)
            yield "pnf_joint", exactdp.PNFJoint(counts, k, base=HALF), pnf_joint_brute(counts, k)
            yield "joint_set", exactdp.JointSet(counts, k, base=HALF), set_brute_probabilities(counts, k, HALF)
            for noise in ("gumbel", "exponential"):
                yield f"peeling-{noise}", exactdp.Peeling(counts, k, base=HALF, noise=noise), \
                    peel_exact(counts, k, HALF, noise)
            rho = Fraction(1, 2)
            base = Fraction(1, 4)  # base**loss = 2**-(2 loss): rational with rho = 1/2
            yield "canonical", exactdp.Canonical(counts, k, base=base, rho=rho), canon_em_exact(counts, k, rho)
            yield "canonical-exponential", exactdp.Canonical(counts, k, base=base, rho=rho, noise="exponential"), \
                pnf_by_integral(canon_weights(counts, k, rho))
            yield "canonical_gamma1", exactdp.CanonicalGamma1(counts, k, base=base, rho=rho), \
                canon_gamma1_exact(counts, k, rho)


@pytest.mark.parametrize("name,mech,dist", list(_exact_cases()), ids=lambda x: x if isinstance(x, str) else "")
def test_exact_metrics_equal_brute_force(name, mech, dist):
    assert sum(dist.values()) == 1
    _assert_equal(metrics(mech, exact=True), brute_metrics(mech.counts, mech.k, dist))


@pytest.mark.parametrize("counts,k", [((4, -1, 2, 2, 7), 2), ((3, 3, 3, 0), 3), ((5,), 1), ((2, 2, 1, 0), 4)])
def test_certified_metrics_equal_brute_force_with_epsilon(counts, k):
    """epsilon = 1/3: every value within 10**-30 relative of the brute-force mpmath sums at
    60 digits (Joint and JointSet; the other mechanisms share the combining code)."""
    eps = Fraction(1, 3)
    with mpmath.workdps(60):
        joint = brute_metrics(counts, k, mp_probabilities_eps(counts, k, eps, 60))
        utils = {S: -set_maxdiff(counts, S) for S in k_subsets(len(counts), k)}
        sets = brute_metrics(counts, k, _softmax_mp(utils, eps / 2))
    for mech, want in ((exactdp.Joint(counts, k, epsilon=eps), joint), (exactdp.JointSet(counts, k, epsilon=eps), sets)):
        got = metrics(mech, dps=30)
        assert got.dps == 30 and not got.exact
        _assert_close(got, want, 30)


def _assert_close(got, want, digits):
    for key in METRIC_KEYS[:-1]:
        if want[key] is None:
            assert got[key] is None
        elif want[key] == 0:
            assert got[key] == 0
        else:
            assert rel_close(got[key], want[key], digits), key
    assert list(got["linf_distribution"]) == list(want["linf_distribution"])
    for e, p in want["linf_distribution"].items():
        assert rel_close(got["linf_distribution"][e], p, digits)


def _softmax_mp(utils, lam):
    best = max(utils.values())
    w = {o: mpmath.exp(mpmath.mpf(lam.numerator) / lam.denominator * (u - best)) for o, u in utils.items()}
    z = mpmath.fsum(w.values())
    return {o: x / z for o, x in w.items()}


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(counts_and_k(max_d=6, max_sequences=400, values=st.integers(-4, 8)))
def test_random_instances_equal_brute_force(ck):
    counts, k = ck
    _assert_equal(metrics(exactdp.Joint(counts, k, base=HALF), exact=True),
                  brute_metrics(counts, k, brute_probabilities_base(counts, k, HALF)))
    _assert_equal(metrics(exactdp.JointSet(counts, k, base=HALF), exact=True),
                  brute_metrics(counts, k, set_brute_probabilities(counts, k, HALF)))
    _assert_equal(metrics(exactdp.Peeling(counts, k, base=HALF), exact=True),
                  brute_metrics(counts, k, peel_exact(counts, k, HALF, "gumbel")))
    _assert_equal(metrics(exactdp.Peeling(counts, k, base=HALF, noise="exponential"), exact=True),
                  brute_metrics(counts, k, peel_exact(counts, k, HALF, "exponential")))
    _assert_equal(metrics(exactdp.PNFJoint(counts, k, base=HALF), exact=True),
                  brute_metrics(counts, k, pnf_joint_brute(counts, k)))
    _assert_equal(metrics(exactdp.Canonical(counts, k, base=Fraction(1, 4), rho=HALF), exact=True),
                  brute_metrics(counts, k, canon_em_exact(counts, k, HALF)))


@settings(max_examples=25, deadline=None)
@given(counts_and_k(max_d=6, max_sequences=400))
def test_random_huge_counts_joint(ck):
    """Counts up to 10**30 and around 2**60 (the sums are exact integers at any size),
    epsilon = 1: certified to 25 digits against brute-force mpmath sums at 60 digits."""
    counts, k = ck
    with mpmath.workdps(60):
        want = brute_metrics(counts, k, mp_probabilities_eps(counts, k, Fraction(1), 60))
    _assert_close(metrics(exactdp.Joint(counts, k, epsilon=1), dps=25), want, 25)


# --------------------------------------------------------------------------------------
# the counting formulas themselves
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", CASES)
def test_positional_threshold_product_equals_brute_force(counts):
    d = len(counts)
    top = sorted(counts, reverse=True)
    for k in all_k(d):
        Ms = sorted({top[r] - c for r in range(k) for c in counts if top[r] - c >= 0})
        for M in Ms:
            for i in range(1, k + 1):
                for j in range(d):
                    assert positional_count(counts, k, M, i, j) == positional_count_brute(counts, k, M, i, j)
            assert joint_level_sums(Ranking(counts), k, M) == joint_sums_by_positions(counts, k, M)
            assert set_level_sums(Ranking(counts), k, M)[0] == sum(
                1 for S in k_subsets(d, k) if set_maxdiff(counts, S) <= M)


@settings(max_examples=60, deadline=None)
@given(counts_and_k(max_d=6, max_sequences=400, values=st.integers(-3, 12)), st.integers(0, 16))
def test_random_level_sums_equal_positions(ck, M):
    """Every sum of ``joint_level_sums``, the l_1 sum included (its zero factors ``a_r = 1``,
    ties and rows partly above ``c_(i)``), against the positional count at any threshold."""
    counts, k = ck
    assert joint_level_sums(Ranking(counts), k, M) == joint_sums_by_positions(counts, k, M)


def test_negative_control_without_the_correction_is_caught(monkeypatch):
    """Dropping ``- [j in S_r]`` from the threshold product overcounts: brute force sees it,
    both in the positional count and in the metrics built on it."""
    counts, k = [3, 3, 1, 0], 2
    assert positional_count(counts, k, 2, 2, 0, correction=False) != positional_count_brute(counts, k, 2, 2, 0)
    want = brute_metrics(counts, k, brute_probabilities_base(counts, k, HALF))
    _assert_equal(metrics(exactdp.Joint(counts, k, base=HALF), exact=True), want)

    def wrong(ranking, kk, M, prefix=None):
        return joint_sums_by_positions(list(ranking.counts), kk, M, correction=False)

    monkeypatch.setattr(utility, "joint_level_sums", wrong)
    got = metrics(exactdp.Joint(counts, k, base=HALF), exact=True)
    assert got["expected_l1"] != want["expected_l1"]


#: A sequence in the wrong order: (a 3, the 5) has signed sum 0 and l_1 error |5-3| + |3-5| = 4.
WRONG_ORDER = ([5, 3, 3, 1], 2)


def test_l1_is_the_papers_absolute_sum_not_the_signed_one():
    """Definition 2.2 of the Joint paper: the signed sum (the old reading, kept as the
    shortfall) must be rejected on sequence mechanisms and agree on set mechanisms."""
    counts, k = WRONG_ORDER
    assert output_errors(counts, k, [3, 5]) == (2, 4, 0, 2)
    for mech, dist in ((exactdp.Joint(counts, k, base=HALF), brute_probabilities_base(counts, k, HALF)),
                       (exactdp.PNFJoint(counts, k, base=HALF), pnf_joint_brute(counts, k)),
                       (exactdp.Peeling(counts, k, base=HALF), peel_exact(counts, k, HALF, "gumbel")),
                       (exactdp.Peeling(counts, k, base=HALF, noise="exponential"),
                        peel_exact(counts, k, HALF, "exponential"))):
        got = metrics(mech, exact=True)
        want, signed = brute_metrics(counts, k, dist), brute_metrics(counts, k, dist, signed=True)
        assert signed["expected_l1"] == want["expected_shortfall"] < want["expected_l1"]
        assert got["expected_l1"] == want["expected_l1"] != signed["expected_l1"]
        assert got["expected_shortfall"] == signed["expected_l1"]
    sets = metrics(exactdp.JointSet(counts, k, base=HALF), exact=True)
    assert sets["expected_l1"] == sets["expected_shortfall"] > 0


def test_negative_control_signed_l1_in_the_level_sums_is_caught(monkeypatch):
    """Joint's level sums with the l_1 sum replaced by the signed one: brute force sees it."""
    counts, k = WRONG_ORDER
    want = brute_metrics(counts, k, brute_probabilities_base(counts, k, HALF))
    real = joint_level_sums

    def signed(ranking, kk, M, prefix=None):
        n, sum_c, sum_t, top, _ = real(ranking, kk, M, prefix)
        return n, sum_c, sum_t, top, n * sum(sorted(ranking.counts, reverse=True)[:kk]) - sum_c

    monkeypatch.setattr(utility, "joint_level_sums", signed)
    assert metrics(exactdp.Joint(counts, k, base=HALF), exact=True)["expected_l1"] != want["expected_l1"]


def test_relabelling_tied_items_changes_nothing():
    a = metrics(exactdp.Joint([2, 5, 5, 1, 2], 3, epsilon=1), dps=20)
    b = metrics(exactdp.Joint([5, 2, 1, 2, 5], 3, epsilon=1), dps=20)
    for key in METRIC_KEYS[:-1]:
        assert a[key] == b[key]
    assert dict(a["linf_distribution"]) == dict(b["linf_distribution"])


# --------------------------------------------------------------------------------------
# the mapping, the guards and the errors
# --------------------------------------------------------------------------------------
def test_metrics_is_an_immutable_mapping():
    m = metrics(exactdp.JointSet([3, 1, 0], 2, epsilon=1), dps=10)
    assert list(m) == list(METRIC_KEYS) and len(m) == 7
    assert m["p_exact_topk_sequence"] is None  # set mechanism: present, None
    with pytest.raises(TypeError):
        m["expected_l1"] = 0  # type: ignore[index]
    with pytest.raises(TypeError):
        m["linf_distribution"][0] = 1
    with pytest.raises(AttributeError):
        m.dps = 5  # type: ignore[misc]
    assert "JointSet([3, 1, 0]" in repr(m)
    seq = metrics(exactdp.Joint([3, 1, 0], 2, epsilon=1), dps=10)
    assert seq["p_exact_topk_sequence"] == seq["linf_distribution"][0]


def test_max_outputs_guard_names_the_limit():
    with pytest.raises(TooManyOutputsError, match="max_outputs"):
        metrics(exactdp.Canonical(list(range(12)), 4, epsilon=1), max_outputs=100)
    with pytest.raises(TooManyOutputsError, match="max_outputs"):
        metrics(exactdp.Peeling(list(range(12)), 4, epsilon=1), max_outputs=100)
    # Joint is counted, never enumerated: no guard applies
    assert metrics(exactdp.Joint(list(range(200)), 20, epsilon=1), dps=5, max_outputs=1)["expected_linf"] > 0


def test_errors_name_the_argument():
    with pytest.raises(ArgumentTypeError, match="mechanism"):
        metrics([1, 2, 3])  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="exact"):
        metrics(exactdp.Joint([3, 1, 0], 2, epsilon=1), exact=True)
    with pytest.raises(InvalidParameterError, match="dps"):
        metrics(exactdp.Joint([3, 1, 0], 2, epsilon=1), dps=0)
    with pytest.raises(ArgumentTypeError, match="exact"):
        metrics(exactdp.Joint([3, 1, 0], 2, epsilon=1), exact="yes")  # type: ignore[arg-type]


def test_exact_refusal_says_what_a_rational_base_canonical_still_needs():
    """Canonical with base 1/2 and rho 1/2 has a rational base but weights sqrt(1/2): the
    error says what is missing instead of asking for the rational base it already has."""
    with pytest.raises(InvalidParameterError, match=r"powers rho and 1 - rho .*base=1/4 with rho=1/2"):
        metrics(exactdp.Canonical([3, 1, 0], 2, base=HALF), exact=True)
    assert metrics(exactdp.Canonical([3, 1, 0], 2, base=Fraction(1, 4)), exact=True)["expected_linf"] > 0


def test_set_marginal_of_joint_by_enumeration():
    """Any other mechanism is enumerated: Joint's set view has Joint's set metrics."""
    counts, k = [4, 2, 2, 0], 2
    seq = brute_probabilities_base(counts, k, HALF)
    sets: dict = {}
    for s, p in seq.items():
        sets[frozenset(s)] = sets.get(frozenset(s), 0) + p
    _assert_equal(metrics(exactdp.Joint(counts, k, base=HALF).as_sets(), exact=True), brute_metrics(counts, k, sets))

