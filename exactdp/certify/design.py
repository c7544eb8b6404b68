"""The sampler test's bins for ``n`` draws, and what they can see.

The bins are chosen from ``n`` and the exact probabilities only, never from the draws.

The test has two stages (see :func:`exactdp.certify.goodness_of_fit`): the levels of a
mechanism (its probability groups: utility levels, or ``CanonicalGamma1``'s classes),
consecutive ones pooled until each bin expects :data:`MIN_EXPECTED` draws (rare levels only
with each other: what is left of them is the rare tail, tested exactly by
:mod:`~exactdp.certify.tail`); then, inside
each level, the uniformity of its outputs, one bin per output or per run of consecutive
outputs.  :class:`BinPlan` summarises what was pooled or left untested, and
``Design`` re-chooses the bins for any ``n`` (to search the ``n`` a power needs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import mpmath

from .._oracle.groups import Groups
from ..core.results import NoTruthValue
from ..errors import InvalidParameterError

if TYPE_CHECKING:
    from ..core.levels import Level

__all__ = ["Bin", "BinPlan", "DEFAULT_ALPHA", "DEFAULT_DELTA", "DEFAULT_MIN_POWER", "DEFAULT_MAX_N",
           "DEFAULT_MAX_ENUMERATE", "MIN_EXPECTED"]

#: Significance level of the sampler test unless told otherwise.
DEFAULT_ALPHA = 1e-6
#: Smallest deviation (total variation distance, see :func:`exactdp.certify.sensitivity`)
#: a sampler test must be able to detect before it may say PASS.
DEFAULT_DELTA = 0.05
#: Power the test must have against that deviation before it may say PASS.
DEFAULT_MIN_POWER = 0.99
#: :func:`exactdp.certify.sensitivity` and :func:`exactdp.certify.samples_needed` search
#: ``n`` up to this many draws.
DEFAULT_MAX_N = 10**9
#: Enumerating outputs (within-level bins, callables, power) is refused past this.
DEFAULT_MAX_ENUMERATE = 1_000_000
#: Pool bins until each expects at least this many draws (the usual chi-square rule).
MIN_EXPECTED = 5


@dataclass(frozen=True)
class Bin(NoTruthValue):
    """One bin of the test: ``stage`` ``"level"`` (a run of consecutive levels) or
    ``"within"`` (outputs of one level); ``label`` says which; ``observed`` draws,
    ``expected`` draws (exact expectation converted to float) and the bin's
    ``contribution`` ``(observed - expected)**2 / expected`` to the statistic."""

    stage: str
    label: str
    observed: int
    expected: float
    contribution: float

    _truth_hint = ".observed, .expected or .contribution"


@dataclass(frozen=True)
class LevelPlan:
    """How the within-level test treats level ``a``: ``"outputs"`` (a bin per output),
    ``"groups"`` of ``size`` consecutive outputs in enumeration order (the last group takes
    the remainder), or ``"skip"`` with a reason."""

    mode: str
    size: int = 0
    groups: int = 0
    reason: str = ""


@dataclass(frozen=True)
class Plan:
    """The bins of one ``n``: the level bins, the within-level plan per level, whether the
    outputs must be listed, the rare tail and its share of ``alpha``."""

    level_bins: list  # list of lists of level indices
    within: dict  # level -> LevelPlan
    needs_enumeration: bool
    rare: tuple = ()  # the rare tail's levels, tested exactly (empty: no tail)
    tail_share: float = 0.0  # the part of alpha the tail test uses (0 without a tail)


def _pool_levels(expected: Sequence[float], min_expected: float) -> tuple[list[list[int]], list[int]]:
    """Bins of levels for the chi-square, and the rare tail: consecutive levels (best
    first) pooled until each bin expects ``min_expected`` draws, but a run of rare levels
    is never pooled with a level that expects ``min_expected`` draws by itself (mass moved
    from that heavy level onto the rare ones would hide in the bin).  Such runs, and the
    short run at the end, are pooled with each other: one more bin when together they
    expect ``min_expected`` draws, else the rare tail, tested exactly
    (:mod:`~exactdp.certify.tail`).  When no bin expects ``min_expected`` draws, all levels
    share one bin (0 degrees of freedom) and there is no tail."""
    bins: list[list[int]] = []
    rare: list[int] = []
    cur: list[int] = []
    acc = 0.0
    for a, e in enumerate(expected):
        if cur and e >= min_expected:
            rare.extend(cur)
            cur, acc = [], 0.0
        cur.append(a)
        acc += e
        if acc >= min_expected:
            bins.append(cur)
            cur, acc = [], 0.0
    rare.extend(cur)
    if not bins:
        return [list(range(len(expected)))], []
    if rare and math.fsum(expected[a] for a in rare) >= min_expected:
        bins.append(rare)
        bins.sort(key=lambda g: g[0])
        rare = []
    return bins, rare


def _make_plan(levels: Sequence[Level], level_probs: Sequence[mpmath.mpf], n: int, min_expected: float,
                within: bool, support: int, max_enumerate: int) -> Plan:
    """The bins for ``n`` draws of ``levels`` of probabilities ``level_probs`` (the rules
    of :func:`exactdp.certify.goodness_of_fit`; ``support``: the number of outputs)."""
    expected = [float(n * p) for p in level_probs]
    plan_within: dict[int, LevelPlan] = {}
    needs = False
    if within:
        for a, (lv, e) in enumerate(zip(levels, expected)):
            m = lv.multiplicity
            if m < 2:
                continue
            if e >= min_expected * m:
                plan_within[a] = LevelPlan("outputs")
                continue
            size = max(1, math.ceil(min_expected * m / e)) if e > 0 else m
            groups = m // size
            if groups < 2:
                plan_within[a] = LevelPlan("skip", reason=f"{m} outputs, {e:.3g} draws expected: too few to test")
                continue
            if support > max_enumerate:
                plan_within[a] = LevelPlan("skip", reason=f"needs the {support} outputs enumerated (max_enumerate={max_enumerate})")
                continue
            plan_within[a] = LevelPlan("groups", size=size, groups=groups)
            needs = True
    bins, rare = _pool_levels(expected, min_expected)
    share = 0.0
    if rare:  # Bonferroni: half of alpha each, unless the chi-square stages cannot reject
        chi_df = len(bins) - 1 + sum(lp.groups - 1 if lp.mode == "groups" else levels[a].multiplicity - 1
                                     for a, lp in plan_within.items() if lp.mode != "skip")
        share = 0.5 if chi_df > 0 else 1.0
    return Plan(bins, plan_within, needs, tuple(rare), share)


def group_of(plan: LevelPlan, position: int) -> int:
    """The group of the output at ``position`` (in enumeration order) of a grouped level."""
    return min(position // plan.size, plan.groups - 1)


def group_size(plan: LevelPlan, m: int, g: int) -> int:
    """The number of outputs in group ``g`` of a grouped level of ``m`` outputs."""
    return plan.size if g < plan.groups - 1 else m - plan.size * (plan.groups - 1)


# -------------------------------------------------------------------------------------
# What the test can see with n draws, and its power against the least favourable
# total-variation deviation


def _spread(probs: Sequence[float]) -> float:
    """A bound on ``max_S P(S) (1 - P(S))`` over unions ``S`` of bins ``probs``: ``p (1 - p)`` when
    one holds ``p >= 1/2`` (the maximum), else ``1/4`` (attained when a union holds half)."""
    top = max(probs)
    return top * (1.0 - top) if top >= 0.5 else 0.25


@dataclass(frozen=True)
class BinPlan(NoTruthValue):
    """What the sampler test looks at with ``n`` draws (chosen from ``n`` and the exact
    probabilities only, exactly as :func:`goodness_of_fit` chooses its bins).

    ``df``: degrees of freedom of the chi-square stages; ``levels`` utility levels, of
    which all but the ``tail_levels`` of the rare tail are pooled into ``level_bins`` bins
    (``pooled_levels`` of them share a bin with another level: mass moved between those
    is invisible); ``within_outputs`` outputs of levels whose uniformity is tested, in
    ``within_bins`` bins (``within_grouped`` of those outputs share a bin with other
    outputs); ``untested_outputs`` outputs of levels of two or more outputs whose
    uniformity is not tested at all (too few draws expected, no draw observed, the support
    too large to list, or ``within=False``); ``spread``: the largest ``V`` of
    :func:`sensitivity` (0 when ``df = 0``); ``blind``: the total variation of the largest
    deviation the bins cannot see (mass moved between outputs that share a bin: between
    the levels of a pooled bin or of the rare tail, within an untested level, within a
    group of outputs), which no number of draws with these bins can detect.

    The rare tail (``tail_levels > 0``): levels expecting fewer than ``min_expected``
    draws that could not be pooled with each other into a bin, tested together by the
    exact binomial test of :mod:`~exactdp.certify.tail`; ``tail_probability`` is their
    probability ``P(R)``, ``tail_share`` the part of ``alpha`` that test uses (the
    chi-square stages use the rest), and ``spread`` and ``chi_blind`` describe the
    chi-square stages on the draws outside the tail (probabilities conditioned on
    leaving it).  ``tail_exact``: ``P(R)`` as the certified ``mpf`` the exact test uses
    (``None`` without a tail).
    """

    n: int
    df: int
    levels: int
    level_bins: int
    pooled_levels: int
    within_outputs: int
    within_bins: int
    within_grouped: int
    untested_outputs: int
    spread: float
    blind: float = 0.0
    tail_levels: int = 0
    tail_probability: float = 0.0
    tail_share: float = 0.0
    chi_blind: float = 0.0
    tail_exact: Optional[mpmath.mpf] = field(default=None, repr=False, compare=False)

    _truth_hint = ".df (0: the test cannot reject) or .blind"

    def describe(self) -> str:
        """``"levels: 5 in 4 bins (2 pooled); within levels: 16 outputs in 12 bins (6
        grouped), 4 untested"``; with a rare tail, ``"levels: 3 in 2 bins (0 pooled) and 1
        in the rare tail (exact binomial test, 0.109 draws expected); ..."``."""
        tail = ""
        if self.tail_levels:
            tail = (f" and {self.tail_levels} in the rare tail (exact binomial test, "
                    f"{self.n * self.tail_probability:.3g} draws expected)")
        return (f"levels: {self.levels} in {self.level_bins} bin{'s' if self.level_bins != 1 else ''} "
                f"({self.pooled_levels} pooled){tail}; within levels: {self.within_outputs} outputs in "
                f"{self.within_bins} bins ({self.within_grouped} grouped), {self.untested_outputs} untested"
                + (f"; invisible to these bins: deviations of TV up to {self.blind:.3g}" if self.blind > 0 else ""))


