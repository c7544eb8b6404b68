"""Tests of exactdp.mechanisms.joint_set.sweep: JointSet's path count updated where the
staircase changed.

Twins (tests/twins/joint_set.py, written from the definitions): ``grid_paths`` counts the
right/down paths through an explicit 0/1 matrix cell by cell, ``set_tally`` enumerates
every k-subset.  The per-threshold recount of the paper (``levels_matrix_paths``) and the
plain dynamic programme (``levels_dp``) are compared too.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactdp.core.ranking import Ranking
from exactdp.mechanisms.joint_set import sweep as sweep_module
from exactdp.mechanisms.joint_set.mechanism import iter_joint_set_levels, levels_dp, levels_matrix_paths
from exactdp.mechanisms.joint_set.sweep import Staircase, StaircaseSweep, iter_sweep_levels

from twins import all_k, grid_paths, set_at_least, set_brute_levels, set_tally, small_vectors


def staircase_matrix(profile: list[int], W: int) -> list[list[int]]:
    """The 0/1 matrix of rows of ``profile[l]`` ones (then zeros), with a bottom row of ones."""
    rows = [[1 if c < p else 0 for c in range(W)] for p in profile]
    return rows + [[1] * W]


def random_profile(rng: random.Random, k: int, W: int) -> list[int]:
    """Any row lengths in ``[-1, W + 1]`` (clamped by the code), not necessarily monotone."""
    return [rng.randint(-1, W + 1) for _ in range(k)]


# ---------------------------------------------------------------------------------------
# Staircase: any sequence of profiles, growing and shrinking rows
# ---------------------------------------------------------------------------------------
def test_staircase_walks_exhaustive_small_shapes():
    """Every pair of profiles of k <= 3 rows and width W <= 3: moving from one to the other
    gives the naive grid path count of the second."""
    import itertools

    for k in range(1, 4):
        for W in range(1, 4):
            shapes = list(itertools.product(range(W + 1), repeat=k))
            for start in shapes:
                base = Staircase([0] * k, W)
                assert base.set_profile(list(start)) == grid_paths(staircase_matrix(list(start), W))
                for target in shapes:
                    st_ = Staircase([0] * k, W)
                    st_.set_profile(list(start))
                    got = st_.set_profile(list(target))
                    assert got == grid_paths(staircase_matrix(list(target), W)), (k, W, start, target)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_staircase_random_walks(k, W, seed):
    """Random walks of 25 profiles, some moving one row by one column (the sweep's common
    step), some moving every row."""
    rng = random.Random(seed)
    st_ = Staircase([0] * k, W)
    profile = random_profile(rng, k, W)
    for _ in range(25):
        if rng.random() < 0.5:
            profile = list(profile)
            i = rng.randrange(k)
            profile[i] = max(-1, min(W + 1, profile[i] + rng.choice((-2, -1, 1, 2))))
        else:
            profile = random_profile(rng, k, W)
        assert st_.set_profile(profile) == grid_paths(staircase_matrix(profile, W)), (k, W, profile)


@pytest.mark.parametrize("row_by_row", [0, 10**9])
def test_staircase_both_update_ways(monkeypatch, row_by_row):
    """Every change followed by range (threshold 0) or row by row (threshold above k): the
    same counts as the grid, on walks mixing moves of some rows and whole new profiles."""
    monkeypatch.setattr(sweep_module, "_ROW_BY_ROW", row_by_row)
    for seed in range(120):
        _walk_against_grid(random.Random(seed))


def _walk_against_grid(rng: random.Random) -> None:
    k, W = rng.randint(1, 8), rng.randint(1, 12)
    st_ = Staircase([0] * k, W)
    profile = random_profile(rng, k, W)
    for _ in range(20):
        if rng.random() < 0.5:
            profile = list(profile)
            for i in rng.sample(range(k), rng.randint(1, k)):
                profile[i] = max(-1, min(W + 1, profile[i] + rng.choice((-2, -1, 1, 2))))
        else:
            profile = random_profile(rng, k, W)
        assert st_.set_profile(profile) == grid_paths(staircase_matrix(profile, W)), (k, W, profile)


@pytest.mark.slow
def test_sweep_levels_both_update_ways(monkeypatch):
    """The benchmark shapes' levels by range only and row by row only equal the recount."""
    d = 200
    shapes = [[10**12 // r**2 for r in range(1, d + 1)], random.Random(2026).sample(range(10 * d), d),
              [10**5 // r for r in range(1, d + 1)]]
    for row_by_row in (0, 10**9):
        monkeypatch.setattr(sweep_module, "_ROW_BY_ROW", row_by_row)
        for counts in shapes:
            for k in (1, 9, 30):
                assert list(iter_joint_set_levels(Ranking(counts), k)) == levels_matrix_paths(counts, k)


# ---------------------------------------------------------------------------------------
# StaircaseSweep: N(M) at every threshold, against enumeration
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", range(1, 6))
def test_sweep_counts_every_threshold_exhaustive(d):
    """Every vector of {0..3}^d, every k: at each threshold the sweep stops at, its count is
    the number of k-subsets at level <= M by enumeration; the thresholds are increasing and
    the last one counts every set."""
    for counts in small_vectors(d):
        ranking = Ranking(counts)
        for k in all_k(d):
            tally = set_tally(counts, k)
            sweep = StaircaseSweep(ranking, k, -1)
            assert sweep.count == 0
            previous = -1
            while (M := sweep.advance()) is not None:
                assert M > previous
                previous = M
                assert sweep.count == set_at_least(tally, M), (counts, k, M)
            assert sweep.count == math.comb(d, k)


@pytest.mark.slow
@pytest.mark.parametrize("d", range(1, 6))
def test_levels_and_restarts_exhaustive(d):
    """The levels equal enumeration's, and a sweep started at any level's utility gives the
    levels from there on (the block table restarts the sweep this way)."""
    for counts in small_vectors(d):
        ranking = Ranking(counts)
        for k in all_k(d):
            levels = list(iter_joint_set_levels(ranking, k))
            assert [(lv.utility, lv.multiplicity) for lv in levels] == set_brute_levels(counts, k)
            for lv in levels:
                assert list(iter_sweep_levels(ranking, k, lv.utility)) == [x for x in levels if x.utility <= lv.utility]
            # a start between two levels (no set has that utility) gives the levels below it
            for u in range(levels[0].utility + 1, levels[-1].utility - 2, -1):
                assert list(iter_sweep_levels(ranking, k, u)) == [x for x in levels if x.utility <= u]


counts_strategy = st.lists(
    st.one_of(st.integers(0, 6), st.integers(0, 10**6), st.integers(0, 2**90)), min_size=1, max_size=40)


@settings(max_examples=80, deadline=None)
@given(counts_strategy, st.data())
def test_sweep_equals_the_per_threshold_recount(counts, data):
    """Random counts (ties, large values): the same levels as the paper's recount per
    threshold and the plain dynamic programme."""
    k = data.draw(st.integers(1, len(counts)))
    ranking = Ranking(counts)
    levels = list(iter_joint_set_levels(ranking, k))
    assert levels == levels_matrix_paths(counts, k)
    if len(counts) <= 25:
        assert levels == levels_dp(counts, k)
    start = data.draw(st.sampled_from(levels)).utility
    assert list(iter_sweep_levels(ranking, k, start)) == [x for x in levels if x.utility <= start]


def test_heavy_tailed_and_distinct_shapes():
    """The shapes of the benchmarks, at a size where the recount is quick."""
    d = 300
    shapes = [[10**12 // r**2 for r in range(1, d + 1)], random.Random(2026).sample(range(10 * d), d),
              [10**5 // r for r in range(1, d + 1)]]
    for counts in shapes:
        for k in (1, 7, 20):
            assert list(iter_joint_set_levels(Ranking(counts), k)) == levels_matrix_paths(counts, k)


def test_series_caches_stay_bounded_and_clearing_changes_nothing(monkeypatch):
    """A sweep over distinct counts meets most widths up to d - k + 1: the block series it
    keeps are capped (_SERIES_CACHE), and levels with the caches cleared every few widths
    are the recount's."""
    counts = random.Random(7).sample(range(20_000), 2_500)
    s = StaircaseSweep(Ranking(counts), 3, -1)
    widths = set()
    while s.advance() is not None:
        widths.update(s.stairs.ell)
    assert len(widths) > sweep_module._SERIES_CACHE  # the cap was reached
    assert len(s.stairs._series) <= sweep_module._SERIES_CACHE
    monkeypatch.setattr(sweep_module, "_SERIES_CACHE", 2)
    for counts in ([10**12 // r**2 for r in range(1, 120)], random.Random(1).sample(range(600), 120)):
        for k in (1, 4, 9):
            assert list(iter_joint_set_levels(Ranking(counts), k)) == levels_matrix_paths(counts, k)


# ---------------------------------------------------------------------------------------
# Negative controls: the comparisons above catch a wrong update
# ---------------------------------------------------------------------------------------
def _mismatches(counts_list, k_max=4) -> int:
    """How many instances the sweep gets wrong; the sweep's own end check (all C(d, k) sets
    counted) raising counts as caught."""
    bad = 0
    for counts in counts_list:
        for k in range(1, min(k_max, len(counts)) + 1):
            try:
                wrong = list(iter_joint_set_levels(Ranking(counts), k)) != levels_matrix_paths(counts, k)
            except AssertionError:
                wrong = True
            bad += wrong
    return bad


CONTROL_COUNTS = [[5, 3, 3, 1, 0], [9, 8, 4, 2, 2, 1], [7, 7, 7, 1], [12, 6, 5, 3, 1, 0, 0]]


def test_control_sweep_clean():
    assert _mismatches(CONTROL_COUNTS) == 0


def test_control_narrow_update_range_is_caught(monkeypatch):
    """An update that redoes the blocks of the changed rows but not the block after the
    last one (whose width is the difference to the changed row)."""
    original = Staircase.update_rows
    monkeypatch.setattr(Staircase, "update_rows", lambda self, lo, hi: original(self, lo, max(lo, hi - 1)))
    assert _mismatches(CONTROL_COUNTS) > 0


def test_control_wrong_block_series_is_caught(monkeypatch):
    """The paths across a block of width 2 counted as across a block of width 3."""
    original = sweep_module.pascal_series
    monkeypatch.setattr(sweep_module, "pascal_series", lambda w, n: original(3 if w == 2 else w, n))
    assert _mismatches(CONTROL_COUNTS) > 0


def test_control_split_outside_the_valid_halves_is_caught(monkeypatch):
    """A range update that reads the count at a split where one half-chain was not redone
    (the row after the change, with ``R`` left stale there)."""
    original = Staircase.update_rows

    def update_rows(self, lo, hi):
        original(self, lo, hi)
        n = self.k - self.g
        if self.g < self.k and self.V[self.g] is not None and self.R[self.g + 1] is not None:
            self.count = int(self.V[self.g].mul_low(self.R[self.g + 1], n + 1)[n])  # R of the wrong row
        return self.count

    monkeypatch.setattr(sweep_module, "_ROW_BY_ROW", 0)
    monkeypatch.setattr(Staircase, "update_rows", update_rows)
    assert _mismatches(CONTROL_COUNTS) > 0


def test_control_stale_half_chain_is_caught(monkeypatch):
    """Skipping the transfers that bring a half-chain up to date."""
    original = Staircase._meet

    def meet(self, fwd, back):
        if self.V[fwd] is not None and self.R[back] is not None:  # reuse what is stored, stale or not
            self.f, self.g = max(self.f, fwd), min(self.g, back)
            return
        original(self, fwd, back)

    monkeypatch.setattr(Staircase, "_meet", meet)
    assert _mismatches(CONTROL_COUNTS) > 0


# ---------------------------------------------------------------------------------------
# memory_budget as a constructor argument (as Joint's)
# ---------------------------------------------------------------------------------------
def test_memory_budget_argument():
    import exactdp
    from exactdp import errors

    counts = [9, 7, 7, 4, 2, 2, 1, 0]
    whole = exactdp.JointSet(counts, 3, epsilon=1)
    tight = exactdp.JointSet(counts, 3, epsilon=1, memory_budget=1)
    assert list(tight.iter_level_probabilities(20)) == list(whole.iter_level_probabilities(20))
    assert tight.sample(rng=5) == whole.sample(rng=5)
    with pytest.raises(errors.MemoryBudgetError):
        tight.levels()
    assert "memory_budget=1" in repr(tight) and "memory_budget" not in repr(whole)
    assert exactdp.JointSet(counts, 3, memory_budget="4096").memory_budget == 4096
    for bad in (0, -5, "lots", 2.5):
        with pytest.raises((errors.InvalidParameterError, errors.ArgumentTypeError)) as info:
            exactdp.JointSet(counts, 3, memory_budget=bad)
        assert "memory_budget" in str(info.value)
