"""Two finite distributions side by side, as cells of outputs with one probability pair each.

:func:`pair_cells` splits the union of two supports into cells: outputs with the same
(group under ``a``, group under ``b``), so every output of a cell has the same ``P(o)`` and
``Q(o)``.  Two mechanisms: the cells are counted by the mechanisms' ``pair_cells`` hook where
they offer one, else found from one output per orbit of interchangeable items
(:func:`mechanism_pairs`, :func:`orbits`); two large Joint-family mechanisms: only a head
of cells (:class:`HeadPair`, read through its engine in :mod:`.engines.head`); a mapping on
either side: every output listed (refused past ``max_outputs``).

:meth:`Pair.balls` gives per cell arb balls containing the true ``P(o)`` and ``Q(o)``
(``None`` for probability exactly 0); :meth:`Pair.exact` the exact values for the few
decisions balls cannot make.  The derivation of the log-ratio enclosure is in docs/audit.md.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterator, Optional, Sequence, Union
import math

from flint import arb, ctx, fmpz

from ..core.aliases import Output
from ..core.combinatorics import count_words
from ..core.mechanism import Mechanism
from ..core.precision import mpf_man_exp, rational_ball
from .distributions import Cell, MappingDistribution, as_distribution, check_same_key_kinds, check_same_space
from .engines.head import head_engine
from .engines.permute_and_flip import EnclosureShape, enclosure_ball, enclosure_shape, table_differences
from .footprint import Footprint
from .groups import Groups
from .neighbours import AuditLimitError, tied_classes

_ZERO = Fraction(0)

__all__ = ["output_orbit_count", "orbits", "ties_exchangeable", "mechanism_pairs", "Pair", "pair_cells", "check_cells_fit", "HeadPair"]


def output_orbit_count(sizes: Sequence[int], k: int, kind: str = "sequence", cap: Optional[int] = None) -> int:
    """Number of output orbits of ``k`` items for classes of the given ``sizes`` (exact;
    saturates at ``cap + 1`` when ``cap`` is given, which keeps the count cheap for large
    inputs), for outputs of ``kind`` ``"sequence"`` (the default) or ``"set"``.

    Sequences: words of length ``k`` over the classes using class ``c`` at most
    ``sizes[c]`` times (:func:`~exactdp.core.combinatorics.count_words`).  Sets: ways to take ``n_c <= sizes[c]`` items of each class with
    ``sum n_c = k``.

    >>> output_orbit_count([1, 1, 2], 2)      # counts like (3, 2, 2): 9 words but AA, BB
    7
    >>> output_orbit_count([1, 1, 2], 2, "set")
    4
    """
    if kind == "sequence":
        return count_words(sizes, k, cap)
    C = len(sizes)
    if cap is not None and C >= k and math.comb(C, k) > cap:
        return cap + 1
    dp = [1] + [0] * k
    for s in sizes:
        new = [0] * (k + 1)
        for j, ways in enumerate(dp):
            if not ways:
                continue
            for n in range(0, min(s, k - j) + 1):
                new[j + n] += ways
        if cap is not None:
            new = [min(v, cap + 1) for v in new]
        dp = new
    return dp[k]


def orbits(classes: list[list[int]], k: int, kind: str) -> Iterator[tuple[Output, int]]:
    """One representative output per orbit with the orbit's size (number of outputs)."""
    sizes = [len(c) for c in classes]
    used = [0] * len(classes)
    if kind == "set":
        def rec_set(c: int, left: int) -> Iterator[tuple[Output, int]]:
            if left == 0:
                items, size = [], 1
                for cls, n in zip(classes, used):
                    items.extend(cls[:n])
                    size *= math.comb(len(cls), n)
                yield frozenset(items), size
                return
            if c == len(classes):
                return
            for n in range(min(sizes[c], left), -1, -1):
                used[c] = n
                yield from rec_set(c + 1, left - n)
            used[c] = 0

        yield from rec_set(0, k)
        return
    seq: list[int] = []

    def rec_seq() -> Iterator[tuple[Output, int]]:
        if len(seq) == k:
            size = 1
            for s, n in zip(sizes, used):
                size *= math.perm(s, n)
            yield tuple(seq), size
            return
        for c, cls in enumerate(classes):
            if used[c] < sizes[c]:
                seq.append(cls[used[c]])
                used[c] += 1
                yield from rec_seq()
                used[c] -= 1
                seq.pop()

    yield from rec_seq()