def bin_plan(levels: Sequence[Level], probs: Sequence[mpmath.mpf], plan: Plan, n: int,
             level_obs: Optional[Sequence[int]] = None) -> BinPlan:
    """The :class:`BinPlan` of ``plan``; with ``level_obs`` (observed draws per level),
    levels without a draw have no within-level test, as in :func:`goodness_of_fit`."""
    p_tail = mpmath.fsum(probs[a] for a in plan.rare) if plan.rare else mpmath.mpf(0)
    keep = 1.0 - float(p_tail)  # the chi-square stages see draws outside the tail: P(. | not R)
    p_bins = [float(mpmath.fsum(probs[a] for a in g)) for g in plan.level_bins]
    df = len(plan.level_bins) - 1
    spreads = [_spread([p / keep for p in p_bins])] if df > 0 else []
    pooled = sum(len(g) for g in plan.level_bins if len(g) > 1)
    tested = wbins = grouped = untested = 0
    hidden = [0.0] * len(levels)  # per level: TV of the largest deviation inside it no bin sees
    for a, lv in enumerate(levels):
        m = lv.multiplicity
        if m < 2:
            continue
        lp = plan.within.get(a)
        if lp is None or lp.mode == "skip" or (level_obs is not None and level_obs[a] == 0):
            untested += m
            hidden[a] = float(probs[a]) * (1 - 1 / m)  # all of the level's mass onto one output
            continue
        if lp.mode == "outputs":
            slots, cond = m, 0.25  # m >= 2 equal bins: some union holds half, or m = 2
        else:
            slots = lp.groups
            cond = _spread([lp.size / m, group_size(lp, m, lp.groups - 1) / m])
            grouped += m
            hidden[a] = float(probs[a]) * (1 - slots / m)  # each group's mass onto one of its outputs
        tested += m
        wbins += slots
        df += slots - 1
        spreads.append(float(probs[a]) / keep * cond)

    # A bin's deviations add up over disjoint bins.  Inside a pooled bin, moving its whole
    # mass onto its lightest level (uniformly there) is invisible too.
    def inside(group, p):
        return max(sum(hidden[a] for a in group), p - min(float(probs[a]) for a in group) if len(group) > 1 else 0.0)

    chi_blind = sum(inside(g, p) for g, p in zip(plan.level_bins, p_bins))
    blind = chi_blind + (inside(plan.rare, float(p_tail)) if plan.rare else 0.0)
    return BinPlan(n, df, len(levels), len(plan.level_bins), pooled, tested, wbins, grouped, untested,
                   max(spreads) if df > 0 and spreads else 0.0, blind, len(plan.rare), float(p_tail),
                   plan.tail_share, chi_blind / keep, p_tail if plan.rare else None)


