"""exactdp.certify.alternative: power against a given wrong distribution and the draws it needs,
with the least favourable bound as a brute-force check on random alternatives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import certify
from exactdp._oracle.groups import Groups
from exactdp.certify import alternative, design as certify_design
from exactdp.errors import InvalidParameterError, NothingToDetectError


SMALL = ([10, 5, 1, 1], 2)


EXAMPLE = ([4, 3, 3, 1, 0], 2)  # the instance of the float example (20 sequences, 5 levels)


def test_power_of_the_null_is_alpha():
    m = exactdp.Joint(*EXAMPLE, epsilon=1)
    exact = {o: p for o, p in m.distribution()}
    p = certify.power(m, exact, 5000, alpha=1e-3)
    assert p.noncentrality < 1e-20 and p.power == pytest.approx(1e-3, rel=1e-6)
    assert "noncentral" in str(p)


def test_power_outside_support():
    m = exactdp.Joint(*SMALL, epsilon=1)
    alt = {o: float(q) * 0.99 for o, q in m.distribution()}
    alt[(0, 0)] = 0.01  # an impossible output
    p = certify.power(m, alt, 500, alpha=1e-6)
    assert p.outside == pytest.approx(0.01) and p.power >= 1 - 0.99**500


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([300, 3000, 30000]))
def test_no_alternative_beats_the_least_favourable_bound(seed, n):
    # brute-force twin of the closed form: random alternatives (on outputs) have a
    # noncentrality of at least n * TV_bins**2 / V over the same bins, whatever V is attained
    m = exactdp.Joint([4, 3, 3, 1, 0], 2, epsilon=1)
    rng = np.random.default_rng(seed)
    outs = [o for o, _ in m.distribution()]
    exact = np.array([float(p) for _, p in m.distribution()])
    q = exact * np.exp(rng.normal(0, rng.uniform(0.01, 1), len(exact)))
    q /= q.sum()
    alt = dict(zip(outs, q))
    design = certify_design.Design(Groups(m, 30), certify_design.MIN_EXPECTED, True, 10**6)
    plan = design.plan(n)
    shape = design.shape(n)
    lv = Groups(m, 30)
    level_of = {o: lv.index(o) for o in outs}
    tv_bins = 0.5 * sum(abs(sum(q[i] - exact[i] for i, o in enumerate(outs) if level_of[o] in g)) for g in plan.level_bins)
    lam = certify.power(m, alt, n).noncentrality
    assert lam >= n * tv_bins**2 / shape.spread * (1 - 1e-9)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([5000, 50000]))
def test_no_within_level_alternative_beats_the_bound(seed, n):
    # deviations inside levels only (level masses kept): noncentrality >= n TV**2 / V as well
    m = exactdp.Joint([4, 3, 3, 1, 0], 2, epsilon=1)
    rng = np.random.default_rng(seed)
    lv = Groups(m, 30)
    dist = [(o, float(p)) for o, p in m.distribution()]
    level_of = [lv.index(o) for o, _ in dist]
    exact = np.array([p for _, p in dist])
    q = exact * np.exp(rng.normal(0, rng.uniform(0.01, 1), len(exact)))
    for a in set(level_of):  # rescale each level back to its exact mass
        idx = [i for i, b in enumerate(level_of) if b == a]
        q[idx] *= exact[idx].sum() / q[idx].sum()
    tv = 0.5 * np.abs(q - exact).sum()
    shape = certify_design.Design(lv, certify_design.MIN_EXPECTED, True, 10**6).shape(n)
    lam = certify.power(m, dict(zip([o for o, _ in dist], q)), n).noncentrality
    plan = certify_design.Design(lv, certify_design.MIN_EXPECTED, True, 10**6).plan(n)
    # at these n every output is its own within-level bin, so no deviation hides in a bin
    assert all(plan.within[a].mode == "outputs" for a in set(level_of) if lv.groups[a].multiplicity > 1)
    assert lam >= n * tv**2 / shape.spread * (1 - 1e-9)


def test_samples_needed_nothing_to_detect_at_once(monkeypatch):
    m = exactdp.Joint(*EXAMPLE, epsilon=1)
    exact = {o: float(p) for o, p in m.distribution()}
    calls = []
    original = alternative._Alternative.power
    monkeypatch.setattr(alternative._Alternative, "power", lambda self, n, a: calls.append(n) or original(self, n, a))
    with pytest.raises(NothingToDetectError) as info:
        certify.samples_needed(m, exact)
    assert info.value.argument == "alternative" and "nothing to detect" in str(info.value)
    assert isinstance(info.value, ValueError) and calls == []  # no search at all
    # a deviation only within levels is invisible to a levels-only test
    swapped = dict(exact)
    a, b = (4, 0), (4, 1)
    swapped[a], swapped[b] = exact[a] * 1.5, exact[b] * 0.5
    with pytest.raises(NothingToDetectError):
        certify.samples_needed(m, swapped, within=False)
    needed = certify.samples_needed(m, swapped)  # but the within-level stage sees it
    assert certify.power(m, swapped, needed).power >= 0.99
    # power too low even at max_n: said at once, naming max_n
    calls.clear()
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, swapped, max_n=needed // 2)
    assert info.value.argument == "max_n" and len(calls) == 1
    with pytest.raises(InvalidParameterError, match="delta"):
        certify.samples_needed(m, swapped, delta=0.1)
    # a real deviation of 1e-6 relative on two outputs is not "the same probabilities"
    # (it was NothingToDetectError): too small for max_n draws, said naming max_n
    tiny = dict(exact)
    tiny[(0, 1)] *= 1 + 1e-6
    tiny[(0, 2)] -= exact[(0, 1)] * 1e-6
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, tiny)
    assert info.value.argument == "max_n" and not isinstance(info.value, NothingToDetectError)
    # float rounding of the exact table is still nothing to detect
    rounded = {o: float(np.float64(p) * (1 + 2**-52)) for o, p in exact.items()}
    with pytest.raises(NothingToDetectError):
        certify.samples_needed(m, rounded)


def test_power_refuses_alternatives_that_are_not_distributions():
    # the sequence law given against the set marginal collapsed (0, 1) and (1, 0) to one
    # key (the last won) and counted the lost mass as "outside the support": power 1 at
    # n = 1000 against the very same distribution; an unnormalised table was scored too
    peel = exactdp.Peeling([4, 3, 3, 1, 0], 2, epsilon=2)
    sets = peel.as_sets()
    sequences = {o: float(p) for o, p in peel.distribution()}
    with pytest.raises(InvalidParameterError, match="names the same set output"):
        certify.power(sets, sequences, 1000)
    marginal = {}
    for o, p in sequences.items():
        marginal[frozenset(o)] = marginal.get(frozenset(o), 0.0) + p
    assert certify.power(sets, marginal, 1000).noncentrality < 1e-9  # summed first: the same law
    with pytest.raises(InvalidParameterError, match="sum to 0.5, not 1"):
        certify.power(sets, {o: p / 2 for o, p in marginal.items()}, 1000)
    with pytest.raises(InvalidParameterError, match="more than 1"):
        certify.samples_needed(sets, lambda o: 2 * float(sets.probability(o)))
    with pytest.raises(InvalidParameterError, match="must be >= 0"):
        certify.power(sets, {**marginal, frozenset({0, 1}): -0.1}, 1000)
    # mass outside the support, under keys that are no outputs, is still accepted
    outside = {**{o: p * 0.99 for o, p in marginal.items()}, (7, 8): 0.01}
    assert certify.power(sets, outside, 1000).power == pytest.approx(1 - 0.99 ** 1000, rel=1e-6)


def test_samples_needed_small_max_n_is_not_nothing_to_detect():
    # with max_n = 10 every level of Joint([3, 1, 0], 1) shares one bin, but more draws
    # split the bins and see this alternative: the error names max_n (it said "nothing to
    # detect, so no number of draws suffices")
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    alt = {(0,): 0.62, (1,): 0.24, (2,): 0.14}
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, alt, max_n=10)
    assert info.value.argument == "max_n" and not isinstance(info.value, NothingToDetectError)
    assert certify.samples_needed(m, alt) > 10
    with pytest.raises(NothingToDetectError):  # the same distribution: nothing, whatever max_n
        certify.samples_needed(m, {o: float(p) for o, p in m.distribution()}, max_n=10)


def test_samples_needed_of_a_single_output_mechanism_says_nothing_can_be_detected():
    # it said "power stays below 0.99 up to 1000000000 draws; raise max_n or delta": no max_n helps
    for m in (exactdp.Peeling([7], 1, epsilon=1), exactdp.JointSet([3, 2, 1], 3, epsilon=1)):
        with pytest.raises(NothingToDetectError, match="has a single output"):
            certify.samples_needed(m)
    assert certify.samples_needed(exactdp.Peeling([7, 0], 1, epsilon=1)) > 0


@pytest.mark.parametrize("counts, needed", [([5, 5, 4, 4], 5248), ([5, 5, 4, 4, 0], 5504), ([5, 5, 4, 4, -3], 5440)])
def test_samples_needed_is_sane_with_a_rare_last_level(counts, needed):
    # was 5,248, 251,904 and 101,187,584: the rare last level hid in the heavy bin before it
    m = exactdp.Joint(counts, 1, epsilon=4)
    assert certify.samples_needed(m) == needed
