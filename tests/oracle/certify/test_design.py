"""exactdp.certify.design: the bins (rare levels only with each other), the spread bound against
brute force, and the blind deviation built output by output."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import certify
from exactdp._oracle.groups import Groups
from exactdp.certify import design as certify_design, least_favourable
from exactdp.errors import InvalidParameterError


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=9))
def test_spread_bound_against_brute_force(weights):
    # fast path: 1/4, or p(1-p) when one bin has p >= 1/2; twin: max over every union S
    total = sum(weights)
    probs = [w / total for w in weights]
    brute = max(sum(probs[i] for i in range(len(probs)) if mask >> i & 1) *
                (1 - sum(probs[i] for i in range(len(probs)) if mask >> i & 1)) for mask in range(2 ** len(probs)))
    fast = certify_design._spread(probs)
    assert brute <= fast + 1e-15
    if max(probs) >= 0.5 or any(2 * sum(w for i, w in enumerate(weights) if mask >> i & 1) == total
                               for mask in range(2 ** len(weights))):
        assert brute == pytest.approx(fast, abs=1e-15)


def _old_pool(expected, min_expected):
    """The pooling before the rare tail: the short run at the end merged into the last bin."""
    bins, cur, acc = [], [], 0.0
    for a, e in enumerate(expected):
        cur.append(a)
        acc += e
        if acc >= min_expected:
            bins.append(cur)
            cur, acc = [], 0.0
    if cur:
        if bins:
            bins[-1].extend(cur)
        else:
            bins.append(cur)
    return bins


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 40), min_size=1, max_size=12), st.sampled_from([1.0, 5.0, 10.0]))
def test_rare_levels_never_share_a_bin_with_a_heavy_level(expected, min_expected):
    bins, rare = certify_design._pool_levels(expected, min_expected)
    levels = sorted([a for g in bins for a in g] + rare)
    assert levels == list(range(len(expected)))  # every level once
    for g in bins:
        if math.fsum(expected[a] for a in g) < min_expected:  # no bin reachable: one bin of everything, 0 df
            assert bins == [list(range(len(expected)))] and not rare
        heavy = [a for a in g if expected[a] >= min_expected]
        assert not heavy or g == heavy  # a heavy level is a bin of its own
    assert all(expected[a] < min_expected for a in rare)
    assert not rare or math.fsum(expected[a] for a in rare) < min_expected  # else they would be one more bin
    # the twin: without rare levels next to heavy ones, the bins are those of before
    if not rare and all(len(g) == 1 or all(expected[a] < min_expected for a in g) for g in _old_pool(expected, min_expected)):
        assert bins == _old_pool(expected, min_expected)


def test_the_rare_last_level_is_the_tail_not_part_of_the_heavy_bin():
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    d = certify_design.Design(Groups(m, 30), 5, True, 10**6)
    plan = d.plan(5000)
    assert plan.level_bins == [[0], [1]] and plan.rare == (2,) and plan.tail_share == 0.5
    assert _old_pool([float(5000 * p) for p in d.probs], 5) == [[0], [1, 2]]  # before: hidden in level 1's bin
    shape = d.shape(5000)
    assert shape.tail_levels == 1 and shape.blind == 0 and shape.pooled_levels == 0
    assert "and 1 in the rare tail (exact binomial test, 0.1 draws expected)" in shape.describe()


def _invisible_alternative(m, design, n):
    """The deviation the plan calls blind, built output by output: each pooled bin's mass
    onto its lightest level (uniformly), or each untested level's mass onto its first output
    and each group's mass onto its first output, whichever moves more."""
    plan = design.plan(n)
    probs = [float(p) for p in design.probs]
    lv = Groups(m, 30)
    members = {}
    for o in m.outputs():
        members.setdefault(lv.index(o), []).append(o)
    exact = {o: float(p) for o, p in m.distribution()}

    def inside(a):  # level a with its own uniformity broken as far as its bins allow
        q, lp, outs = {}, plan.within.get(a), members[a]
        if len(outs) < 2 or (lp is not None and lp.mode == "outputs"):
            return {o: exact[o] for o in outs}
        if lp is None or lp.mode == "skip":
            return {o: probs[a] if i == 0 else 0.0 for i, o in enumerate(outs)}
        for g in range(lp.groups):
            size = certify_design.group_size(lp, len(outs), g)
            for i, o in enumerate(outs[g * lp.size:g * lp.size + size]):
                q[o] = probs[a] * size / len(outs) if i == 0 else 0.0
        return q

    q = {}
    for g in plan.level_bins + ([list(plan.rare)] if plan.rare else []):  # the rare tail: one more pooled bin
        within = {}
        for a in g:
            within.update(inside(a))
        light = min(g, key=lambda a: probs[a])
        total = sum(probs[a] for a in g)
        moved = {o: (total / len(members[a]) if a == light else 0.0) for a in g for o in members[a]}
        tv = lambda d: 0.5 * sum(abs(d[o] - exact[o]) for o in d)
        q.update(moved if len(g) > 1 and tv(moved) > tv(within) else within)
    return q


