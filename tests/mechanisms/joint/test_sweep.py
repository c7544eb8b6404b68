"""The event paths of the Joint sweeps (numpy windows of every size, pure Python) give
identical levels and m-tilde on random instances, including d = 1 and k = d."""

from __future__ import annotations

import random

import pytest

import exactdp
from exactdp.mechanisms.joint import blocks as _blocks
from exactdp.mechanisms.joint import sweep as _events


def _results(counts, k):
    m = exactdp.Joint(counts, k)
    return m.levels(), list(m.mtilde(keys=True))


@pytest.mark.parametrize("seed", range(40))
def test_paths_agree(monkeypatch, seed):
    rng = random.Random(seed)
    d = rng.randint(1, 9)
    k = rng.randint(1, d)
    counts = [rng.randint(-4, 6) for _ in range(d)]
    reference = _results(counts, k)
    monkeypatch.setattr(_blocks, "BLOCK_EVENTS", 1)
    assert _results(counts, k) == reference
    monkeypatch.setattr(_events, "NUMPY_LIMIT", 0)
    assert _results(counts, k) == reference


def test_chunk_boundaries_never_split_a_level(monkeypatch):
    """Tiny chunks: each level's factors must still be multiplied together."""
    rng = random.Random(5)
    counts = [rng.randint(0, 30) for _ in range(40)]
    reference = exactdp.Joint(counts, 6).levels()
    monkeypatch.setattr(_events, "_CHUNK", 3)
    assert exactdp.Joint(counts, 6).levels() == reference
    monkeypatch.setattr(_blocks, "BLOCK_EVENTS", 2)
    assert exactdp.Joint(counts, 6).levels() == reference
    monkeypatch.setattr(_events, "NUMPY_LIMIT", 0)
    assert exactdp.Joint(counts, 6).levels() == reference
    assert sum(lv.multiplicity for lv in reference) == 40 * 39 * 38 * 37 * 36 * 35
