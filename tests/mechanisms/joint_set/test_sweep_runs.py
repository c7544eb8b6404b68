"""Tests of StaircaseSweep.advance_run: the thresholds at which one row alone grows, counted
together as the values of one polynomial (exactdp.mechanisms.joint_set.sweep).

Twins: the sweep with runs switched off (one staircase update per threshold), the paper's
per-threshold recount (``levels_matrix_paths``) and enumeration (tests/twins).  Runs only
start from ``_RUN_MIN`` thresholds and find ``_RUN_SPAN`` values ahead; both are lowered here
so that tiny instances take every branch (a run of one threshold, a series too short for
the next run, a run resumed after a row above moved).
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactdp.core.ranking import Ranking
from exactdp.mechanisms.joint_set import sweep as sweep_module
from exactdp.mechanisms.joint_set.mechanism import levels_matrix_paths
from exactdp.mechanisms.joint_set.sweep import StaircaseSweep, iter_sweep_levels

from twins import all_k, set_at_least, set_brute_levels, set_tally, small_vectors

#: (_RUN_MIN, _RUN_SPAN): runs everywhere with series of 1 and 3 values, the defaults.
SETTINGS = [(1, 1), (1, 3), (16, 1024)]


class RunCounter:
    """Wraps advance_run: how many thresholds runs took, and how many runs resumed a series."""

    def __init__(self, monkeypatch):
        self.thresholds = self.resumed = 0
        original, resumable = StaircaseSweep.advance_run, StaircaseSweep._resumable

        def advance_run(sweep, *args):
            out = original(sweep, *args)
            self.thresholds += len(out)
            return out

        def _resumable(sweep, l):
            cache = resumable(sweep, l)
            self.resumed += cache is not None
            return cache

        monkeypatch.setattr(StaircaseSweep, "advance_run", advance_run)
        monkeypatch.setattr(StaircaseSweep, "_resumable", _resumable)


def _set(monkeypatch, run_min, span):
    monkeypatch.setattr(sweep_module, "_RUN_MIN", run_min)
    monkeypatch.setattr(sweep_module, "_RUN_SPAN", span)


def _run_counts(sweep: StaircaseSweep) -> list[tuple[int, int]]:
    """(M, N(M)) at every threshold, by runs where they apply, else one at a time."""
    out = []
    while True:
        run = sweep.advance_run()
        if not run:
            M = sweep.advance()
            if M is None:
                return out
            run = [(M, sweep.count)]
        out += run


@pytest.mark.slow
@pytest.mark.parametrize("run_min, span", SETTINGS)
@pytest.mark.parametrize("d", range(1, 6))
def test_runs_count_every_threshold_exhaustive(monkeypatch, d, run_min, span):
    """Every vector of {0..3}^d, every k: each threshold's count is enumeration's, the
    thresholds increase, the levels (and a sweep started at each level) are enumeration's."""
    counter = RunCounter(monkeypatch)
    _set(monkeypatch, run_min, span)
    for counts in small_vectors(d):
        ranking = Ranking(counts)
        for k in all_k(d):
            tally = set_tally(counts, k)
            pairs = _run_counts(StaircaseSweep(ranking, k, -1))
            assert [M for M, _ in pairs] == sorted({M for M, _ in pairs})
            assert all(n == set_at_least(tally, M) for M, n in pairs), (counts, k)
            assert pairs[-1][1] == math.comb(d, k)
            levels = list(iter_sweep_levels(ranking, k))
            assert [(lv.utility, lv.multiplicity) for lv in levels] == set_brute_levels(counts, k)
            for lv in levels:
                assert list(iter_sweep_levels(ranking, k, lv.utility)) == [x for x in levels if x.utility <= lv.utility]
    if run_min == 1 and d >= 3:  # the runs were taken, so the checks above read them
        assert counter.thresholds > 0


counts_strategy = st.lists(
    st.one_of(st.integers(0, 6), st.integers(0, 10**6), st.integers(0, 2**90)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(counts_strategy, st.data())
def test_runs_equal_the_per_threshold_recount(counts, data):
    """Random counts (ties, large values), random run settings (or none): the recount's levels."""
    k = data.draw(st.integers(1, len(counts)))
    run_min, span = data.draw(st.sampled_from(SETTINGS + [(10**9, 1024)]))
    with pytest.MonkeyPatch.context() as mp:
        _set(mp, run_min, span)
        levels = list(iter_sweep_levels(Ranking(counts), k))
    assert levels == levels_matrix_paths(counts, k)


def _shapes(d: int) -> list[list[int]]:
    return [[10**12 // r**2 for r in range(1, d + 1)], random.Random(2026).sample(range(10 * d), d),
            [10**5 // r for r in range(1, d + 1)], [10**15 // r**3 for r in range(1, d + 1)],
            [10**4 // r**2 for r in range(1, d + 1)]]  # the last: 100 items tied at 0, a jump past a run's reach


@pytest.mark.slow
@pytest.mark.parametrize("run_min, span", [(16, 1024), (1, 7)])
def test_runs_on_the_benchmark_shapes(monkeypatch, run_min, span):
    """d = 200, the benchmark shapes (heavy tails sweep row after row in long runs): the
    recount's levels, with most thresholds of the heavy-tailed shapes taken by runs and
    series resumed after the rows above moved."""
    counter = RunCounter(monkeypatch)
    _set(monkeypatch, run_min, span)
    d = 200
    for i, counts in enumerate(_shapes(d)):
        for k in (1, 9, 30):
            before = counter.thresholds
            levels = list(iter_sweep_levels(Ranking(counts), k))
            assert levels == levels_matrix_paths(counts, k), (i, k)
            if i in (0, 3) and k > 1:
                assert counter.thresholds - before > len(levels) // 3
    assert counter.resumed > 0


# ---------------------------------------------------------------------------------------
# Negative controls: the comparisons above catch a wrong run
# ---------------------------------------------------------------------------------------
CONTROL = [[10**6 // r**2 for r in range(1, 30)], [10**9 // r**3 for r in range(1, 60)], [9, 8, 4, 2, 2, 1, 1, 0],
           [12, 6, 5, 3, 1, 0, 0]]


def _wrong(monkeypatch) -> int:
    _set(monkeypatch, 1, 3)
    bad = 0
    for counts in CONTROL:
        for k in range(1, 8):
            try:
                bad += list(iter_sweep_levels(Ranking(counts), k)) != levels_matrix_paths(counts, k)
            except AssertionError:  # the run's end check against the staircase
                bad += 1
    return bad


def test_control_clean(monkeypatch):
    assert _wrong(monkeypatch) == 0


def test_control_wrong_polynomial_is_caught(monkeypatch):
    """``y^j (1 - y)^(m + 1)`` for ``y^j (1 - y)^m``."""
    original = sweep_module._monomial_falling
    monkeypatch.setattr(sweep_module, "_monomial_falling", lambda j, m: original(j, m + 1))
    assert _wrong(monkeypatch) > 0


def test_control_resuming_a_stale_series_is_caught(monkeypatch):
    """A series resumed for the same row although a row below it changed (``R_{l+1}``)."""
    monkeypatch.setattr(StaircaseSweep, "_resumable", lambda self, l: self._runs.get(l))
    assert _wrong(monkeypatch) > 0
