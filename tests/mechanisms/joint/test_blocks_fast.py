"""Joint's per-block fast paths give the very same objects as the plain per-level loops.

The twins here are the straightforward loops (one statement sequence per level) that the
block source used before its levels and weights were built by comprehensions and C-level
maps: the exact levels must be equal, and every certified ball must have the same
midpoint and radius bit for bit (so every probability, certified digit and seeded sample
stays the same).  Also twinned: :meth:`_ExpDigits.many` against one call per ``M``, and
the packed-key sort of the threshold events against ``argsort``.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from functools import reduce
from operator import mul

import numpy as np
import pytest
from flint import arb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.core.levels import Level
from exactdp.core.precision import flint_workprec
from exactdp.mechanisms.joint import blocks as joint_blocks
from exactdp.mechanisms.joint import sweep as joint_sweep
from exactdp.mechanisms.joint.blocks import _ExpDigits

from twins import counts_and_k

SMALL = range(4)


def _bits(x: arb) -> tuple:
    """A ball's midpoint and radius, exactly (``==`` on arb compares intervals)."""
    return x.mid().man_exp(), x.rad().mid().man_exp()


def _reference_levels(src, b):
    """The per-level loop: ``N <- N * num / den``, ``m = N - N_prev``."""
    _, Ms, nums, dens = src._factors(b)
    product = src.count_at_least(src._start(b))
    out = [Level(0, product)] if b == 0 else []
    previous = product
    for M, num, den in zip(Ms, nums, dens):
        product = product * num // den
        out.append(Level(-M, product - previous))
        previous = product
    return out


def _reference_weights(src, b, scale):
    """The per-level ball loop, ``exp(-lam*M)`` by one digit product per far level."""
    _, Ms, nums, dens = src._factors(b)
    lam = scale.lam_ball()
    start = src._start(b)
    product = arb(src.count_at_least(start))
    es, ws = [], []
    digits = _ExpDigits(lam)
    if b == 0:
        e = arb(1)
        es.append(e)
        ws.append(product)
    else:
        e = digits(Ms[0])
        start = Ms[0]
    gaps = {}
    previous, M_prev = product, start
    for M, num, den in zip(Ms, nums, dens):
        product = product * num / den
        gap = M - M_prev
        if gap >= joint_blocks._GAP_CACHE:
            e = digits(M)
        elif gap:
            g = gaps.get(gap)
            if g is None:
                g = gaps[gap] = (-lam * gap).exp()
            e = e * g
        es.append(e)
        ws.append((product - previous) * e)
        previous, M_prev = product, M
    return es, ws


def _check_identical(m: exactdp.Joint, prec: int = 120) -> None:
    src = m.table.source
    for b in range(len(m.table.block_ranges())):
        got = src.block_levels(b)
        want = _reference_levels(src, b)
        assert got == want
        assert all(type(lv) is Level and type(lv.multiplicity) is int for lv in got)
        with flint_workprec(prec):
            es, ws = src.block_weights(b, m.scale)
            res, rws = _reference_weights(src, b, m.scale)
        assert list(map(_bits, es)) == list(map(_bits, res))
        assert list(map(_bits, ws)) == list(map(_bits, rws))


