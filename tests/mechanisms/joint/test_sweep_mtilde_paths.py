"""Every path of ``Joint.mtilde`` gives the brute-force m̃ (``twins.brute_mtilde``, counted by
enumerating every sequence), entry for entry and in order.

Paths (chosen by module constants of ``exactdp.mechanisms.joint.sweep``, lowered here):

- windows: windowed packed-key events (``mtilde_windows``) and grouped exact arithmetic
  (``mtilde_groups``): the default whenever the keys fit ``int64``; with tiny windows
  (window boundaries inside and between levels, a padded last group in every window) and
  with every group size from 2 to 5 (groups holding two events of one row, and groups
  spanning levels);
- events: the per-event sweep (``_ALLOW_WINDOWS = False``), over numpy events or
  (``NUMPY_LIMIT = 0``) the pure-Python merge.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings

import exactdp
from exactdp.mechanisms.joint import sweep as sweep

from twins import brute_mtilde
from twins.strategies import counts_and_k

PATHS = {
    "windows": {},
    "tiny windows, groups of 2": {"_WINDOW": 1, "_MAX_GROUP": 2},
    "small windows, groups of 3": {"_WINDOW": 3, "_MAX_GROUP": 3},
    "windows, groups of 5": {"_WINDOW": 5, "_MAX_GROUP": 5, "_GROUP_BITS": 62},
    "events (numpy)": {"_ALLOW_WINDOWS": False},
    "events (python)": {"_ALLOW_WINDOWS": False, "NUMPY_LIMIT": 0},
}


def _use(monkeypatch, path):
    for name, value in PATHS[path].items():
        monkeypatch.setattr(sweep, name, value)


def _check(counts, k):
    m = exactdp.Joint(counts, k, epsilon=1)
    want = brute_mtilde(counts, k)
    den = 2 * len(counts) * k
    got = list(m.mtilde(keys=True))
    assert got == [(i, j, int(u * den), mt) for i, j, u, mt in want], (counts, k)
    assert all(type(x) is int for entry in got for x in entry)
    assert list(m.mtilde()) == want


@pytest.mark.slow
@pytest.mark.parametrize("path", list(PATHS))
def test_exhaustive_small(monkeypatch, path):
    """All counts in {0, 1, 2, 3}^d for d <= 4 (ties, d = 1) and every k (k = 1, k = d)."""
    _use(monkeypatch, path)
    for d in range(1, 5):
        for counts in itertools.product(range(4), repeat=d):
            for k in range(1, d + 1):
                _check(list(counts), k)


@pytest.mark.parametrize("path", list(PATHS))
def test_distinct_and_negative_counts(monkeypatch, path):
    """Distinct counts (one entry per event, the fast case), negative counts, d = 6."""
    _use(monkeypatch, path)
    rng = random.Random(3)
    for _ in range(12):
        counts = rng.sample(range(-20, 40), 6)
        for k in (1, 3, 6):
            _check(counts, k)


@pytest.mark.parametrize("path", [p for p in PATHS if p != "windows"])
def test_paths_agree_on_a_medium_instance(monkeypatch, path):
    """d = 400 distinct counts, k = 12 (4,800 entries of up to 100 bits, many windows and
    groups): each path equals the default one."""
    counts = random.Random(2026).sample(range(4000), 400)
    reference = list(exactdp.Joint(counts, 12).mtilde(keys=True))
    _use(monkeypatch, path)
    assert list(exactdp.Joint(counts, 12).mtilde(keys=True)) == reference
    assert len(reference) == 400 * 12


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=7, max_sequences=900))
def test_random_tiny_windows(ck):
    """Random instances (ties, huge and negative counts) through tiny windows and groups of 3."""
    counts, k = ck
    saved = sweep._WINDOW, sweep._MAX_GROUP
    sweep._WINDOW, sweep._MAX_GROUP = 2, 3
    try:
        _check(counts, k)
    finally:
        sweep._WINDOW, sweep._MAX_GROUP = saved


def test_windows_fit_boundary():
    """The windows path applies exactly while ``2dk * (|M| bound)`` stays below 2**62."""
    d, k = 4, 2
    span = (1 << 62) // (2 * d * k) - 1  # 2dk * (span + 1) == 2**62: just too big
    too_big = exactdp.Joint([span, 0, 1, 2], k).ranking
    fits = exactdp.Joint([span - 1, 0, 1, 2], k).ranking
    assert not sweep.mtilde_windows_fit(too_big, k)
    assert sweep.mtilde_windows_fit(fits, k)
    _check([span - 1, 0, 1, 2], k)
    _check([span, 0, 1, 2], k)


def test_group_size():
    assert sweep.group_size(166_000) == 4  # 3 factors of 18 bits: 54 bits
    assert sweep.group_size(1 << 25) == 3
    assert sweep.group_size(1 << 40) == 2
    assert sweep.group_size(1) == 4
