"""Two finite distributions side by side, as cells of outputs with one probability pair each.

The privacy notions of :mod:`exactdp.audit` (privacy profile, tight epsilon for a delta,
Rényi divergence, zCDP) compare two distributions ``P`` and ``Q`` output by output.  Each
side is either an exactdp mechanism or a *mapping* ``output -> probability`` given by
anyone (:class:`MappingDistribution`).  :func:`pair_cells` splits the union of the two
supports into *cells*: outputs with the same (group under ``a``, group under ``b``), so
every output of a cell has the same ``P(o)`` and the same ``Q(o)``.  A cell carries one
witness output and its number of outputs.

- Two mechanisms: the cells are the pairs of probability groups, counted by the
  mechanisms' own ``pair_cells`` hook where they offer one (Joint, PNFJoint, JointSet), else found
  from one output per orbit of interchangeable items (the way
  :func:`exactdp.audit.privacy_loss` finds them): no output is listed one by one.
- Two large Joint or PNFJoint mechanisms (their ``pair_head`` hook): only the cells
  above a depth, the rest bounded by the one-dataset tails (:class:`HeadPair`, whose
  per-delta engine, :class:`HeadExponentialPair` or :class:`HeadPermuteAndFlipPair`,
  every notion reads; every cell is counted only if a notion must fall back to working
  cell by cell).
- A mapping on either side: every output of the mapping, and every output of a mechanism
  side (listed through its groups, refused past ``max_outputs``).  A mapping against a
  mechanism is re-keyed in the mechanism's form (:meth:`MappingDistribution.keyed_like`);
  two mappings are compared key by key, and refused unless all their keys are of one
  kind (:func:`check_same_key_kinds`).

:meth:`Pair.balls` gives, per cell, arb balls containing the true ``P(o)`` and ``Q(o)``
(``None`` for probability exactly 0): exact rationals for a mapping; for a mechanism the
certified probability ``p`` (relative error ``<= 10**-D``) widened to ``p(1 +- 10**-D)``.
:meth:`Pair.exact` gives the exact values (Fractions, or the mechanism's sympy
``probability_exact``) for the few decisions balls cannot make (an exactly zero result).
"""

from __future__ import annotations

import math
import numbers
from bisect import bisect_right
from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
from flint import arb, ctx, fmpz

from .footprint import Footprint
from .groups import Groups
from .neighbours import AuditLimitError, tied_classes
from ..core._lazy import sympy
from ..core._typing import Output
from ..core._gc import gc_paused
from ..core.combinatorics import count_words
from ..core.precision import ball_to_mpf, flint_workprec, mp_workdps, mpf_man_exp, prec_for_dps, rational_ball
from ..core.validation import as_sequence_output, as_set_output
from ..errors import ArgumentTypeError, ExactDPError, InvalidParameterError
from ..rules.exponential import decaying_sum

__all__ = ["MappingDistribution", "Cell", "Pair", "as_distribution", "pair_cells", "check_cells_fit",
           "output_orbit_count", "ties_exchangeable", "orbits", "FLOAT_SUM_TOLERANCE", "ExponentialPair", "PermuteAndFlipPair", "MAX_DELTAS",
           "expm1_ball", "tail_difference", "key_kind", "check_same_key_kinds", "HeadExponentialPair", "HeadPair",
           "HeadPermuteAndFlipPair", "head_engine"]

#: Float probabilities (taken at their exact binary values) must sum to within this of 1.
FLOAT_SUM_TOLERANCE = Fraction(1, 2**40)


class MappingDistribution:
    """A finite distribution given as a mapping ``output -> probability``.

    Probabilities are exact: ints, Fractions, sympy Rationals, or floats (Python's, or
    numpy's of any width) taken at their exact binary value (``Fraction(0.1)``, not 1/10);
    numpy integers are ints.  They must be non-negative.
    Exact values must sum to exactly 1; when any value is a float the sum must be within
    ``2**-40`` of 1 and the probabilities are divided by their exact sum (floats rarely sum
    to exactly 1).  Outputs are any hashables; outputs of probability 0 are dropped.

    >>> m = MappingDistribution({"x": Fraction(1, 3), "y": Fraction(2, 3), "z": 0}, "a")
    >>> m.outputs, m.index("y"), m.index("z")
    (('x', 'y'), 1, None)
    """

    is_mapping = True

    def __init__(self, mapping: Mapping[Any, Any], argument: str):
        if not isinstance(mapping, Mapping):
            raise ArgumentTypeError(argument, mapping,
                                    "must be an exactdp mechanism or a mapping output -> probability")
        if not mapping:
            raise InvalidParameterError(argument, mapping, "is empty: a distribution needs at least one output")
        values: dict[Any, Fraction] = {}
        floats = False
        for o, p in mapping.items():
            values[o] = self._exact(p, argument, o)
            floats = floats or isinstance(p, (float, np.floating))
        total = sum(values.values(), Fraction(0))
        if floats:
            if abs(total - 1) > FLOAT_SUM_TOLERANCE:
                narrow = any(isinstance(p, np.floating) and np.finfo(p.dtype).eps > 2.0**-40 for p in mapping.values())
                hint = ("; float32 or float16 values carry about 7 or 3 digits, so their sum misses 1 by more: "
                        "convert them to float64 and divide by their sum first" if narrow else "")
                raise InvalidParameterError(argument, f"<mapping summing to {float(total)!r}>",
                                            "float probabilities must sum to 1 within 2**-40" + hint)
            values = {o: p / total for o, p in values.items()}
        elif total != 1:
            raise InvalidParameterError(argument, f"<mapping summing to {total}>",
                                        "probabilities must sum to exactly 1")
        self.outputs: tuple[Any, ...] = tuple(o for o, p in values.items() if p)
        self.zero_outputs: tuple[Any, ...] = tuple(o for o, p in values.items() if not p)  # checked by keyed_like
        self.probabilities: tuple[Fraction, ...] = tuple(values[o] for o in self.outputs)
        self._index = {o: i for i, o in enumerate(self.outputs)}
        self.support_size = len(self.outputs)

    @staticmethod
    def _exact(p: Any, argument: str, output: Any) -> Fraction:
        if isinstance(p, (bool, np.bool_)):
            raise ArgumentTypeError(argument, p, f"probability of {output!r}: booleans are not accepted")
        if isinstance(p, (float, np.floating)):  # numpy's float32, float64, longdouble: exact binary values
            if not np.isfinite(p):
                raise InvalidParameterError(argument, p, f"probability of {output!r} must be finite")
            q = Fraction(*p.as_integer_ratio())
        elif isinstance(p, (int, np.integer, Fraction)):
            q = Fraction(int(p)) if isinstance(p, np.integer) else Fraction(p)
        elif isinstance(p, sympy.Basic) and getattr(p, "is_Rational", False):
            q = Fraction(int(p.p), int(p.q))
        else:
            raise ArgumentTypeError(argument, p, f"probability of {output!r} must be an int, Fraction, "
                                                 "sympy Rational or float (numpy's too)")
        if q < 0:
            raise InvalidParameterError(argument, p, f"probability of {output!r} must be non-negative")
        return q

    def keyed_like(self, mechanism: Any, argument: str) -> "MappingDistribution":
        """The same distribution with each output in ``mechanism``'s own form (a frozenset
        for a set mechanism, a tuple of ints for a sequence one), as the mechanism's
        ``probability`` takes it: a set given as the tuple ``(1, 0)`` is then found, not
        counted as an output the mechanism never gives.  Two keys naming one output are
        refused; an output outside the mechanism's space raises the mechanism's error class,
        naming ``argument``."""
        kind = getattr(mechanism, "output_kind", "sequence")
        form = as_set_output if kind == "set" else as_sequence_output
        keyed: dict[Any, Fraction] = {}
        pairs = list(zip(self.outputs, self.probabilities)) + [(o, Fraction(0)) for o in self.zero_outputs]
        for o, p in pairs:  # a key of probability 0 is a claim about an output too: it must be one
            try:
                key = form(o, mechanism.d, mechanism.k)
            except ExactDPError as err:  # say which side holds the output: the mapping, not the mechanism
                raise type(err)(argument, o, f"is not an output of the other side, a {kind} mechanism with "
                                             f"d={mechanism.d}, k={mechanism.k} ({err})") from None
            if key in keyed:
                raise InvalidParameterError(argument, o, f"names the output {sorted(key)} of another key again")
            keyed[key] = p
        return MappingDistribution(keyed, argument)

    def index(self, output: Any) -> Optional[int]:
        """Position of ``output`` among the outputs of positive probability, else None."""
        try:
            return self._index.get(output)
        except TypeError:  # unhashable: not an output of the mapping
            return None


def as_distribution(x: Any, argument: str, dps: int) -> Union[Groups, MappingDistribution]:
    """The oracle's view of one side: :class:`Groups` of a mechanism, or a mapping."""
    if hasattr(x, "groups") and hasattr(x, "group_index"):
        return Groups(x, dps)
    return MappingDistribution(x, argument)