def ties_exchangeable(mechanism: Any) -> bool:
    """Whether one output per orbit of tied items (and one neighbour per class of tied
    items) stands for all of them: the mechanism's ``ties_exchangeable`` (True by default;
    CanonicalGamma1 with ``rho < 1`` depends on the tie rule)."""
    return bool(getattr(mechanism, "ties_exchangeable", True))


def mechanism_pairs(a: Any, b: Any, limit: int, symmetric: bool = True,
                    sweep: Optional[bool] = None) -> tuple[dict[tuple[Any, Any], list[Any]], int]:
    """The occurring (group under ``a``, group under ``b``) pairs of two mechanisms of one
    output space, each with ``[witness, number of outputs]``, and the orbits visited.

    ``symmetric`` visits one output per orbit of items with equal (count under a, count
    under b) when both mechanisms treat tied items alike (:func:`ties_exchangeable`; else
    every output); refuses with :class:`AuditLimitError` past ``limit`` orbits.

    When both mechanisms declare the ``pair_cells(other)`` hook (``counts_pairs``; Joint and PNFJoint: a
    two-dimensional threshold sweep; JointSet: path counts per subset of the changed
    items; docs/audit.md) and it applies, the cells are counted
    without visiting any output and the number visited is ``0``.  ``sweep`` defaults to
    ``symmetric``: ``symmetric=False`` (or ``sweep=False``) visits every output."""
    declined = ""  # why the count without enumeration did not apply, for the limit's message
    if symmetric if sweep is None else sweep:
        if all(isinstance(m, Mechanism) and m.counts_pairs for m in (a, b)):
            cells = a.pair_cells(b)
            if cells is not None:
                return cells, 0
            reason = a.pair_count_declined(b)
            declined = (f"; {type(a).__name__}'s pair count without enumeration does not apply to this pair "
                        f"({reason or 'see docs/audit.md'}: docs/audit.md, 'How a pair is audited without "
                        "enumeration'), so the audit would enumerate")
    ga, gb = Groups(a, 1), Groups(b, 1)
    kind, k = ga.kind, a.k
    tie_rule = not (ties_exchangeable(a) and ties_exchangeable(b))
    if symmetric and not tie_rule:
        classes = tied_classes(list(zip(a.counts, b.counts)))
    else:
        classes = [[i] for i in range(a.d)]
    n_orbits = output_orbit_count([len(c) for c in classes], k, kind, cap=limit)
    if n_orbits > limit:
        why = (f"{type(a if not ties_exchangeable(a) else b).__name__} depends on the tie rule, so every one of "
               f"the {a.d} items is its own class" if symmetric and tie_rule else
               f"{len(classes)} classes of items with equal counts")
        raise AuditLimitError(
            "max_outputs", limit,
            f"the audit would visit more than {limit} output orbits ({why}, k={k}){declined}; raise max_outputs to go on",
        )
    pairs: dict[tuple[Any, Any], list[Any]] = {}
    visited = 0
    for output, size in orbits(classes, k, kind):
        visited += 1
        key = (ga.index(output), gb.index(output))
        entry = pairs.get(key)
        if entry is None:
            pairs[key] = [output, size]
        else:
            entry[1] += size
    return pairs, visited


def _listed(view: Union[Groups, MappingDistribution], max_outputs: int, what: str) -> Iterator[tuple[int, Any]]:
    if isinstance(view, MappingDistribution):
        return iter(enumerate(view.outputs))
    return view.enumerate(max_outputs, what)


