"""Joint.samples, the batched path: its unranking is a bijection, its picks equal a plain
Fisher-Yates twin, and its draws follow the exact law.

The batched path draws, per level, a score row and independent uniform digits, and maps
them to a sequence by a Fisher-Yates shuffle over nested prefixes
(exactdp.mechanisms.joint.unrank).  The exhaustive tests enumerate every digit of every
score row of every level of small instances (ties, k = 1, k = d, d = 1) and check that
every sequence of the level comes out exactly once; the shuffle is checked against a
dict-based twin written here on random instances.  Goodness of fit: Pearson chi-square
with a rejection threshold whose false-alarm probability is at most 1e-6 (tests/twins/chi2.py).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import certify
from exactdp.core.mechanism import ids_dtype
from exactdp.core.sampling import cdf_bounds_exact, inverse_cdf_words, uniform_below
from exactdp.errors import ArgumentTypeError
from exactdp.mechanisms.joint import mechanism as joint_module
from exactdp.mechanisms.joint import unrank as joint_unrank
from exactdp.mechanisms.joint.unrank import digit_ranges, draw_level_ranks, ranks_from_digits

from twins import chi2_statistic, chi2_threshold

ALPHA = 1e-6


@pytest.fixture(params=["dense", "deep"])
def shuffle_store(request, monkeypatch):
    """The shipped dense store, then every position past k tracked as a deep position."""
    if request.param == "deep":
        monkeypatch.setattr(joint_unrank, "_DENSE_LIMIT", 0)
    return request.param


@pytest.fixture(params=["shipped", "all batched", "all one at a time", "deep store"])
def samples_path(request, monkeypatch):
    """samples() as shipped, then every level through numpy (even with one draw), every
    level through _unrank, and numpy with every position past k a deep position."""
    if request.param == "all batched":
        monkeypatch.setattr(joint_module, "_BATCH_FROM", 1)
    elif request.param == "all one at a time":
        monkeypatch.setattr(joint_module, "_BATCH_FROM", 10**12)
    elif request.param == "deep store":
        monkeypatch.setattr(joint_module, "_BATCH_FROM", 1)
        monkeypatch.setattr(joint_unrank, "_DENSE_LIMIT", 0)
    return request.param


def _shares(plan) -> list[int]:
    return [e - (plan.ends[i - 1] if i else 0) for i, e in enumerate(plan.ends)]


def _all_digits(plan, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Every digit vector of score row ``i``: rows (n,) and digits (k, n)."""
    k = len(plan.ends)
    _, width = digit_ranges(plan, np.array([i], dtype=np.int64))
    combos = list(itertools.product(*[range(w) for w in width[:, 0].tolist()]))
    digits = np.array(combos, dtype=np.int64).reshape(len(combos), k).T
    return np.full(len(combos), i, dtype=np.int64), digits


def _level_outputs_by_digits(m: exactdp.Joint, a: int) -> Counter:
    plan = m._plan(a)
    order = np.asarray(m.ranking.order)
    out: Counter = Counter()
    for i, share in enumerate(_shares(plan)):
        if share == 0:
            continue
        rows, digits = _all_digits(plan, i)
        assert digits.shape[1] == share  # the digits of row i count its sequences
        ranks = ranks_from_digits(plan, rows, digits)
        out.update(tuple(order[ranks[:, t]].tolist()) for t in range(ranks.shape[1]))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_batched_unranking_is_a_bijection_exhaustive(d, shuffle_store):
    """Every count vector in {0..3}^d (d = 5: {0..2}^5), every k, every level: the digits of
    every score row give every sequence of the level exactly once."""
    values = range(4) if d < 5 else range(3)
    for counts in itertools.product(values, repeat=d):
        for k in range(1, d + 1):
            m = exactdp.Joint(counts, k, epsilon=1)
            for a, lv in enumerate(m.levels()):
                got = _level_outputs_by_digits(m, a)
                expected = Counter(m._unrank(a, r) for r in range(lv.multiplicity))
                assert got == expected and set(got.values()) == {1}, (counts, k, a)


def test_batched_unranking_bijection_deep_levels(shuffle_store):
    """Levels whose choice sets reach far past k (deep shuffle positions), distinct counts."""
    m = exactdp.Joint([9, 8, 7, 5, 5, 3, 2, 1, 0], 3, epsilon=1)
    assert max(m._plan(a).top for a in range(len(m.levels()))) > 3
    for a, lv in enumerate(m.levels()):
        got = _level_outputs_by_digits(m, a)
        assert sum(got.values()) == lv.multiplicity and set(got.values()) == {1}
        assert all(m.utility(o) == lv.utility for o in got)


