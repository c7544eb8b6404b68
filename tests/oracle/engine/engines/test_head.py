"""Pair audits of two Joint mechanisms by the stopped diagonal count (``HeadExponentialPair``):
the same results as with every cell counted, and as the orbit enumeration."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from flint import arb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactdp import Joint, PNFJoint, audit
from exactdp._oracle.engines.head import HeadExponentialPair, HeadPermuteAndFlipPair, _SideTail, head_engine
from exactdp._oracle.groups import Groups
from exactdp.core.precision import flint_workprec
from exactdp.mechanisms import joint_pairs
from exactdp.mechanisms.joint import Joint as JointClass


def _third(counts):
    return [c + (i % 3 == 0) for i, c in enumerate(counts)]


def _third_swap(counts):
    return [c + (1 if i % 3 == 0 else -1 if i % 3 == 1 else 0) for i, c in enumerate(counts)]


DISTINCT = [7 * i + (i % 3) for i in range(60)]
CASES = [
    # (counts a, counts b, k, parameters): a diagonal (M' - M = 1, 2) carried only by levels
    # deep below the top, which the head at the first precision does not reach
    ([40, 38, 36, 34, 32, 30, 3, 2], [41, 39, 37, 35, 33, 31, 2, 1], 2, {"epsilon": 8}),
    (DISTINCT, _third(DISTINCT), 3, {"epsilon": 4}),  # many levels, the head stops early
    (DISTINCT, _third_swap(DISTINCT), 2, {"epsilon": 2}),
    (DISTINCT, _third_swap(DISTINCT), 2, {"base": Fraction(1, 3)}),  # lam = ln 3: no exact lam
    ([5, 3, 3, 1, 0], [6, 2, 3, 1, 1], 2, {"epsilon": 1}),  # the head reaches every level
]


def stopped(monkeypatch):
    """The audits take the stopped count for every pair it applies to (any number of
    levels, any number of changed items)."""
    monkeypatch.setattr(joint_pairs, "STOPPED_LEVEL_BOUND", 0)
    monkeypatch.setattr(joint_pairs, "MAX_CHANGED_ITEMS", 0)


def _notions(a, b):
    loss = audit.privacy_loss(a, b, 20)
    profile = audit.privacy_profile(a, b, Fraction(1, 2), 20)
    eps = audit.epsilon_for_delta(a, b, Fraction(1, 1000), 20)
    pure = audit.epsilon_for_delta(a, b, 0, 20)
    renyi = audit.renyi_divergence(a, b, 2, 20)
    zcdp = audit.zcdp_rho(a, b, 6)
    return {
        "loss": (loss.value, loss.direction, a.group_index(loss.witness), b.group_index(loss.witness),
                 loss.witness_outputs),
        "profile": (profile.delta, profile.direction, profile.exact_zero,
                    sorted((a.group_index(o), b.group_index(o), n) for o, n in profile.carriers)),
        "epsilon": (eps.epsilon, eps.direction, eps.epsilon_a_b, eps.epsilon_b_a),
        "pure": (pure.epsilon, pure.direction, pure.epsilon_a_b, pure.epsilon_b_a),
        "renyi": renyi,
        "zcdp": (zcdp.lower, zcdp.upper),
    }


def _close(x, y, dps=18):
    if x == y:
        return True
    if isinstance(x, tuple):
        return len(x) == len(y) and all(_close(u, v, dps) for u, v in zip(x, y))
    if isinstance(x, mpmath.mpf) and isinstance(y, mpmath.mpf):
        return abs(x - y) <= mpmath.mpf(10) ** (-dps) * abs(y)
    return False


def _same(head, full):
    """Equal values and verdicts; the profile's carriers counted by the head are carriers
    of the full count (the head lists those it counted: docs/audit.md)."""
    for key in full:
        dps = 5 if key == "zcdp" else 18
        if key == "profile":
            assert _close(head[key][:3], full[key][:3], dps), (key, head[key], full[key])
            assert set(head[key][3]) <= set(full[key][3]) and bool(head[key][3]) == bool(full[key][3])
            continue
        assert _close(head[key], full[key], dps), (key, head[key], full[key])


def _make(case):
    ca, cb, k, params = case
    return Joint(ca, k, **params), Joint(cb, k, **params)


def _engine(case):
    a, b = _make(case)
    return head_engine(Groups(a, 20), Groups(b, 20))


@pytest.mark.parametrize("case", CASES)
def test_five_notions_same_as_every_cell_counted(case, monkeypatch):
    full = _notions(*_make(case))
    stopped(monkeypatch)
    assert isinstance(_engine(case), HeadExponentialPair)
    _same(_notions(*_make(case)), full)


def test_the_cases_stop_early_and_find_a_diagonal_late(monkeypatch):
    """The cases above cover both: a head stopped above most levels, and a diagonal the
    first head does not reach (a phantom, mass [0, T]) that a deeper one finds."""
    stopped(monkeypatch)
    deep = _engine(CASES[0])
    with flint_workprec(deep.prec(30)):
        deep.balls()
    assert not deep._head.complete and deep.phantoms
    early = _engine(CASES[1])
    with flint_workprec(early.prec(30)):
        early.balls()
    assert not early._head.complete and not early.phantoms
    assert early.head_depth < max(-lv.utility for lv in _make(CASES[1])[0].levels()) // 4
    whole = _engine(CASES[-1])
    with flint_workprec(whole.prec(30)):
        whole.balls()
    assert whole._head.complete


def test_same_as_the_orbit_enumeration(monkeypatch):
    """The small deep-diagonal case against the oracle's orbit enumeration (no pair count)."""
    case = CASES[0]
    stopped(monkeypatch)
    head = _notions(*_make(case))
    monkeypatch.setattr(JointClass, "pair_cells", lambda self, other: None)
    monkeypatch.setattr(JointClass, "pair_head", lambda self, other, depth=None: None)
    _same(head, _notions(*_make(case)))


