"""Batched exact level draws: integer CDF bounds, the 64-bit word decision, the fallback.

exactdp.core.sampling turns the cumulative enclosures into exact integers
``lo_a <= 2**64 F_a <= hi_a`` once and decides each draw from its first 64 bits.  Here:
the bounds bracket the exact rational boundaries; every decided word gets exactly the
index of the scalar inverse-CDF draw (``choose_index``) from the same 64-bit prefix, and
the index that exact rationals give for every continuation; undecided words are finished
consistently; and the level frequencies of ``sample_levels`` fit (Pearson chi-square,
false-alarm probability at most 1e-6; tests/twins/chi2.py).
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from flint import arb
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.core.levels import Level, LevelTable
from exactdp.core.precision import flint_workprec
from exactdp.core.sampling import (
    cdf_bounds,
    cdf_bounds_exact,
    choose_index,
    initial_prec,
    inverse_cdf_words,
    random_words,
    uniform_below,
)
from exactdp.core.scale import Scale
from exactdp.errors import InvalidParameterError
from exactdp.rules.exponential import ExponentialMechanism

from twins import chi2_statistic, chi2_threshold

TOP = 2**64
ALPHA = 1e-6


def _boundaries(weights) -> list[Fraction]:
    total, run, out = sum(weights), Fraction(0), []
    for w in weights:
        run += w
        out.append(run / total)
    return out


def _exact_index(boundaries, u: int) -> int | None:
    """The index every U in [u/2**64, (u+1)/2**64) gets, or None if they differ."""
    lo, hi = Fraction(u, TOP), Fraction(u + 1, TOP)
    a = next(i for i, f in enumerate(boundaries) if lo < f)
    below = boundaries[a - 1] if a else Fraction(0)
    return a if below <= lo and hi <= boundaries[a] else None


def _words_near(lo, hi) -> list[int]:
    """Words at and next to every bound, and the extremes."""
    out = {0, 1, TOP - 2, TOP - 1}
    for b in [*lo.tolist(), *hi.tolist()]:
        out.update(w for w in (b - 2, b - 1, b, b + 1) if 0 <= w < TOP)
    return sorted(out)


def _check_words(boundaries, lo, hi, words, cumulative=None):
    index, undecided = inverse_cdf_words(lo, hi, np.array(words, dtype=np.uint64))
    for u, a, open_ in zip(words, index.tolist(), undecided.tolist()):
        exact = _exact_index(boundaries, u)
        if open_:  # undecided is always allowed: the draw goes on with more bits
            continue
        assert exact == a, (u, a, exact)  # decided: right for every continuation
        if cumulative is not None:  # the scalar draw from the same prefix agrees
            assert choose_index(cumulative, len(boundaries), random.Random(u), prefix=(u, 64)) == a
    return undecided


def test_random_words_are_successive_getrandbits():
    a, b = random.Random(3), random.Random(3)
    words = random_words(a, 50)
    assert words.dtype == np.uint64 and words.tolist() == [b.getrandbits(64) for _ in range(50)]
    assert a.getrandbits(32) == b.getrandbits(32)  # the same stream afterwards
    assert random_words(a, 0).shape == (0,)


class _WidthCheckingRandom(random.Random):
    def getrandbits(self, k):
        assert 0 <= k < 2**31, k  # CPython takes a C int: more raised OverflowError
        return super().getrandbits(k)


def test_random_words_in_several_calls_are_the_same_words(monkeypatch):
    # Joint.samples(34_000_000, ...) used to raise OverflowError: one getrandbits(64 * n)
    # call takes at most 2**31 - 1 bits, so n >= 2**25 words are read in several calls
    from exactdp.core import sampling

    assert sampling._WORDS_PER_CALL * 64 < 2**31
    whole = random_words(random.Random(9), 1000)
    monkeypatch.setattr(sampling, "_WORDS_PER_CALL", 7)
    a, b = _WidthCheckingRandom(9), random.Random(9)
    words = random_words(a, 1000)
    assert words.dtype == np.uint64 and words.tolist() == whole.tolist()
    assert words.tolist() == [b.getrandbits(64) for _ in range(1000)]
    assert a.getrandbits(32) == b.getrandbits(32)
    monkeypatch.setattr(sampling, "_WORDS_PER_CALL", 2**25)
    with pytest.raises(AssertionError):  # the check above can fail: one call of 2**25 words
        random_words(_WidthCheckingRandom(9), 2**25)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**70), min_size=1, max_size=12).filter(lambda w: sum(w) > 0))
def test_exact_bounds_are_floor_and_ceiling(weights):
    ends = [sum(weights[:i + 1]) for i in range(len(weights))]
    lo, hi = cdf_bounds_exact(ends)
    assert len(lo) == len(weights) - 1 and lo.dtype == np.uint64
    for f, l, h in zip(_boundaries(weights), lo.tolist(), hi.tolist()):
        assert l == min(int(f * TOP), TOP - 1)  # floor (capped)
        assert h == min(-int(-f * TOP // 1), TOP - 1)  # ceiling (capped)


def _rational_table(weights_levels) -> LevelTable:
    return LevelTable([Level(-u, m) for u, m in weights_levels], Scale(base=Fraction(2, 3)))


def _table_boundaries(table: LevelTable) -> list[Fraction]:
    base = table.scale.base
    u0 = table.utilities[0]
    return _boundaries([m * base ** (u0 - u) for u, m in zip(table.utilities, table.multiplicities)])


@pytest.mark.parametrize("levels", [
    [(0, 1), (1, 2)],
    [(0, 1), (1, 3), (2, 3), (3, 1)],
    [(0, 5)] + [(u, u * u + 1) for u in range(1, 60)],
    [(0, 1), (1, 10**40), (2, 1), (200, 7)],  # a tiny last level, a huge middle one
])
def test_enclosure_bounds_bracket_the_exact_cdf(levels):
    table = _rational_table(levels)
    with flint_workprec(initial_prec(len(table))):
        lo, hi = cdf_bounds(table.cumulative())
    exact = _table_boundaries(table)
    assert (np.diff(lo.astype(object)) >= 0).all() and (np.diff(hi.astype(object)) >= 0).all()
    for f, l, h in zip(exact, lo.tolist(), hi.tolist()):
        assert l <= f * TOP and (h >= f * TOP or h == TOP - 1)
        assert h - l <= 2  # at the first precision the bounds are tight


@pytest.mark.parametrize("levels", [
    [(0, 1), (1, 2)],
    [(0, 1), (1, 3), (2, 3), (3, 1)],
    [(0, 5)] + [(u, u * u + 1) for u in range(1, 60)],
])
def test_decided_words_match_the_scalar_draw_and_the_exact_index(levels):
    """Words at, next to and between every bound: a decided word's index is the exact one
    for every continuation, and choose_index from the same prefix returns it."""
    table = _rational_table(levels)
    with flint_workprec(initial_prec(len(table))):
        lo, hi = cdf_bounds(table.cumulative())
    words = _words_near(lo, hi) + [random.Random(1).getrandbits(64) for _ in range(300)]
    undecided = _check_words(_table_boundaries(table), lo, hi, words, lambda prec: table.cumulative())
    assert undecided.sum() < len(words) // 2  # most words are decided


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=2, max_size=8), st.lists(st.integers(0, TOP - 1), max_size=20))
def test_exact_bounds_decide_exactly(weights, extra):
    ends = [sum(weights[:i + 1]) for i in range(len(weights))]
    lo, hi = cdf_bounds_exact(ends)
    words = _words_near(lo, hi) + extra
    cumulative = lambda prec: [arb(e) for e in ends]  # noqa: E731
    _check_words(_boundaries(weights), lo, hi, words, cumulative)


def test_a_word_below_a_bound_it_cannot_separate_is_undecided():
    """Boundary 1/3: the word floor(2**64/3) straddles it, so it is left undecided; the
    top word is always undecided (upper bounds may be capped there)."""
    lo, hi = cdf_bounds_exact([1, 3])
    u = TOP // 3
    index, undecided = inverse_cdf_words(lo, hi, np.array([u, u - 1, u + 1, TOP - 1], dtype=np.uint64))
    assert undecided.tolist() == [True, False, False, True]
    assert index.tolist()[1:3] == [0, 1]


class _ScriptedRandom(random.Random):
    """The first ``getrandbits`` call returns the given words packed; later ones are its
    own Mersenne Twister bits."""

    def __init__(self, words, seed):
        super().__init__(seed)
        self._packed = sum(w << (64 * t) for t, w in enumerate(words))
        self._n = len(words)

    def getrandbits(self, k):
        if self._packed is not None:
            assert k == 64 * self._n
            out, self._packed = self._packed, None
            return out
        return super().getrandbits(k)


def test_sample_levels_finishes_undecided_words_consistently():
    """Words that the bounds cannot decide (the top word, words straddling a bound) are
    finished from their prefix: the index is one whose interval meets [u, u + 1)."""
    table = _rational_table([(0, 1), (1, 3), (2, 3), (3, 1)])
    rule = ExponentialMechanism()
    with flint_workprec(initial_prec(len(table))):
        lo, hi = cdf_bounds(table.cumulative())
    words = _words_near(lo, hi)
    exact = _table_boundaries(table)
    for seed in range(5):
        draws = rule.sample_levels(table, _ScriptedRandom(words, seed), len(words))
        for u, a in zip(words, draws):
            below = exact[a - 1] if a else Fraction(0)
            assert below < Fraction(u + 1, TOP) and Fraction(u, TOP) < exact[a], (u, a)
            if _exact_index(exact, u) is not None:
                assert _exact_index(exact, u) == a


def test_sample_levels_single_level_and_zero_draws():
    table = _rational_table([(0, 3)])
    rule = ExponentialMechanism()
    assert rule.sample_levels(table, random.Random(1), 4) == [0, 0, 0, 0]
    assert rule.sample_levels(_rational_table([(0, 1), (1, 1)]), random.Random(1), 0) == []


def test_sample_levels_goodness_of_fit():
    """A Joint table with hundreds of levels: 100,000 batched level draws against the
    certified level probabilities (false alarm <= 1e-6)."""
    n = 100_000
    m = exactdp.Joint(random.Random(9).sample(range(2000), 200), 10, epsilon=Fraction(1, 3))
    draws = Counter(m.rule.sample_levels(m.table, random.Random(9), n))
    expected = {a: float(p) * n for a, (lv, p) in enumerate(m.level_probabilities(dps=20))}
    stat, df = chi2_statistic(draws, expected)
    assert df >= 1 and stat < chi2_threshold(df, ALPHA)


def test_default_sample_levels_loops_sample_level():
    """A rule without a batched draw: sample_levels is sample_level n times, in order."""
    m = exactdp.PNFJoint([5, 3, 3, 0], 2, epsilon=1)
    gen = random.Random(4)
    expected = [m.rule.sample_level(m.table, gen) for _ in range(30)]
    assert m.rule.sample_levels(m.table, random.Random(4), 30) == expected


# -- uniform_below: many bounded integers from raw words --------------------------------
class _Words:
    """A stand-in numpy generator: raw words from ``words`` first, then from PCG64(seed)."""

    def __init__(self, words, seed: int = 0):
        self.queue = [int(w) for w in words]
        self.gen = np.random.PCG64(seed)
        self.bit_generator = self

    def random_raw(self, n: int) -> np.ndarray:
        head, self.queue = self.queue[:n], self.queue[n:]
        tail = self.gen.random_raw(n - len(head)).tolist() if n > len(head) else []
        return np.array(head + tail, dtype=np.uint64)


def _uniform_below_twin(gen: _Words, bounds: list[int]) -> list[int]:
    """Lemire's multiply-and-reject, one entry at a time in plain Python integers: b-bit
    parts of the words, least significant first; rejected entries drawn again, in index
    order, from fresh words."""
    bits = 16 if max(bounds) <= 2**12 else 32
    per, mask = 64 // bits, (1 << bits) - 1

    def parts(count: int) -> list[int]:
        words = gen.random_raw(-(-count // per)).tolist()
        return [(w >> (bits * j)) & mask for w in words for j in range(per)][:count]

    values: list = [None] * len(bounds)
    todo = list(range(len(bounds)))
    while todo:
        again = []
        for t, u in zip(todo, parts(len(todo))):
            m = u * bounds[t]
            if m & mask < (1 << bits) % bounds[t]:
                again.append(t)
            else:
                values[t] = m >> bits
        todo = again
    return values


_bounds = st.one_of(
    st.lists(st.integers(1, 2**12), min_size=1, max_size=40),  # 16-bit parts
    st.lists(st.integers(1, 2**32 - 1), min_size=1, max_size=40),  # 32-bit parts
    st.lists(st.sampled_from([1, 2, 3, 4095, 4096, 4097, 2**31, 2**32 - 1]), min_size=1, max_size=40),
)
# words of 0 and all ones make u = 0 or u = 2**b - 1: rejections for most bounds
_words = st.lists(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**64 - 1, 2**32, 1])), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_bounds, _words, st.integers(0, 2**32))
def test_uniform_below_equals_the_twin(bounds, words, seed):
    """The vectorised draw equals Lemire's method one entry at a time on the same words,
    redraws included (the words of 0 force rejections)."""
    got = uniform_below(_Words(words, seed), np.array(bounds, dtype=np.int64))
    assert got.tolist() == _uniform_below_twin(_Words(words, seed), bounds)
    assert all(0 <= v < w for v, w in zip(got.tolist(), bounds))
    assert got.dtype == (np.uint16 if max(bounds) <= 2**12 else np.uint32)


def test_uniform_below_shapes_and_bad_bounds():
    gen = np.random.Generator(np.random.PCG64(1))
    got = uniform_below(gen, np.full((3, 5), 7, dtype=np.uint16))
    assert got.shape == (3, 5) and (got < 7).all()
    assert uniform_below(gen, np.zeros((2, 0), dtype=np.int64)).shape == (2, 0)
    for bad in ([0, 3], [2**32]):
        with pytest.raises(InvalidParameterError, match="bounds"):
            uniform_below(gen, np.array(bad, dtype=np.int64))


@pytest.mark.parametrize("w", [1, 2, 3, 5, 7, 48, 100, 255, 1000, 3000, 4095, 4096])
def test_uniform_below_accepts_each_value_equally_often(w):
    """Lemma 4.1 of Lemire's paper over every 16-bit part: the accepted parts give every
    value below w exactly floor(2**16 / w) times (so an accepted draw is exactly uniform),
    and uniform_below returns exactly those values for them."""
    u = np.arange(1 << 16, dtype=np.uint64)
    m = u * np.uint64(w)
    accepted = (m & np.uint64(0xFFFF)) >= (1 << 16) % w
    counts = np.bincount((m[accepted] >> np.uint64(16)).astype(np.int64), minlength=w)
    assert counts.tolist() == [(1 << 16) // w] * w
    words = (u[0::4] | (u[1::4] << np.uint64(16)) | (u[2::4] << np.uint64(32)) | (u[3::4] << np.uint64(48)))
    got = uniform_below(_Words(words.tolist()), np.full(1 << 16, w, dtype=np.int64))
    assert np.array_equal(got[accepted], (m[accepted] >> np.uint64(16)).astype(got.dtype))


def _range_bins(w: int, bins: int) -> dict:
    """Expected share of each of ``bins`` equal ranges of [0, w): values v with
    v * bins // w == b, i.e. ceil(b w / bins) <= v < ceil((b + 1) w / bins)."""
    edge = [-(-b * w // bins) for b in range(bins + 1)]
    return {b: Fraction(edge[b + 1] - edge[b], w) for b in range(bins)}


@pytest.mark.parametrize("w", [6, 4096, 5000, 40_000, 2**31 + 3])
def test_uniform_below_fits_uniform(w):
    """Pearson chi-square of 60,000 draws against uniform on [0, w), in at most 60 equal
    ranges (each range's share exact): false-alarm probability <= 1e-6."""
    n, bins = 60_000, min(w, 60)
    gen = np.random.Generator(np.random.PCG64(w))
    got = uniform_below(gen, np.full(n, w, dtype=np.int64)).astype(np.int64) * bins // w
    expected = {b: float(n * share) for b, share in _range_bins(w, bins).items()}
    stat, df = chi2_statistic(Counter(got.tolist()), expected)
    assert df >= 1 and stat < chi2_threshold(df, 1e-6)


def test_uniform_below_rejects_a_skewed_law():
    """The same fit rejects 16-bit parts taken mod w without rejection at w = 40,000
    (values below 2**16 - 40,000 twice as likely): the check can fail."""
    n, w, bins = 60_000, 40_000, 60
    gen = np.random.Generator(np.random.PCG64(3))
    got = (gen.bit_generator.random_raw(n) & np.uint64(0xFFFF)).astype(np.int64) % w * bins // w
    expected = {b: float(n * share) for b, share in _range_bins(w, bins).items()}
    stat, df = chi2_statistic(Counter(got.tolist()), expected)
    assert stat > chi2_threshold(df, 1e-6)
