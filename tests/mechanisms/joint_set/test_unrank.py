"""JointSet's sets of one level (exactdp/mechanisms/joint_set/unrank.py) against enumeration.

Twins (tests/twins/joint_set.py, written from the definitions): ``set_maxdiff`` gives
every k-subset's utility, so the sets of each level are listed by brute force.

- ``LevelPaths(ranking, k, M)``: its size is the level's multiplicity and ``unrank`` is a
  bijection from ``range(size)`` onto the level's sets, for every vector of
  ``{0..3}^d`` (``d <= 5``; sorted vectors at ``d = 6``), every ``k`` (so ``k = 1``,
  ``k = d``, ``d - 1``, ``d - 2`` and ``d = 1``) and every level, and on hypothesis
  instances with ties and wide counts; a value no set attains has size 0.
- ``draw`` returns only sets of the level, and is uniform over them: Pearson's chi-square
  over every set of a level with several segments and several states per boundary,
  false-alarm rate ``ALPHA = 1e-6`` per test; a draw that skews one choice is rejected
  (negative control).
- The two ways a draw decides a state from a 64-bit word (exact comparisons on a state's
  first visit, integer bounds afterwards) give the same index for every word at, beside and
  between the bounds, so seeded draws do not depend on what was drawn before.
- ``uniform_subset`` is uniform over the subsets (chi-square; a biased control is rejected).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp.core.ranking import Ranking
from exactdp.core.sampling import WORD_BITS, inverse_cdf_word
from exactdp.mechanisms.joint_set.unrank import LevelPaths, uniform_subset

from twins import chi2_statistic, chi2_threshold
from twins.joint_set import set_maxdiff, small_vectors

ALPHA = 1e-6
TOP = 1 << WORD_BITS


def _levels_by_enumeration(counts, k):
    """``maxdiff M -> the k-subsets of utility -M`` (brute force)."""
    by_level: dict[int, set] = {}
    for s in itertools.combinations(range(len(counts)), k):
        by_level.setdefault(set_maxdiff(counts, s), set()).add(frozenset(s))
    return by_level


def _check_instance(counts, k, rng):
    ranking = Ranking(counts)
    order = ranking.order
    by_level = _levels_by_enumeration(counts, k)
    for M, sets in by_level.items():
        paths = LevelPaths(ranking, k, M)
        assert paths.size == len(sets), (counts, k, M)
        got = [frozenset(order[x] for x in paths.unrank(r)) for r in range(paths.size)]
        assert len(set(got)) == len(got) and set(got) == sets, (counts, k, M)
        for _ in range(3):
            ranks = paths.draw(rng)
            assert len(ranks) == k and frozenset(order[x] for x in ranks) in sets, (counts, k, M)
    for M in {M + e for M in by_level for e in (-1, 1)} - set(by_level):  # values no set attains
        if M >= 0:
            assert LevelPaths(ranking, k, M).size == 0


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_unrank_is_a_bijection_onto_each_level_exhaustive(d):
    rng = random.Random(d)
    for counts in small_vectors(d):
        for k in range(1, d + 1):
            _check_instance(counts, k, rng)


def test_unrank_is_a_bijection_d6_sorted_vectors():
    rng = random.Random(6)
    for counts in itertools.combinations_with_replacement(range(4), 6):
        for k in range(1, 7):
            _check_instance(counts[::-1], k, rng)


@st.composite
def instances(draw):
    d = draw(st.integers(1, 9))
    kind = draw(st.sampled_from(["tied", "wide", "distinct"]))
    if kind == "tied":
        counts = draw(st.lists(st.integers(0, 4), min_size=d, max_size=d))
    elif kind == "wide":
        counts = draw(st.lists(st.sampled_from([0, 1, 7, 10**20, 10**20 + 3, 2**90]), min_size=d, max_size=d))
    else:
        counts = draw(st.permutations(list(range(0, 3 * d, 3))))
    k = draw(st.integers(1, d))
    return tuple(counts), k


@settings(max_examples=150, deadline=None)
@given(instances(), st.integers(0, 2**32))
def test_unrank_is_a_bijection_hypothesis(instance, seed):
    counts, k = instance
    _check_instance(counts, k, random.Random(seed))


@settings(max_examples=60, deadline=None)
@given(instances())
def test_every_state_weighs_its_count(instance):
    """At every state a set can reach (from the start, through choices of positive weight),
    the weights of the choices add up to the sets left (the counts the bounds are built
    from), and every path ends with ``k`` ranks and a row at the level."""
    counts, k = instance
    ranking = Ranking(counts)
    for M in _levels_by_enumeration(counts, k):
        paths = LevelPaths(ranking, k, M)
        states = _reachable_states(paths)
        ends = {(n, flag) for (t, n, flag) in states if t == len(paths.lengths)}
        assert ends == {(k, True)}, (counts, k, M)


def _reachable_states(paths):
    """Every ``(boundary, n, flag)`` a set of the level passes through, found forwards from
    the start through the choices of positive weight (their weights checked to add up to
    the state's count on the way)."""
    states = {(0, 0, paths.first_flag)}
    for s in range(len(paths.lengths)):
        for (t, n, flag) in [x for x in states if x[0] == s]:
            ends = list(paths._weights(s, n, flag))
            assert ends and ends[-1] == paths._left(s, n, flag) > 0, (s, n, flag)
            for j, (before, end) in enumerate(zip([0] + ends, ends), start=paths._least_j(s, n)):
                if end > before:
                    states.add((s + 1, n + j, flag or n + j <= paths.fire[s + 1]))
    return states


# ------------------------------------------------------------------------------------------
# The draw's law
# ------------------------------------------------------------------------------------------
#: A level with several segments, windows of several states and a choice at most segments:
#: counts with ties, k = 4 of 11, utility -3 (checked to hold more than 100 sets below).
LAW_COUNTS, LAW_K, LAW_M = (9, 8, 8, 7, 6, 6, 6, 5, 4, 4, 2), 4, 3


def _uniform_statistic(draws, sets):
    expected = {s: len(draws) / len(sets) for s in sets}
    stat, df = chi2_statistic(Counter(draws), expected)
    return stat, chi2_threshold(df, ALPHA)


def _level_draws(paths, n, seed, draw=None):
    rng = random.Random(seed)
    order = Ranking(LAW_COUNTS).order
    draw = draw or paths.draw
    return [frozenset(order[x] for x in draw(rng)) for _ in range(n)]


def test_draw_is_uniform_within_a_level():
    sets = _levels_by_enumeration(LAW_COUNTS, LAW_K)[LAW_M]
    paths = LevelPaths(Ranking(LAW_COUNTS), LAW_K, LAW_M)
    assert len(sets) > 100 and max(paths.hi[s] - paths.lo[s] for s in range(len(paths.bounds))) >= 2
    draws = _level_draws(paths, 60 * len(sets), 2026)
    assert set(draws) == sets
    stat, threshold = _uniform_statistic(draws, sets)
    assert stat < threshold, (stat, threshold)
    assert len([v for v in paths.steps.values() if v is not None]) > 0  # bounds were built and used


class _Skewed(LevelPaths):
    """The walk with the first choice of every state weighing twice its count."""

    __slots__ = ()

    def _weights(self, s, n, flag):
        ends = list(super()._weights(s, n, flag))
        yield from (e + ends[0] for e in ends)

    def _left(self, s, n, flag):
        return super()._left(s, n, flag) + next(iter(super()._weights(s, n, flag)), 0)


def test_a_skewed_draw_is_rejected():
    """Negative control: the same walk with skewed weights (and so skewed bounds) is
    rejected by the same test."""
    sets = _levels_by_enumeration(LAW_COUNTS, LAW_K)[LAW_M]
    paths = _Skewed(Ranking(LAW_COUNTS), LAW_K, LAW_M)
    draws = _level_draws(paths, 60 * len(sets), 2026)
    stat, threshold = _uniform_statistic(draws, sets)
    assert stat > threshold, (stat, threshold)


class _Words(random.Random):
    """``getrandbits(64)`` returns the given words in turn (then its own bits)."""

    def __init__(self, words, seed=0):
        super().__init__(seed)
        self.words = list(words)

    def getrandbits(self, k):
        if k == WORD_BITS and self.words:
            return self.words.pop(0)
        return super().getrandbits(k)


def test_first_visit_and_bounds_decide_every_word_alike():
    """For every state with a choice, words at, beside and between its bounds (and the top
    word, always finished exactly) give the same index on a state's first visit (exact
    comparisons) and from its bounds."""
    ranking = Ranking(LAW_COUNTS)
    checked = 0
    for paths, (s, n, flag) in [(paths, state) for paths in (LevelPaths(ranking, LAW_K, M)
                                                          for M in _levels_by_enumeration(LAW_COUNTS, LAW_K))
                                for state in sorted(_reachable_states(paths))]:
        if s == len(paths.lengths) or paths._least_j(s, n) == min(paths.lengths[s], paths.hi[s + 1] - n):
            continue  # the end, or a single choice (no word read)
        jlo, lo, hi = paths._step(s, n, flag)
        words = {0, TOP - 1, TOP // 2} | {w + e for w in lo + hi for e in (-1, 0, 1) if 0 <= w + e < TOP}
        for u in sorted(words):
            seed = u % 997
            first = paths._first_visit(s, n, flag, u, random.Random(seed))
            index = inverse_cdf_word(lo, hi, u)
            by_bounds = jlo + (index if index is not None else paths._finish(s, n, flag, u, random.Random(seed)))
            assert first == by_bounds, (s, n, flag, u)
            checked += 1
    assert checked > 100


def test_seeded_draws_do_not_depend_on_what_was_drawn_before():
    paths = LevelPaths(Ranking(LAW_COUNTS), LAW_K, LAW_M)
    fresh = [paths.draw(random.Random(seed)) for seed in range(40)]
    for _ in range(500):  # every state reached twice or more: its bounds are built
        paths.draw(random.Random(_))
    assert [paths.draw(random.Random(seed)) for seed in range(40)] == fresh


def test_uniform_subset_is_uniform_and_a_biased_control_is_rejected():
    rng = random.Random(5)
    for size, j in ((7, 3), (6, 5), (5, 1), (4, 4)):
        sets = [frozenset(c) for c in itertools.combinations(range(size), j)]
        n = 200 * len(sets)
        draws = [frozenset(uniform_subset(rng, size, j)) for _ in range(n)]
        assert all(len(x) == j for x in draws)
        stat, threshold = _uniform_statistic(draws, sets)
        assert stat < threshold, (size, j, stat)
    # control: the smallest element kept too often
    sets = [frozenset(c) for c in itertools.combinations(range(7), 3)]
    biased = [frozenset(uniform_subset(rng, 7, 3)) if rng.random() < 0.9 else frozenset({0, 1, 2})
              for _ in range(200 * len(sets))]
    stat, threshold = _uniform_statistic(biased, sets)
    assert stat > threshold


# ------------------------------------------------------------------------------------------
# samples(n): the batched route
# ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_samples_fit_the_exact_law_and_a_wrong_level_law_is_rejected(monkeypatch):
    """samples(n) (levels by the rule's batched draw, sets by LevelPaths.draw) against the
    exact law over every set; the control draws every level uniformly instead."""
    from fractions import Fraction

    m = exactdp.JointSet(LAW_COUNTS, LAW_K, base=Fraction(4, 5))
    law = dict(m.distribution(dps=20))
    n = 40_000
    draws = m.samples(n, rng=11)
    stat, df = chi2_statistic(Counter(draws), {o: float(p) * n for o, p in law.items()})
    assert stat < chi2_threshold(df, ALPHA), (stat, df)
    levels = len(m.levels())
    monkeypatch.setattr(type(m.rule), "sample_levels",
                        lambda self, table, rng, count: [rng.randrange(levels) for _ in range(count)])
    wrong = exactdp.JointSet(LAW_COUNTS, LAW_K, base=Fraction(4, 5)).samples(n, rng=11)
    stat, df = chi2_statistic(Counter(wrong), {o: float(p) * n for o, p in law.items()})
    assert stat > chi2_threshold(df, ALPHA)


def test_samples_read_only_the_blocks_their_words_reach(monkeypatch):
    """On heavy-tailed counts the batched level draw finds a few blocks of the lazy level
    table, never every level (the whole sweep is what made it unusable at scale)."""
    from exactdp.core import level_stream

    monkeypatch.setattr(level_stream, "STREAM_BLOCK_LEVELS", 4)
    counts = [10**12 // r**2 for r in range(1, 41)]
    m = exactdp.JointSet(counts, 3, epsilon=1)
    draws = m.samples(3000, rng=4)
    assert m.table.known_length() is None
    assert all(len(o) == 3 for o in draws)
    assert Counter(draws).most_common(1)[0][0] == frozenset({0, 1, 2})