@st.composite
def _neighbours(draw):
    d = draw(st.integers(2, 7))
    k = draw(st.integers(1, min(d, 3)))
    c1 = draw(st.lists(st.integers(0, 30), min_size=d, max_size=d))
    c2 = [max(c + draw(st.integers(-1, 1)), 0) for c in c1]
    return c1, c2, k, {"epsilon": draw(st.sampled_from([1, 4, 12]))}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_neighbours())
def test_random_neighbours_same_as_every_cell_counted(case):
    a, b = _make(case)
    full = (audit.privacy_loss(a, b, 20).value, audit.privacy_profile(a, b, 1, 20).delta,
            audit.renyi_divergence(a, b, 2, 20) if case[0] != case[1] else None)
    with pytest.MonkeyPatch.context() as m:
        stopped(m)
        a, b = _make(case)
        head = (audit.privacy_loss(a, b, 20).value, audit.privacy_profile(a, b, 1, 20).delta,
                audit.renyi_divergence(a, b, 2, 20) if case[0] != case[1] else None)
    assert all(_close(x, y) for x, y in zip(head, full)), (head, full)


def test_a_dropped_remainder_is_caught(monkeypatch):
    """Negative control: a head stopped at a fixed shallow depth with the one-dataset
    tails dropped (no remainder) gives masses that miss the rest, and the comparison with
    every cell counted fails."""
    case = CASES[1]
    full = _notions(*_make(case))
    stopped(monkeypatch)
    monkeypatch.setattr(_SideTail, "beyond", lambda self, depth: arb(0))
    chosen = HeadExponentialPair._depth_for
    monkeypatch.setattr(HeadExponentialPair, "_depth_for", lambda self, *args: (chosen(self, *args), 6)[1])
    a, b = _make(case)
    renyi = audit.renyi_divergence(a, b, 2, 20)
    assert not _close(renyi, full["renyi"])


def test_a_large_pair_reads_few_levels(monkeypatch):
    """The audits of two Joint mechanisms with many levels read the levels near the top
    only: neither side's table finds every block, and the oracle's level views never
    list the groups (nothing grows with the levels skipped)."""
    counts = [11 * i + (i % 5) for i in range(3000)]
    a, b = Joint(counts, 8, epsilon=1), Joint(_third(counts), 8, epsilon=1)
    monkeypatch.setattr(joint_pairs, "STOPPED_LEVEL_BOUND", 0)
    listed = []
    monkeypatch.setattr(Groups, "groups", property(lambda self: listed.append(1) or ()))
    value = audit.privacy_loss(a, b, 20).value
    assert 0 < value <= 1
    assert audit.renyi_divergence(a, b, 2, 20) > 0
    assert not a.table._complete and not b.table._complete
    assert not listed


