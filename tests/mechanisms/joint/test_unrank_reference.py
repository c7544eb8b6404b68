"""Joint's fast unranking and repeated sampling against the original quadratic unranking.

``_unrank_reference`` is the unranking exactdp shipped before the per-level plans: it
re-derives the thresholds on every call and finds each digit-th unused rank by walking the
sorted used ranks.  The fast ``Joint._unrank`` must be the same bijection, bit for bit, so
every seeded ``sample`` stays what it was.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.mechanisms.joint import unrank as unrank_module


def _unrank_reference(m: exactdp.Joint, a: int, r: int) -> tuple[int, ...]:
    """The ``r``-th sequence of level ``a`` by the original ``O(k^2 log k)`` unranking."""
    M = -m.table.utilities[a]
    k = m.k
    t_at, t_gt = m._thresholds(M)
    after = [t_at[x] - x for x in range(k)]
    before = [max(t_gt[x] - x, 0) for x in range(k)]
    suffix = [1] * (k + 1)
    for x in range(k - 1, -1, -1):
        suffix[x] = suffix[x + 1] * after[x]
    prefix = 1
    for i in range(k):
        block = t_at[i] - t_gt[i]
        per_item = prefix * suffix[i + 1]
        weight = block * per_item
        if r < weight:
            break
        r -= weight
        prefix *= before[i]
    else:
        raise AssertionError("rank beyond the level's multiplicity")
    col, r = t_gt[i] + r // per_item, r % per_item
    ranks = [0] * k
    ranks[i] = col
    used = [col]
    for x in range(k):
        if x == i:
            continue
        radix = before[x] if x < i else after[x]
        r, digit = divmod(r, radix)
        pick = digit
        for u in sorted(used):
            if u <= pick:
                pick += 1
            else:
                break
        ranks[x] = pick
        used.append(pick)
    return tuple(m.ranking.order[x] for x in ranks)


def _sample_reference(m: exactdp.Joint, gen: random.Random) -> tuple[int, ...]:
    """One draw exactly as ``Mechanism._sample`` made it with the reference unranking."""
    a = m.rule.sample_level(m.table, gen)
    return _unrank_reference(m, a, gen.randrange(m.table.multiplicities[a]))


@pytest.fixture(params=["as shipped", "free list", "bisection"])
def picks(request, monkeypatch):
    """Run a test with the shipped choice of pick method, then with each one forced."""
    if request.param == "free list":
        monkeypatch.setattr(unrank_module, "_FREE_LIST_LIMIT", 10**9)
    elif request.param == "bisection":
        monkeypatch.setattr(unrank_module, "_FREE_LIST_LIMIT", 0)
    return request.param


def _ranks_to_check(multiplicity: int, rng: random.Random, limit: int = 40) -> list[int]:
    """Every rank of a small level; the ends and random ranks of a large one."""
    if multiplicity <= limit:
        return list(range(multiplicity))
    edges = [0, 1, multiplicity // 2, multiplicity - 2, multiplicity - 1]
    return edges + [rng.randrange(multiplicity) for _ in range(limit)]


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_unrank_matches_reference_exhaustive(d, picks):
    """Every count vector in {0..3}^d, every k, every level, every rank."""
    for counts in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            m = exactdp.Joint(counts, k, epsilon=1)
            for a, lv in enumerate(m.levels()):
                for r in range(lv.multiplicity):
                    assert m._unrank(a, r) == _unrank_reference(m, a, r), (counts, k, a, r)


_counts = st.one_of(
    st.lists(st.integers(0, 6), min_size=1, max_size=30),  # many ties
    st.lists(st.integers(0, 10**40), min_size=1, max_size=30),  # huge counts
    st.lists(st.integers(0, 400), min_size=1, max_size=60, unique=True),  # distinct
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(counts=_counts, data=st.data())
def test_unrank_matches_reference_random(counts, data, picks):
    """Random larger instances (ties, k = 1, k = d, d = 1, huge counts)."""
    d = len(counts)
    k = data.draw(st.sampled_from(sorted({1, d, (d + 1) // 2})) | st.integers(1, d))
    m = exactdp.Joint(counts, k, epsilon=1)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    levels = m.levels()
    chosen = range(len(levels)) if len(levels) <= 12 else [0, 1, len(levels) - 1] + rng.sample(range(len(levels)), 9)
    for a in chosen:
        for r in _ranks_to_check(levels[a].multiplicity, rng):
            assert m._unrank(a, r) == _unrank_reference(m, a, r), (counts, k, a, r)


def test_unrank_matches_reference_many_levels(picks):
    """More levels than the plan cache holds: evicted plans are rebuilt identically."""
    counts = random.Random(7).sample(range(5000), 300)
    m = exactdp.Joint(counts, 6, epsilon=1)
    rng = random.Random(1)
    levels = m.levels()
    assert len(levels) > 1024
    for _ in range(2):
        for a in range(0, len(levels), 3):
            r = rng.randrange(levels[a].multiplicity)
            assert m._unrank(a, r) == _unrank_reference(m, a, r)


INSTANCES = [
    ([5], 1, {"epsilon": 1}),
    ([10, 5, 1, 1], 2, {"epsilon": 1}),
    ([3, 3, 3, 0, 0, 7], 3, {"base": Fraction(1, 2)}),
    (random.Random(2026).sample(range(2000), 200), 20, {"epsilon": 1}),
    ([10**5 // r for r in range(1, 301)], 30, {"epsilon": 3}),
    ([0] * 12, 12, {"epsilon": 1, "sensitivity": 2}),
]


@pytest.mark.slow
@pytest.mark.parametrize("counts, k, kwargs", INSTANCES)
@pytest.mark.parametrize("n", [0, 1, 5, 1000])
def test_sample_same_as_reference_draws(counts, k, kwargs, n, picks):
    """sample(gen), n times from one generator, is n reference draws in order (seeded single
    samples never changed); samples(n, seed) is reproducible, in the support and of the
    same length (its law: tests/mechanisms/joint/test_unrank.py)."""
    m = exactdp.Joint(counts, k, **kwargs)
    gen = random.Random(99)
    expected = [_sample_reference(m, gen) for _ in range(n)]
    gen = random.Random(99)
    assert [m.sample(gen) for _ in range(n)] == expected
    batch = m.samples(n, rng=99)
    assert batch == m.samples(n, rng=random.Random(99)) and len(batch) == n
    levels = {lv.utility for lv in m.levels()}
    assert all(len(set(o)) == m.k and m.utility(o) in levels for o in batch)
