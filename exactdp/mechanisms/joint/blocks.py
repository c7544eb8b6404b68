"""Joint's levels in independent blocks: exact multiplicities and certified weights.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Lemma 3.5, with Lemma 3.7's
counts collapsed onto integer levels; docs/definitions.md §2.1.

The number of sequences with utility ``>= -M`` is ``N(M) = prod_{r<k} (T_r(M) - r)``,
``T_r(M) = #{j : c_(j) >= c_(r) - M}`` (0-based); the levels are ``M = 0`` and every
``M`` at which some ``T_r`` jumps (a *threshold event*), ``m(-M) = N(M) - N(M_prev)``.
Contract: :class:`JointLevelSource` cuts the events into windows of ``M`` (*blocks*, never
splitting a level), each computed from ``N`` at its start alone
(:meth:`JointLevelSource.count_at_least`: ``k`` bisections) and planned only when the
table first reads it; a block's multiplicities are exact integers (exact divisions) and
its weights arb balls seeded with the exact ``N`` at the block start (relative
cancellation at most ``d + 1``).  How a block is planned and swept: docs/joint.md,
section "Levels in blocks, step by step (joint.blocks)".

>>> from exactdp.core.ranking import Ranking
>>> src = JointLevelSource(Ranking((10, 5, 1, 1)), 2)
>>> src.block_sizes(), src.block_levels(0)
([4], [Level(utility=0, multiplicity=1), Level(utility=-4, multiplicity=2), Level(utility=-5, multiplicity=3), Level(utility=-9, multiplicity=6)])
>>> src.count_at_least(4)      # sequences with utility >= -4
3
"""

from __future__ import annotations

import heapq
import math
from functools import partial, reduce
from itertools import chain, repeat
from operator import is_not, mul, neg, sub
from typing import Any, Callable, Optional

import gmpy2
from flint import arb

from . import sweep as joint_sweep
from .sweep import value_index_of_rows
from ...core.level_blocks import BlockSource
from ...core.levels import Level
from ...core.ranking import Ranking
from ...core.scale import Scale

__all__ = ["JointLevelSource", "BLOCK_EVENTS"]

#: Threshold events per block (tests lower it to put block boundaries everywhere).
BLOCK_EVENTS = 1 << 17

#: Threshold events of the first block; each next block holds twice as many, up to
#: :data:`BLOCK_EVENTS` (a sample whose running sum stops early plans little more than it reads).
FIRST_BLOCK_EVENTS = 1 << 8

#: Packed sort keys (:meth:`JointLevelSource.window_events`) are used while they stay below
#: ``2**_KEY_BITS`` (tests lower it to take the argsort path).
_KEY_BITS = 62

#: :meth:`JointLevelSource.window_events` packs each event's row and value into its sort key
#: where they fit (tests turn it off to take the gathering paths).
_PACKED_ROWS = True

#: ``exp(-lam*gap)`` is cached for gaps below this (levels of dense counts differ by 1, 2, ...).
_DIGIT_BITS = 12
_GAP_CACHE = 1 << _DIGIT_BITS
_DIGIT_MASK = _GAP_CACHE - 1


