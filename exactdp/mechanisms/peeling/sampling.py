"""Peeling's exact samplers: k rounds per draw over one weight tree, no per-round table.

Papers: Gillenwater, Joseph, Muñoz Medina, Ribero, *A Joint Exponential Mechanism for
Differentially Private Top-k* (ICML 2022, arXiv:2201.12333), Section 4.1: CDP-Peel
(Algorithm 3) and PNF-Peel (Algorithm 2); permute-and-flip is McKenna & Sheldon,
*Permute-and-Flip* (NeurIPS 2020, arXiv:2010.12603); the exact ``Bernoulli(exp(-x))``
coin is Algorithms 1 and 2 of Canonne, Kamath, Steinke, *The Discrete Gaussian for
Differential Privacy* (NeurIPS 2020, arXiv:2004.00010).

Contract: every draw has exactly the law of the k rounds.  :class:`WeightTree` is a binary
sum tree of arb balls over the distinct counts (leaf ``a``: ``n_a e_a``), cached per
precision and covering more counts on demand (:class:`~exactdp.mechanisms.peeling.tree.PrefixTree`);
a draw applies its removals in place and restores them when it ends (:class:`DrawState`):
peak memory ``O(d)`` whatever the number of draws.  A Gumbel round is an exact tree descent
by a lazily refined uniform (a branch only when certain for its whole dyadic interval);
an exponential round is permute-and-flip run as a race (the first accepted point of a
thinned Poisson process, a point or two a round), with
:func:`_pnf_round_by_split` (Poisson thinning of the tail, permute-and-flip over the head)
as its item-by-item twin.  Every decision is certain for the infinite-precision uniforms;
floats only plan (the head, a tree's cover), and any plan gives the same law.
``samples(n)`` reads the generator exactly as ``n`` calls of ``sample()`` would.  The
descent, the race and the split, with their proofs: docs/peeling.md, section "The exact
samplers, step by step (peeling.sampling)".
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right, insort
from fractions import Fraction
from typing import Callable, Optional, Protocol, Sequence

from flint import arb, ctx

from ...core.precision import MAX_PREC, flint_workprec
from ...core.ranking import Ranking
from ...core.scale import Scale
from ...errors import PrecisionError
from .tree import PrefixTree

__all__ = ["DrawState", "bernoulli_exp", "bernoulli_power", "draw_round", "sample_many"]



class Rounds(Protocol):
    """What the samplers read of a Peeling mechanism (:class:`~exactdp.Peeling` is one):
    its ranking, scale, noise and ``k``, the multiplicity of every distinct count, the
    planning cache, and its weight trees (built, and checked adequate, by the mechanism)."""

    k: int
    ranking: Ranking
    scale: Scale
    noise: str
    _mult: tuple[int, ...]
    _plan: Optional[tuple[Sequence[float], Sequence[float]]]

    def _tree(self, need: int = 0) -> PrefixTree: ...

    def _adequate(self, tree: PrefixTree, need: int) -> bool: ...


_CHUNK = 32  # random bits per refinement of a lazy uniform (the first draw takes two chunks)
#: The cost of one tail point (a tree descent and a thinning coin) in head trials (one
#: exact coin each), for planning the split.  0 keeps the head to the top count, infinity
#: puts the whole round in the head: the law is the same whatever the split.
_POINT_COST = 5.0


class DrawState:
    """One draw's removals from the Peeling ``mech``, applied to its tree at every precision the draw
    uses and undone by :meth:`undo` (callers hold
    :data:`~exactdp.core.precision.PRECISION_LOCK` throughout, and flint's precision at
    :attr:`prec0`).  Items are *positions* in the ranking's order (count descending, ties
    by id), so the items of one count are a contiguous range of positions."""

    def __init__(self, mech: Rounds):
        self.mech = mech
        self.mult = mech._mult
        self.ends = mech.ranking.cumulative  # end position of every distinct count
        self.remaining: dict[int, int] = {}
        self.taken: dict[int, list[int]] = {}  # count -> sorted offsets taken in this draw
        self.gone: set[int] = set()  # positions taken in this draw
        self.trees: dict[int, tuple[PrefixTree, list]] = {}  # prec -> (tree, undo log)
        #: the distinct count the trees must be adequate for (Peeling._adequate): the top
        #: count of a descent from the top, the first count of a tail's descent
        self.need = 0
        self.top = 0  # first count with a remaining item (only moves down within a draw)
        self.prec0 = 64 + 2 * len(self.mult).bit_length() + 16

    def left(self, a: int) -> int:
        """Remaining items with the ``a``-th distinct count."""
        return self.remaining.get(a, self.mult[a])

    def start(self, a: int) -> int:
        """The first position of the items of the ``a``-th distinct count."""
        return self.ends[a - 1] if a else 0

    def tree(self, prec: int) -> PrefixTree:
        """The tree at ``prec`` bits with this draw's removals, adequate for :attr:`need`
        (inside ``flint_workprec(prec)``).  A tree that must cover more is rebuilt by the
        mechanism: this draw's removals are undone on the old one and applied to the new."""
        entry = self.trees.get(prec)
        if entry is not None and (entry[0].complete or self.need <= entry[0].checked_to
                                  or self.mech._adequate(entry[0], self.need)):
            return entry[0]
        if entry is not None:
            entry[0].restore(entry[1])
        t, log = self.mech._tree(self.need), []
        for a, n in self.remaining.items():
            t.set_count(a, n, log)
        self.trees[prec] = (t, log)
        return t

    def position(self, a: int, i: int) -> int:
        """The position of the ``i``-th remaining item (ids ascending) of count ``a``."""
        return self.start(a) + nth_free(self.taken.get(a, ()), i)

    def remove(self, pos: int) -> int:
        """Take the item at position ``pos`` out of this draw's remaining items; its count."""
        a = bisect_right(self.ends, pos)
        insort(self.taken.setdefault(a, []), pos - self.start(a))
        self.gone.add(pos)
        n = self.remaining.get(a, self.mult[a]) - 1
        self.remaining[a] = n
        if len(self.trees) == 1 and self.prec0 in self.trees:  # the usual case: no switch
            t, log = self.trees[self.prec0]
            t.set_count(a, n, log)
        else:
            for prec, (t, log) in self.trees.items():
                with flint_workprec(prec):
                    t.set_count(a, n, log)
        if not n and a == self.top:
            last = len(self.mult) - 1
            while self.top < last and not self.left(self.top):
                self.top += 1
        return a

    def undo(self) -> None:
        """Restore every touched tree to its very balls before the draw."""
        for t, log in self.trees.values():
            t.restore(log)
        self.remaining.clear()
        self.taken.clear()
        self.gone.clear()
        self.trees.clear()
        self.top = 0
        self.need = 0