class Pair:
    """Two distributions over one output space, split into :class:`Cell` s."""

    def __init__(self, a: Union[Groups, MappingDistribution], b: Union[Groups, MappingDistribution],
                 cells: Sequence[Cell], footprint: Optional[Footprint] = None):
        self.a, self.b = a, b
        self.cells = tuple(c for c in cells if c.ga is not None or c.gb is not None)
        #: the audit's memory check (None: nothing to check)
        self.footprint = footprint

    def check_memory(self, digits: int, what: str) -> None:
        """Refuse (:class:`~exactdp.errors.MemoryBudgetError`) when the certified
        probabilities and balls at ``digits`` digits would not fit the budget
        (:mod:`exactdp._oracle.footprint`)."""
        if self.footprint is not None:
            levels = sum(len(v.groups) for v in (self.a, self.b) if isinstance(v, Groups))
            self.footprint.check(levels=levels, cells=len(self.cells), digits=digits, what=what)

    def balls(self, digits: int) -> list[tuple[Optional[arb], Optional[arb]]]:
        """Per cell, balls containing the true ``P(o)`` and ``Q(o)`` of one of its outputs
        (None: exactly 0), at flint's current precision; ``digits`` is the precision of a
        mechanism's certified probabilities.  Refuses past the memory budget first."""
        self.check_memory(digits, f"this audit, at {digits} digits,")
        pa, pb = _balls(self.a, digits), _balls(self.b, digits)
        return [(None if c.ga is None else pa[c.ga], None if c.gb is None else pb[c.gb]) for c in self.cells]

    def log_ratio_bounds(self) -> Optional[list[Optional[arb]]]:
        """Per cell, an upper bound ``B`` on ``|ln P(o) - ln Q(o)|`` proved from the two level
        tables (None: no bound), at flint's current precision; None when no cell has one.

        Two permute-and-flip sides of one ``lam`` (:meth:`Groups.same_rule_as`), an output at the
        same gap below the best on both: ``B = sum_x |c_x| (-log1p(-x))`` over the weights ``x``
        whose number of outputs differs (``c_x``) between the tables; no bound when the best
        levels' sizes differ.  Proof: docs/audit.md, "Other privacy notions of two distributions"
        (the bound from the level tables)."""
        shape = getattr(self, "_ratio_shape", False)
        if shape is False:
            shape = self._ratio_shape = self._log_ratio_shape()
        if shape is None:
            return None
        terms, lam_of, equal = shape
        lam = lam_of()
        bound = arb(0)
        for gap, size in terms:
            bound += size * -(-(lam * rational_ball(gap)).exp()).log1p()
        return [bound if e else None for e in equal]

    def _table_differences(self) -> Optional[tuple[list[Any], list[Any], dict[Any, int]]]:
        """:func:`table_differences` of the two sides, computed once (a pass over every
        level of both: :meth:`log_ratio_bounds` and :meth:`log_ratio_enclosure` share it)."""
        tables = getattr(self, "_tables", False)
        if tables is False:
            tables = self._tables = table_differences(self.a, self.b)
        return tables

    def _log_ratio_shape(self) -> Optional[tuple[list[tuple[Any, int]], Any, list[bool]]]:
        """The exact part of :meth:`log_ratio_bounds`: ``[(gap, |c|)]``, the ``lam`` ball's
        maker and, per cell, whether its two levels have one gap."""
        tables = self._table_differences()
        if tables is None:
            return None
        gaps_a, gaps_b, sizes = tables
        if sizes.get(0, 0):
            return None
        terms = [(gap, abs(c)) for gap, c in sizes.items() if c]
        equal = [c.ga is not None and c.gb is not None and gaps_a[c.ga] == gaps_b[c.gb] for c in self.cells]
        if not any(equal):
            return None
        scale = self.a.mechanism.table.scale
        return [(Fraction(gap), size) for gap, size in terms], scale.lam_ball, equal

    def log_ratio_enclosure(self, i: int, direction: str = "a>b") -> Optional[tuple[Fraction, Optional[Fraction], arb]]:
        """For cell ``i`` of two permute-and-flip sides of one ``lam``: ``(l, lam, J)`` with
        ``ln(P/Q) = lam * l + j`` for some ``j`` in the ball ``J`` (``direction="b>a"``:
        ``ln(Q/P)``), ``l`` the exact difference of the output's gaps below the best and
        ``lam`` exact when the scale has it (else None: use the scale's ball); None when
        there is no enclosure (the numbers of best outputs other than ``o`` differ).  At flint's
        current precision.

        *Proof* (docs/audit.md, "A delta at an epsilon the loss attains to every digit"):
        ``P = e^(lam g_a) J_a`` with ``J = int_0^1 prod_{o' != o} (1 - t w_o') dt``, and
        ``J_a / J_b = E[e^L]``, ``L(t) = sum_x c_x ln(1 - t x)`` over the weights whose number of
        outputs other than ``o`` differs (``c_x``).  As ``t ln(1 - x) <= ln(1 - t x) <= -t x``,
        ``t A <= L(t) <= t B``, so (Jensen, and convexity of ``e^(tB)`` in ``t``)
        ``A m <= ln(J_a / J_b) <= log1p(m expm1(B))`` with ``m = E[t]`` within ``e^(+-S)`` of
        ``1 / (n + 2)``.  Tables that differ only far below the best level give ``J`` to about
        the relative accuracy ``S + (B - A) / |B|``."""
        shape = self._enclosure_shape_once()
        cell = self.cells[i]
        if shape is None or cell.ga is None or cell.gb is None:
            return None
        g_a, g_b = shape.gaps_a[cell.ga], shape.gaps_b[cell.gb]
        if shape.sizes.get(0, 0) - (g_a == 0) + (g_b == 0):
            return None
        cache = getattr(self, "_enclosure_cache", None)
        if cache is None or cache[0] != ctx.prec:
            cache = self._enclosure_cache = (ctx.prec, {}, [])
        _, known, totals = cache
        # J depends on the cell only through o's two gaps, and for one gap on both sides
        # only through whether o is among b's best outputs: most cells share one of two
        key = (g_a, g_b) if g_a != g_b else (g_b == 0,)
        j = known.get(key)
        if j is None:
            j = known[key] = enclosure_ball(g_a, g_b, shape, totals)
        ell = Fraction(g_a - g_b) if g_a != g_b else _ZERO
        if direction == "b>a":
            ell, j = -ell, -j
        return ell, shape.lam, j

    def has_log_ratio_enclosure(self) -> bool:
        """Whether :meth:`log_ratio_enclosure` applies to this pair at all (two
        permute-and-flip sides of one ``lam`` with subtracting utilities)."""
        return self._enclosure_shape_once() is not None

    def _enclosure_shape_once(self) -> Optional["EnclosureShape"]:
        """The exact part of :meth:`log_ratio_enclosure` (:func:`enclosure_shape`), computed
        once; also what this pair's per-delta engine reads (:func:`exactdp._oracle.notions.basics.by_delta`)."""
        shape = getattr(self, "_enclosure", False)
        if shape is False:
            shape = self._enclosure = enclosure_shape(self.a, self.b, self._table_differences())
        return shape

    def exact(self, cell: Cell) -> tuple[Any, Any]:
        """Exact ``P(o)``, ``Q(o)`` of the cell's witness (Fractions or sympy expressions;
        a mechanism without a closed form raises its error)."""
        return _exact(self.a, cell.ga, cell.witness), _exact(self.b, cell.gb, cell.witness)