class JointLevelSource(BlockSource):
    """Blocks of Joint's levels for :class:`~exactdp.core.level_blocks.BlockLevelTable`:
    the levels of sequences of ``k`` items over the counts ranked by ``ranking`` (a
    :class:`~exactdp.core.ranking.Ranking`)."""

    #: Blocks are planned (their boundary found, their events sorted into levels) only
    #: when the table first reads them: a sample whose running sum stops inside the first
    #: block plans that block alone.
    lazy = True
    #: Certified values keep the guard bits of the exact number of levels, and ``levels()``
    #: counts them first (planning every block), as when every block was planned up front.
    length_on_demand = True

    def __init__(self, ranking: Ranking, k: int):
        self.ranking, self.k = ranking, k
        # every multiplicity is below d!/(d-k)! <= d**k
        self.level_bytes = (k * ranking.d.bit_length()) // 8 + 8
        ra = ranking.arrays
        # (the largest count is values[0]); int64 ranking arrays, else the Python path
        #: whether the events are generated in int64 (else a pure-Python merge, one block)
        self.numpy_route = ra is not None and max(abs(int(ra.values[0])), abs(int(ra.values[-1]))) < joint_sweep.NUMPY_LIMIT // 2
        # the blocks planned so far: block b covers the levels M in (his[b-1], his[b]]
        self._his: list[int] = []
        self._sizes: list[int] = []
        self._firsts: list[int] = []
        self._nbytes: list[int] = []
        self._done = 0  # threshold events with M <= his[-1]
        self._served = 0  # blocks handed to the table by next_block
        self._events: Optional[tuple[int, int, int]] = None  # (events, below, top)
        self._python_blocks: Optional[tuple[list[int], list[int], list[int]]] = None

    # -- exact N(M) --------------------------------------------------------------------
    def count_at_least(self, M: int) -> int:
        """``N(M)``: the exact number of sequences with utility ``>= -M`` (``M >= 0``)."""
        if self.numpy_route and M <= self.event_counts()[2]:
            # T_r(M) = #{j : -c_(j) <= M - c_(r)} for every row at once (M - c_(r) fits int64)
            a = self.event_arrays()
            t = _np().searchsorted(a["negsc"], M - a["sc"], side="right") - a["rows"]
            return math.prod(t.tolist())
        at, sc = self.ranking.at_least, self.ranking.sorted_counts
        product = 1
        for r in range(self.k):
            product *= at(sc[r] - M) - r
        return product

    # -- the blocks --------------------------------------------------------------------
    def event_counts(self) -> tuple[int, int, int]:
        """``(E, below, top)``: the number ``E`` of threshold events with ``M > 0`` (``k``
        bisections, no event generated), the number of row entries with ``M <= 0`` that
        ``searchsorted`` counts but are not events, and the largest ``M``."""
        if self._events is None:
            if self.numpy_route:
                a = self.event_arrays()
                nvals = len(a["vals"])
                below = int(a["own"].sum())
                events = self.k * nvals - below
                top = int(a["sc"][0]) + int(a["neg"][-1])  # the largest M: c_(1) - c_min
            else:
                qrows = value_index_of_rows(self.ranking, self.k)
                nvals = len(self.ranking.values)
                events = sum(nvals - 1 - q for q in qrows)
                top, below = self.ranking.sorted_counts[0] - self.ranking.values[-1], 0
            self._events = (events, below, top)
        return self._events

    def level_bound(self) -> int:
        """``E + 1`` (every level but ``M = 0`` holds at least one threshold event)."""
        return self.event_counts()[0] + 1

    def events_upto(self, x: int) -> int:
        """Threshold events with ``0 < M <= x``: ``k`` bisections."""
        a = self.event_arrays()
        return int(_np().searchsorted(a["neg"], x - a["sc"], side="right").sum()) - self.event_counts()[1]

    def least_level_reaching(self, target: int, lo: int, top: int) -> int:
        """The least ``M`` in ``(lo, top]`` with at least ``target`` events up to it (a
        bisection on :meth:`events_upto`, which increases with ``M``; ``top`` if none)."""
        x, y = lo + 1, top
        while x < y:
            mid = (x + y) // 2
            if self.events_upto(mid) >= target:
                y = mid
            else:
                x = mid + 1
        return x
    def _plan_next(self) -> bool:
        """Plan the next block (its last level ``his[b]``, found by bisection on the number
        of events up to ``M``, then its factors, kept within the budget); ``False`` after
        the last block.  Block ``b`` takes the next ``min(BLOCK_EVENTS,
        FIRST_BLOCK_EVENTS * 2**b)`` events: it ends at the least ``M`` with that many
        more events up to it than up to the previous end, or at the largest ``M``; the
        boundaries do not depend on the order in which blocks are asked for."""
        b = len(self._sizes)
        if not self.numpy_route:
            if b:
                return False
            Ms, nums, dens = _python_factors(self.ranking, self.k)
            self._python_blocks = (Ms, nums, dens)
            self._his = [Ms[-1] if Ms else 0]
            self._sizes, self._firsts = [len(Ms) + 1], [0]
            return True
        total, _, top = self.event_counts()
        done = self._done
        if b and done >= total:
            return False
        lo = self._his[-1] if b else 0
        target = done + min(BLOCK_EVENTS, FIRST_BLOCK_EVENTS << b)
        if total == 0:  # no event: the one level M = 0
            hi = 0
        elif target >= total:
            hi = top
        else:
            hi = self.least_level_reaching(target, lo, top)
        self._his.append(hi)
        self._done = self.events_upto(hi) if total else 0
        factors = self._compute_factors(b)
        Ms = factors[0]
        self._nbytes.append(self._factor_bytes(factors))
        keep = self.__dict__.get("_keep")
        if keep is not None:
            keep(("factors", b), self._nbytes[-1], lambda: factors)
        self._sizes.append(len(Ms) + 1 if b == 0 else len(Ms))
        self._firsts.append(0 if b == 0 else -int(Ms[0]))
        return True

    def _plan(self) -> None:
        """Plan every block (what :meth:`block_sizes` needs; a table plans them lazily)."""
        while self._plan_next():
            pass

    def next_block(self) -> Optional[tuple[int, int]]:
        """The next block's ``(number of levels, first utility)`` for the table, planned
        now if it was not already; ``None`` after the last."""
        b = self._served
        if b >= len(self._sizes) and not self._plan_next():
            return None
        self._served = b + 1
        return self._sizes[b], self._firsts[b]

    def event_arrays(self) -> dict[str, Any]:
        """The rows' threshold arrays (``neg``, ``sc`` and the per-row slices), built once."""
        arrays = self.__dict__.get("_arr")
        if arrays is None:
            np = _np()
            r = self.ranking
            ra = r.arrays
            vals = ra.values
            sc = ra.sorted_counts[: self.k]
            neg = -vals  # ascending
            qrows = np.searchsorted(neg, -sc, side="left")  # index of each row's own value
            arrays = self._arr = {
                "vals": vals,
                "neg": neg,
                "cum": ra.cumulative,
                "sc": sc,
                "negsc": ra.neg,
                "rows": np.arange(self.k, dtype=np.int64),
                "own": qrows + 1,
                "group": max(1, 62 // max(1, r.d.bit_length())),
                # no tied counts: cumulative[q] = q + 1 (window_events)
                "untied": len(vals) == r.d,
                # window_events packs r * 2**qbits + q (q < len(vals)) into rqbits bits
                "qbits": max(1, (len(vals) - 1).bit_length()),
                "rqbits": max(1, (len(vals) - 1).bit_length()) + max(1, (self.k - 1).bit_length()),
            }
        return arrays

    def attach_cache(self, keep: Callable[[tuple, int, Callable[[], Any]], Any]) -> None:
        self._keep = keep

    def _factors(self, b: int) -> tuple[Any, list[int], list[int], list[int]]:
        """Levels ``M > 0`` of block ``b`` (increasing) with the exact factor ``num/den``
        by which ``N`` changes at each: ``(Ms as given, Ms, nums, dens)``, the first as the
        table's cache keeps it (an ``int64`` array on the numpy path), the others lists."""
        if self._python_blocks is not None:
            return (self._python_blocks[0],) + self._python_blocks
        keep = self.__dict__.get("_keep")
        if keep is None or b >= len(self._nbytes):
            factors = self._compute_factors(b)
        else:
            factors = keep(("factors", b), self._nbytes[b], lambda: self._compute_factors(b))
        Ms, nums, dens = factors
        return Ms, Ms.tolist(), nums.tolist(), dens.tolist()

    def _factor_bytes(self, factors: tuple[Any, Any, Any]) -> int:
        # int64 arrays: their bytes.  Object arrays (several events in one level): a slot
        # and an int header per num and den, which together are at most as long as one
        # multiplicity
        size = 0
        for a in factors:
            size += a.nbytes + (len(a) * 40 if a.dtype == object else 0)
        if factors[1].dtype == object:
            size += len(factors[1]) * self.level_bytes
        return size

    def window_events(self, lo: int, hi: int) -> tuple[Any, Any, Any, Any]:
        """The threshold events with ``lo < M <= hi``, sorted by ``M`` (numpy route):
        ``(M, new, old, starts)``, event ``i`` moving one row factor ``T - r`` from
        ``old[i]`` to ``new[i]``, and ``starts`` the index of each level's first event.

        Row ``r``'s events are the values ``q`` in one slice (``M = c_(r) - values[q]``,
        increasing with ``q``); ``old = cumulative[q-1] - r`` (``q`` is past the row's own
        value, so ``q >= 1``) and ``new = cumulative[q] - r``; with no tied counts
        ``cumulative[q] = q + 1``, so ``old = q - r`` and ``new = old + 1``."""
        np = _np()
        a = self.event_arrays()
        neg, sc, cum, vals = a["neg"], a["sc"], a["cum"], a["vals"]
        first = np.searchsorted(neg, lo - sc, side="right")  # row r's events: q in [first, last)
        last = np.searchsorted(neg, hi - sc, side="right")
        sizes = last - first
        n = int(sizes.sum())
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty
        # event i of row r (generation order, row by row) has q = i - shift[r]
        shift = np.cumsum(sizes) - sizes - first
        qb, rqb = a["qbits"], a["rqbits"]
        span = (hi - lo - 1).bit_length()  # 0 <= M - lo - 1 < 2**span
        # within one level the order of factors does not matter (exact integer products),
        # so any order by M will do.  Packed keys sort fastest (unique keys, the default
        # unstable sort; no gather afterwards): (M - lo - 1) * 2**rqb + r * 2**qb + q when
        # they fit, else (M - lo - 1) * 2**s + event (then a gather), else an argsort
        if _PACKED_ROWS and span + rqb <= _KEY_BITS:
            rq = np.repeat((a["rows"] << qb) - shift, sizes)
            rq += np.arange(n, dtype=np.int64)
            key = np.repeat(sc - (lo + 1), sizes)  # take: about twice as fast as sc[rows]
            key -= np.take(vals, rq & ((1 << qb) - 1))
            key <<= rqb
            key |= rq
            key.sort()
            q = key & ((1 << qb) - 1)
            rows = (key >> qb) & ((1 << (rqb - qb)) - 1)
            key >>= rqb
            Mr = key
        else:
            rows = np.repeat(a["rows"], sizes)
            q = np.arange(n, dtype=np.int64) - np.repeat(shift, sizes)
            Mr = np.take(sc, rows) - (lo + 1)
            Mr -= np.take(vals, q)
            s = n.bit_length()
            if span + s <= _KEY_BITS:
                key = Mr << s
                key |= np.arange(n, dtype=np.int64)
                key.sort()
                order = key & ((1 << s) - 1)
                Mr = key >> s
            else:
                order = np.argsort(Mr)
                Mr = Mr[order]
            q, rows = np.take(q, order), np.take(rows, order)
        if a["untied"]:
            old = q - rows
            new = old + 1
        else:
            new = np.take(cum, q) - rows
            old = np.take(cum, q - 1) - rows
        starts = np.flatnonzero(np.concatenate(([True], Mr[1:] != Mr[:-1])))
        Mr += lo + 1
        return Mr, new, old, starts

    def window_events_by_row(self, lo: int, hi: int) -> tuple[Any, Any]:
        """The events with ``lo < M <= hi`` of :meth:`window_events` without tied counts,
        row by row (not sorted by ``M``): ``(M - lo - 1, old)``, with ``new = old + 1``
        (numpy route)."""
        np = _np()
        a = self.event_arrays()
        if not a["untied"]:
            raise ValueError("window_events_by_row: tied counts (use window_events)")
        neg, sc, vals = a["neg"], a["sc"], a["vals"]
        first = np.searchsorted(neg, lo - sc, side="right")
        sizes = np.searchsorted(neg, hi - sc, side="right") - first
        n = int(sizes.sum())
        # event i of row r (row by row) has q = i - shift[r], M = c_(r) - values[q], old = q - r
        shift = np.repeat(np.cumsum(sizes) - sizes - first, sizes)
        q = np.arange(n, dtype=np.int64)
        q -= shift
        Mr = np.repeat(sc - (lo + 1), sizes)
        Mr -= np.take(vals, q)
        q -= np.repeat(a["rows"], sizes)
        return Mr, q

    def _compute_factors(self, b: int) -> tuple[Any, Any, Any]:
        np = _np()
        a = self.event_arrays()
        lo = self._his[b - 1] if b else 0
        M, new, old, starts = self.window_events(lo, self._his[b])
        n = len(M)
        if n == 0:
            return M, new, old
        if len(starts) == n:  # one event per level (distinct differences): 24 bytes a level
            return M, new, old
        # Multiply up to `group` consecutive factors of one level in int64 (each is <= d,
        # so the product stays below 2**62), then the groups as Python ints.
        group = a["group"]
        lengths = np.diff(np.append(starts, n))
        within = np.arange(n) - np.repeat(starts, lengths)
        group_starts = np.flatnonzero(within % group == 0)
        seg = np.searchsorted(group_starts, starts)
        nums = np.multiply.reduceat(np.multiply.reduceat(new, group_starts).astype(object), seg)
        dens = np.multiply.reduceat(np.multiply.reduceat(old, group_starts).astype(object), seg)
        return M[starts], nums, dens

    def _plan_upto(self, b: int) -> None:
        while len(self._sizes) <= b and self._plan_next():
            pass

    def block_sizes(self) -> list[int]:
        self._plan()
        return list(self._sizes)

    def block_first_utilities(self) -> list[int]:
        self._plan()
        return list(self._firsts)

    def remaining_after(self, b: int) -> int:
        """Sequences of the later blocks: ``d!/(d-k)! - N(end of block b)`` (the weights
        ``exp(-lam*M)`` decrease with ``M``); block ``b`` is planned."""
        return math.perm(self.ranking.d, self.k) - self.count_at_least(self._his[b])

    def _start(self, b: int) -> int:
        return self._his[b - 1] if b else 0

    def block_levels(self, b: int) -> list[Level]:
        self._plan_upto(b)
        _, Ms, nums, dens = self._factors(b)
        start = gmpy2.mpz(self.count_at_least(self._start(b)))
        divexact = gmpy2.divexact  # GMP's exact division: several times Python's //
        product = start
        # comprehensions and C-level maps, not a loop of statements: the per-level Python
        # work is what bounds this at about k*d levels
        products = [product := divexact(product * num, den) for num, den in zip(nums, dens)]
        mults = map(int, map(sub, products, chain((start,), products)))
        utilities: Any = map(neg, Ms)
        if b == 0:
            utilities, mults = chain((0,), utilities), chain((int(start),), mults)
        # tuple.__new__ over the pairs builds each Level in C (Level(u, m) runs the
        # namedtuple's Python __new__, twice the cost): the same objects
        return list(map(tuple.__new__, repeat(Level), zip(utilities, mults)))

    def block_weights(self, b: int, scale: Scale) -> tuple[list[arb], list[arb]]:
        self._plan_upto(b)
        given, Ms, nums, dens = self._factors(b)
        lam = scale.lam_ball()
        start = self._start(b)
        first = arb(self.count_at_least(start))  # exact
        digits = _ExpDigits(lam)
        # the ball recurrence N <- N * num / den, one product per level, as in one loop
        product = first
        products = [product := product * num / den for num, den in zip(nums, dens)]
        # exp(-lam*M): the previous level's times exp(-lam*gap) (one ball per gap, the
        # same whenever it is computed), afresh from the digits of M at gaps of
        # _GAP_CACHE or more (far apart levels: nearly every level of heavy tails), those
        # all at once (_ExpDigits.many)
        if b == 0:
            e, gaps = arb(1), list(map(sub, Ms, chain((0,), Ms)))
        else:
            e, gaps = digits(Ms[0]), [0] + list(map(sub, Ms[1:], Ms))
        if isinstance(given, list):
            far = digits.many([M for M, gap in zip(Ms, gaps) if gap >= _GAP_CACHE])
        else:
            np = _np()
            far = digits.many(given[np.asarray(gaps) >= _GAP_CACHE])
        near = {gap: (-lam * gap).exp() for gap in set(gaps) if 0 < gap < _GAP_CACHE}
        fresh = iter(far)
        es: list[arb] = [e] if b == 0 else []
        append = es.append
        for gap in gaps:
            if gap >= _GAP_CACHE:
                e = next(fresh)
            elif gap:
                e = e * near[gap]
            append(e)
        ws = list(map(mul, map(sub, products, chain((first,), products)), es[1:] if b == 0 else es))
        return es, [first] + ws if b == 0 else ws


class _ExpDigits:
    """``exp(-lam*M)`` for ``M >= 0`` as a product over the base-``2**12`` digits of ``M``
    of ``exp(-lam * digit * 2**(12 j))``, each factor computed once (a few ball products per
    level instead of one exponential of a huge argument)."""

    __slots__ = ("lam", "tables")

    def __init__(self, lam: arb):
        self.lam = lam
        self.tables: list[dict[int, arb]] = []

    def __call__(self, M: int) -> arb:
        out = None
        j = 0
        tables = self.tables
        while M:
            digit = M & _DIGIT_MASK
            M >>= _DIGIT_BITS
            if digit:
                while len(tables) <= j:
                    tables.append({})
                f = tables[j].get(digit)
                if f is None:
                    f = tables[j][digit] = (-self.lam * (digit << (_DIGIT_BITS * j))).exp()
                out = f if out is None else out * f
            j += 1
        return arb(1) if out is None else out

    def many(self, Ms: Any) -> list[arb]:
        """``[self(M) for M in Ms]`` for positive ``Ms`` (a list, or an ``int64`` array):
        the same balls, the same factors multiplied in the same order (lowest digit first,
        zero digits skipped), with the digits split for all ``Ms`` at once and each
        product formed by ``reduce`` in C."""
        if not len(Ms):
            return []
        columns = []
        tables = self.tables
        for j in range((int(max(Ms)).bit_length() + _DIGIT_BITS - 1) // _DIGIT_BITS):
            shift = _DIGIT_BITS * j
            if isinstance(Ms, list):
                column = [(M >> shift) & _DIGIT_MASK for M in Ms]
            else:
                column = ((Ms >> shift) & _DIGIT_MASK).tolist()
            while len(tables) <= j:
                tables.append({})
            table = tables[j]
            for digit in set(column).difference(table):
                # 0 -> None: no factor (never looked up by __call__, which skips zero digits)
                table[digit] = (-self.lam * (digit << shift)).exp() if digit else None
            columns.append(list(map(table.__getitem__, column)))
        return list(map(reduce, repeat(mul), map(filter, repeat(_not_none), zip(*columns))))


#: ``_not_none(x)``: ``x is not None``.
_not_none = partial(is_not, None)


def _np() -> Any:
    import numpy

    return numpy


def _python_factors(ranking: Ranking, k: int) -> tuple[list[int], list[int], list[int]]:
    """All levels ``M > 0`` with their factors, by a k-way merge of the rows' events in
    Python ints (counts too large for ``int64``)."""
    values, cumulative, sc = ranking.values, ranking.cumulative, ranking.sorted_counts
    qrows = value_index_of_rows(ranking, k)

    def row_events(r: int):
        for q in range(qrows[r] + 1, len(values)):
            yield sc[r] - values[q], r, q

    Ms: list[int] = []
    nums: list[int] = []
    dens: list[int] = []
    for M, r, q in heapq.merge(*(row_events(r) for r in range(k))):
        if not Ms or Ms[-1] != M:
            Ms.append(M)
            nums.append(1)
            dens.append(1)
        nums[-1] *= cumulative[q] - r
        dens[-1] *= cumulative[q - 1] - r
    return Ms, nums, dens
