"""A pair audit checks what it holds against the mechanisms' memory budgets (exactdp._oracle.footprint)."""

from __future__ import annotations

from fractions import Fraction

import pytest

import exactdp
from exactdp._oracle import cells as _cells
from exactdp._oracle.notions import pure as _pure
from exactdp import audit
from exactdp._oracle.footprint import CELL_BYTES, ROW_BYTES, Footprint, value_bytes
from exactdp.errors import MemoryBudgetError

COUNTS, OTHER = [400, 300, 200, 100, 0], [400, 300, 200, 100, 1]


def _estimate(levels: int, cells: int, digits: int, rows: bool = False) -> int:
    """The estimate written out independently of Footprint.check."""
    v = value_bytes(digits)
    return levels * v + cells * (CELL_BYTES + (ROW_BYTES + v if rows else 2 * v))


def test_footprint_budget_is_the_sides_together():
    a = exactdp.Joint(COUNTS, 2, epsilon=1, memory_budget=5000)
    b = exactdp.Joint(OTHER, 2, epsilon=1, memory_budget=7000)
    assert Footprint(a, b).budget == 12000
    assert Footprint(a, {(0, 1): 1}).budget == 5000
    assert Footprint({(0, 1): 1}, {(0, 1): 1}).budget is None
    Footprint({(0, 1): 1}, {(0, 1): 1}).check(levels=10**9, cells=10**9, digits=1000, what="x")  # nothing to check


@pytest.mark.parametrize("rows", [False, True])
def test_footprint_refuses_exactly_past_the_estimate(rows):
    size = _estimate(40, 30, 60, rows)
    a = exactdp.Joint(COUNTS, 2, epsilon=1, memory_budget=size)
    f = Footprint(a, {(0, 1): 1})
    f.check(levels=40, cells=30, digits=60, what="this audit", rows=rows)  # at the budget: fits
    with pytest.raises(MemoryBudgetError) as info:
        f.check(levels=40, cells=31, digits=60, what="this audit", rows=rows)
    e = info.value
    assert e.argument == "memory_budget" and e.limit == size and isinstance(e, ValueError)
    assert "raise memory_budget of the mechanism" in str(e)
    suggested = int(str(e).split("memory_budget=")[-1].rstrip(")"))
    Footprint(exactdp.Joint(COUNTS, 2, epsilon=1, memory_budget=suggested), {(0, 1): 1}).check(
        levels=40, cells=31, digits=120, what="this audit", rows=rows)  # the suggestion fits a higher precision


def test_two_mechanisms_suggestion_fits_together():
    a = exactdp.Joint(COUNTS, 2, epsilon=1, memory_budget=1000)
    b = exactdp.Joint(OTHER, 2, epsilon=1, memory_budget=1000)
    with pytest.raises(MemoryBudgetError) as info:
        Footprint(a, b).check(levels=1000, cells=900, digits=40, what="this audit")
    assert "on each" in str(info.value)
    each = int(str(info.value).split("memory_budget=")[-1].split()[0])
    a2 = exactdp.Joint(COUNTS, 2, epsilon=1, memory_budget=each)
    b2 = exactdp.Joint(OTHER, 2, epsilon=1, memory_budget=each)
    Footprint(a2, b2).check(levels=1000, cells=900, digits=40, what="this audit")


def _pair_sizes(mechanism=exactdp.PNFJoint):
    a, b = mechanism(COUNTS, 2, epsilon=1), mechanism(OTHER, 2, epsilon=1)
    cells = len(_cells.pair_cells(a, b, 30, 10**6).cells)
    return len(a.levels()) + len(b.levels()), cells