@pytest.mark.parametrize("n", [50, 400, 3000, 100_000])
def test_the_blind_deviation_is_real_and_invisible(n):
    # twin of BinPlan.blind: the deviation built output by output has exactly that total
    # variation, and the test's noncentrality against it is 0 (it cannot see it)
    m = exactdp.Joint([5, 3, 3, 1, 0, 0], 3, epsilon=1)
    design = certify_design.Design(Groups(m, 30), 5, True, 10**6)
    shape = design.shape(n)
    q = _invisible_alternative(m, design, n)
    tv = 0.5 * sum(abs(q[o] - float(p)) for o, p in m.distribution())
    assert tv == pytest.approx(shape.blind, abs=1e-12)
    assert (shape.blind == 0) == (shape.within_grouped == 0 and shape.untested_outputs == 0
                                  and shape.pooled_levels == 0)
    if shape.df > 0:
        assert certify.power(m, q, n).noncentrality == pytest.approx(0, abs=1e-9)
        # and the least favourable power at a delta the blind part covers is alpha
        if shape.blind > 0 and not shape.tail_levels:
            assert least_favourable.lf_power(shape, shape.blind, 1e-3)[0] == 1e-3
        elif shape.blind > 0:  # the two-part bound: at most the tail test's false-alarm rate
            assert least_favourable.lf_power(shape, shape.blind, 1e-3)[0] <= 1e-3


# ---------------------------------------------------------------------------------------
# the helpers the other modules use: a brute-force twin for each


def test_search_n_against_a_linear_scan():
    # ok(n) is "n >= t": the smallest n is t, found to within 1% (never below t), or None past max_n
    for t in range(1, 400):
        for max_n in (max(t - 1, 1), t, t + 1, 2 * t, 10**9):
            found = certify_design.search_n(lambda n: n >= t, max_n)
            if t > max_n:
                assert found is None, (t, max_n)
            else:
                assert t <= found <= max_n and found - t <= max(1, t // 100), (t, max_n, found)


def test_groups_partition_a_level_in_enumeration_order():
    # every position in exactly one group; group sizes as group_size says; runs of consecutive positions
    for m, size in itertools.product(range(2, 40), range(1, 12)):
        groups = m // size
        if groups < 2:
            continue
        lp = certify_design.LevelPlan("groups", size=size, groups=groups)
        seen = [certify_design.group_of(lp, pos) for pos in range(m)]
        assert seen == sorted(seen) and set(seen) == set(range(groups))
        assert [seen.count(g) for g in range(groups)] == [certify_design.group_size(lp, m, g) for g in range(groups)]


def test_check_design_args_names_the_argument():
    assert certify_design.check_design_args(1e-6, 0.05, 0.99) == (1e-6, 0.05, 0.99)
    for args, name in (((0, 0.05, 0.99), "alpha"), ((1e-6, 1.5, 0.99), "delta"), ((1e-6, 0.05, True), "min_power")):
        with pytest.raises(InvalidParameterError) as info:
            certify_design.check_design_args(*args)
        assert info.value.argument == name