@pytest.mark.slow
@pytest.mark.parametrize("gap_cache", [1, 2, 4096])
@pytest.mark.parametrize("block_events", [1, 3])
def test_blocks_identical_to_the_loops_exhaustive(monkeypatch, block_events, gap_cache):
    """Every vector in {0..3}^d, d <= 4, every k: block boundaries almost everywhere and
    the far-level path (digits of M) taken at every gap (``_GAP_CACHE = 1``), at gaps
    of 2 and more, or never."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", block_events)
    monkeypatch.setattr(joint_blocks, "_GAP_CACHE", gap_cache)
    for d in range(1, 5):
        for counts in itertools.product(SMALL, repeat=d):
            for k in range(1, d + 1):
                _check_identical(exactdp.Joint(counts, k, epsilon=Fraction(2, 3)))


def test_python_path_identical_to_the_loops(monkeypatch):
    """Counts too large for int64 (a list of Ms, digits split in Python ints)."""
    monkeypatch.setattr(joint_blocks, "_GAP_CACHE", 2)
    for counts, k in [([3 * 2**70, 2**70, 5, 0, 0], 3), ([2**64 + 9, 2**64, 2**63, 1], 4), ([2**80, 7], 1)]:
        m = exactdp.Joint(counts, k, epsilon=Fraction(1, 5))
        assert m.table.source._python_blocks is not None
        _check_identical(m, prec=200)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=9, max_sequences=10**6), st.sampled_from([1, 3, 1 << 17]), st.sampled_from([1, 5, 4096]))
def test_blocks_identical_to_the_loops_hypothesis(ck, block_events, gap_cache):
    counts, k = ck
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joint_blocks, "BLOCK_EVENTS", block_events)
        mp.setattr(joint_blocks, "_GAP_CACHE", gap_cache)
        _check_identical(exactdp.Joint(counts, k, epsilon=Fraction(3, 7)))


@pytest.mark.parametrize("seed", range(6))
def test_blocks_identical_to_the_loops_wide_counts(seed):
    """Heavy-tailed and distinct counts: gaps far past ``_GAP_CACHE`` and dense ones mixed."""
    rng = random.Random(seed)
    d = rng.randint(30, 300)
    counts = [10**12 // r**2 for r in range(1, d + 1)] if seed % 2 else rng.sample(range(10 * d), d)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joint_blocks, "BLOCK_EVENTS", 97)
        _check_identical(exactdp.Joint(counts, rng.randint(1, 12), epsilon=1))


def test_the_identity_check_can_fail():
    """Negative controls: a ball from the same factors multiplied in another order, and a
    level off by one, are told apart by the comparisons above."""
    lam = arb(3) / 7
    digits = _ExpDigits(lam)
    Ms = [(5 << 24) + (3 << 12) + 7, (9 << 24) + 11, 2**40 + 3 * 2**13 + 1]
    fs = [[digits.tables[j][(M >> 12 * j) & 4095] for j in range(4) if (M >> 12 * j) & 4095] for M in
          Ms if digits(M)]
    assert any(_bits(reduce(mul, f)) != _bits(reduce(mul, f[::-1])) for f in fs)
    m = exactdp.Joint([9, 4, 4, 1, 0], 3)
    src = m.table.source
    wrong = _reference_levels(src, 0)
    wrong[1] = Level(wrong[1].utility, wrong[1].multiplicity + 1)
    assert src.block_levels(0) != wrong


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 2**61 - 1) | st.integers(1, 2**80), min_size=0, max_size=40))
def test_exp_digits_many_is_one_call_per_M(Ms):
    """Digits split at once, products by reduce: the same balls as one ``__call__`` each,
    from a list (any size) and from an int64 array."""
    lam = arb(5) / 3
    with flint_workprec(150):
        want = [_bits(_ExpDigits(lam)(M)) for M in Ms]
        assert [_bits(x) for x in _ExpDigits(lam).many(Ms)] == want
        small = [M for M in Ms if M < 2**62]
        got = _ExpDigits(lam).many(np.array(small, dtype=np.int64))
        assert [_bits(x) for x in got] == [w for M, w in zip(Ms, want) if M < 2**62]


def test_exp_digits_many_shares_its_tables_with_calls():
    """Calls and ``many`` fill the same per-digit tables (a zero digit maps to no factor)."""
    lam = arb(1) / 9
    digits = _ExpDigits(lam)
    first = digits(4097)
    assert [_bits(x) for x in digits.many([4097, 1 << 24])] == [_bits(first), _bits(_ExpDigits(lam)(1 << 24))]
    assert digits.tables[1][0] is None and digits.tables[0][1] is not None


@pytest.mark.parametrize("fallback", ["event keys", "argsort"])
@pytest.mark.parametrize("seed", range(8))
def test_packed_sort_gives_the_argsort_factors(monkeypatch, seed, fallback):
    """The packed sort keys (row and value in the key) and each fallback (``M * 2**s +
    event`` keys then a gather; an argsort) give the same levels and the same exact factors
    (the order of events within a level may differ, not a product)."""
    rng = random.Random(seed)
    d = rng.randint(2, 400)
    counts = [rng.randint(0, 30) for _ in range(d)] if seed % 2 else rng.sample(range(5 * d), d)
    k = rng.randint(1, min(d, 20))
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 211)
    fast = exactdp.Joint(counts, k).table.source
    fast._plan()
    if fallback == "argsort":
        monkeypatch.setattr(joint_blocks, "_KEY_BITS", 0)  # no key fits
    else:
        monkeypatch.setattr(joint_blocks, "_PACKED_ROWS", False)
    slow = exactdp.Joint(counts, k).table.source
    slow._plan()
    assert fast._sizes == slow._sizes
    for b in range(len(fast._sizes)):
        assert fast._compute_factors(b)[0].tolist() == slow._compute_factors(b)[0].tolist()
        assert fast._factors(b)[1:] == slow._factors(b)[1:]


def test_factors_are_kept_not_recomputed(monkeypatch):
    """Within the default budget the factors computed while planning are the ones read by
    every later pass (int64 arrays: 24 bytes a level), never computed again."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 50)
    rng = random.Random(3)
    m = exactdp.Joint(rng.sample(range(3000), 300), 5, epsilon=1)
    src = m.table.source
    src._plan()
    calls = []
    original = src._compute_factors
    monkeypatch.setattr(src, "_compute_factors", lambda b: calls.append(b) or original(b))
    assert len(m.table.block_ranges()) > 5
    for _ in m.iter_level_probabilities(30):
        pass
    m.sample(rng=1)
    assert calls == []
    assert all(src._nbytes[b] > 24 * m.table._sizes[b] for b in range(1, len(m.table._sizes))
               if src._compute_factors(b)[1].dtype == object)
    # distinct differences (powers of two): one event per level, three int64 values each
    powers = exactdp.Joint([2**i for i in range(40)], 6).table.source
    powers._plan()
    assert len(powers._sizes) > 3
    for b in range(1, len(powers._sizes)):
        assert powers._compute_factors(b)[1].dtype == np.int64
        assert powers._nbytes[b] == 24 * powers._sizes[b]
    # a budget that keeps nothing recomputes them (so the check above can fail)
    small = exactdp.Joint(rng.sample(range(3000), 300), 5, epsilon=1, memory_budget=1).table.source
    small._plan()
    calls2 = []
    original2 = small._compute_factors
    monkeypatch.setattr(small, "_compute_factors", lambda b: calls2.append(b) or original2(b))
    for b in range(len(small._sizes)):
        small.block_levels(b)
    assert calls2


def test_python_path_is_taken_for_huge_counts(monkeypatch):
    """The list path of the digit split is the one the pure-Python blocks use."""
    monkeypatch.setattr(joint_sweep, "NUMPY_LIMIT", 0)
    m = exactdp.Joint([40000, 9000, 3, 0], 2, epsilon=Fraction(1, 2))
    assert m.table.source._python_blocks is not None
    _check_identical(m)