PNF_CASES = [  # more than 1,024 outputs: the permute-and-flip rule's quadrature route
    (DISTINCT, _third(DISTINCT), 3, {"epsilon": 4}),
    (DISTINCT, _third_swap(DISTINCT), 2, {"epsilon": 2}),
    (DISTINCT[:40], _third_swap(DISTINCT[:40]), 2, {"epsilon": 9}),
]
#: diagonals M' - M = 1, 2 carried only by the two low items (counts 3, 2, which fall by 1)
#: at levels far below the top: phantoms at every precision the notions try
PNF_DEEP = ([200 + 7 * i for i in range(50)] + [3, 2], [201 + 7 * i for i in range(50)] + [2, 1], 2, {"epsilon": 6})


def _make_pnf(case):
    ca, cb, k, params = case
    return PNFJoint(ca, k, **params), PNFJoint(cb, k, **params)


@pytest.mark.parametrize("case", PNF_CASES)
def test_pnfjoint_five_notions_same_as_every_cell_counted(case, monkeypatch):
    """PNFJoint: the stopped count (HeadPermuteAndFlipPair, the tails bounded by the
    unnormalised weights since P(o) <= e^(lam (u(o) - u_0))) gives the values of the full
    count, without counting every cell."""
    full = _notions(*_make_pnf(case))
    stopped(monkeypatch)
    a, b = _make_pnf(case)
    engine = head_engine(Groups(a, 20), Groups(b, 20))
    assert isinstance(engine, HeadPermuteAndFlipPair)
    with flint_workprec(engine.prec(30)):
        engine.balls()
    assert not engine._head.complete
    counted = []
    real = joint_pairs.joint_pair_cells
    monkeypatch.setattr("exactdp.mechanisms.joint.mechanism.joint_pair_cells", lambda *args, **kw: counted.append(1) or real(*args, **kw))
    _same(_notions(*_make_pnf(case)), full)
    assert not counted  # no notion fell back to every cell


def test_pnfjoint_a_diagonal_found_late(monkeypatch):
    """The head leaves the diagonals 1 and 2 out (phantoms of mass [0, T]): the masses'
    notions stay with the head, the pure loss (which a phantom could decide) goes back to
    every cell; every value is the full count's."""
    full = _notions(*_make_pnf(PNF_DEEP))
    stopped(monkeypatch)
    a, b = _make_pnf(PNF_DEEP)
    engine = head_engine(Groups(a, 20), Groups(b, 20))
    with flint_workprec(engine.prec(30)):
        engine.balls()
    assert len(engine.phantoms) == 2
    _same(_notions(*_make_pnf(PNF_DEEP)), full)


def test_pnfjoint_a_dropped_remainder_is_caught(monkeypatch):
    """Negative control for PNFJoint: a shallow head without the tails' remainder."""
    case = PNF_CASES[0]
    full = audit.renyi_divergence(*_make_pnf(case), 2, 20)
    stopped(monkeypatch)
    monkeypatch.setattr(_SideTail, "beyond", lambda self, depth: arb(0))
    chosen = HeadPermuteAndFlipPair._depth_for
    monkeypatch.setattr(HeadPermuteAndFlipPair, "_depth_for", lambda self, *args: (chosen(self, *args), 6)[1])
    monkeypatch.setattr(HeadPermuteAndFlipPair, "_form_depth", lambda self, form, mechanism: 0)
    assert not _close(audit.renyi_divergence(*_make_pnf(case), 2, 20), full)


@st.composite
def _pnf_neighbours(draw):
    d = draw(st.integers(34, 40))  # more than 1,024 sequences at k = 2: the quadrature route
    c1 = draw(st.lists(st.integers(0, 400), min_size=d, max_size=d))
    c2 = [max(c + draw(st.integers(-1, 1)), 0) for c in c1]
    return c1, c2, 2, {"epsilon": draw(st.sampled_from([1, 4, 9]))}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pnf_neighbours())
def test_random_pnfjoint_neighbours_same_as_every_cell_counted(case):
    if case[0] == case[1]:
        return
    a, b = _make_pnf(case)
    full = (audit.privacy_loss(a, b, 20).value, audit.privacy_profile(a, b, 1, 20).delta,
            audit.renyi_divergence(a, b, 2, 20))
    with pytest.MonkeyPatch.context() as m:
        stopped(m)
        a, b = _make_pnf(case)
        head = (audit.privacy_loss(a, b, 20).value, audit.privacy_profile(a, b, 1, 20).delta,
                audit.renyi_divergence(a, b, 2, 20))
    assert all(_close(x, y) for x, y in zip(head, full)), (head, full)