def _shuffle_twin(plan, i: int, digits: list[int]) -> list[int]:
    """Algorithm 1 lines 21-24 as a plain Fisher-Yates over a dict (the twin)."""
    k = len(plan.ends)
    slots: dict[int, int] = {}
    picks = []
    for x in range(k):
        target = (plan.t_gt[i] if x == i else x) + digits[x]
        limit = plan.after[i] + i if x == i else (plan.before[x] + x if x < i else plan.after[x] + x)
        assert target < limit
        here, there = slots.get(x, x), slots.get(target, target)
        slots[target], slots[x] = here, there
        picks.append(there)
    return picks


_counts = st.one_of(
    st.lists(st.integers(0, 6), min_size=1, max_size=40),  # many ties
    st.lists(st.integers(0, 500), min_size=1, max_size=60, unique=True),  # distinct
    st.lists(st.integers(0, 10**30), min_size=1, max_size=20),  # huge counts
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(counts=_counts, data=st.data())
def test_batched_picks_equal_the_twin(counts, data, shuffle_store):
    """Random instances, levels and digits: the numpy shuffle equals the dict twin, and every
    output is a sequence of the level (distinct items, the level's utility)."""
    d = len(counts)
    k = data.draw(st.sampled_from(sorted({1, d, (d + 1) // 2})) | st.integers(1, d))
    m = exactdp.Joint(counts, k, epsilon=1)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    levels = m.levels()
    for a in {0, len(levels) - 1, rng.randrange(len(levels))}:
        plan = m._plan(a)
        rows_list = [i for i, s in enumerate(_shares(plan)) if s] * 3
        rows = np.array(rows_list, dtype=np.int64)
        _, width = digit_ranges(plan, rows)
        digits = np.array([[rng.randrange(w) for w in col] for col in width.T.tolist()], dtype=np.int64).T
        ranks = ranks_from_digits(plan, rows, digits)
        for t, i in enumerate(rows_list):
            twin = _shuffle_twin(plan, i, digits[:, t].tolist())
            assert ranks[:, t].tolist() == twin
            out = tuple(m.ranking.order[x] for x in twin)
            assert len(set(out)) == k and m.utility(out) == levels[a].utility


class _AllOnes:
    """A stand-in numpy generator whose raw words are all 2**64 - 1 (never decided by the
    integer bounds: the exact fallback must finish every score-row draw)."""

    def __init__(self, seed: int):
        self._gen = np.random.Generator(np.random.PCG64(seed))
        self.bit_generator = self

    def random_raw(self, n: int) -> np.ndarray:
        return np.full(n, 2**64 - 1, dtype=np.uint64)

    def integers(self, low, high):
        return self._gen.integers(low, high)


def test_score_row_fallback_finishes_undecided_words():
    """U in [1 - 2**-64, 1): the score row is the last row with a positive share."""
    m = exactdp.Joint([10, 7, 7, 3, 1, 0], 3, epsilon=1)
    for a in range(len(m.levels())):
        plan = m._plan(a)
        last = max(i for i, s in enumerate(_shares(plan)) if s)
        low, _ = digit_ranges(plan, np.array([last]))
        for ranks in draw_level_ranks(plan, 5, _AllOnes(a), random.Random(a)):
            assert (ranks[last] >= low[last, 0]).all()  # row `last` picked from its own block
            items = [tuple(m.ranking.order[x] for x in ranks[:, t]) for t in range(ranks.shape[1])]
            for o in items:
                first_at_level = next(x for x in range(3) if m.ranking.sorted_counts[x] - m.counts[o[x]] == -m.table.utilities[a])
                assert first_at_level == last


def _assert_fits(observed: Counter, expected: dict, n: int):
    stat, df = chi2_statistic(observed, expected)
    threshold = chi2_threshold(df, ALPHA)
    assert df >= 1 and stat < threshold, f"chi2 = {stat:.2f} >= {threshold:.2f} (df = {df})"
    assert sum(observed.values()) == n


@pytest.mark.slow
@pytest.mark.parametrize("counts, k, params, seed", [
    ((9, 8, 7, 5, 5, 3, 2, 1, 0, 0), 3, {"epsilon": Fraction(1, 2)}, 11),  # 720 outputs, ties
    ((4, 4, 4, 4), 4, {"epsilon": 1}, 12),  # k = d, one level
    ((6, 1), 1, {"base": Fraction(1, 3)}, 13),  # k = 1
    ((3,), 1, {"epsilon": 1}, 14),  # d = 1
])
def test_samples_goodness_of_fit_every_output(counts, k, params, seed, samples_path):
    """Pearson chi-square over every output (expected < 5 pooled), 60,000 draws of
    samples(n): false-alarm probability <= 1e-6 for a correct sampler."""
    n = 60_000
    m = exactdp.Joint(counts, k, **params)
    expected = {o: float(p) * n for o, p in m.distribution(dps=20)}
    observed = Counter(m.samples(n, rng=seed))
    if len(expected) == 1:
        assert observed == Counter({next(iter(expected)): n})
        return
    _assert_fits(observed, expected, n)


def test_goodness_of_fit_rejects_a_wrong_law():
    """The same test rejects draws of epsilon = 1/2 against epsilon = 3/5 (it can fail)."""
    n = 60_000
    counts = (9, 8, 7, 5, 5, 3, 2, 1, 0, 0)
    wrong = exactdp.Joint(counts, 3, epsilon=Fraction(3, 5))
    expected = {o: float(p) * n for o, p in wrong.distribution(dps=20)}
    observed = Counter(exactdp.Joint(counts, 3, epsilon=Fraction(1, 2)).samples(n, rng=11))
    stat, df = chi2_statistic(observed, expected)
    assert stat > chi2_threshold(df, ALPHA)


@pytest.mark.slow
def test_samples_level_frequencies_many_levels(samples_path):
    """A distinct-count instance with hundreds of levels and deep choice sets: level
    frequencies of 50,000 draws (false alarm <= 1e-6)."""
    n = 50_000
    m = exactdp.Joint(random.Random(5).sample(range(3000), 300), 20, epsilon=Fraction(1, 4))
    draws = m.samples(n, rng=5, as_array=True)
    util = {lv.utility: lv for lv in m.levels()}
    observed = Counter(m.utility(tuple(row)) for row in draws.tolist())
    expected = {lv.utility: float(p) * n for lv, p in m.level_probabilities(dps=20)}
    assert set(observed) <= set(util)
    _assert_fits(observed, expected, n)


def test_as_array_is_the_list_as_an_array(samples_path):
    m = exactdp.Joint([10, 5, 5, 1, 0], 3, epsilon=1)
    arr = m.samples(300, rng=3, as_array=True)
    assert arr.dtype == np.int32 and arr.shape == (300, 3)
    assert [tuple(row) for row in arr.tolist()] == m.samples(300, rng=3)
    empty = m.samples(0, rng=3, as_array=True)
    assert empty.shape == (0, 3) and empty.dtype == np.int32
    with pytest.raises(ArgumentTypeError, match="as_array"):
        m.samples(3, rng=3, as_array="yes")


def test_as_array_default_path_sets_and_sequences():
    """Mechanisms that keep the default _samples: the array holds the same draws (a set as
    its sorted ids)."""
    s = exactdp.JointSet([10, 5, 5, 1, 0], 3, epsilon=1)
    arr = s.samples(50, rng=4, as_array=True)
    assert arr.shape == (50, 3) and [sorted(o) for o in s.samples(50, rng=4)] == arr.tolist()
    p = exactdp.Peeling([10, 5, 5, 1, 0], 2, epsilon=1)
    assert p.samples(20, rng=4, as_array=True).tolist() == [list(o) for o in p.samples(20, rng=4)]


@pytest.mark.slow
def test_pnf_joint_samples_use_the_batched_unranking(samples_path):
    """PNFJoint keeps the scalar level draws (its rule's default sample_levels) and the
    batched sequences: same law (level frequencies, false alarm <= 1e-6)."""
    n = 30_000
    m = exactdp.PNFJoint([9, 8, 7, 5, 5, 3, 2, 1, 0, 0], 3, epsilon=1)
    observed = Counter(m.utility(o) for o in m.samples(n, rng=21))
    expected = {lv.utility: float(p) * n for lv, p in m.level_probabilities(dps=20)}
    _assert_fits(observed, expected, n)


def _draw_level_ranks_twin(plan, count: int, npgen) -> np.ndarray:
    """draw_level_ranks by its parts: score rows from the words, then digit_ranges,
    uniform_below over the widths and ranks_from_digits (the bijection tested above)."""
    words = npgen.bit_generator.random_raw(count)
    lo, hi = cdf_bounds_exact(plan.ends)
    rows, undecided = inverse_cdf_words(lo, hi, words)
    assert not undecided.any()
    _, width = digit_ranges(plan, rows)
    return ranks_from_digits(plan, rows, uniform_below(npgen, width).astype(np.int64))


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_draw_level_ranks_equals_its_parts_exhaustive(d, shuffle_store):
    """Every count vector in {0..3}^d, every k, every level: the fused draw (narrow widths,
    flat indices or targets without the (k, n) low array) gives exactly the ranks of the
    twin from the same generator state, with the dense store and with every position past
    k deep."""
    for counts in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            m = exactdp.Joint(counts, k, epsilon=1)
            for a in range(len(m.levels())):
                plan = m._plan(a)
                seed = hash((counts, k, a)) & 0xFFFF
                got = np.concatenate(list(draw_level_ranks(plan, 40, np.random.Generator(np.random.PCG64(seed)),
                                                           random.Random(seed))), axis=1)
                twin = _draw_level_ranks_twin(plan, 40, np.random.Generator(np.random.PCG64(seed)))
                assert np.array_equal(got, twin), (counts, k, a)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(_counts, st.data())
def test_draw_level_ranks_equals_its_parts_random(shuffle_store, counts, data):
    """Random instances (ties, distinct, huge counts; k = 1 and k = d included)."""
    k = data.draw(st.integers(1, len(counts)))
    m = exactdp.Joint(counts, k, epsilon=Fraction(1, 3))
    a = data.draw(st.integers(0, len(m.levels()) - 1))
    plan = m._plan(a)
    seed = data.draw(st.integers(0, 2**32))
    got = np.concatenate(list(draw_level_ranks(plan, 30, np.random.Generator(np.random.PCG64(seed)),
                                               random.Random(seed))), axis=1)
    assert np.array_equal(got, _draw_level_ranks_twin(plan, 30, np.random.Generator(np.random.PCG64(seed))))


@pytest.mark.parametrize("build", [
    lambda: exactdp.Joint([10, 5, 5, 1, 0], 3, epsilon=1),
    lambda: exactdp.PNFJoint([10, 5, 5, 1, 0], 3, epsilon=1),
    lambda: exactdp.JointSet([10, 5, 5, 1, 0], 3, epsilon=1),
    lambda: exactdp.Canonical([10, 5, 5, 1, 0], 3, epsilon=1),
    lambda: exactdp.CanonicalGamma1([10, 5, 5, 1, 0], 3, epsilon=1),
    lambda: exactdp.Peeling([10, 5, 5, 1, 0], 3, epsilon=1),
    lambda: exactdp.Joint([10, 5, 5, 1, 0], 3, epsilon=1).as_sets(),
])
def test_as_array_ids_are_int32_for_every_mechanism(build):
    """One convention: samples(..., as_array=True) holds ids as int32 when d < 2**31
    (ids_dtype), whichever path builds the array, n = 0 included."""
    m = build()
    for n in (0, 1, 40):
        arr = m.samples(n, rng=3, as_array=True)
        assert arr.dtype == np.int32 and arr.shape == (n, 3)


def test_ids_dtype_boundary():
    assert ids_dtype(1) == np.int32 and ids_dtype(2**31 - 1) == np.int32
    assert ids_dtype(2**31) == np.int64 and ids_dtype(2**40) == np.int64


@pytest.mark.slow
@pytest.mark.parametrize("build", [
    lambda: exactdp.Joint([9, 8, 7, 5, 5, 3, 2, 1, 0, 0], 3, epsilon=Fraction(1, 2)),  # ties
    lambda: exactdp.Joint([4, 4, 3, 1], 4, epsilon=1),  # k = d
    lambda: exactdp.PNFJoint([6, 5, 5, 2, 0], 2, epsilon=1),
])
def test_as_array_draws_fit_the_exact_law(build, samples_path):
    """certify.goodness_of_fit (by level and within levels) of the int32 array's draws,
    alpha = 1e-6: a correct sampler fails with probability at most about 1e-6."""
    m = build()
    n = certify.samples_needed(m)
    fit = certify.goodness_of_fit(m.samples(n, rng=17, as_array=True).tolist(), m, alpha=1e-6)
    assert fit.verdict == "pass", fit.summary()


@pytest.mark.slow
def test_as_array_fit_rejects_a_wrong_law():
    """The same check fails on draws of epsilon = 1/2 against epsilon = 3/5."""
    counts = (9, 8, 7, 5, 5, 3, 2, 1, 0, 0)
    m = exactdp.Joint(counts, 3, epsilon=Fraction(3, 5))
    n = certify.samples_needed(m)
    draws = exactdp.Joint(counts, 3, epsilon=Fraction(1, 2)).samples(n, rng=17, as_array=True).tolist()
    assert certify.goodness_of_fit(draws, m, alpha=1e-6).verdict == "fail"