def nth_free(taken: Sequence[int], r: int) -> int:
    """The ``r``-th (0-based) offset not in the sorted ``taken``: the least fixed point of
    ``pos = r + #(taken <= pos)`` (not itself taken, or ``pos - 1`` would be one), reached
    from ``pos = r`` by a few bisections instead of a walk over ``taken`` (up to ``k`` offsets
    at every one of a draw's ``k`` rounds)."""
    pos = r
    while True:
        nxt = r + bisect_right(taken, pos)
        if nxt == pos:
            return pos
        pos = nxt


# -- lazily refined uniforms -------------------------------------------------------------
def _refine(u: int, nbits: int, gen: random.Random) -> tuple[int, int]:
    return (u << _CHUNK) | gen.getrandbits(_CHUNK), nbits + _CHUNK


def descend(state: DrawState, first: int, gen: random.Random) -> int:
    """Index ``a >= first`` of a distinct count with probability ``n_a e_a / sum_{b >= first}
    n_b e_b`` (current multiplicities), decided exactly by a tree walk (docs/peeling.md,
    "The exact samplers, step by step")."""
    n_levels = len(state.mult)
    if first == 0 and n_levels == 1:
        return 0  # as choose_index: one count, no randomness
    prec = state.prec0
    u, nbits = gen.getrandbits(2 * _CHUNK), 2 * _CHUNK
    start = state.top if first == 0 else first
    state.need = start
    while prec <= MAX_PREC:
        if prec == ctx.prec:  # the usual case: no context switch
            tree = state.tree(prec)
            a = tree.locate_from_top(start, u, nbits) if first == 0 else tree.locate(first, u, nbits)
        else:
            with flint_workprec(prec):
                tree = state.tree(prec)
                a = tree.locate_from_top(start, u, nbits) if first == 0 else tree.locate(first, u, nbits)
        if not tree.complete and (a is None or a == tree.cover):
            # certainly among the counts the tree does not cover, or undecided on a tree
            # that does not cover them all: cover more (at least twice as many), same bits
            state.need = tree.cover
            continue
        if a is not None:
            state.need = start
            return a
        u, nbits = _refine(u, nbits, gen)
        # the balls hold about prec - log2(#counts) correct bits: keep them ahead of U's bits
        prec = max(prec, nbits + 2 * n_levels.bit_length() + 32)
    raise PrecisionError(None, None, f"sampler could not separate a boundary within {MAX_PREC} bits")


