"""How much a pair audit holds at once, estimated from its sizes and checked against the mechanisms' memory budgets.

A pair audit (:mod:`exactdp.audit`) keeps, besides each mechanism's own level store
(bounded by that mechanism's ``memory_budget``), one certified probability per level of
each side and one cell per occurring pair of levels, with two balls (or, for
:func:`~exactdp.audit.privacy_loss`, one row) per cell while a precision is tried.  These
grow with the number of levels (about ``k*d`` on heavy-tailed counts) and with the working
precision.  :class:`Footprint` estimates them from the sizes before they are built, with
per-object costs rounded up (measured in docs/benchmarks.md, "A pair audit's memory beside
its budget estimate"), and raises :class:`~exactdp.errors.MemoryBudgetError` when the
estimate exceeds the two mechanisms' ``memory_budget`` together.  A mapping side brings no
budget (its values are already in memory); with two mappings nothing is checked.

>>> import exactdp
>>> f = Footprint(exactdp.Joint([3, 1, 0], 2, epsilon=1, memory_budget=10_000),
...               {(0, 1): 1})
>>> f.budget
10000
>>> f.check(levels=4, cells=4, digits=40, what="this audit")
>>> f.check(levels=100, cells=100, digits=40, what="this audit")
Traceback (most recent call last):
...
exactdp.errors.MemoryBudgetError: memory_budget=10000: this audit would hold about 96,800 bytes at once (certified probabilities of 100 levels and 100 cells at 40 digits), more than memory_budget = 10000 bytes (the mechanism's memory_budget); raise memory_budget of the mechanism (for example memory_budget=262144)
"""

from __future__ import annotations

from typing import Any, Optional

from ..core.level_blocks import DEFAULT_MEMORY_BUDGET
from ..errors import MemoryBudgetError

__all__ = ["Footprint", "CELL_BYTES", "ROW_BYTES", "value_bytes", "estimate"]

#: One cell: its key tuple and dictionary slot, ``[witness, outputs]``, the ``Cell`` tuple,
#: the witness (a displaced-item witness is a small object) and the level indices.
CELL_BYTES = 320
#: One row of :func:`~exactdp.audit.privacy_loss`'s table besides its value (the ``PairLoss``).
ROW_BYTES = 200


def value_bytes(digits: int) -> int:
    """Bytes of one certified value (an ``mpf`` or an arb ball with its Python object) at
    ``digits`` digits: about 200 bytes of objects plus the mantissa, ``digits * log2(10)``
    bits (``27/64 >= log2(10)/8``).

    >>> value_bytes(40), value_bytes(160)
    (216, 267)
    """
    return 200 + (digits * 27) // 64


def estimate(levels: int, cells: int, digits: int, rows: bool = False) -> int:
    """Estimated bytes of ``levels`` certified probabilities and ``cells`` cells, each with
    two balls (or, ``rows``, a row of ``privacy_loss`` and its value), at ``digits`` digits.

    >>> estimate(1000, 1000, 40)
    968000
    """
    v = value_bytes(digits)
    return levels * v + cells * (CELL_BYTES + (ROW_BYTES + v if rows else 2 * v))


def _text(size: int) -> str:
    return f"{size:,} bytes" if size < 1 << 20 else f"{size / 2**20:,.0f} MiB"


class Footprint:
    """The memory budget of one pair audit and the check of its estimated holdings."""

    def __init__(self, a: Any, b: Any):
        sides = [m for m in (a, b) if hasattr(m, "groups")]
        #: the budget of the audit's own values (None: two mappings, nothing to check)
        self.budget: Optional[int] = (sum(getattr(m, "memory_budget", None) or DEFAULT_MEMORY_BUDGET for m in sides)
                                      if sides else None)
        self.single = len(sides) == 1

    def check(self, *, levels: int, cells: int, digits: int, what: str, rows: bool = False) -> None:
        """Refuse when ``levels`` certified probabilities and ``cells`` cells (each with two
        balls, or with a row of ``privacy_loss`` when ``rows``) at ``digits`` digits would
        be more than the budget."""
        if self.budget is None:
            return
        size = estimate(levels, cells, digits, rows)
        if size <= self.budget:
            return
        sides = "the mechanism's memory_budget" if self.single else "the mechanisms' memory_budget together"
        each = "" if self.single else " on each"
        # twice the estimate: a higher precision tried next needs more
        suggestion = 1 << (size.bit_length() + 1 if self.single else size.bit_length())
        raise MemoryBudgetError(
            "memory_budget", self.budget,
            f"{what} would hold about {_text(size)} at once (certified probabilities of {levels:,} levels "
            f"and {cells:,} cells at {digits} digits), more than memory_budget = {self.budget} bytes "
            f"({sides}); raise memory_budget of the {'mechanism' if self.single else 'mechanisms'} "
            f"(for example memory_budget={suggestion}{each})",
            limit=self.budget,
        )