@pytest.mark.parametrize("notion", ["privacy_loss", "privacy_profile", "renyi_divergence", "zcdp_rho"])
def test_audits_refuse_before_counting_the_cells(notion, monkeypatch):
    """With a budget too small for the first precision, every notion refuses before the
    pair sweep runs (a spy on mechanism_pairs proves it was not called)."""
    called = []
    monkeypatch.setattr(_cells, "mechanism_pairs",
                        lambda *args, **kw: called.append(1) or pytest.fail("counted the cells"))
    monkeypatch.setattr(_pure, "mechanism_pairs", _cells.mechanism_pairs)
    a = exactdp.Joint(COUNTS, 2, epsilon=1, memory_budget=1000)  # the levels fit, the audit's values not
    b = exactdp.Joint(OTHER, 2, epsilon=1, memory_budget=1000)
    args = {"privacy_profile": (1,), "renyi_divergence": (2,)}.get(notion, ())
    with pytest.raises(MemoryBudgetError, match="this audit would hold about"):
        getattr(audit, notion)(a, b, *args)
    assert not called


def test_escalation_refused_at_the_precision_that_does_not_fit(monkeypatch):
    """PNFJoint's D_2 of this pair is about 3e-66.  Without the bound of the two level
    tables on ``ln(P/Q)`` (which certifies it at the first precision), the balls go from 40
    to 80 digits.  A budget that fits 60 digits but not 80 stops the audit at 80, naming
    it; the next power of two above the estimate at 160 digits lets it finish."""
    monkeypatch.setattr(_cells.Pair, "log_ratio_bounds", lambda self: None)
    levels, cells = _pair_sizes()
    fits_60 = _estimate(levels, cells, 60)
    assert fits_60 < _estimate(levels, cells, 80)
    each = (fits_60 + 1) // 2
    a, b = exactdp.PNFJoint(COUNTS, 2, epsilon=1, memory_budget=each), exactdp.PNFJoint(OTHER, 2, epsilon=1,
                                                                                         memory_budget=each)
    with pytest.raises(MemoryBudgetError, match="at 80 digits"):
        audit.renyi_divergence(a, b, 2)
    big = _estimate(levels, cells, 160)
    a, b = exactdp.PNFJoint(COUNTS, 2, epsilon=1, memory_budget=big), exactdp.PNFJoint(OTHER, 2, epsilon=1,
                                                                                        memory_budget=big)
    assert 0 < audit.renyi_divergence(a, b, 2) < 1e-60


def test_privacy_loss_counts_its_rows():
    """privacy_loss keeps a row per cell instead of two balls: cell by cell (PNFJoint,
    certified at the first precision, 40 digits), a budget of exactly the rows' estimate
    fits and one byte less (on one side) is refused at 40 digits."""
    levels, cells = _pair_sizes()
    size = _estimate(levels, cells, 40, rows=True)
    half = size // 2

    def run(first: int) -> object:
        a = exactdp.PNFJoint(COUNTS, 2, epsilon=1, memory_budget=first)
        b = exactdp.PNFJoint(OTHER, 2, epsilon=1, memory_budget=size - half)
        return audit.privacy_loss(a, b)

    assert run(half).value > 0
    with pytest.raises(MemoryBudgetError, match="at 40 digits"):
        run(half - 1)


def test_mapping_side_brings_no_budget():
    a = exactdp.Joint([3, 1, 0], 1, epsilon=1, memory_budget=1000)  # the levels fit, the cells not
    table = {o: p for o, p in zip([(0,), (1,), (2,)], [Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)])}
    with pytest.raises(MemoryBudgetError, match="memory_budget of the mechanism"):
        audit.privacy_profile(a, table, 0)
    a = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    assert audit.privacy_profile(a, table, 0).delta > 0


def test_levels_past_the_budget_name_no_streamed_method():
    """An oracle needs every level: the levels() refusal must not advise iter_levels()."""
    a = exactdp.Joint(list(range(40)), 3, epsilon=1, memory_budget=500)
    b = exactdp.Joint(list(range(1, 41)), 3, epsilon=1, memory_budget=500)
    with pytest.raises(MemoryBudgetError) as info:
        audit.privacy_loss(a, b)
    text = str(info.value)
    assert "holds every level at once" in text and "iter_levels" not in text
    assert "raise memory_budget" in text