def _balls(view: Union[Groups, MappingDistribution], digits: int) -> list[arb]:
    if isinstance(view, MappingDistribution):
        return [rational_ball(p) for p in view.probabilities]
    out = []
    widen = arb(1) + arb(10) ** (-digits) * arb(0, 1)
    for p in view.output_probabilities(digits):
        man, exp = mpf_man_exp(p)  # exact: mpmath.mpf(p) would round to the current precision
        out.append(arb(fmpz(int(man))) * arb(2) ** int(exp) * widen)
    return out


def _exact(view: Union[Groups, MappingDistribution], g: Optional[int], witness: Any) -> Any:
    if g is None:
        return Fraction(0)
    if isinstance(view, MappingDistribution):
        return view.probabilities[g]
    p = view.mechanism.probability_exact(witness)
    if getattr(p, "is_Rational", False):  # a rational base gives rational probabilities
        return Fraction(int(p.p), int(p.q))
    return p


def pair_cells(a: Any, b: Any, dps: int, max_outputs: int, symmetric: bool = True) -> Pair:
    """The cells of two distributions (mechanisms or mappings; see the module docstring)."""
    va, vb = as_distribution(a, "a", dps), as_distribution(b, "b", dps)
    footprint = Footprint(a, b)
    if isinstance(va, Groups) and isinstance(vb, Groups):
        check_same_space(a, b, ("a", "b"))

        def every_cell() -> list[Cell]:
            check_cells_fit(footprint, va, vb, dps)
            pairs, _ = mechanism_pairs(a, b, max_outputs, symmetric)
            return [Cell(ka, kb, o, n) for (ka, kb), (o, n) in pairs.items()]

        engine = head_engine(va, vb) if symmetric else None
        if engine is not None:  # two large Joint mechanisms: the cells counted down to a depth
            return HeadPair(va, vb, engine, every_cell, footprint)
        return Pair(va, vb, every_cell(), footprint)
    if isinstance(va, MappingDistribution) and isinstance(vb, Groups):
        va = va.keyed_like(b, "a")
    elif isinstance(vb, MappingDistribution) and isinstance(va, Groups):
        vb = vb.keyed_like(a, "b")
    elif isinstance(va, MappingDistribution) and isinstance(vb, MappingDistribution):
        check_same_key_kinds(va, vb)
    found: dict[tuple[Any, Any], list[Any]] = {}
    for view, other, first in ((va, vb, True), (vb, va, False)):
        for g, o in _listed(view, max_outputs, "an audit against a mapping"):
            h = other.index(o)
            if not first and h is not None:
                continue  # already found from the first side
            key = (g, h) if first else (h, g)
            entry = found.setdefault(key, [o, 0])
            entry[1] += 1
    return Pair(va, vb, [Cell(ka, kb, o, n) for (ka, kb), (o, n) in found.items()], footprint)