def lazy_coin(prob: Callable[[int], arb], gen: random.Random, prec: int) -> bool:
    """True with probability exactly ``prob``: a lazy uniform ``U`` against the enclosure
    ``prob(prec)`` (computed inside ``flint_workprec(prec)``), refined until certain."""
    u, nbits = gen.getrandbits(2 * _CHUNK), 2 * _CHUNK
    while prec <= MAX_PREC:
        with flint_workprec(prec):
            p = prob(prec)
            scale = arb(2) ** (-nbits)
            if arb(u + 1) * scale <= p:
                return True
            if arb(u) * scale >= p:
                return False
            if not p.rad() * 4 < scale:
                prec *= 2
        u, nbits = _refine(u, nbits, gen)
        prec = max(prec, nbits + 32)
    raise PrecisionError(None, None, f"sampler could not decide a coin within {MAX_PREC} bits")


def poisson(mean: Callable[[int], arb], gen: random.Random, prec: int) -> int:
    """A Poisson count of mean ``mean(prec)`` (an enclosure, computed inside
    ``flint_workprec(prec)``), by the inverse CDF with a lazily refined uniform."""
    u, nbits = gen.getrandbits(2 * _CHUNK), 2 * _CHUNK
    while prec <= MAX_PREC:
        with flint_workprec(prec):
            lam = mean(prec)
            scale = arb(2) ** (-nbits)
            lo, hi = arb(u) * scale, arb(u + 1) * scale
            term = (-lam).exp()
            cdf = term
            i = 0
            while True:
                if hi <= cdf:
                    return i
                if not lo >= cdf:
                    break
                i += 1
                term = term * lam / i
                cdf = cdf + term
            if not cdf.rad() * 4 < scale:
                prec *= 2
        u, nbits = _refine(u, nbits, gen)
        prec = max(prec, nbits + 32)
    raise PrecisionError(None, None, f"sampler could not decide a Poisson count within {MAX_PREC} bits")


# -- exact coins from integer randomness -------------------------------------------------
def _bernoulli_exp_unit(num: int, den: int, gen: random.Random) -> bool:
    """``Bernoulli(exp(-num/den))`` for ``0 <= num/den <= 1`` (Canonne, Kamath, Steinke
    2020, Algorithm 1): ``K`` grows while ``Bernoulli(x/K)`` coins come up heads; heads
    iff the final ``K`` is odd."""
    k = 1
    while gen.randrange(den * k) < num:
        k += 1
    return k % 2 == 1


def bernoulli_exp(x: Fraction, gen: random.Random) -> bool:
    """True with probability exactly ``exp(-x)``, ``x >= 0`` rational (Canonne, Kamath,
    Steinke 2020, Algorithm 2: ``floor(x)`` coins of ``exp(-1)``, stopping at the first
    tails, then one of ``exp(-(x - floor(x)))``).  Expected cost ``O(1)`` whatever ``x``.
    ``gen``: the :class:`random.Random` read (integer randomness only)."""
    return _bernoulli_exp_ratio(x.numerator, x.denominator, gen)


def _bernoulli_exp_ratio(num: int, den: int, gen: random.Random) -> bool:
    """:func:`bernoulli_exp` of ``num/den`` (integers: no Fraction on the hot path)."""
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_unit(1, 1, gen):
            return False
    return _bernoulli_exp_unit(rest, den, gen)