class Cell(NamedTuple):
    """Outputs with group ``ga`` under ``a`` and ``gb`` under ``b`` (None: probability 0).
    A named tuple: a pair of heavy-tailed Joint mechanisms has 500,000 cells, made in a
    fraction of the time of dataclass instances."""

    ga: Optional[int]
    gb: Optional[int]
    witness: Output
    outputs: int


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

    When both mechanisms offer the ``pair_cells(other)`` hook (Joint and PNFJoint: a
    two-dimensional threshold sweep; JointSet: path counts per subset of the changed
    items; docs/audit.md) and it applies, the cells are counted
    without visiting any output and the number visited is ``0``.  ``sweep`` defaults to
    ``symmetric``: ``symmetric=False`` (or ``sweep=False``) visits every output."""
    declined = ""  # why the count without enumeration did not apply, for the limit's message
    if symmetric if sweep is None else sweep:
        hook_a, hook_b = getattr(a, "pair_cells", None), getattr(b, "pair_cells", None)
        if callable(hook_a) and callable(hook_b):
            cells = hook_a(b)
            if cells is not None:
                return cells, 0
            why = getattr(a, "pair_count_declined", None)
            reason = why(b) if callable(why) else ""
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

        Two permute-and-flip sides of one ``lam`` (:meth:`Groups.same_rule_as`): an output
        whose level is at the same gap ``g = u - u_0`` below the best on both sides has
        ``P = p I_a``, ``Q = p I_b`` with ``p = e^(lam g)`` and ``I = int_0^1 F(t) / (1 - t p) dt``
        (:mod:`exactdp.rules.permute_and_flip`), so ``P / Q = I_a / I_b`` lies between the
        extremes of ``e^G`` on ``[0, 1]``, ``G = ln F_a - ln F_b = sum_x c_x ln(1 - t x)`` over
        the weights ``x = e^(lam g)`` whose number of outputs differs (``c_x``) between the
        two tables.  Each term is at most ``|c_x| (-ln(1 - x))`` in size, so
        ``B = sum_x |c_x| (-log1p(-x))`` (None when the best levels' sizes differ: the
        term ``ln(1 - t)`` is unbounded).  Two permute-and-flip mechanisms at neighbouring
        counts that differ only far below the best level have ``B`` as tiny as those
        levels' weights (``e^(-10^8)`` for heavy-tailed counts), where the certified
        probabilities agree to every digit they have."""
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
        there is no enclosure.  At flint's current precision.

        The proof (:mod:`exactdp.rules.permute_and_flip`: ``P = p J_a`` with ``p =
        e^(lam g_a)`` and ``J = int_0^1 prod_{o' != o} (1 - t w_o') dt``): ``J_a / J_b =
        E[e^L]`` over the density proportional to ``b``'s product, where ``L(t) = sum_x
        c_x ln(1 - t x)`` over the weights ``x`` whose number of outputs other than ``o``
        differs (``c_x``, ``a`` minus ``b``).  As ``t ln(1 - x) <= ln(1 - t x) <= -t x`` on
        ``[0, 1]``, ``t A <= L(t) <= t B`` with ``A = sum_{c > 0} c log1p(-x) + sum_{c < 0}
        |c| x`` and ``B = -sum_{c > 0} c x + sum_{c < 0} |c| (-log1p(-x))``.  So (Jensen,
        and convexity of ``e^(tB)`` in ``t``) ``A m <= ln(J_a / J_b) <= log1p(m expm1(B))``
        with ``m = E[t]``.  ``b``'s product is ``(1 - t)^n R(t)``, ``n`` its other best
        outputs, ``e^(-tS) <= R <= 1`` with ``S = N x_1 / (1 - x_1)`` (``N`` outputs below
        the best, ``x_1`` the largest of their weights), so ``m`` lies within ``e^(+-S)``
        of ``1 / (n + 2)``.  None when the numbers of best outputs other than ``o`` differ
        (the term ``ln(1 - t)`` is unbounded).  Two tables that differ only far below the
        best level (heavy-tailed counts: weights ``e^(-10^8)``) give ``J`` to about the
        relative accuracy ``S + (B - A) / |B|``, which decides the sign of
        ``ln(P/Q) - epsilon`` where the certified probabilities agree to every digit."""
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

    def _enclosure_shape_once(self) -> Optional["_EnclosureShape"]:
        """The exact part of :meth:`log_ratio_enclosure` (:func:`enclosure_shape`), computed
        once; also what this pair's per-delta engine reads (:func:`exactdp._oracle.notions.basics._by_delta`)."""
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


def key_kind(output: Any) -> str:
    """What kind of key a mapping's output is, as far as equality goes: ``"number"`` (ints,
    floats, Fractions, numpy numbers: ``1 == 1.0``), ``"str"``, a tuple or frozenset with
    the kinds of its elements (``"tuple of number"``, ``"frozenset of str"``), else the
    type's name.  Keys of two different kinds are never equal.

    >>> key_kind((0, 1)), key_kind(frozenset({0, 1})), key_kind("0,1"), key_kind(2.0)
    ('tuple of number', 'frozenset of number', 'str', 'number')
    """
    if isinstance(output, (tuple, frozenset, set)):
        name = "tuple" if isinstance(output, tuple) else "frozenset"
        inner = sorted({key_kind(x) for x in output})
        return f"{name} of {'/'.join(inner)}" if inner else f"empty {name}"
    if isinstance(output, str):
        return "str"
    if isinstance(output, (numbers.Number, np.number)) and not isinstance(output, np.datetime64):
        return "number"
    return type(output).__name__


def _kinds(view: MappingDistribution) -> dict[str, Any]:
    """``{kind: one key of that kind}`` over every key of the mapping (probability 0 too)."""
    found: dict[str, Any] = {}
    for o in view.outputs + view.zero_outputs:
        found.setdefault(key_kind(o), o)
    return found


def check_same_key_kinds(va: MappingDistribution, vb: MappingDistribution) -> None:
    """Refuse two mappings unless every key of both is of one kind
    (:class:`~exactdp.errors.ArgumentTypeError` naming ``a`` or ``b``).  Keys of different
    kinds are never equal, so one output written two ways (the tuple ``(0, 1)`` and the
    string ``"0,1"``, the int ``0`` and the tuple ``(0,)``) would count as two outputs,
    each given by one side only (an infinite loss, a delta of 1): refused when one mapping
    mixes kinds (checked first, ``a`` then ``b``, zero-probability keys included), and
    when the two mappings' kinds differ (tuples against frozensets, strings against
    tuples).  Nothing is converted: a set and a sequence are different outputs, and with
    two mappings there is no output space to say which is meant."""
    ka, kb = _kinds(va), _kinds(vb)

    def listed(kinds: dict[str, Any]) -> str:
        return ", ".join(f"{k} (e.g. {o!r})" for k, o in kinds.items())

    alike = ("Key every output alike: tuples of item ids in selection order for sequences, frozensets for sets "
             "(a set and a sequence are different outputs: exactdp does not convert one into the other)")
    for name, kinds in (("a", ka), ("b", kb)):
        if len(kinds) > 1:
            raise ArgumentTypeError(
                name, list(kinds.values())[1],
                f"the mapping keys its outputs in {len(kinds)} kinds: {listed(kinds)}; keys of different kinds are "
                "never equal, so one output written two ways would count as two outputs, one of them given by "
                f"this side only (an infinite loss). {alike}")
    if ka.keys() != kb.keys():
        raise ArgumentTypeError(
            "b", next(iter(kb.values())),
            f"the two mappings key their outputs differently: a's keys are {listed(ka)}, b's are {listed(kb)}; "
            "keys of different kinds are never equal, so these outputs would each count as given by one side "
            f"only (an infinite loss). {alike}")


def pair_cells(a: Any, b: Any, dps: int, max_outputs: int, symmetric: bool = True) -> Pair:
    """The cells of two distributions (mechanisms or mappings; see the module docstring)."""
    va, vb = as_distribution(a, "a", dps), as_distribution(b, "b", dps)
    footprint = Footprint(a, b)
    if isinstance(va, Groups) and isinstance(vb, Groups):
        _check_same_space(a, b, ("a", "b"))

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


def _check_same_space(a: Any, b: Any, names: tuple[str, str] = ("mechanism_a", "mechanism_b")) -> str:
    """The output kind of two mechanisms of one output space; else an error naming the
    arguments as the caller calls them (``names``)."""
    kind_a = getattr(a, "output_kind", "sequence")
    kind_b = getattr(b, "output_kind", "sequence")
    if (a.d, a.k, kind_a) != (b.d, b.k, kind_b):
        raise InvalidParameterError(
            names[1], b,
            f"must have the output space of {names[0]} (d={a.d}, k={a.k}, {kind_a}s); "
            f"got d={b.d}, k={b.k}, {kind_b}s",
        )
    return kind_a


#: :class:`ExponentialPair` applies when the cells take at most this many values of ``delta``.
MAX_DELTAS = 256