def check_cells_fit(footprint: Footprint, a: Groups, b: Groups, dps: int, rows: bool = False) -> None:
    """Before the cells of two mechanisms are counted: every level is in at least one
    cell, so there are at least as many cells as levels on either side; refuse when
    that many cells with their values at ``dps + 10`` digits (the first precision tried)
    would not fit the budget."""
    footprint.check(levels=len(a.groups) + len(b.groups), cells=max(len(a.groups), len(b.groups)),
                    digits=dps + 10, what="this audit", rows=rows)


class HeadPair(Pair):
    """A :class:`Pair` of two mechanisms audited by a :class:`HeadExponentialPair`
    (:attr:`engine`): its :attr:`cells`, which only a per-cell fallback reads, are every
    cell, counted on first read (where a pair too large to count refuses then)."""

    def __init__(self, a: Groups, b: Groups, engine: Any, full: Callable[[], list[Cell]],
                 footprint: Optional[Footprint] = None):
        self.a, self.b = a, b
        self.engine = engine
        self._full = full
        self._cells: Optional[tuple[Cell, ...]] = None
        self.footprint = footprint

    @property  # type: ignore[override]
    def cells(self) -> tuple[Cell, ...]:
        if self._cells is None:
            self._cells = tuple(c for c in self._full() if c.ga is not None or c.gb is not None)
        return self._cells

    def has_log_ratio_enclosure(self) -> bool:
        """False until every cell is counted (the enclosure reads every level of both)."""
        return self._cells is not None and super().has_log_ratio_enclosure()

    def check_memory(self, digits: int, what: str) -> None:
        """As :meth:`Pair.check_memory`, over the head's levels and cells until every cell
        is counted."""
        if self._cells is not None:
            return super().check_memory(digits, what)
        if self.footprint is not None:
            head = self.engine._head
            levels = len(head.utilities_a) + len(head.utilities_b)
            self.footprint.check(levels=levels, cells=len(head.sizes), digits=digits, what=what)
