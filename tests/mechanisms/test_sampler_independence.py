"""Every mechanism's ``samples(n)`` are ``n`` independent draws, from the ``rng`` it is given only.

An independent checker certifies a sampler by its marginal law; a batched sampler can pass
that and still make consecutive draws dependent (a level reused, a cached uniform, draws
sorted by level).  So for every mechanism and set view:

- the law of consecutive pairs ``(o_{2t}, o_{2t+1})`` of ``samples(n)`` (and of the rows of
  ``samples(n, as_array=True)``) is the product of the exact law with itself: Pearson's
  chi-square over every pair of outputs (bins of expected count below 5 pooled), false-alarm
  rate ``ALPHA = 1e-6`` per test (a dependent control is rejected);
- ``rng`` is ``None``, an int seed (numpy integers too) or a :class:`random.Random`
  (:class:`random.SystemRandom` too); anything else (a numpy ``Generator`` or
  ``RandomState``, a float, a string, a bool, the ``random`` module, a subclass whose
  ``randrange`` draws from floats) is an
  :class:`~exactdp.errors.ArgumentTypeError` naming ``rng``;
- one seed gives the same draws whatever the global ``random`` and numpy states, and
  sampling leaves both global states as it found them.
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from itertools import combinations, permutations

import numpy as np
import pytest

import exactdp
from exactdp.errors import ArgumentTypeError

from twins import chi2_statistic, chi2_threshold

ALPHA = 1e-6
COUNTS, K = (2, 1, 1), 2  # a tie, six sequences and three sets: 36 or 9 pair cells

MECHANISMS = {
    "joint": lambda: exactdp.Joint(COUNTS, K, epsilon=1),
    "pnf-joint": lambda: exactdp.PNFJoint(COUNTS, K, epsilon=1),
    "pnf-joint-algorithm5": lambda: exactdp.PNFJoint(COUNTS, K, epsilon=1, sampler="algorithm5"),
    "joint-budget": lambda: exactdp.Joint(COUNTS, K, epsilon=1, memory_budget=1),
    "joint-set": lambda: exactdp.JointSet(COUNTS, K, epsilon=1),
    "canonical": lambda: exactdp.Canonical(COUNTS, K, epsilon=1),
    "canonical-exponential": lambda: exactdp.Canonical(COUNTS, K, base=Fraction(1, 2), noise="exponential"),
    "canonical-gamma1": lambda: exactdp.CanonicalGamma1(COUNTS, K, epsilon=1),
    "peeling": lambda: exactdp.Peeling(COUNTS, K, epsilon=1),
    "peeling-exponential": lambda: exactdp.Peeling(COUNTS, K, epsilon=1, noise="exponential"),
    "joint-sets": lambda: exactdp.Joint(COUNTS, K, epsilon=1).as_sets(),
    "pnf-joint-sets": lambda: exactdp.PNFJoint(COUNTS, K, epsilon=1).as_sets(),
    "peeling-sets": lambda: exactdp.Peeling(COUNTS, K, base=Fraction(1, 3), noise="exponential").as_sets(),
}


def _law(m):
    """Every output of ``COUNTS`` and ``K`` with its certified probability (by
    :meth:`probability`, which every budget allows, not by ``distribution()``)."""
    if m.output_kind == "set":
        outputs = [frozenset(s) for s in combinations(range(len(COUNTS)), K)]
    else:
        outputs = list(permutations(range(len(COUNTS)), K))
    return {o: float(m.probability(o, 20)) for o in outputs}


def _pair_statistic(draws, law):
    """Pearson's statistic of the consecutive pairs of ``draws`` against ``law x law``, its
    degrees of freedom and the threshold at false-alarm rate :data:`ALPHA`."""
    pairs = list(zip(draws[0::2], draws[1::2]))
    expected = {(a, b): pa * pb * len(pairs) for a, pa in law.items() for b, pb in law.items()}
    stat, df = chi2_statistic(Counter(pairs), expected)
    return stat, chi2_threshold(df, ALPHA)


def _as_outputs(m, rows):
    return [frozenset(r) if m.output_kind == "set" else tuple(r) for r in rows.tolist()]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_consecutive_draws_are_independent(name):
    m = MECHANISMS[name]()
    law = _law(m)
    n = 2000 if name == "pnf-joint-algorithm5" else 8000
    stat, threshold = _pair_statistic(m.samples(n, rng=20261123), law)
    assert stat < threshold, (name, stat, threshold)
    stat, threshold = _pair_statistic(_as_outputs(m, m.samples(n, rng=5, as_array=True)), law)
    assert stat < threshold, (name, "as_array", stat, threshold)


def test_the_pair_test_rejects_dependent_draws():
    """Control: draws with the right marginal law, each repeated once (so each pair is one
    output twice), or sorted (so pairs are ordered), are rejected."""
    m = MECHANISMS["joint"]()
    law = _law(m)
    draws = m.samples(4000, rng=1)
    repeated = [o for o in draws for _ in range(2)]
    stat, threshold = _pair_statistic(repeated, law)
    assert stat > threshold
    stat, threshold = _pair_statistic(sorted(m.samples(8000, rng=2)), law)
    assert stat > threshold


class _FloatOnly(random.Random):
    """Randomness through ``random()`` only: CPython's ``randrange`` then uses floats."""

    def random(self):
        return 0.5


GOOD_RNGS = [None, 0, 12345, -7, 2**200, np.int64(3), random.Random(3), random.SystemRandom()]
BAD_RNGS = [np.random.default_rng(1), np.random.RandomState(1), 1.0, "1", True, random, [1], _FloatOnly(1)]


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_rng_arguments(name):
    m = MECHANISMS[name]()
    support = set(_law(m))
    for rng in GOOD_RNGS:
        assert m.sample(rng=rng) in support
        assert set(m.samples(3, rng=rng)) <= support
    for rng in BAD_RNGS:
        with pytest.raises(ArgumentTypeError, match="rng="):
            m.sample(rng=rng)
        with pytest.raises(ArgumentTypeError, match="rng="):
            m.samples(2, rng=rng)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_draws_neither_read_nor_disturb_the_global_generators(name):
    m = MECHANISMS[name]()

    def draws(global_seed):
        random.seed(global_seed)
        np.random.seed(global_seed)
        out = (m.sample(rng=11), m.samples(30, rng=12), m.samples(30, rng=random.Random(13), as_array=True).tolist())
        m.sample()  # the OS generator: no global state either
        return out, random.random(), np.random.random()

    state = random.getstate(), np.random.get_state()
    try:
        first, py1, np1 = draws(1)
        second, py2, np2 = draws(2)
        random.seed(1)
        np.random.seed(1)
        untouched = random.random(), np.random.random()
    finally:
        random.setstate(state[0])
        np.random.set_state(state[1])
    assert first == second  # the same seeds: the same draws, whatever the global states
    assert (py1, np1) == untouched  # the global generators were not advanced
    assert (py2, np2) != untouched
