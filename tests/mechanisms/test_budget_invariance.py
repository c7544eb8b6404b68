"""A memory budget and the order of calls change no result of any mechanism.

For Joint, PNFJoint (both samplers), JointSet and Canonical (both noises), a tiny
``memory_budget`` (blocks recomputed on demand, streamed levels, refusals) must give
bit-identical levels, level probabilities (listed and streamed), samples (one and many, as
lists and arrays), probabilities of outputs, groups and group indices to the default budget,
or a :class:`~exactdp.errors.MemoryBudgetError` naming ``memory_budget``; and the order in
which the methods are first called (levels before the probabilities, the streams first, the
samples first, ...) must not change any of them, on any budget.  Peeling and CanonicalGamma1
have no budget: the order of calls alone is checked there, and on the set views.

The comparisons are exact: the same ``Level`` tuples, the same draws, and the same ``mpf``
values (compared by their exact binary value, not by printed digits).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.errors import MemoryBudgetError, NotSingleRuleError

from twins import counts_and_k

EPSILON = Fraction(2, 3)

#: name -> factory(counts, k, **budget)
BUDGETED = {
    "joint": lambda c, k, **kw: exactdp.Joint(c, k, epsilon=EPSILON, **kw),
    "pnf-joint": lambda c, k, **kw: exactdp.PNFJoint(c, k, epsilon=EPSILON, **kw),
    "pnf-joint-algorithm5": lambda c, k, **kw: exactdp.PNFJoint(c, k, epsilon=EPSILON, sampler="algorithm5", **kw),
    "joint-set": lambda c, k, **kw: exactdp.JointSet(c, k, base=Fraction(3, 5), **kw),
    "canonical": lambda c, k, **kw: exactdp.Canonical(c, k, epsilon=EPSILON, **kw),
    "canonical-exponential": lambda c, k, **kw: exactdp.Canonical(c, k, base=Fraction(1, 3), noise="exponential", **kw),
}
#: name -> factory(counts, k) of the mechanisms and views without a budget
UNBUDGETED = {
    "peeling": lambda c, k: exactdp.Peeling(c, k, epsilon=EPSILON),
    "peeling-exponential": lambda c, k: exactdp.Peeling(c, k, base=Fraction(1, 2), noise="exponential"),
    "canonical-gamma1": lambda c, k: exactdp.CanonicalGamma1(c, k, epsilon=EPSILON),
    "joint-sets": lambda c, k: exactdp.Joint(c, k, epsilon=EPSILON, memory_budget=1).as_sets(),
    "peeling-sets": lambda c, k: exactdp.Peeling(c, k, epsilon=EPSILON).as_sets(),
}
DPS = 20


def _values(pairs):
    """``(Level, mpf)`` pairs with the mpf as its exact binary value."""
    return [(level, p._mpf_) for level, p in pairs]


def _outputs_of(m):
    """A few outputs of every shape of the mechanism: the first ones and its samples."""
    return m.samples(6, rng=99)


#: The calls compared: name -> what the call returns, made comparable exactly.
CALLS = {
    "levels": lambda m, outs: m.levels(),
    "iter_levels": lambda m, outs: tuple(m.iter_levels()),
    "level_probabilities": lambda m, outs: _values(m.level_probabilities(DPS)),
    "iter_level_probabilities": lambda m, outs: _values(m.iter_level_probabilities(DPS)),
    "level_output_probabilities": lambda m, outs: _values(m.level_output_probabilities(DPS)),
    "groups": lambda m, outs: m.groups(),
    "group_output_probabilities": lambda m, outs: _values(m.group_output_probabilities(DPS)),
    "support_size": lambda m, outs: m.support_size(),
    "sample": lambda m, outs: [m.sample(rng=seed) for seed in (0, 1, 2**70, -5)],
    "samples": lambda m, outs: m.samples(25, rng=7),
    "samples_array": lambda m, outs: m.samples(25, rng=8, as_array=True).tolist(),
    "probability": lambda m, outs: [m.probability(o, DPS)._mpf_ for o in outs],
    "log_probability": lambda m, outs: [m.log_probability(o, DPS)._mpf_ for o in outs],
    "group_index": lambda m, outs: [m.group_index(o) for o in outs],
    "utility": lambda m, outs: [m.utility(o) for o in outs],
}


def _snapshot(m, order, outs):
    """Every call of ``order`` on ``m``, in that order: its value, or the refusal."""
    out = {}
    for name in order:
        try:
            out[name] = CALLS[name](m, outs)
        except MemoryBudgetError as err:
            assert "memory_budget" in str(err), err
            out[name] = MemoryBudgetError
        except NotSingleRuleError:
            out[name] = NotSingleRuleError
    return out


def _compare(reference, got, label):
    for name, value in got.items():
        if value is MemoryBudgetError:
            continue  # a refusal naming the budget is allowed; a different value is not
        assert value == reference[name], (label, name)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=6, max_sequences=400), st.sampled_from(sorted(BUDGETED)),
       st.sampled_from([1, 200, 1500, 6000]), st.permutations(sorted(CALLS)))
def test_a_budget_and_the_call_order_change_nothing(ck, name, budget, order):
    counts, k = ck
    make = BUDGETED[name]
    default = make(counts, k)
    outs = _outputs_of(make(counts, k))
    reference = _snapshot(default, sorted(CALLS), outs)
    assert MemoryBudgetError not in reference.values()  # the default budget refuses nothing here
    _compare(reference, _snapshot(make(counts, k, memory_budget=budget), order, outs), (name, budget, order))
    # the same object again, every value already cached: still the same
    again = make(counts, k, memory_budget=budget)
    _snapshot(again, order, outs)
    _compare(reference, _snapshot(again, sorted(CALLS), outs), (name, budget, "again"))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=5, max_sequences=200), st.sampled_from(sorted(UNBUDGETED)), st.permutations(sorted(CALLS)))
def test_the_call_order_changes_nothing_without_a_budget(ck, name, order):
    counts, k = ck
    make = UNBUDGETED[name]
    outs = _outputs_of(make(counts, k))
    reference = _snapshot(make(counts, k), sorted(CALLS), outs)
    _compare(reference, _snapshot(make(counts, k), order, outs), (name, order))


@pytest.mark.parametrize("name", sorted(BUDGETED))
def test_a_tiny_budget_is_really_used(name):
    """Control: at ``memory_budget=1`` the lists are refused (so the streamed paths above ran)
    and the streams still give the default's values."""
    counts, k = [5, 3, 3, 0, -2, 7], 3
    tiny, default = BUDGETED[name](counts, k, memory_budget=1), BUDGETED[name](counts, k)
    with pytest.raises(MemoryBudgetError, match="memory_budget"):
        tiny.levels()
    assert tuple(tiny.iter_levels()) == default.levels()
    if name != "pnf-joint-algorithm5":  # the race holds every level: refused at this budget
        assert tiny.samples(10, rng=3) == default.samples(10, rng=3)


def test_the_comparison_can_fail():
    """Control: a changed probability or a changed draw is caught by :func:`_compare`."""
    counts, k = [5, 3, 3, 0], 2
    reference = _snapshot(BUDGETED["joint"](counts, k), sorted(CALLS), [(0, 1)])
    other = _snapshot(exactdp.Joint(counts, k, epsilon=EPSILON + Fraction(1, 10**9)), sorted(CALLS), [(0, 1)])
    with pytest.raises(AssertionError):
        _compare(reference, {"probability": other["probability"]}, "control")
    shifted = exactdp.Joint(counts, k, epsilon=EPSILON)
    with pytest.raises(AssertionError):
        _compare(reference, {"samples": shifted.samples(25, rng=8)}, "control")
