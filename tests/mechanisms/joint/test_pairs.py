"""Joint's pair cells (exactdp.mechanisms.joint.pairs) against brute force and the orbit enumeration."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, given, settings

from exactdp import Joint, PNFJoint
from exactdp._oracle.cells import mechanism_pairs
from exactdp._oracle.groups import Groups
from exactdp.audit import neighbours
from exactdp.mechanisms.joint import pairs as joint_pairs
from exactdp.mechanisms.joint.pair_sweep import PairSweep
from exactdp.mechanisms.joint.pairs import joint_pair_cells
from twins.joint_pairs import brute_pair_cells, joint_level
from twins.strategies import count_pairs

#: EXACTDP_FULL_PAIR_TWINS=1 runs every neighbour of every vector in {0..3}^d up to d = 5
#: (about 1.5 million comparisons: a long run); by default d <= 3 is exhaustive and
#: d = 4, 5 use the neighbours up to symmetry with one item changed per sign, one k each.
FULL = os.environ.get("EXACTDP_FULL_PAIR_TWINS") == "1"


def _check(c1, c2, k):
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    got = joint_pair_cells(a, b)
    assert got is not None, (c1, c2, k)
    assert {key: n for key, (_, n) in got.items()} == brute_pair_cells(c1, c2, k), (c1, c2, k)
    ga, gb = Groups(a, 1), Groups(b, 1)
    for key, (witness, _) in got.items():  # a real output with those two levels
        assert len(set(witness)) == k and (ga.index(witness), gb.index(witness)) == key, (c1, c2, k, key, witness)


def _pairs(d, full):
    for c in itertools.product(range(4), repeat=d):
        for relation in ("add_remove", "swap"):
            if full:
                found = neighbours(c, relation)
            else:
                found = neighbours(c, relation, up_to_symmetry=True, contribution=1)
            for c2 in found:
                yield list(c), list(c2)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3])
def test_every_neighbour_of_every_small_vector(d):
    for c1, c2 in _pairs(d, full=True):
        for k in range(1, d + 1):
            _check(c1, c2, k)


@pytest.mark.slow
@pytest.mark.parametrize("d", [4, 5])
def test_neighbours_of_every_vector_d4_d5(d):
    """Every vector; by default its neighbours up to symmetry with one item per sign, each
    pair with one k in turn (every k = 1..d occurs), every k with the full run."""
    for i, (c1, c2) in enumerate(_pairs(d, full=FULL)):
        for k in (range(1, d + 1) if FULL else [1 + i % d]):
            _check(c1, c2, k)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count_pairs())
def test_random_pairs_against_brute_force(pair):
    c1, c2, k = pair
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    got = joint_pair_cells(a, b)
    if got is None:  # not applicable (a wide band, many different changes): the caller falls back
        assert joint_pairs.pair_count_declined(a, b)
        return
    _check(c1, c2, k)


@pytest.mark.parametrize("c1, c2, k", [
    ([5, 3, 3, 1, 0], [5, 4, 3, 1, 0], 2),
    ([2, 2, 2, 2], [3, 2, 2, 1], 3),
    ([0, 0, 0], [1, 0, 0], 1),
    ([7, 1, 4, 4, 2, 0], [6, 1, 5, 4, 2, 1], 4),
])
def test_same_cells_as_the_orbit_enumeration(c1, c2, k):
    """The oracle's own enumeration (every output, symmetric=False) gives the same cells,
    and mechanism_pairs takes the sweep (0 outputs visited) for Joint and PNFJoint."""
    a, b = Joint(c1, k, epsilon=1), PNFJoint(c2, k, epsilon=3)
    slow, visited = mechanism_pairs(a, b, 10**6, symmetric=False)
    fast, none_visited = mechanism_pairs(a, b, 10**6)
    assert visited > 0 and none_visited == 0
    assert {key: n for key, (_, n) in fast.items()} == {key: n for key, (_, n) in slow.items()}


def test_not_applicable_falls_back_to_orbits():
    c1 = list(range(0, 40, 2))
    c2 = [c + 100 * (i % 2) for i, c in enumerate(c1)]  # a band far wider than MAX_BAND
    a, b = Joint(c1, 2, epsilon=1), Joint(c2, 2, epsilon=1)
    assert a.pair_cells(b) is None
    pairs, visited = mechanism_pairs(a, b, 10**6)
    assert visited > 0
    assert {key: n for key, (_, n) in pairs.items()} == brute_pair_cells(c1, c2, 2)


def _detected(c1, c2, k):
    try:
        _check(c1, c2, k)
    except AssertionError:
        return True
    return False


@pytest.mark.parametrize("fault", ["threshold", "band"])
def test_negative_control_a_wrong_sweep_is_detected(break_pair_count, fault):
    """An off-by-one threshold in the two-dimensional count, or a band one too narrow, is
    caught by the twin comparison."""
    break_pair_count(PairSweep, fault)
    cases = [(list(c1), list(c2), k) for c1, c2 in _pairs(3, full=True) for k in (1, 2)]
    assert any(_detected(*case) for case in cases)


def test_huge_counts_and_many_changes_decline():
    """Counts past int64 are left to the orbit enumeration; many changed items to the
    diagonal count (the item-by-item count declines them)."""
    huge = Joint([10**30, 5, 0], 2, epsilon=1)
    assert huge.pair_cells(Joint([10**30, 6, 0], 2, epsilon=1)) is None
    assert "int64" in huge.pair_count_declined(Joint([10**30, 6, 0], 2, epsilon=1))
    c1 = list(range(20))
    c2 = [c + 1 for c in c1]  # 20 changed items, more than MAX_CHANGED_ITEMS
    a, b = Joint(c1, 2, epsilon=1), Joint(c2, 2, epsilon=1)
    assert joint_pair_cells(a, b, method="items") is None
    assert "item-by-item" in joint_pairs.pair_count_declined(a, b, "items")
    assert {key: n for key, (_, n) in a.pair_cells(b).items()} == brute_pair_cells(c1, c2, 2)


# -- the diagonal count (any number of changed items) ----------------------------------

def _check_diagonal(c1, c2, k):
    """The diagonal count against brute force, its witnesses real outputs of their cells,
    and against the item-by-item count where that applies (the second twin)."""
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    got = joint_pair_cells(a, b, method="diagonal")
    assert got is not None, (c1, c2, k)
    assert {key: n for key, (_, n) in got.items()} == brute_pair_cells(c1, c2, k), (c1, c2, k)
    ga, gb = Groups(a, 1), Groups(b, 1)
    for key, (witness, _) in got.items():
        assert len(set(witness)) == k and (ga.index(witness), gb.index(witness)) == key, (c1, c2, k, key, witness)
    items = joint_pair_cells(a, b, method="items")
    if items is not None:
        assert {key: n for key, (_, n) in items.items()} == {key: n for key, (_, n) in got.items()}


def _linf_pairs(d):
    """Every vector of {0..3}^d with every neighbour at l-infinity distance <= 1 (any subset
    changed: the add/remove and the swap relations, which contains it)."""
    for c in itertools.product(range(4), repeat=d):
        for c2 in neighbours(c, "swap"):
            yield list(c), list(c2)


@pytest.mark.parametrize("d", [1, 2, pytest.param(3, marks=pytest.mark.slow)])
def test_diagonal_count_every_neighbour_small(d):
    for c1, c2 in _linf_pairs(d):
        for k in range(1, d + 1):
            _check_diagonal(c1, c2, k)


@pytest.mark.slow
@pytest.mark.parametrize("d", [4, 5])
def test_diagonal_count_every_neighbour_d4_d5(d):
    """d = 4: every vector, every neighbour at l-infinity distance 1, one k in turn (all k
    with EXACTDP_FULL_PAIR_TWINS=1); d = 5 only with EXACTDP_FULL_PAIR_TWINS=1."""
    if d == 5 and not FULL:
        pytest.skip("d = 5 runs with EXACTDP_FULL_PAIR_TWINS=1")
    for i, (c1, c2) in enumerate(_linf_pairs(d)):
        for k in (range(1, d + 1) if FULL else [1 + i % d]):
            _check_diagonal(c1, c2, k)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count_pairs(max_d=8, max_k=3))
def test_diagonal_count_random_pairs(pair):
    c1, c2, k = pair
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    if joint_pair_cells(a, b, method="diagonal") is None:
        assert joint_pairs.pair_count_declined(a, b, "diagonal")
        return
    _check_diagonal(c1, c2, k)


def test_diagonal_count_many_changed_items():
    """A user adding to a third of the items (and a swap of many): more changed items than
    the item-by-item count takes, counted by the diagonal count, equal to brute force."""
    c1 = [11, 9, 9, 7, 6, 4, 3, 3, 1]
    add = [c + (i % 3 == 0) for i, c in enumerate(c1)]
    swap = [c + (1 if i % 3 == 0 else -1 if i % 3 == 1 else 0) for i, c in enumerate(c1)]
    for c2 in (add, swap):
        for k in (1, 2, 3):
            _check_diagonal(c1, c2, k)
    big = list(range(0, 150, 3))
    many = [c + (i % 3 == 0) for i, c in enumerate(big)]
    a, b = Joint(big, 2, epsilon=1), Joint(many, 2, epsilon=1)
    assert joint_pair_cells(a, b, method="items") is None  # 17 changed items
    assert a.pair_cells(b) is not None


@pytest.mark.parametrize("fault", ["threshold", "band"])
def test_negative_control_a_wrong_diagonal_count_is_detected(break_pair_count, fault):
    break_pair_count(PairSweep, fault)
    cases = [(c1, c2, k) for c1, c2 in _linf_pairs(2) for k in (1, 2)]
    detected = 0
    for case in cases:
        try:
            _check_diagonal(*case)
        except AssertionError:
            detected += 1
    assert detected


def test_diagonal_count_declines_with_a_reason():
    c1 = list(range(0, 60, 3))
    c2 = [c + i % 10 for i, c in enumerate(c1)]  # ten different changes
    a, b = Joint(c1, 2, epsilon=1), Joint(c2, 2, epsilon=1)
    assert a.pair_cells(b) is None
    assert "MAX_DIFFERENCES" in a.pair_count_declined(b)
    assert a.pair_count_declined(Joint(c1, 2, epsilon=2)) == ""
    few = [c + i for i, c in enumerate(c1[:10])] + c1[10:]  # ten changes, few items: counted item by item
    assert a.pair_cells(Joint(few, 2, epsilon=1)) is not None
    assert a.pair_count_declined(Joint(few, 2, epsilon=1)) == ""
    assert "MAX_DIFFERENCES" in joint_pairs.pair_count_declined(a, Joint(few, 2, epsilon=1), "diagonal")


def test_the_diagonal_count_refuses_past_the_memory_budget():
    """Counted at every level, a pair's exact counts can outgrow memory (at d = 166,000,
    k = 200: about 8 million products of 3,600 bits); the count refuses before it starts,
    naming memory_budget and a value that fits, and counts with that budget."""
    from exactdp.errors import MemoryBudgetError

    c1 = list(range(0, 3000, 3))
    c2 = [c + (i % 3 == 0) for i, c in enumerate(c1)]
    small = (Joint(c1, 5, epsilon=1, memory_budget=500_000), Joint(c2, 5, epsilon=1, memory_budget=500_000))
    with pytest.raises(MemoryBudgetError, match="memory_budget=1000000: the pair count without enumeration") as info:
        small[0].pair_cells(small[1])
    suggested = int(str(info.value).split("for example memory_budget=")[1].split()[0])
    a, b = Joint(c1, 5, epsilon=1, memory_budget=suggested), Joint(c2, 5, epsilon=1, memory_budget=suggested)
    assert a.pair_cells(b) is not None


# -- the head: the diagonal count stopped at a depth ---------------------------------------


def _brute_by_level(c1, c2, k):
    """``{(M, M'): number of sequences}`` from the definitions (twins.joint_pairs)."""
    cells: dict = {}
    for seq in itertools.permutations(range(len(c1)), k):
        key = (joint_level(c1, seq), joint_level(c2, seq))
        cells[key] = cells.get(key, 0) + 1
    return cells


def _head_by_level(head):
    return {(-head.utilities_a[x], -head.utilities_b[y]): n
            for x, y, n in zip(head.x.tolist(), head.y.tolist(), head.sizes)}


def _check_head_against_brute(c1, c2, k):
    """At every depth the head is exactly the brute-force cells with ``M <= depth``, it is
    complete once no level lies deeper, and every cell's ``M' - M`` lies in the range."""
    brute = _brute_by_level(c1, c2, k)
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    deepest = max(M for M, _ in brute)
    lowest, highest = joint_pairs.diagonal_range(a, b)
    assert all(lowest <= M2 - M <= highest for M, M2 in brute)
    levels = sorted({M for M, _ in brute})
    for depth in sorted(set(levels + [M - 1 for M in levels if M > 0] + [deepest + 1])):
        head = joint_pairs.joint_pair_head(a, b, depth)
        assert _head_by_level(head) == {key: n for key, n in brute.items() if key[0] <= depth}
        assert head.complete == (depth >= deepest)
        assert (head.lowest, head.highest) == (lowest, highest)
        for w, x, y in list(zip(head.witnesses, head.x.tolist(), head.y.tolist()))[:3]:
            assert (joint_level(c1, w), joint_level(c2, w)) == (-head.utilities_a[x], -head.utilities_b[y])


@pytest.mark.slow
def test_head_is_the_brute_force_cells_above_a_depth_exhaustively():
    """Every pair of count vectors in {0..3}^3 at l-infinity distance <= 1 (any subset of
    items changed, both ways), k = 1 and 2."""
    for c1 in itertools.product(range(4), repeat=3):
        for shift in itertools.product((-1, 0, 1), repeat=3):
            c2 = [c + s for c, s in zip(c1, shift)]
            if min(c2) < 0:
                continue
            for k in (1, 2):
                _check_head_against_brute(list(c1), c2, k)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count_pairs(max_d=6, max_k=3))
def test_head_is_the_brute_force_cells_above_a_depth(case):
    c1, c2, k = case
    if min(c2) < 0 or max(abs(x - y) for x, y in zip(c1, c2)) > 1:
        return  # the head is for l-infinity neighbours (the diagonal count's classes)
    _check_head_against_brute(c1, c2, k)


def test_head_reads_no_level_past_its_depth():
    """A head near the top of many levels finds the one-dataset blocks it reads only: not
    every block of either side (the full count would plan and count them all)."""
    c1 = [7 * i + (i % 3) for i in range(400)]
    c2 = [c + (i % 3 == 0) for i, c in enumerate(c1)]
    a, b = Joint(c1, 6, epsilon=1), Joint(c2, 6, epsilon=1)
    head = joint_pairs.joint_pair_head(a, b, 40)
    assert not head.complete and max(-u for u in head.utilities_a) <= 40
    assert not a.table._complete and not b.table._complete


def test_head_is_preferred_for_many_levels_whatever_the_changed_items(monkeypatch):
    c1 = list(range(0, 300, 3))
    many = [c + (i % 3 == 0) for i, c in enumerate(c1)]
    one = list(c1)
    one[50] += 1
    a = Joint(c1, 3, epsilon=1)
    assert not joint_pairs.head_preferred(a, Joint(many, 3, epsilon=1))  # few levels: the full count
    assert a.pair_head(Joint(many, 3, epsilon=1)) is None
    monkeypatch.setattr(joint_pairs, "STOPPED_LEVEL_BOUND", 0)
    assert joint_pairs.head_preferred(a, Joint(many, 3, epsilon=1))
    assert a.pair_head(Joint(many, 3, epsilon=1)).x.tolist() == [0]
    # one changed item too: the item-by-item count would hold every level
    assert joint_pairs.head_preferred(a, Joint(one, 3, epsilon=1))