def test_pnfjoint_same_as_the_orbit_enumeration(monkeypatch):
    """PNFJoint (a head stopped early, 3,540 sequences) against the orbit enumeration."""
    case = PNF_CASES[1]
    stopped(monkeypatch)
    head = _notions(*_make_pnf(case))
    monkeypatch.setattr(JointClass, "pair_cells", lambda self, other: None)
    monkeypatch.setattr(JointClass, "pair_head", lambda self, other, depth=None: None)
    _same(head, _notions(*_make_pnf(case)))


def test_zcdp_bracket_contains_the_truth_when_deep_levels_dominate(monkeypatch):
    """epsilon = 100: the levels past the head weigh about 10**-847, but at alpha near 40
    their log-ratio of 100 makes them the whole of D_alpha (rho = 1.2510628154...).  A tail
    class's mass [0, T] once gave sum P expm1((alpha-1) r) a lower end below -1, its log1p
    had no enclosure, and the search read that as a bound of 0: the bracket's upper end came
    out near 1e-197.  The bracket must contain the full count's rho (converged or not), and
    D_40 must equal the full count's."""
    counts, other = [40, 41, 42, 43, 3, 2], [41, 42, 43, 44, 2, 1]
    full = audit.zcdp_rho(Joint(counts, 2, epsilon=100), Joint(other, 2, epsilon=100), dps=10)
    d40 = audit.renyi_divergence(Joint(counts, 2, epsilon=100), Joint(other, 2, epsilon=100), 40, dps=10)
    assert full.converged and 1.2510628 < full.lower <= full.upper < 1.2510629
    monkeypatch.setattr(joint_pairs, "STOPPED_LEVEL_BOUND", 0)
    a, b = Joint(counts, 2, epsilon=100), Joint(other, 2, epsilon=100)
    assert joint_pairs.head_preferred(a, b)
    head = audit.zcdp_rho(a, b, dps=10)
    assert head.lower <= full.lower and full.upper <= head.upper
    d40_head = audit.renyi_divergence(Joint(counts, 2, epsilon=100), Joint(other, 2, epsilon=100), 40, dps=10)
    assert mpmath.nstr(d40_head, 10) == mpmath.nstr(d40, 10) == "50.03554601"


def test_zcdp_bracket_holds_rho_past_a_phantom(monkeypatch):
    """The diagonals 1 and 2 (r = 50, 100) carried only deep down are phantoms of mass
    [0, T]; at large alpha, T e^((alpha-1) r) made D_alpha's ball NaN, which the bracket's
    interval bound read as 0 (rho in [2.7e-847, 2.8e-197] against a true rho >= 1.2510628,
    R(alpha) at alpha = 1295/32).  The bracket must hold the full count's lower end."""
    case = ([40, 41, 42, 43, 3, 2], [41, 42, 43, 44, 2, 1], 2, {"epsilon": 100})
    full = audit.zcdp_rho(*_make(case), 6)
    assert full.lower > 1
    stopped(monkeypatch)
    head = audit.zcdp_rho(*_make(case), 6)
    assert head.lower <= full.upper and full.lower <= head.upper, (head, full)


def test_a_change_of_the_top_item_has_no_phantom(monkeypatch):
    """One count +1 on the top item: the diagonal range is [0, 1] (the row attaining M
    holds an item counted at most c_(r), so the top item's +1 cannot lower M), not
    [-1, 1], whose empty diagonal -1 had |r| above the true loss: the pure loss fell back
    to every cell (at d = 166,000, k = 200: MemoryBudgetError)."""
    case = (DISTINCT, [c + (i == 59) for i, c in enumerate(DISTINCT)], 3, {"epsilon": 4})
    assert joint_pairs.diagonal_range(*_make(case)) == (0, 1)
    full = _notions(*_make(case))
    stopped(monkeypatch)
    counted = []
    real = joint_pairs.joint_pair_cells
    monkeypatch.setattr("exactdp.mechanisms.joint.mechanism.joint_pair_cells", lambda *args, **kw: counted.append(1) or real(*args, **kw))
    _same(_notions(*_make(case)), full)
    assert not counted  # no notion fell back to every cell
