"""A mechanism that has been used pickles, deep-copies and goes to a process pool like a fresh one.

Regression: after one ``probability()`` or ``sample()`` every mechanism held flint balls (or
a level table with a local function) in its caches, and ``pickle.dumps``, ``copy.deepcopy``
and ``ProcessPoolExecutor.submit(m.samples, ...)`` failed with ``TypeError: no default
__reduce__ due to non-trivial __cinit__`` (or ``Can't pickle local object``), while a fresh
mechanism pickled.  The caches (``Mechanism._CACHES``) are now left out of pickles and
copies and recomputed on demand: the copy gives exactly the original's values and draws.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import multiprocessing
import pickle
from fractions import Fraction

import pytest

import exactdp
import exactdp.errors

COUNTS, K = (5, 3, 3, 0, 2), 2

MECHANISMS = {
    "joint": lambda: exactdp.Joint(COUNTS, K, epsilon=1),
    "joint-budget": lambda: exactdp.Joint(COUNTS, K, epsilon=1, memory_budget=1),
    "pnf-joint": lambda: exactdp.PNFJoint(COUNTS, K, base=Fraction(1, 3)),
    "pnf-joint-algorithm5": lambda: exactdp.PNFJoint(COUNTS, K, epsilon=1, sampler="algorithm5"),
    "joint-set": lambda: exactdp.JointSet(COUNTS, K, epsilon=1),
    "canonical": lambda: exactdp.Canonical(COUNTS, K, epsilon=1, noise="exponential"),
    "canonical-gamma1": lambda: exactdp.CanonicalGamma1(COUNTS, K, epsilon=1),
    "peeling": lambda: exactdp.Peeling(COUNTS, K, epsilon=1),
    "peeling-exponential": lambda: exactdp.Peeling(COUNTS, K, epsilon=1, noise="exponential"),
    "joint-sets": lambda: exactdp.Joint(COUNTS, K, epsilon=1).as_sets(),
    "peeling-sets": lambda: exactdp.Peeling(COUNTS, K, base=Fraction(1, 2), noise="exponential").as_sets(),
}


def _use(m):
    """Fill every cache: probabilities, log-probabilities, exact values, streamed levels, draws."""
    o = m.sample(rng=1)
    m.probability(o, 40)
    m.log_probability(o, 25)
    try:
        m.probability_exact(o)
    except exactdp.errors.MemoryBudgetError:  # the closed form holds every level
        pass
    m.samples(20, rng=2)
    m.samples(5, rng=3, as_array=True)
    if not isinstance(m, exactdp.CanonicalGamma1):
        list(m.iter_level_probabilities(20))
    return o


def _results(m, o):
    return (repr(m), m.samples(30, rng=7), m.sample(rng=8), m.probability(o, 30)._mpf_,
            m.log_probability(o, 30)._mpf_, m.group_index(o))


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_used_mechanism_copies_with_the_same_results(name, how):
    m = MECHANISMS[name]()
    o = _use(m)
    twin = pickle.loads(pickle.dumps(m)) if how == "pickle" else copy.deepcopy(m)
    assert twin is not m
    assert _results(twin, o) == _results(m, o)
    _use(twin)  # the copy's caches refill, and the original still answers the same
    assert _results(twin, o) == _results(m, o) == _results(MECHANISMS[name](), o)


def test_a_used_mechanism_samples_in_a_process_pool():
    m = MECHANISMS["peeling-exponential"]()
    _use(m)
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with cf.ProcessPoolExecutor(1, mp_context=context) as pool:
        remote = list(pool.map(m.samples, [10, 10], [1, 2]))
    assert remote == [m.samples(10, rng=1), m.samples(10, rng=2)]
