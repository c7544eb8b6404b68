"""Tests of exactdp.core.seeds: an int seed is mapped injectively onto ``random.Random``'s
seeds (the identity below ``2**128``), and ``as_rng`` accepts only generators that draw
integer bits."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import exactdp
from exactdp import errors
from exactdp.core import seeds, validation
from exactdp.core.seeds import SEED_BOUND, as_rng, random_from_seed, seed_to_nonnegative


def test_validation_reexports_the_seed_checks():
    """Code that imported the seed checks from exactdp.core.validation keeps working."""
    for name in seeds.__all__:
        assert getattr(validation, name) is getattr(seeds, name) and name in validation.__all__
    assert SEED_BOUND == 2**128 and seed_to_nonnegative(SEED_BOUND - 1) == SEED_BOUND - 1


@pytest.mark.parametrize("bound", [1, 2, 5, 8])
def test_seed_map_is_injective_and_keeps_small_seeds_exhaustive(bound):
    """Exhaustive check of the seed map with small bounds: injective, non-negative, the
    identity below the bound, and onto an initial segment of the non-negative integers."""
    images = [seed_to_nonnegative(s, bound) for s in range(-60, 61)]
    assert len(set(images)) == len(images) and min(images) == 0
    assert all(seed_to_nonnegative(s, bound) == s for s in range(bound))
    top = bound + 2 * (60 - bound)  # image of the largest seed, 60
    assert {x for x in images if x <= top} == set(range(top + 1))


@given(st.integers(), st.integers())
def test_seed_map_injective_random(a, b):
    assert (seed_to_nonnegative(a) == seed_to_nonnegative(b)) == (a == b)
    assert seed_to_nonnegative(a) >= 0


def test_negative_seeds_give_other_samples():
    """random.Random(-n) is random.Random(n); exactdp's seeds are injective, and seeds
    0 <= n < 2**128 give exactly random.Random(n)'s samples (documented outputs unchanged)."""
    assert random.Random(-7).random() == random.Random(7).random()  # why the mapping exists
    states = {random_from_seed(s).getstate() for s in range(-300, 301)}
    assert len(states) == 601
    for s in (0, 1, 7, 2**32, 2**127):
        assert random_from_seed(s).getstate() == random.Random(s).getstate()
    for s in (1, 7, 2**32, 2**70 + 3, 2**128):
        assert as_rng(-s).getrandbits(64) != as_rng(s).getrandbits(64)
        assert as_rng(-s).getrandbits(64) == as_rng(-s).getrandbits(64)  # reproducible
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert m.samples(30, rng=-3) != m.samples(30, rng=3)
    assert m.samples(30, rng=3) == m.samples(30, rng=random.Random(3))


def test_as_rng():
    gen = random.Random(3)
    assert as_rng(gen) is gen
    assert isinstance(as_rng(None), random.SystemRandom)
    a, b = as_rng(42), random.Random(42)
    assert [a.getrandbits(64) for _ in range(5)] == [b.getrandbits(64) for _ in range(5)]
    assert as_rng(np.int64(42)).getrandbits(32) == random.Random(42).getrandbits(32)
    for bad in (True, 1.0, "1", [1]):
        with pytest.raises(errors.ArgumentTypeError, match=r"^rng="):
            as_rng(bad)


class _FloatSource(random.Random):
    """A generator that supplies its randomness through ``random()`` only, as the
    :mod:`random` docs describe subclassing: CPython then builds its ``randrange`` from
    floats (biased past ``2**53``) and its inherited ``getrandbits`` ignores ``random()``."""

    def random(self):
        return 0.5


class _BitsSource(_FloatSource):
    def getrandbits(self, k):
        return super().getrandbits(k)


class _FloatAgain(_BitsSource):
    def random(self):  # nearer in the MRO than _BitsSource.getrandbits: floats again
        return 0.25


def test_as_rng_refuses_a_float_only_subclass():
    """Regression: such a generator was accepted, and ``sample`` drew its uniform rank by
    ``randrange`` from ``random()`` floats."""
    for bad in (_FloatSource(1), _FloatAgain(1)):
        with pytest.raises(errors.ArgumentTypeError, match=r"^rng=.*must also override getrandbits"):
            as_rng(bad)
        with pytest.raises(errors.ArgumentTypeError, match="getrandbits"):
            exactdp.Joint([3, 1, 1], 2).sample(rng=bad)
    ok = _BitsSource(1)
    assert as_rng(ok) is ok
    assert as_rng(random.SystemRandom()) is not None