class ExponentialPair:
    """Two exponential-mechanism sides with one ``lam`` over the cells of a pair, every
    notion computed per value of ``delta`` instead of per cell.

    With :meth:`Groups.log_form` on both sides, a cell with levels ``(i, j)`` has
    ``r = ln P_a - ln P_b = lam delta - C``, where ``delta = (u_i - u'_j) - (u_0 - u'_0)`` is an
    exact number and ``C = ln(m_0 / m'_0) + log1p((t - t') / (1 + t'))`` is one ball shared
    by every cell (``t``, ``t'`` the two tails).  So all cells of one ``delta`` have the same
    ``r``, and a notion needs, per ``delta``, only ``r`` and the masses ``sum n P_a`` and
    ``sum n P_b`` of its cells: each one :func:`~exactdp.rules.exponential.decaying_sum`
    that stops where the levels left cannot matter.  Joint's cells take at most ``2w + 1``
    values of ``delta`` (``w`` the band).  ``r`` of ``delta = 0`` is ``-C``, which keeps its
    relative accuracy when the tails are as tiny as ``e^(-10^8)``: a Rényi divergence of that
    size is certified at ordinary precision.  Any undecided sign (a ball containing 0) makes
    the caller fall back to the per-cell computation, which decides exact equalities.
    """

    #: Whether a log-ratio may be known only to the working precision where it is tiny
    #: (:class:`PermuteAndFlipPair`): divergences are then formed so that such an ``r``
    #: adds to second order only (:func:`exactdp._oracle.notions.renyi._divergence_of`).
    second_order = False
    #: The classes whose outputs are not known to exist (:class:`HeadExponentialPair`: a
    #: diagonal the counted head did not reach; its masses are ``[0, tail]``).
    phantoms: frozenset = frozenset()

    def __init__(self, a: Groups, b: Groups, x: np.ndarray, y: np.ndarray, sizes: np.ndarray,
                 ua: np.ndarray, ub: np.ndarray, deltas: np.ndarray, of_cell: np.ndarray):
        self.a, self.b = a, b
        self.x, self.y = x, y
        self.deltas = deltas.tolist()
        #: the delta index of every cell, and the cell positions of every delta (ascending)
        self.of_cell = of_cell
        order = np.argsort(of_cell, kind="stable")
        self.cells = np.split(order, np.cumsum(np.bincount(of_cell, minlength=len(deltas)))[:-1])
        self.terms_a = [_terms(x[cells], sizes[cells], ua) for cells in self.cells]
        self.terms_b = [_terms(y[cells], sizes[cells], ub) for cells in self.cells]
        self._ua, self._ub = ua, ub
        #: guard bits: the rounding of ``lam (u - u_0)`` becomes relative error of its exp
        self.guard = _guard_bits(ua, ub)

    @classmethod
    def of(cls, a: Any, b: Any, keys: Sequence[tuple[Any, Any]], sizes: Sequence[int],
           shape_of: Optional[Callable[[], Optional["_EnclosureShape"]]] = None) -> Optional["ExponentialPair"]:
        """The engine for two views and their cells ``keys[c] = (group under a, group under
        b)`` of ``sizes[c]`` outputs, or None when it does not apply (a mapping side, no
        ``log_form`` or ``pnf_form``, two weight exponents not equal by their exact
        epsilon/divisor or base, a probability 0, utilities that are not integers, too many
        deltas).  ``shape_of``: where a :class:`PermuteAndFlipPair` reads the level tables'
        :func:`enclosure_shape` (a :class:`Pair`'s own, so the two do not each pass over
        every level); default computed by the engine."""
        if not (isinstance(a, Groups) and isinstance(b, Groups)):
            return None
        engine: type[ExponentialPair]
        if a.log_form_rule() is not None and b.log_form_rule() is not None:
            engine = cls
        elif cls is ExponentialPair and a.pnf_form_rule() is not None and b.pnf_form_rule() is not None:
            engine = PermuteAndFlipPair
        else:
            return None
        if a.mechanism.table.scale.weight_key != b.mechanism.table.scale.weight_key:
            return None  # the two weight exponents are not provably one number
        ua, ub = _int_utilities(a), _int_utilities(b)
        if ua is None or ub is None or any(x is None or y is None for x, y in keys):
            return None
        cells = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
        x, y = cells[:, 0], cells[:, 1]
        deltas, of_cell = np.unique(ua[x] - ub[y] - (ua[0] - ub[0]), return_inverse=True)
        if len(deltas) > MAX_DELTAS:
            return None
        arrays = (a, b, x, y, np.asarray(sizes, dtype=object), ua, ub, deltas, of_cell.reshape(-1))
        if engine is not PermuteAndFlipPair:
            return engine(*arrays)
        fast = PermuteAndFlipPair(*arrays, shape_of=shape_of)
        return fast if fast.usable(a.dps + 10) else None

    def prec(self, digits: int) -> int:
        return prec_for_dps(digits, 40) + self.guard

    def balls(self) -> tuple[list[arb], list[arb], list[arb], Any, Any]:
        """At flint's current precision: per delta ``r``, the ``P_a`` mass and the ``P_b``
        mass of its cells; and the two log forms."""
        fa, fb = self.a.log_form(), self.b.log_form()
        lam = fa.lam
        if fa.m0 == fb.m0 and fa.u0 == fb.u0:
            # t - t' summed as one signed sum over both level lists: levels the two sides
            # share cancel exactly, so a difference far below the tails themselves (counts
            # 1000 or 2**61 next to small ones) keeps its relative accuracy
            gap = _tail_difference_of(lam, fa, self.a.mechanism, self.b.mechanism) / fa.m0
        else:
            gap = fa.tail - fb.tail
        shared = (gap / (1 + fb.tail)).log1p()
        if fa.m0 != fb.m0:
            shared += (arb(fa.m0) / fb.m0).log()
        za, zb = (1 + fa.tail) * fa.m0, (1 + fb.tail) * fb.m0
        pa, pb = self._masses(lam, fa, fb, za, zb)
        # The same C from the P_b masses adding up to 1 (P_b = P_a e^(C - lam delta) per cell):
        # C = -log1p(sum_delta P_a(delta) expm1(-lam delta)), where delta = 0 adds exactly 0.
        # The tails' difference above cancels when the tails are not tiny but differ by a
        # tiny amount (a changed item far below the top k: t - t' ~ 1e-3461 next to t ~ 1e-8);
        # this form keeps C's relative accuracy then.  Both enclose C: keep the narrower.
        moved = arb(0)
        for delta, p in zip(self.deltas, pa):
            if delta:
                moved += p * expm1_ball(-(lam * delta))
        if moved > -1:
            other = -moved.log1p()
            if other.rad() < shared.rad() and other.overlaps(shared):
                shared = other
        self.shared = shared
        rs = [self.gap(g, 1, Fraction(0)) for g in range(len(self.deltas))]
        return rs, pa, pb, fa, fb

    def _masses(self, lam: arb, fa: Any, fb: Any, za: arb, zb: arb) -> tuple[list[arb], list[arb]]:
        """Per delta the ``P_a`` and the ``P_b`` mass of its cells (``za``, ``zb``: the two
        normalisers relative to the best weight)."""
        return ([decaying_sum(lam, fa.u0, *terms) / za for terms in self.terms_a],
                [decaying_sum(lam, fb.u0, *terms) / zb for terms in self.terms_b])

    def gap(self, g: int, sign: int, eps: Fraction) -> arb:
        """``sign * r - eps`` for delta ``g`` as ``(sign lam delta - eps) - sign C``, the first
        part exact when ``lam`` is rational: where it is 0 the gap is ``-sign C``, with the
        relative accuracy of ``C`` however tiny (``r`` itself, next to ``eps``, would
        need as many digits as ``C`` is small).  :meth:`balls` sets ``C`` first."""
        return self._shift(sign * self.deltas[g], eps) - sign * self.shared

    def _shift(self, delta: Any, eps: Fraction) -> arb:
        """``lam * delta - eps``, exact (one rational rounded once) when ``lam`` is rational."""
        scale = self.a.mechanism.table.scale
        if scale.lam is not None:
            return rational_ball(scale.lam * delta - eps)
        return scale.lam_ball() * delta - rational_ball(eps)

    def loss(self, digits_wanted: int) -> Optional[tuple]:
        """``max |r|`` over the cells, certified to ``digits_wanted`` digits: ``(value, index
        of the attaining delta, signed r per delta, (ln P_a, ln P_b) of its first cell)`` as
        mpf, or None when some ``r`` may be 0 (equality is then decided per cell)."""
        digits = digits_wanted + 10
        while digits <= 4 * digits_wanted + 80:
            with flint_workprec(self.prec(digits)):
                rs, _, _, fa, fb = self.balls()
                if any(r.contains(0) for r in rs):
                    return None
                lo = max((abs(r).lower() for r in rs), key=lambda x: x.mid())
                hi = max((abs(r).upper() for r in rs), key=lambda x: x.mid())
                if (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                    best = max(range(len(rs)), key=lambda g: abs(rs[g]).mid())
                    first = int(self.cells[best][0])
                    x, y = int(self.x[first]), int(self.y[first])
                    logs = (fa.log_probability(_int(self._ua[x])), fb.log_probability(_int(self._ub[y])))
                    return (ball_to_mpf((lo + hi) / 2), best, [ball_to_mpf(r) for r in rs],
                            tuple(ball_to_mpf(v) for v in logs))
            digits *= 2
        return None

    def rows(self, signed: list[Any], digits_wanted: int) -> list[int]:
        """The cell positions sorted as :func:`exactdp.audit.privacy_loss` sorts its pairs:
        ``|signed|`` rounded to ``digits_wanted - 3`` digits, largest first (every cell of
        one delta has the same value), then the two level indices."""
        with mp_workdps(max(digits_wanted - 3, 5)):
            rounded = [+abs(s) for s in signed]
        ranks = {v: i for i, v in enumerate(sorted(set(rounded), reverse=True))}
        rank = np.asarray([ranks[v] for v in rounded], dtype=np.int64)[self.of_cell]
        return np.lexsort((self.y, self.x, rank)).tolist()


def _int(x: Any) -> int:
    """A utility read from an ``int64`` or object array as a Python int."""
    return int(x)


def _tail_difference_of(lam: arb, fa: Any, a: Any, b: Any) -> arb:
    """:func:`tail_difference` of two mechanisms' level tables: read level by level from
    tables that know their number of outputs (a block table), else from the level lists."""
    ta, tb = a.table, b.table
    na = ta.output_count() if hasattr(ta, "output_count") else None
    nb = tb.output_count() if hasattr(tb, "output_count") else None
    if na is not None and nb is not None:
        return tail_difference(lam, fa.u0, ta.iter_levels(), tb.iter_levels(), na + nb - 2 * fa.m0)
    return tail_difference(lam, fa.u0, ta.levels, tb.levels)


class _SideTail:
    """One side's level weights ``m e^(lam (u - u_0))`` from the best level down, read
    level by level until the outputs left weigh at most ``2**-bits`` of the sum so far
    (``rest * e`` bounds them: weights decrease), at flint's current precision.
    :meth:`beyond` bounds the weight of every level past ``M`` from these balls and that
    bound, without reading further."""

    def __init__(self, mechanism: Any, lam: arb, bits: int):
        table = mechanism.table
        rest = table.output_count()
        levels = mechanism.iter_levels()
        u0, m0 = next(levels)
        rest -= m0
        self.depths: list[int] = []
        uppers: list[arb] = []
        run, cut = arb(m0), arb(2) ** -bits
        self.remainder = arb(0)
        self.bits = bits
        with gc_paused():
            for u, m in levels:
                e = (lam * arb(u - u0)).exp()
                w = m * e
                run += w
                rest -= m
                self.depths.append(u0 - u)
                uppers.append(w.upper())
                if not rest:
                    break
                bound = (e * rest).upper()
                if bound <= (cut * run).lower():
                    self.remainder = bound
                    break
        #: every level is listed (no remainder)
        self.complete = not rest
        # suffix[i]: an upper bound on the weights of the levels from the i-th listed one on
        suffix = [arb(0)] * (len(uppers) + 1)
        acc = self.remainder
        suffix[-1] = acc
        for i in range(len(uppers) - 1, -1, -1):
            acc = (acc + uppers[i]).upper()
            suffix[i] = acc
        self._suffix = suffix

    def beyond(self, depth: int) -> arb:
        """An upper bound on the weight (relative to the best level's single output) of the
        levels with ``M > depth``."""
        return self._suffix[bisect_right(self.depths, depth)]

    def first_depth(self, z: arb, target: arb) -> Optional[int]:
        """The least depth (0 or a listed level's ``M``) whose levels beyond weigh at most
        ``target * z`` (a lower end of the normaliser), or None when no listed depth does."""
        limit = (target * z).lower()
        if self._suffix[0] <= limit:
            return 0
        for i, depth in enumerate(self.depths):
            if self._suffix[i + 1] <= limit:
                return depth
        return None


class _HeadCount:
    """What the two stopped engines share: the pair's head of cells (the mechanisms'
    ``pair_head``), counted down to the depth a precision needs, and the two sides' level
    weights that bound what it leaves out (:class:`HeadExponentialPair`)."""

    _head: Any
    _depth: int
    lowest: int

    def _init_head(self, a: Groups, b: Groups, head_of: Callable[[int], Any], first: Any) -> None:
        self.a, self.b = a, b
        self._head_of = head_of
        self._head, self._depth = first, 0
        self.lowest, self.highest = first.lowest, first.highest
        ma, mb = a.mechanism, b.mechanism
        spread = max(max(ma.counts) - min(ma.counts), max(mb.counts) - min(mb.counts), 1)
        #: guard bits for the deepest utility any level can have (the counts' spread)
        self.guard = spread.bit_length() + 8
        self._sides: dict[tuple[int, int], tuple[_SideTail, _SideTail]] = {}
        self._layout: Optional[int] = None

    def _sides_at(self, lam: arb, bits: int) -> tuple[_SideTail, _SideTail]:
        key = (ctx.prec, bits)
        found = self._sides.get(key)
        if found is None:
            if len(self._sides) > 4:
                self._sides.clear()
            found = self._sides[key] = (_SideTail(self.a.mechanism, lam, bits), _SideTail(self.b.mechanism, lam, bits))
        return found

    def _depth_for(self, lam: arb, za: arb, zb: arb, target: arb) -> Optional[int]:
        """The least depth whose tails are at most ``target`` (of the total mass 1) on both
        sides, the sides read deeper as needed; None when no level is deep enough short of
        every level (then the whole head is counted)."""
        bits = ctx.prec + 8
        while True:
            side_a, side_b = self._last_sides = self._sides_at(lam, bits)
            depth = side_a.first_depth(za, target)
            depth_b = side_b.first_depth(zb, target)
            if depth is not None and depth_b is not None:
                depth = max(depth, depth_b - self.lowest)
                # b's depth, moved to a's, may pass a's listed levels: the bound still holds
                if side_a.beyond(depth) <= (target * za).lower():
                    return depth
            if side_a.complete and side_b.complete:
                return None
            bits *= 2
            if bits > 64 * ctx.prec:
                return None

    def _count_to(self, depth: Optional[int]) -> None:
        """Count the head down to ``depth`` (None: every level) unless it reaches there."""
        if self._head.complete or (depth is not None and depth <= self._depth):
            return
        if depth is None:
            depth = max(max(self.a.mechanism.counts) - min(self.a.mechanism.counts), 0)
        head = self._head_of(depth)
        if head is None:  # pragma: no cover - the first head applied, so every deeper one does
            raise AssertionError("the pair's head count stopped applying")
        self._head, self._depth = head, depth
        self._layout = None

    def head_cell(self, c: int) -> Cell:
        """Head cell ``c`` (its two level indices, a witness, its number of outputs)."""
        head = self._head
        return Cell(int(head.x[c]), int(head.y[c]), head.witnesses[c], head.sizes[c])

    @property
    def head_depth(self) -> int:
        """The depth the head is counted down to (every level when it is complete)."""
        return self._depth


class HeadExponentialPair(_HeadCount, ExponentialPair):
    """:class:`ExponentialPair` over a head of cells counted down to a depth, the rest
    bounded by the one-dataset tails (two Joint mechanisms of one ``lam``; the
    mechanisms' ``pair_head`` hook, :func:`exactdp.mechanisms.joint_pairs.joint_pair_head`).

    Every notion of two exponential mechanisms of one ``lam`` depends on the outputs only
    through ``delta = M' - M`` (:class:`ExponentialPair`: ``r = lam delta - C`` on a
    diagonal) and the diagonal masses ``P_a(D_delta)``, ``P_b(D_delta)``.  The cells with
    level ``M <= H`` under ``a`` are counted exactly (the head); every other output has
    ``M > H`` and ``M' > H + lowest`` (``lowest``: the least ``M' - M``), so its mass under
    ``a`` is at most ``T_a(H) = sum_{M > H} m_a(M) e^(-lam M) / Z_a`` and under ``b`` at most
    ``T_b(H + lowest)``: one-dataset tails, bounded from the level weights read from the
    best level down (:class:`_SideTail`, whose remainder is the outputs left times the
    last weight).  So each diagonal's mass lies in ``[counted, counted + T]``, and so does
    the mass of a diagonal the head did not reach (``[0, T]``: a *phantom*, which may
    carry no output at all); ``C`` is still the shared ball of the two log forms (exact
    per side), so every ``r`` is as accurate as with every cell counted.

    ``H`` is chosen per working precision: the least level depth with ``T_a(H)`` and
    ``T_b(H + lowest)`` at most ``2**-(prec + 8)`` of the smallest counted diagonal mass
    (relative accuracy of every mass), found from the side weights; the head is counted
    again, deeper, only when a precision needs it (a deeper head serves every lower
    one).  When the head holds every level of ``a`` it is every cell: no tail, no phantom.
    A phantom is harmless to the masses (the notions add ``[0, T]``), to the zCDP bound
    (its ``|r|`` only raises an upper bound), and to a pure loss it does not dominate; a
    pure loss it may dominate (a diagonal the head did not reach, whose ``|r|`` could be
    the largest) is left undecided (:meth:`loss` returns None: the audits then count every
    cell)."""

    def __init__(self, a: Groups, b: Groups, head_of: Callable[[int], Any], first: Any):
        self._init_head(a, b, head_of, first)

    def _lay_out(self) -> None:
        """The classes of the current head: its diagonals (and the phantoms) ascending."""
        if self._layout == id(self._head):
            return
        head = self._head
        x, y = head.x, head.y
        ua = np.asarray(head.utilities_a, dtype=object if head.utilities_a and abs(head.utilities_a[-1]) >= 2**60
                        else np.int64)
        ub = np.asarray(head.utilities_b, dtype=object if head.utilities_b and abs(head.utilities_b[-1]) >= 2**60
                        else np.int64)
        # delta = (u - u') - (u_0 - u'_0) = M' - M (both best levels are at utility 0)
        deltas = sorted(set((ua[x] - ub[y]).tolist())) if len(x) else []
        phantom = [] if head.complete else [t for t in range(self.lowest, self.highest + 1) if t not in deltas]
        every = sorted(deltas + phantom)
        index = {t: g for g, t in enumerate(every)}
        of_cell = np.asarray([index[v] for v in (ua[x] - ub[y]).tolist()], dtype=np.int64)
        self.deltas = every
        self.phantoms = frozenset(index[t] for t in phantom)
        self.x, self.y, self.of_cell = x, y, of_cell
        order = np.argsort(of_cell, kind="stable")
        self.cells = np.split(order, np.cumsum(np.bincount(of_cell, minlength=len(every)))[:-1])
        sizes = np.asarray(head.sizes, dtype=object)
        self.terms_a = [_terms(x[c], sizes[c], ua) if len(c) else ([], 0) for c in self.cells]
        self.terms_b = [_terms(y[c], sizes[c], ub) if len(c) else ([], 0) for c in self.cells]
        self._ua, self._ub = ua, ub
        self._layout = id(head)

    def _masses(self, lam: arb, fa: Any, fb: Any, za: arb, zb: arb) -> tuple[list[arb], list[arb]]:
        """Per diagonal ``[counted, counted + T]`` on each side, the head counted as deep as
        this precision needs (the class docstring)."""
        target = arb(2) ** -(ctx.prec + 8)
        while True:
            if not self._head.complete:
                self._count_to(self._depth_for(lam, za, zb, target))
            self._lay_out()
            pa, pb = self._head_masses(lam, fa, fb, za, zb)
            if self._head.complete:
                return pa, pb
            counted = [m.lower() for masses in (pa, pb) for g, m in enumerate(masses) if g not in self.phantoms]
            smallest = min(counted, key=lambda v: v.mid(), default=arb(0))
            needed = max(arb(2) ** -(ctx.prec + 8) * smallest, arb(2) ** -(4 * ctx.prec), key=lambda v: v.mid())
            if not needed < target:
                return pa, pb
            target = needed

    def _head_masses(self, lam: arb, fa: Any, fb: Any, za: arb, zb: arb) -> tuple[list[arb], list[arb]]:
        pa, pb = super()._masses(lam, fa, fb, za, zb)
        if self._head.complete:
            return pa, pb
        side_a, side_b = self._last_sides
        tail_a = arb(0).union((side_a.beyond(self._depth) / za.lower()).upper())
        tail_b = arb(0).union((side_b.beyond(self._depth + self.lowest) / zb.lower()).upper())
        return [p + tail_a for p in pa], [p + tail_b for p in pb]

    def loss(self, digits_wanted: int) -> Optional[tuple]:
        """As :meth:`ExponentialPair.loss` over the diagonals the head holds, when every
        phantom's ``|r|`` is certainly at most their largest (else None: undecided)."""
        digits = digits_wanted + 10
        while digits <= 4 * digits_wanted + 80:
            with flint_workprec(self.prec(digits)):
                rs, _, _, fa, fb = self.balls()
                real = [g for g in range(len(rs)) if g not in self.phantoms]
                if not real or any(rs[g].contains(0) for g in real):
                    return None
                lo = max((abs(rs[g]).lower() for g in real), key=lambda v: v.mid())
                hi = max((abs(rs[g]).upper() for g in real), key=lambda v: v.mid())
                if any(not abs(rs[g]).upper() <= lo for g in self.phantoms):
                    return None
                if (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                    best = max(real, key=lambda g: abs(rs[g]).mid())
                    first = int(self.cells[best][0])
                    x, y = int(self.x[first]), int(self.y[first])
                    logs = (fa.log_probability(_int(self._ua[x])), fb.log_probability(_int(self._ub[y])))
                    return (ball_to_mpf((lo + hi) / 2), best, [ball_to_mpf(r) for r in rs],
                            tuple(ball_to_mpf(v) for v in logs))
            digits *= 2
        return None

def head_engine(a: Any, b: Any) -> Optional[Any]:
    """A :class:`HeadExponentialPair` (:class:`HeadPermuteAndFlipPair`) of two views whose
    mechanisms offer the stopped count (``pair_head``, which declines unless it is the
    better one) with exponential (permute-and-flip) rules of one ``lam`` and level tables
    that know their number of outputs; else None."""
    if not (isinstance(a, Groups) and isinstance(b, Groups)):
        return None
    ma, mb = a.mechanism, b.mechanism
    hook = getattr(ma, "pair_head", None)
    if not callable(hook) or not callable(getattr(mb, "pair_head", None)):
        return None
    exponential = a.log_form_rule() is not None and b.log_form_rule() is not None
    if not exponential and (a.pnf_form_rule() is None or b.pnf_form_rule() is None):
        return None
    if ma.table.scale.weight_key != mb.table.scale.weight_key:
        return None
    if any(getattr(t, "output_count", lambda: None)() is None for t in (ma.table, mb.table)):
        return None
    first = hook(mb)
    if first is None:
        return None
    if exponential:
        return HeadExponentialPair(a, b, lambda depth: hook(mb, depth), first)
    engine = HeadPermuteAndFlipPair(a, b, lambda depth: hook(mb, depth), first)
    return engine if engine.usable(a.dps + 10) else None


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


def table_differences(a: Any, b: Any) -> Optional[tuple[list[Any], list[Any], dict[Any, int]]]:
    """Both sides' gaps below their best level (the utilities' own type: ints for the
    Joint family) and the signed difference of the level tables per gap (``a`` minus
    ``b``), for two permute-and-flip sides of one ``lam``; None otherwise (or for
    utilities that do not subtract)."""
    from ..rules.permute_and_flip import PermuteAndFlip
    if not (isinstance(a, Groups) and isinstance(b, Groups) and a.same_rule_as(b)
            and isinstance(a.batched_rule(), PermuteAndFlip)):
        return None
    try:
        gaps_a = [g.utility - a.groups[0].utility for g in a.groups]
        gaps_b = [g.utility - b.groups[0].utility for g in b.groups]
    except TypeError:
        return None
    sizes: dict[Any, int] = {}
    for gaps, groups, sign in ((gaps_a, a.groups, 1), (gaps_b, b.groups, -1)):
        for gap, g in zip(gaps, groups):
            sizes[gap] = sizes.get(gap, 0) + sign * g.multiplicity
    return gaps_a, gaps_b, sizes


def enclosure_shape(a: Any, b: Any, tables: Optional[tuple[list[Any], list[Any], dict[Any, int]]]) -> Optional["_EnclosureShape"]:
    """The exact part of :meth:`Pair.log_ratio_enclosure` (:class:`_EnclosureShape`) from
    the two sides' :func:`table_differences` (None: no enclosure)."""
    if tables is None:
        return None
    gaps_a, gaps_b, sizes = tables
    best_b = sum(g.multiplicity for gap, g in zip(gaps_b, b.groups) if gap == 0)
    below_b = sum(g.multiplicity for gap, g in zip(gaps_b, b.groups) if gap != 0)
    top_b = max((gap for gap in gaps_b if gap != 0), default=None)
    scale = b.mechanism.table.scale
    return _EnclosureShape(sizes, gaps_a, gaps_b, best_b, below_b, top_b, scale, scale.lam)


def enclosure_ball(g_a: Any, g_b: Any, shape: "_EnclosureShape", totals: list) -> arb:
    """The ball ``J`` of :meth:`Pair.log_ratio_enclosure` for an output at gaps ``g_a``,
    ``g_b`` (``totals``: the per-gap terms and their sums at this precision, filled once).
    For ``g_a == g_b != 0`` it also encloses ``ln(nu_a / nu_b)``, ``nu = int_0^1 F(t) dt``
    over the full products (no output taken out: the same differences ``c_x``, and ``m``
    over ``b``'s full product lies in the same bounds)."""
    sizes, best_b, below_b, top_b = shape.sizes, shape.best_b, shape.below_b, shape.top_b
    lam = shape.scale.lam_ball()
    if not totals:  # per gap (A term, B term) and their sums
        terms = {gap: _log1m_bounds(gap, c, lam) for gap, c in sizes.items() if gap and c}
        low = high = arb(0)
        for lo, hi in terms.values():
            low, high = low + lo, high + hi
        totals.extend((terms, low, high, _RangeSums(list(terms.values())), {g: i for i, g in enumerate(terms)}))
    terms, low, high, ranges, position = totals
    if g_a != g_b:
        # summed again without o's own two terms, not corrected from the sums: a correction
        # would keep the rounding error of o's terms, which can be far larger than the rest
        # (heavy-tailed counts).  The sums of the runs of terms between them come from a
        # tree of partial sums (each node a ball of its own terms, no subtraction anywhere)
        changed = {g_a: sizes.get(g_a, 0) - 1, g_b: sizes.get(g_b, 0) + 1}
        cut = sorted(position[g] for g in changed if g in position)
        low = high = arb(0)
        for start, stop in zip([0] + [i + 1 for i in cut], cut + [len(position)]):
            lo, hi = ranges.total(start, stop)
            low, high = low + lo, high + hi
        for gap, c in changed.items():
            if gap and c:  # the best level's difference is 0 once o is out (checked by the caller)
                lo, hi = _log1m_bounds(gap, c, lam)
                low, high = low + lo, high + hi
    m0 = arb(1) / (best_b - (g_b == 0) + 2)
    if below_b:
        x1 = (lam * rational_ball(top_b)).exp()
        spread = (below_b * x1 / (1 - x1)).exp()
        m_low, m_high = m0 / spread, m0 * spread
        m_high = m_high if m_high < 1 else arb(1)
    else:
        m_low = m_high = m0
    # ends of intervals: the smallest A m and the largest log1p(m expm1(B)) over m
    a_end, b_end = low.lower(), high.upper()
    lower = (a_end * (m_low.lower() if a_end >= 0 else m_high.upper())).lower()
    upper = ((m_high.upper() if b_end >= 0 else m_low.lower()) * expm1_ball(b_end)).log1p().upper()
    # the hull of [lower, upper] as a ball (arb's union may widen it past 0 when the two
    # ends differ by orders of magnitude, as they do when m is known only loosely)
    return (lower + upper) / 2 + ((upper - lower) / 2).upper() * arb(0, 1)


class _RangeSums:
    """Sums of runs of ``(lo, hi)`` ball pairs, from a tree of partial sums built once
    (each node the sum of its two children): a run is the sum of at most ``2 log2 n``
    nodes, every one an enclosure of its terms' sum, so the result encloses the run's
    sum (no term is added and subtracted again)."""

    def __init__(self, pairs: list[tuple[arb, arb]]):
        n = self.n = len(pairs)
        zero = (arb(0), arb(0))
        self.tree = [zero] * n + list(pairs)
        for i in range(n - 1, 0, -1):
            (a, b), (c, d) = self.tree[2 * i], self.tree[2 * i + 1]
            self.tree[i] = (a + c, b + d)

    def total(self, start: int, stop: int) -> tuple[arb, arb]:
        """The two sums over the pairs ``start .. stop - 1``."""
        lo, hi = arb(0), arb(0)
        start, stop = start + self.n, stop + self.n
        while start < stop:
            if start & 1:
                lo, hi = lo + self.tree[start][0], hi + self.tree[start][1]
                start += 1
            if stop & 1:
                stop -= 1
                lo, hi = lo + self.tree[stop][0], hi + self.tree[stop][1]
            start //= 2
            stop //= 2
        return lo, hi


def _guard_bits(ua: np.ndarray, ub: np.ndarray) -> int:
    """Guard bits for the utility spread of both sides (the rounding of ``lam (u - u_0)``
    becomes relative error of its ``exp``)."""
    spread = max(int(ua[-1] - ua[0]), int(ub[-1] - ub[0]), 1, key=abs)
    return abs(spread).bit_length() + 8


class PermuteAndFlipPair(ExponentialPair):
    """Two permute-and-flip sides with one ``lam`` over the cells of a pair, the levels far
    below the best taken per value of ``delta`` as :class:`ExponentialPair` takes every level.
    Papers: McKenna and Sheldon, "Permute-and-Flip: A new mechanism for differentially
    private selection" (NeurIPS 2020, arXiv:2010.12603), the rule; Gillenwater, Joseph,
    Medina, Ribero, "A Joint Exponential Mechanism for Differentially Private Top-k" (ICML
    2022, arXiv:2201.12333), PNFJoint's levels over which it runs.

    Each side's :class:`~exactdp.rules.pnf_levels.PnfForm` (:meth:`Groups.pnf_form`) gives,
    for a level ``a`` past its head, ``ln P_a = lam (u_a - u_0) + ln nu_0 + ln(1 + rho_a)``
    with ``0 <= rho_a <= rho`` (about ``2**-prec``).  A cell whose two levels are both past
    the heads therefore has ``r = ln P_a - ln P_b = lam delta - C`` with
    ``C = ln nu_0' - ln nu_0 + [-rho, rho']``: one ball per ``delta`` encloses the ``r`` of
    every such cell, and its ``P_a`` mass is ``nu_0 [1, 1 + rho]`` times a
    :func:`~exactdp.rules.exponential.decaying_sum` of its weights.  A cell with a level in
    a head is a class of its own, with the certified ``P_a``, ``P_b`` of its two levels.
    Heavy-tailed counts have heads of a few levels, so a pair of half a million cells needs
    a handful of integrals instead of one per level.

    Unlike :class:`ExponentialPair`, ``C`` is no sum in which the shared levels cancel
    exactly: its ball is the narrower of the two quadratures' difference and the level
    tables' enclosure (:meth:`balls`), and a ball of ``r`` may still contain 0 without ``r``
    being 0.  :meth:`loss` then needs only the largest ``|r|`` to exclude 0; divergences are
    formed to second order in ``r`` (:attr:`second_order`); the privacy profile decides a
    class that straddles ``epsilon`` cell by cell (:meth:`cell_probability`); anything else
    undecided returns None as before (the callers then work cell by cell).  The heads grow
    with the working precision, and the classes are remade for each (:meth:`forms`).
    """

    second_order = True

    def __init__(self, a: Groups, b: Groups, x: np.ndarray, y: np.ndarray, sizes: np.ndarray,
                 ua: np.ndarray, ub: np.ndarray, deltas: np.ndarray, of_cell: np.ndarray,
                 shape_of: Optional[Callable[[], Optional["_EnclosureShape"]]] = None):
        self.a, self.b = a, b
        self.x, self.y = x, y
        self._sizes, self._ua, self._ub = sizes, ua, ub
        self._all_deltas, self._delta_of = deltas, of_cell
        self.guard = _guard_bits(ua, ub)
        self.heads: Optional[tuple[int, int]] = None
        self._shape_of = shape_of

    def _classes(self, head_a: int, head_b: int) -> None:
        """The classes once the heads are known: per ``delta`` the cells with both levels
        past the heads, then every other cell on its own."""
        x, y = self.x, self.y
        in_head = (x < head_a) | (y < head_b)
        tail_cells = np.flatnonzero(~in_head)
        used, tail_of = np.unique(self._delta_of[tail_cells], return_inverse=True)
        self.deltas = [self._all_deltas[int(g)] for g in used.tolist()]
        n_tail = len(self.deltas)
        of_cell = np.empty(len(x), dtype=np.int64)
        of_cell[tail_cells] = np.asarray(tail_of, dtype=np.int64).reshape(-1)
        head_cells = np.flatnonzero(in_head)
        of_cell[head_cells] = n_tail + np.arange(len(head_cells), dtype=np.int64)
        self.of_cell = of_cell
        self.n_tail = n_tail
        self.head_cells = head_cells.tolist()
        order = np.argsort(of_cell, kind="stable")
        self.cells = np.split(order, np.cumsum(np.bincount(of_cell, minlength=n_tail + len(head_cells)))[:-1])
        self.terms_a = [_terms(x[cells], self._sizes[cells], self._ua) for cells in self.cells[:n_tail]]
        self.terms_b = [_terms(y[cells], self._sizes[cells], self._ub) for cells in self.cells[:n_tail]]

    def forms(self) -> Optional[tuple[Any, Any]]:
        """Both sides' forms at flint's current precision, the classes made for their heads
        (the heads grow with the precision; the classes, ``cells`` and ``of_cell`` are those
        of the last call)."""
        fa, fb = self.a.pnf_form(), self.b.pnf_form()
        if fa is None or fb is None:
            return None
        if self.heads != (fa.head, fb.head):
            self.heads = (fa.head, fb.head)
            self._classes(fa.head, fb.head)
        return fa, fb

    def _ratio_shape(self) -> Optional["_EnclosureShape"]:
        """The level tables' :func:`enclosure_shape`, once: from ``shape_of`` (the pair's own,
        when a :class:`Pair` made this engine) or computed here."""
        shape = getattr(self, "_shape", False)
        if shape is False:
            shape = self._shape = (self._shape_of() if self._shape_of is not None
                                   else enclosure_shape(self.a, self.b, table_differences(self.a, self.b)))
        return shape

    def balls(self) -> tuple[list[arb], list[arb], list[arb], Any, Any]:
        """As :meth:`ExponentialPair.balls`, the head cells last (one class each).  A side
        without a form at this precision raises :class:`LookupError` (:meth:`of` tries
        the forms at the precision of the default ``dps`` first).

        Each ``r`` is the narrower of two enclosures (both hold): from the forms, ``lam
        delta + (ln nu_0 - ln nu_0') + [-rho', rho]`` with ``rho``, ``rho'`` bounded at the
        class's best level on each side (:class:`~exactdp.rules.pnf_levels.PnfForm`: ``rho_a
        <= p_a B / nu_0``); and from the level tables (:func:`enclosure_ball`), which keeps
        the relative accuracy of a tiny ``ln(nu_0 / nu_0')`` (tables that differ only far
        below the best): ``lam delta + J`` with ``J`` the ball of an output at gaps ``(g, g)``
        for ``delta = 0`` (every cell of the class is such an output), and ``J`` plus the
        same ``[-rho', rho]`` otherwise (``J`` of ``(g, g)`` also encloses ``ln(nu_0 /
        nu_0')``).  A head cell has the difference of its two certified ``ln P``, or its own
        enclosure ``lam delta + J(g_a, g_b)``."""
        forms = self.forms()
        if forms is None:
            raise LookupError("a permute-and-flip side has no closed form at this precision")
        fa, fb = forms
        lam = fa.lam
        shape = self._ratio_shape()
        totals: list = []
        full = None  # J of an output at one nonzero gap on both sides: also ln(nu_0 / nu_0')
        if shape is not None and not shape.sizes.get(0, 0) and shape.below_b:
            full = enclosure_ball(shape.top_b, shape.top_b, shape, totals)
        by_balls = fa.nu0.log() - fb.nu0.log()
        common = by_balls if full is None or by_balls.rad() <= full.rad() else full
        one_a, one_b = 1 + arb(0).union(fa.rho), 1 + arb(0).union(fb.rho)
        pa = [decaying_sum(lam, fa.u0, *terms) * fa.nu0 * one_a for terms in self.terms_a]
        pb = [decaying_sum(lam, fb.u0, *terms) * fb.nu0 * one_b for terms in self.terms_b]
        extra = []  # r - lam delta per class
        for g in range(self.n_tail):
            # ln(1 + rho) <= rho at the class's best level on each side (weights decrease)
            spread = (-fb.rho_at(self.terms_b[g][0][0][0])).union(fa.rho_at(self.terms_a[g][0][0][0]))
            e = common + spread
            if self.deltas[g] == 0 and full is not None and full.rad() < e.rad():
                e = full
            extra.append(e)
        ua, ub = self._ua, self._ub
        deltas = list(self.deltas)
        for c in self.head_cells:
            i, j = int(self.x[c]), int(self.y[c])
            u, v = int(ua[i]), int(ub[j])
            n = int(self._sizes[c])
            pa.append(n * fa.probability(i, u))
            pb.append(n * fb.probability(j, v))
            delta = (u - int(ua[0])) - (v - int(ub[0]))
            deltas.append(delta)
            e = fa.log_probability(i, u) - fb.log_probability(j, v) - self._shift(delta, _ZERO)
            if shape is not None:
                g_a, g_b = shape.gaps_a[i], shape.gaps_b[j]
                if not (shape.sizes.get(0, 0) - (g_a == 0) + (g_b == 0)):
                    own = enclosure_ball(g_a, g_b, shape, totals)
                    if own.rad() < e.rad():
                        e = own
            extra.append(e)
        self._extra, self._class_deltas = extra, deltas
        rs = [self.gap(g, 1, Fraction(0)) for g in range(len(extra))]
        return rs, pa, pb, fa, fb

    def cell_probability(self, c: int, sign: int, forms: tuple) -> arb:
        """``P_a`` (``sign = 1``) or ``P_b`` (``-1``) of one output of cell ``c``, from the
        forms :meth:`balls` returned."""
        if sign > 0:
            i = int(self.x[c])
            return forms[0].probability(i, int(self._ua[i]))
        j = int(self.y[c])
        return forms[1].probability(j, int(self._ub[j]))

    def usable(self, digits: int) -> bool:
        """Whether both sides have a form at the working precision of ``digits`` digits
        (the shared values made there are kept by the rule for the first :meth:`balls`)."""
        with flint_workprec(self.prec(digits)):
            return self.forms() is not None

    def gap(self, g: int, sign: int, eps: Fraction) -> arb:
        """``sign * r - eps`` of class ``g`` as ``(sign lam delta - eps) + sign (r - lam
        delta)``, the first part exact when ``lam`` is rational (:meth:`balls` sets the
        second)."""
        return self._shift(sign * self._class_deltas[g], eps) + sign * self._extra[g]

    def loss(self, digits_wanted: int) -> Optional[tuple]:
        """As :meth:`ExponentialPair.loss`, but a class whose ``r`` contains 0 is allowed
        when it is certainly below the largest ``|r|`` (``C`` is not known with relative
        accuracy here, see the class docstring); over the classes that hold outputs, when
        every phantom's ``|r|`` (:class:`HeadPermuteAndFlipPair`) is certainly at most
        their largest (else None: undecided)."""
        digits = digits_wanted + 10
        while digits <= 4 * digits_wanted + 80:
            with flint_workprec(self.prec(digits)):
                rs, _, _, fa, fb = self.balls()
                real = [g for g in range(len(rs)) if g not in self.phantoms]
                lows = {g: abs(rs[g]).lower() if not rs[g].contains(0) else arb(0) for g in real}
                best = max(real, key=lambda g: lows[g].mid())
                lo = lows[best]
                hi = max((abs(rs[g]).upper() for g in real), key=lambda v: v.mid())
                if not lo > 0 or any(not abs(rs[g]).upper() <= lo for g in self.phantoms):
                    return None
                if (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                    first = int(self.cells[best][0])
                    x, y = int(self.x[first]), int(self.y[first])
                    logs = (fa.log_probability(x, int(self._ua[x])), fb.log_probability(y, int(self._ub[y])))
                    return (ball_to_mpf((lo + hi) / 2), best, [ball_to_mpf(r) for r in rs],
                            tuple(ball_to_mpf(v) for v in logs))
            digits *= 2
        return None


class HeadPermuteAndFlipPair(_HeadCount, PermuteAndFlipPair):
    """:class:`PermuteAndFlipPair` over a head of cells counted down to a depth, the rest
    bounded as for :class:`HeadExponentialPair` (two PNFJoint mechanisms of one ``lam``).

    A permute-and-flip output has ``P(o) = p_o I_o <= p_o = e^(lam (u(o) - u_0))`` (``I_o``
    an integral of a product of factors in ``[0, 1]``), so the outputs the head leaves out
    (``M > H`` under ``a``, ``M' > H + lowest`` under ``b``) weigh at most the unnormalised
    one-dataset tails ``sum_{M > H} m_a(M) e^(-lam M)`` and ``sum_{M' > H + lowest} m_b(M')
    e^(-lam M')``; ``H`` is chosen as for the exponential rule against these.  ``H`` also
    reaches past both forms' heads of levels (:class:`~exactdp.rules.pnf_levels.PnfForm`),
    so every output left out lies past them, on a diagonal whose class ball ``lam delta +
    ln(nu_0 / nu_0') + [-rho', rho]`` (``rho`` at the class's best counted level, which is
    above every output of that diagonal left out) encloses its log-ratio; a diagonal with
    no class past the heads is a phantom with ``rho`` at ``-H`` and ``-(H + lowest)``.  The
    level tables' enclosure, which reads every level, is not used, and a class whose sign
    against epsilon stays undecided is not split cell by cell (the audit then counts every
    cell)."""

    def __init__(self, a: Groups, b: Groups, head_of: Callable[[int], Any], first: Any):
        self._init_head(a, b, head_of, first)
        self._shape_of = lambda: None
        self._shape = None
        self.heads = None
        self._laid: Optional[tuple] = None

    def forms(self) -> Optional[tuple[Any, Any]]:
        """Both sides' forms at flint's current precision (the classes are made by
        :meth:`balls`)."""
        fa, fb = self.a.pnf_form(), self.b.pnf_form()
        return None if fa is None or fb is None else (fa, fb)

    def _form_depth(self, form: Any, mechanism: Any) -> int:
        """``M`` of the last level in ``form``'s head (0 for a head of the best level)."""
        return 0 if form.head <= 1 else -int(mechanism.table.utilities[form.head - 1])

    def _lay_out(self, head_a: int, head_b: int) -> None:
        key = (id(self._head), head_a, head_b)
        if self._laid == key:
            return
        head = self._head
        x, y = head.x, head.y
        ua = np.asarray(head.utilities_a, dtype=object)
        ub = np.asarray(head.utilities_b, dtype=object)
        self.x, self.y = x, y
        self._sizes, self._ua, self._ub = np.asarray(head.sizes, dtype=object), ua, ub
        deltas, of_cell = np.unique(np.asarray((ua[x] - ub[y]).tolist(), dtype=np.int64), return_inverse=True)
        self._all_deltas, self._delta_of = deltas, np.asarray(of_cell, dtype=np.int64).reshape(-1)
        self._classes(head_a, head_b)
        self._laid = key

    def balls(self) -> tuple[list[arb], list[arb], list[arb], Any, Any]:
        """As :meth:`PermuteAndFlipPair.balls` over the head counted as deep as this
        precision needs, each class past the heads widened by the tails, the phantoms last."""
        forms = self.forms()
        if forms is None:
            raise LookupError("a permute-and-flip side has no closed form at this precision")
        fa, fb = forms
        lam = fa.lam
        floor = max(self._form_depth(fa, self.a.mechanism), self._form_depth(fb, self.b.mechanism) - self.lowest)
        target = arb(2) ** -(ctx.prec + 8)
        one = arb(1)
        while True:
            if not self._head.complete:
                depth = self._depth_for(lam, one, one, target)
                self._count_to(None if depth is None else max(depth, floor))
            self._lay_out(fa.head, fb.head)
            rs, pa, pb = self._head_balls(fa, fb)
            if self._head.complete:
                return rs, pa, pb, fa, fb
            counted = [m.lower() for masses in (pa, pb) for g, m in enumerate(masses) if g not in self.phantoms]
            smallest = min(counted, key=lambda v: v.mid(), default=arb(0))
            needed = max(arb(2) ** -(ctx.prec + 8) * smallest, arb(2) ** -(4 * ctx.prec), key=lambda v: v.mid())
            if not needed < target:
                return rs, pa, pb, fa, fb
            target = needed

    def _head_balls(self, fa: Any, fb: Any) -> tuple[list[arb], list[arb], list[arb]]:
        lam = fa.lam
        if self._head.complete:
            tail_a = tail_b = arb(0)
        else:
            side_a, side_b = self._last_sides
            tail_a = arb(0).union(side_a.beyond(self._depth))
            tail_b = arb(0).union(side_b.beyond(self._depth + self.lowest))
        common = fa.nu0.log() - fb.nu0.log()
        one_a, one_b = 1 + arb(0).union(fa.rho), 1 + arb(0).union(fb.rho)
        pa = [decaying_sum(lam, fa.u0, *terms) * fa.nu0 * one_a + tail_a for terms in self.terms_a]
        pb = [decaying_sum(lam, fb.u0, *terms) * fb.nu0 * one_b + tail_b for terms in self.terms_b]
        extra = []
        for g in range(self.n_tail):
            spread = (-fb.rho_at(self.terms_b[g][0][0][0])).union(fa.rho_at(self.terms_a[g][0][0][0]))
            extra.append(common + spread)
        ua, ub = self._ua, self._ub
        deltas = list(self.deltas)
        for c in self.head_cells:
            i, j = int(self.x[c]), int(self.y[c])
            u, v = int(ua[i]), int(ub[j])
            n = int(self._sizes[c])
            pa.append(n * fa.probability(i, u))
            pb.append(n * fb.probability(j, v))
            delta = u - v
            deltas.append(delta)
            extra.append(fa.log_probability(i, u) - fb.log_probability(j, v) - self._shift(delta, _ZERO))
        phantom = [] if self._head.complete else [t for t in range(self.lowest, self.highest + 1)
                                                    if t not in self.deltas]
        first = len(extra)
        for t in phantom:  # a diagonal with no class past the heads: anything left out of it is deeper
            pa.append(tail_a)
            pb.append(tail_b)
            deltas.append(t)
            spread = (-fb.rho_at(-(self._depth + self.lowest))).union(fa.rho_at(-self._depth))
            extra.append(common + spread)
        self.phantoms = frozenset(range(first, first + len(phantom)))
        self.cells = list(self.cells[:first]) + [np.zeros(0, dtype=np.int64)] * len(phantom)
        self._extra, self._class_deltas = extra, deltas
        rs = [self.gap(g, 1, Fraction(0)) for g in range(len(extra))]
        return rs, pa, pb

    #: a class is not split cell by cell (the level tables' enclosure reads every level)
    cell_probability = None  # type: ignore[assignment]


def tail_difference(lam: arb, u0: Any, levels_a: Iterable[Any], levels_b: Iterable[Any],
                    rest: Optional[int] = None) -> arb:
    """An enclosure of ``sum_u (m_a(u) - m_b(u)) exp(lam (u - u0))`` over the levels after
    the first of two level lists ``[(utility, multiplicity)]`` (best first, ``lam > 0``):
    the difference of two :func:`~exactdp.rules.exponential.decaying_sum` tails, with the
    terms of equal utility and multiplicity cancelled exactly instead of subtracted as
    balls.  It stops, with the rest as the interval ``[-bound, bound]``, once the
    multiplicity still to come times the current exponential is below ``2**-(prec + 8)``
    of the sum so far.  ``levels_a``, ``levels_b`` may be iterators (read only as far as
    the sum goes) when ``rest``, the number of outputs after the two first levels
    together, is given."""
    if rest is None:
        rest = sum(m for _, m in list(levels_a)[1:]) + sum(m for _, m in list(levels_b)[1:])
    it_a, it_b = iter(levels_a), iter(levels_b)
    next(it_a, None)
    next(it_b, None)
    la, lb = next(it_a, None), next(it_b, None)
    total, cut = arb(0), arb(2) ** -(ctx.prec + 8)
    while la is not None or lb is not None:
        ua = la[0] if la is not None else None
        ub = lb[0] if lb is not None else None
        if ub is None or (ua is not None and ua > ub):
            u, diff, used = ua, la[1], la[1]
            la = next(it_a, None)
        elif ua is None or ub > ua:
            u, diff, used = ub, -lb[1], lb[1]
            lb = next(it_b, None)
        else:
            u, diff, used = ua, la[1] - lb[1], la[1] + lb[1]
            la, lb = next(it_a, None), next(it_b, None)
        rest -= used
        if not diff and total.is_zero():
            continue  # nothing to stop against yet
        e = (lam * (arb(u - u0) if type(u - u0) is int else rational_ball(u - u0))).exp()
        if diff:
            total += diff * e
        if not rest:
            break
        # checked at cancelled levels too: past the last difference the rest may be all equal
        bound = (e * rest).upper()
        if bound <= (cut * abs(total)).lower():
            return total + arb(0, 1) * bound
    return total


#: The gap difference of an output at one gap on both sides.
_ZERO = Fraction(0)


class _EnclosureShape(NamedTuple):
    """The exact part of :meth:`Pair.log_ratio_enclosure`: the signed differences of the
    level tables per gap (``a`` minus ``b``), both sides' gaps, ``b``'s number of best
    outputs and of outputs below the best, its largest gap below the best (None without
    one), the scale and its exact ``lam`` (None with a base; read once, not per cell)."""

    sizes: dict[Any, int]
    gaps_a: list[Any]
    gaps_b: list[Any]
    best_b: int
    below_b: int
    top_b: Any
    scale: Any
    lam: Optional[Fraction]


def _log1m_bounds(gap: Fraction, c: int, lam: arb) -> tuple[arb, arb]:
    """``c`` outputs of weight ``x = e^(lam gap)`` (``gap < 0``) in
    :meth:`Pair.log_ratio_enclosure`'s sums: ``(c log1p(-x), -c x)`` for ``c > 0``,
    ``(|c| x, |c| (-log1p(-x)))`` for ``c < 0``; ``log1p(-x)`` as ``-x - x^2 [0, 1]`` when
    ``x`` is too small for arb's own (``|log1p(-x) + x| <= x^2`` for ``x <= 1/2``)."""
    if not c:
        return arb(0), arb(0)
    x = (lam * rational_ball(gap)).exp()
    if abs(x).upper() < arb(2) ** -(ctx.prec + 8):
        log1m = -x - (x * x).upper() * arb(0.5, 0.5)  # -x - x^2 [0, 1]
    else:
        log1m = (-x).log1p()
    return (c * log1m, -c * x) if c > 0 else (-c * x, c * log1m)


def expm1_ball(x: arb) -> arb:
    """``e^x - 1`` keeping the relative accuracy of ``x`` when ``|x|`` is tiny.  arb's own
    ``expm1`` does for ordinary exponents, but for a number like ``e^(-2**70)`` (counts near
    ``2**70``) it returns only about 8 digits; there ``x +- x**2`` is used
    (``|e^x - 1 - x| <= x**2`` for ``|x| <= 1``), tighter than the working precision."""
    magnitude = abs(x).upper()
    if magnitude < arb(2) ** -(ctx.prec + 8):
        return x + magnitude * magnitude * arb(0, 1)
    return x.expm1()


def _int_utilities(view: Groups) -> Optional[np.ndarray]:
    """The groups' utilities (best first) as ``int64``, or as Python ints in an object array
    when one is ``2**60`` or more (counts such as ``2**70``: no int64 wraps around); None
    unless all are ints."""
    u = [g.utility for g in view.groups]
    if not all(type(v) is int for v in u):
        return None
    if max(abs(u[0]), abs(u[-1])) >= 2**60:
        return np.asarray(u, dtype=object)
    return np.asarray(u, dtype=np.int64)


def _terms(levels: np.ndarray, sizes: np.ndarray, utilities: np.ndarray) -> tuple[list, int]:
    """``([(utility, outputs)] best level first, total outputs)`` of some cells, their
    outputs added per level (exact: ``sizes`` is an object array of Python ints)."""
    order = np.argsort(levels, kind="stable")
    levels, sizes = levels[order], sizes[order]
    starts = np.flatnonzero(np.r_[True, levels[1:] != levels[:-1]])
    per_level = np.add.reduceat(sizes, starts) if len(sizes) else sizes
    return list(zip(utilities[levels[starts]].tolist(), per_level.tolist())), int(sizes.sum())