def bernoulli_power(base: Fraction, m: int, gen: random.Random) -> bool:
    """True with probability exactly ``base**m`` (``0 < base < 1`` rational, ``m >= 0``):
    independent exact rational coins ``base**t`` over chunks of ``t`` factors (about 64
    bits of denominator each), stopping at the first tails.
    ``gen``: the :class:`random.Random` read (integer randomness only)."""
    num, den = base.numerator, base.denominator
    step = max(1, 64 // den.bit_length())
    while m > 0:
        t = min(step, m)
        if gen.randrange(den**t) >= num**t:
            return False
        m -= t
    return True


# -- one round ---------------------------------------------------------------------------
def draw_round(state: DrawState, gen: random.Random) -> int:
    """The position (in the ranking's order) of the item the next round picks, with the law
    of the mechanism's per-round rule, given the draw so far, ``state``.
    ``gen``: the :class:`random.Random` read (integer randomness only)."""
    if state.mech.noise == "gumbel":
        a = descend(state, 0, gen)
        return state.position(a, gen.randrange(state.left(a)))
    return _pnf_round(state, gen)


# -- permute-and-flip as a race (the sampler) -------------------------------------------
def _pnf_round(state: DrawState, gen: random.Random) -> int:
    """Permute-and-flip over the remaining items as a race (docs/peeling.md, "The exact
    samplers, step by step"): points of a
    Poisson process of rate ``W/(1 - t)`` on ``[0, 1)``, each marked with a count ``a``
    drawn with probability ``n_a p_a / W`` (:func:`descend` from the top), accepted with
    probability ``(1 - t)/(1 - p_a t)``; the first accepted point's count, then a uniform
    remaining item of it.  The position picked."""
    top = state.top
    times: list[list[int]] = []  # the lazy uniforms V_1, V_2, ... of the points so far
    while True:
        a = descend(state, 0, gen)
        if a == top:  # p = 1: accepted whatever the time
            return state.position(a, gen.randrange(state.left(a)))
        times.append([gen.getrandbits(2 * _CHUNK), 2 * _CHUNK])
        if _race_accept(state, a, times, gen):
            return state.position(a, gen.randrange(state.left(a)))


def _race_accept(state: DrawState, a: int, times: list[list[int]], gen: random.Random) -> bool:
    """The thinning coin of a point marked ``a`` (not the top count) at time
    ``t = 1 - (V_1 ... V_i)**(1/W)`` (``times``: the lazy uniforms ``V_j``): True with
    probability ``(1 - t)/(1 - p_a t) = 1/(1 + (1 - p_a) expm1(s))``, ``s = -ln(V_1 ... V_i)/W``,
    decided by a lazy uniform against an enclosure of it over the dyadic intervals of
    every ``V_j`` (ball arithmetic); more bits of all of them, and more precision, until
    certain.  ``times`` is refined in place (later points read the same ``V_j``)."""
    y, ny = gen.getrandbits(2 * _CHUNK), 2 * _CHUNK
    prec = state.prec0
    while prec <= MAX_PREC:
        if prec == ctx.prec:  # the usual case: no context switch
            heads = _race_decide(state, a, times, y, ny, prec)
        else:
            with flint_workprec(prec):
                heads = _race_decide(state, a, times, y, ny, prec)
        if isinstance(heads, bool):
            return heads
        if heads is None:  # the tree covers more now: the same bits again
            continue
        prec = heads
        y, ny = _refine(y, ny, gen)
        for v in times:
            v[0], v[1] = _refine(v[0], v[1], gen)
        bits = max([ny] + [nbits for _, nbits in times])
        prec = max(prec, bits + 2 * len(state.mult).bit_length() + 32)
    raise PrecisionError(None, None, f"sampler could not decide a coin within {MAX_PREC} bits")


def _race_decide(state: DrawState, a: int, times: list[list[int]], y: int, ny: int, prec: int) -> bool | int | None:
    """One try of :func:`_race_accept` at flint's precision ``prec``: the coin's value when
    the uniform's interval ``[y, y + 1] / 2**ny`` is certainly below (True) or above
    (False) the enclosure of the acceptance; else, when the enclosure is the obstacle on
    a tree that does not cover every count, None after covering more (at least twice as
    many counts, as :func:`descend` does: ``W`` holds the tail's enclosure); else the
    precision for the next try (doubled when the enclosure is the obstacle)."""
    top = state.top
    tree = state.tree(prec)
    if a >= tree.cover:  # a tree at another precision may not reach count a yet
        state.need = a
        tree = state.tree(prec)
        state.need = top
    if not all(u for u, _ in times):
        return prec  # a V_j in [0, 2**-nbits): ln V_j unbounded below, more bits
    w_top = tree.weights[top]
    rate = tree.suffix(top) / w_top  # W = sum_b n_b p_b, an enclosure
    ln2 = arb.const_log2()
    ln_v = arb(0)
    for u, nbits in times:  # ln V_j in [ln u, ln(u + 1)] - nbits ln 2
        ln_v += arb(u).log().union(arb(u + 1).log()) - nbits * ln2
    acc = 1 / (1 + (1 - tree.weights[a] / w_top) * (-ln_v / rate).expm1())
    scale = arb(2) ** (-ny)
    if arb(y + 1) * scale <= acc:
        return True
    if arb(y) * scale >= acc:
        return False
    if acc.rad() * 4 < scale:
        return prec
    if not tree.complete:
        state.need = tree.cover
        state.tree(prec)
        state.need = top
        return None
    return 2 * prec


def plan_logs(mech: Rounds) -> tuple[Sequence[float], Sequence[float]]:
    """Planning floats, once per mechanism: ``ln e_a`` and ``ln sum_{b >= a} n_b e_b`` of
    every distinct count (clamped; never used in a decision, only to split the rounds into
    head and tail)."""
    values, mult = mech.ranking.values, mech._mult
    if mech.scale.lam is not None:
        lam = mech.scale.lam
        try:
            rate = lam.numerator / lam.denominator
        except OverflowError:
            rate = math.inf
    else:
        b = mech.scale.base
        rate = float_ln(b.denominator) - float_ln(b.numerator)
    if len(values) >= 2048 and values[0] - values[-1] < 2**62:
        return _plan_logs_numpy(values, mult, rate)
    logw = []
    for v in values:
        gap = values[0] - v
        # clamped at -1e300, not -inf: differences of two clamped logs stay numbers (0)
        logw.append(-min(rate * min(gap, 10**300), 1e300) if gap else 0.0)
    logs = [-math.inf] * (len(values) + 1)
    for a in range(len(values) - 1, -1, -1):
        x, y = math.log(mult[a]) + logw[a], logs[a + 1]
        hi, lo = max(x, y), min(x, y)
        logs[a] = hi if lo == -math.inf else hi + math.log1p(math.exp(lo - hi))
    return logw, logs


def _plan_logs_numpy(values: Sequence[int], mult: Sequence[int], rate: float) -> tuple[Sequence[float], Sequence[float]]:
    """:func:`plan_logs` in numpy (gaps below ``2**62``: exact in int64, each rounded once
    to float64 as Python rounds an int): the same formulas, ``logaddexp`` for the running
    ``hi + log1p(exp(lo - hi))``; planning floats only."""
    import numpy as np

    v = np.array(values, dtype=np.int64)
    gaps = v[0] - v
    with np.errstate(invalid="ignore", over="ignore"):
        logw = np.where(gaps == 0, 0.0, -np.minimum(rate * gaps.astype(np.float64), 1e300))
    x = np.log(np.array(mult, dtype=np.float64)) + logw
    logs = np.append(np.logaddexp.accumulate(x[::-1])[::-1], -math.inf)
    return logw, logs  # read a few entries a round: no list of 166,000 floats is built


def float_ln(n: int) -> float:
    """``ln n`` of a positive integer of any size (planning only)."""
    shift = max(0, n.bit_length() - 1000)
    return math.log(n >> shift) + shift * math.log(2)


def _plan_head(state: DrawState) -> int:
    """The first tail count ``h``: the head is the counts ``top..h-1``.  Planning floats only
    (any split has the same law): among ``h = top+1, top+2, top+4, ..., #counts`` the one
    of least estimated cost ``#head items / sum_head p + _POINT_COST * g * sum_tail p``
    (expected trials plus tail points), ignoring this draw's removals."""
    mech = state.mech
    if mech._plan is None:
        mech._plan = plan_logs(mech)
    logw, logs = mech._plan
    n_levels = len(state.mult)
    top = state.top
    lt = logw[top]
    first = state.start(top)
    head_mass = math.exp(min(logs[top] - lt, 700.0))
    best, best_cost = n_levels, math.inf
    step = 1
    h = top + 1
    while True:
        h = min(h, n_levels)
        tail = math.exp(min(logs[h] - lt, 700.0)) if h < n_levels else 0.0
        trials = (state.start(h) - first) / max(1.0, head_mass - tail)
        if tail > 0.0:
            p = math.exp(logw[h] - lt)
            g = -math.log1p(-p) / p if 0.0 < p < 1.0 else (1.0 if p == 0.0 else math.inf)
            trials += _POINT_COST * g * tail
        if trials < best_cost:
            best, best_cost = h, trials
        if h == n_levels:
            return best
        h = top + 1 + step
        step *= 2


def _pnf_round_by_split(state: DrawState, gen: random.Random) -> int:
    """Permute-and-flip over the remaining items, split into head and tail (module
    docstring; the race's twin, kept for the tests): the position picked.
    The head's items are the positions ``start(top)..start(h)-1``; a uniformly random
    not-yet-visited one of them or of the tail's members of ``A`` is drawn by rejection
    (positions taken earlier in the draw or visited in this round are drawn again)."""
    h = _plan_head(state)
    tail = _tail_members(state, h, gen) if h < len(state.mult) else []
    mech = state.mech
    values = mech.ranking.values
    v_top = values[state.top]
    lo = state.start(state.top)
    span = state.start(h) - lo
    visited: set[int] = set()
    gone = state.gone
    lam = mech.scale.lam
    while True:
        r = gen.randrange(len(tail) + span)
        if r < len(tail):
            return state.position(*tail[r])
        pos = lo + r - len(tail)
        if pos in gone or pos in visited:
            continue
        gap = v_top - values[bisect_right(state.ends, pos)]
        if not gap:
            return pos  # p = 1
        if lam is not None:
            heads = _bernoulli_exp_ratio(lam.numerator * gap, lam.denominator, gen)
        else:
            heads = bernoulli_power(mech.scale.base, gap, gen)
        if heads:
            return pos
        visited.add(pos)


def _tail_members(state: DrawState, first: int, gen: random.Random) -> list[tuple[int, int]]:
    """The tail's members of ``A`` (counts ``first..``) as ``(a, i)`` pairs, distinct, by
    Poisson thinning (docs/peeling.md, "The exact samplers, step by step")."""
    top = state.top
    state.need = first  # covered down to the tail's first count, its tail enclosure below e_first

    per_prec: dict[int, tuple[arb, arb]] = {}  # prec -> (w_top, g(q)), once per round

    def fixed(prec: int) -> tuple[arb, arb]:
        if prec not in per_prec:
            w = state.tree(prec).weights
            q = w[first] / w[top]  # the largest p in the tail (q < 1)
            per_prec[prec] = (w[top], -(-q).log1p() / q)  # g = -ln(1 - q)/q
        return per_prec[prec]

    def mean(prec: int) -> arb:
        w_top, g = fixed(prec)
        return g * state.tree(prec).suffix(first) / w_top

    points = poisson(mean, gen, state.prec0)
    out: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for _ in range(points):
        a = descend(state, first, gen)
        i = gen.randrange(state.left(a))

        def keep(prec: int, a: int = a) -> arb:
            w_top, g = fixed(prec)
            tree = state.tree(prec)
            if a >= tree.cover:  # a tree at another precision may not reach count a yet
                state.need = a
                tree = state.tree(prec)
                state.need = first
            p = tree.weights[a] / w_top
            return -(-p).log1p() / (g * p)  # mu_a / (g p_a)

        if lazy_coin(keep, gen, state.prec0) and (a, i) not in seen:
            seen.add((a, i))
            out.append((a, i))
    return out


def sample_many(mech: Rounds, n: int, gen: random.Random) -> list[tuple[int, ...]]:
    """``n`` draws of ``k`` rounds each from the Peeling ``mech``, under one lock section;
    every draw's removals are undone at its end.
    ``gen``: the :class:`random.Random` read (integer randomness only)."""
    out = []
    order = mech.ranking.order
    state = DrawState(mech)
    with flint_workprec(state.prec0):
        for _ in range(n):
            seq = []
            try:
                for _ in range(mech.k):
                    pos = draw_round(state, gen)
                    state.remove(pos)
                    seq.append(order[pos])
            finally:
                state.undo()
            out.append(tuple(seq))
    return out