class Design:
    """The test's bins as a function of ``n`` for one mechanism (exact level
    probabilities certified once)."""

    def __init__(self, lv: Groups, min_expected: float, within: bool, max_enumerate: int):
        try:
            good = not isinstance(min_expected, bool) and 0 < float(min_expected) < math.inf
        except (TypeError, ValueError):
            good = False
        if not good:  # bins expecting ~0 draws make Pearson's p-value meaningless
            raise InvalidParameterError("min_expected", min_expected, "must be a positive finite number "
                                        f"(draws each bin expects at least; default {MIN_EXPECTED})")
        min_expected = float(min_expected)
        self.levels = lv.groups
        self.probs = lv.group_probabilities()
        self.support = lv.support_size
        self.min_expected, self.within, self.max_enumerate = min_expected, within, max_enumerate

    def plan(self, n: int) -> Plan:
        return _make_plan(self.levels, self.probs, n, self.min_expected, self.within, self.support, self.max_enumerate)

    def shape(self, n: int) -> BinPlan:
        return bin_plan(self.levels, self.probs, self.plan(n), n)


def search_n(ok: Callable[[int], bool], max_n: int) -> Optional[int]:
    """The smallest ``n`` with ``ok(n)`` (doubling, then bisection to within 1%; ``ok``
    increasing in ``n``), or ``None`` past ``max_n``."""
    hi = 1
    while not ok(hi):
        if hi >= max_n:
            return None
        hi = min(2 * hi, max_n)
    lo = hi // 2
    if lo < 1:
        return hi
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def check_design_args(alpha: float, delta: float, min_power: float) -> tuple[float, float, float]:
    """``(alpha, delta, min_power)`` as floats, or the error naming the one out of range."""
    for name, value, ok, rule in (("alpha", alpha, lambda x: 0 < x < 1, "0 < alpha < 1"),
                                  ("delta", delta, lambda x: 0 < x <= 1, "0 < delta <= 1 (a total variation distance)"),
                                  ("min_power", min_power, lambda x: 0 < x < 1, "0 < min_power < 1")):
        try:
            good = not isinstance(value, bool) and ok(float(value))
        except (TypeError, ValueError):
            good = False
        if not good:
            raise InvalidParameterError(name, value, f"must satisfy {rule}")
    return float(alpha), float(delta), float(min_power)


#: Results pickled before the bins' helpers were named for the package keep loading.
_Design = Design
