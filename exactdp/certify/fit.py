"""Goodness of fit of a sampler: the chi-square test of its draws and its verdict.

Pearson's test against the exact distribution (by level, then uniformity within each
level) and its verdict PASS, FAIL or INCONCLUSIVE.  What the test can detect with ``n``
draws, :func:`sensitivity`, is in :mod:`~exactdp.certify.least_favourable` (importable
from here too).

A test that could not have failed (0 degrees of freedom) or was too weak to trust (power
below ``min_power`` against the least favourable deviation of total variation ``delta``)
never says PASS; :meth:`GoodnessOfFit.samples_needed` says how many draws would decide.
Results carry their verdict as attributes: ``fit.verdict``, ``fit.passed``.

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> fit = goodness_of_fit(m.samples(2000, rng=1), m)
>>> fit.verdict, fit.passed, fit.samples_needed()
('inconclusive', False, 5280)
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import mpmath

from .._oracle.groups import Groups
from ..core.results import VERDICT_HINT, NoTruthValue
from ..core.aliases import MechanismLike, Output, OutputLike
from ..core.formatting import number_text, output_text, table
from ..core.precision import mp_workdps
from ..core.validation import as_dps, as_positive_int
from ..errors import ArgumentTypeError, ExactDPError, InvalidParameterError
from .chi2 import chi2_sf
from .design import (DEFAULT_ALPHA, DEFAULT_DELTA, DEFAULT_MAX_ENUMERATE, DEFAULT_MAX_N, DEFAULT_MIN_POWER,
                     MIN_EXPECTED, Bin, BinPlan, Design, LevelPlan, bin_plan, check_design_args, group_of, group_size)
from .io import IdMap, check_id_map, normalise_output, relabel
from .least_favourable import Sensitivity, delta_text, lf_delta, lf_power, n_needed, needed_text, sensitivity
from .tail import TailTest, binomial_sf_upper, levels_label

__all__ = ["GoodnessOfFit", "Sensitivity", "goodness_of_fit", "sensitivity"]


@dataclass(frozen=True)
class GoodnessOfFit(NoTruthValue):
    """Result of :func:`goodness_of_fit`.

    ``statistic`` (a float, as scipy's ``statistic``), ``df``: Pearson's chi-square over all bins (level stage plus
    within-level stage; the multinomial splits into the level counts and, given them, the
    counts within each level, so the two statistics add).  ``level_*`` and ``within_*`` are
    the two stages alone: ``level_statistic``, ``level_df``, ``level_p_value`` and
    ``within_statistic``, ``within_df``, ``within_p_value``.  ``n``: the number of draws
    (valid or not).  ``tail``: the exact test of the rare tail (a
    :class:`~exactdp.certify.TailTest`), ``None`` when every level is in a chi-square bin.
    ``p_value``: without a tail, the chi-square's ``Q(df/2, x/2)``; with one, the
    Bonferroni combination ``min(1, chi2_p_value / (1 - s), tail.p_value / s)`` (``s`` =
    ``tail.share``; the chi-square term only when ``df > 0``), so that ``p_value < alpha``
    exactly when one of the two tests rejects at its share of ``alpha`` and the false-alarm
    rate stays at most ``alpha``.  ``pvalue``: ``p_value`` as a float (scipy's name).
    ``chi2_p_value`` is the chi-square's own p-value.  ``bins``: every bin (unobserved single-output bins of one level
    are summarised in one row); ``invalid``: draws that are not outputs at all;
    ``impossible``: valid outputs with exact probability 0 (either makes ``p_value`` 0),
    each once; ``outside``: the number of draws that are invalid or impossible;
    ``skipped``: ``{level: reason}`` for levels whose uniformity was not tested;
    ``plan``: the :class:`BinPlan` (what was pooled or left untested).  ``alpha``,
    ``delta``, ``min_power``, ``max_n``: as given to :func:`goodness_of_fit`.

    **Verdict** (:attr:`verdict`, at the ``alpha`` given to :func:`goodness_of_fit`;
    :meth:`verdict_at` at another level):

    * ``"fail"``: an invalid or impossible draw, or ``p_value < alpha``;
    * ``"inconclusive"``: not rejected, but the test could not have failed (``df = 0`` and
      no rare tail) or
      was too weak to trust: its power against the least favourable alternative at total variation ``delta``
      (see :func:`sensitivity`) is below ``min_power``;
    * ``"pass"``: not rejected by a test that had power ``>= min_power`` at ``delta``.

    :attr:`passed` is true only for ``"pass"`` (:meth:`passed_at` at another level);
    :attr:`rejected` for ``"fail"``.  A result has no truth value: ``bool(fit)`` (``if fit``,
    ``assert fit``) raises ``TypeError``; read :attr:`passed` or :attr:`verdict`.
    """

    _truth_hint = VERDICT_HINT

    n: int
    statistic: float
    df: int
    p_value: mpmath.mpf
    level_statistic: float
    level_df: int
    level_p_value: mpmath.mpf
    within_statistic: float
    within_df: int
    within_p_value: mpmath.mpf
    bins: tuple[Bin, ...]
    invalid: tuple[tuple[object, str], ...] = ()  # (the draw as given, why it is not an output)
    impossible: tuple[Output, ...] = ()
    outside: int = 0
    skipped: dict[int, str] = field(default_factory=dict)
    plan: Optional[BinPlan] = None
    tail: Optional[TailTest] = None
    alpha: float = DEFAULT_ALPHA
    delta: float = DEFAULT_DELTA
    min_power: float = DEFAULT_MIN_POWER
    max_n: int = DEFAULT_MAX_N
    _design: Optional[Design] = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def chi2_p_value(self) -> mpmath.mpf:
        """The chi-square stages' own p-value ``Q(df/2, x/2)`` (``p_value`` when there is
        no rare tail)."""
        return self.p_value if self.tail is None else chi2_sf(self.statistic, self.df)

    def _alpha(self, alpha: Optional[float]) -> float:
        return self.alpha if alpha is None else check_design_args(alpha, self.delta, self.min_power)[0]

    @property
    def pvalue(self) -> float:
        """``p_value`` as a float (scipy's name; ``0.0`` where it underflows): for
        reporting and for code written against scipy's results.  The verdict is decided
        on ``p_value`` itself."""
        return float(self.p_value)

    @property
    def verdict(self) -> str:
        """``"pass"``, ``"fail"`` or ``"inconclusive"`` at the result's own ``alpha`` (see
        the class docstring); :meth:`verdict_at` at another level."""
        return self.verdict_at(self.alpha)

    @property
    def passed(self) -> bool:
        """True only for the verdict ``"pass"`` (an inconclusive test is not a pass)."""
        return self.verdict == "pass"

    @property
    def rejected(self) -> bool:
        """True when the draws are rejected at ``alpha``: an invalid or impossible draw,
        or ``p_value < alpha``; :meth:`rejected_at` at another level."""
        return self.rejected_at(self.alpha)

    def rejected_at(self, alpha: float) -> bool:
        """:attr:`rejected` at the significance level ``alpha``."""
        return bool(self.invalid or self.impossible or self.p_value < self._alpha(alpha))

    def power(self, alpha: Optional[float] = None) -> float:
        """Power of this test (its bins and ``df``) against the least favourable
        alternative at total variation ``delta`` (:func:`sensitivity`).
        ``alpha``: the significance level (``None``: the one given to
        :func:`goodness_of_fit`)."""
        a = self._alpha(alpha)
        key = ("power", a)
        if key not in self._cache:
            self._cache[key] = lf_power(self.plan, self.delta, a)[0] if self.plan is not None else 0.0
        return self._cache[key]

    def detectable_delta(self, alpha: Optional[float] = None) -> float:
        """The smallest total variation deviation this test detects with power
        ``min_power`` (least favourable alternative; ``inf`` when ``df = 0``).
        ``alpha``: the significance level (``None``: the one given to
        :func:`goodness_of_fit`)."""
        a = self._alpha(alpha)
        key = ("delta", a)
        if key not in self._cache:
            self._cache[key] = lf_delta(self.plan, a, self.min_power) if self.plan is not None else math.inf
        return self._cache[key]

    def samples_needed(self, alpha: Optional[float] = None) -> Optional[int]:
        """The smallest ``n`` at which the test (its bins re-chosen for that ``n``) has
        power ``min_power`` at ``delta``; ``None`` past ``max_n``.
        ``alpha``: the significance level (``None``: the one given to
        :func:`goodness_of_fit`)."""
        a = self._alpha(alpha)
        key = ("n", a)
        if key not in self._cache:
            self._cache[key] = (n_needed(self._design, self.delta, a, self.min_power, self.max_n)
                                if self._design is not None else None)
        return self._cache[key]

    def verdict_at(self, alpha: float) -> str:
        """The verdict (``"pass"``, ``"fail"`` or ``"inconclusive"``, see the class
        docstring) at the significance level ``alpha``, with the power recomputed there."""
        if self.rejected_at(alpha):
            return "fail"
        if (self.df <= 0 and self.tail is None) or self.power(alpha) < self.min_power:
            return "inconclusive"
        return "pass"

    def passed_at(self, alpha: float) -> bool:
        """True only for the verdict ``"pass"`` at the significance level ``alpha``."""
        return self.verdict_at(alpha) == "pass"

    def verdict_line(self, alpha: Optional[float] = None) -> str:
        """One line with everything the verdict rests on: verdict, n, df, statistic,
        p-value, alpha, power at ``delta``, the TV deviation detectable with power
        ``min_power`` at this ``n``, the ``n`` needed for ``delta``, and what was pooled
        or left untested.
        ``alpha``: the significance level (``None``: the one given to
        :func:`goodness_of_fit`)."""
        a = self._alpha(alpha)
        v = self.verdict_at(a)
        if v == "fail":
            bad = self.outside
            why = (f"{bad} draw{'s' if bad != 1 else ''} outside the support" if bad
                   else "the draws do not follow the exact distribution")
        elif self.df <= 0 and self.tail is None:
            why = "0 degrees of freedom: this test cannot reject anything"
        elif v == "inconclusive":
            why = "not rejected, but the test is too weak to say PASS"
        else:
            why = "no evidence against the exact distribution"
        rel = "<" if self.p_value < a else ">="
        tail = ", p-value"
        if self.tail is not None:
            t = self.tail
            tail = (f" (p = {number_text(self.chi2_p_value, 4)}) and rare tail {t.observed} of {t.expected:.3g} "
                    f"expected draws (exact p = {number_text(t.p_value, 4)}): combined p-value")
        return (
            f"{v.upper()}: {why}; n = {self.n}, chi-square {self.statistic:.6g} on {self.df} df{tail} "
            f"{number_text(self.p_value, 4)} {rel} alpha = {a:g}; power {self.power(a):.3g} at TV deviation "
            f"{self.delta:g} (PASS needs {self.min_power:g}); TV detectable with power {self.min_power:g} at this n: "
            f"{delta_text(self.detectable_delta(a))}; n needed for TV {self.delta:g}: "
            f"{needed_text(self.samples_needed(a), self.max_n, self._design, self.delta)}; " + (self.plan.describe() if self.plan is not None else "")
        )

    def worst_bins(self, limit: int = 10) -> list[Bin]:
        """The ``limit`` bins (default 10) with the largest contributions to the statistic."""
        return sorted(self.bins, key=lambda b: -b.contribution)[:limit]

    def table(self, limit: int = 10) -> str:
        """:meth:`worst_bins` (at most ``limit`` rows) as an aligned text table."""
        rows = [[b.stage, b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"]
                for b in self.worst_bins(limit)]
        return table(["stage", "bin", "observed", "expected", "(O-E)^2/E"], rows)

    def summary(self, verdict: bool = True) -> str:
        """The two stages, notes on invalid draws and untested levels, then (with
        ``verdict``) :meth:`verdict_line`."""
        untested = self.plan.untested_outputs if self.plan is not None else 0
        if self.within_df > 0:
            within = f"{self.within_statistic:.6g} on {self.within_df} df, p = {number_text(self.within_p_value, 4)}"
        elif untested:
            within = f"not tested (0 df; {untested} outputs in levels whose uniformity is untested)"
        else:
            within = "nothing to test (0 df: every level has a single output)"
        lines = [
            f"n = {self.n} draws; chi-square {self.statistic:.6g} on {self.df} df, p-value "
            + (f"{number_text(self.p_value, 4)}" if self.tail is None else
               f"{number_text(self.chi2_p_value, 4)}; combined with the rare tail's: {number_text(self.p_value, 4)}"),
            f"  by level:     {self.level_statistic:.6g} on {self.level_df} df, p = {number_text(self.level_p_value, 4)}",
            f"  within level: {within}",
        ]
        if self.tail is not None:
            t = self.tail
            lines.insert(1, f"  rare tail:    {t.label}: {t.observed} draw{'s' if t.observed != 1 else ''}, {t.expected:.3g} expected, exact "
                            f"p = {number_text(t.p_value, 4)} (P(T >= {t.observed}), T ~ Binomial(n, "
                            f"{number_text(t.probability, 4)}); alpha share {t.share:g})")
        reasons = Counter(why for _, why in self.invalid)  # one line per reason, not per draw
        for why, count in list(reasons.items())[:5]:
            lines.append(f"  invalid draw{'s' if count > 1 else ''} ({count}): {why}")
        for o in self.impossible[:5]:
            lines.append(f"  impossible draw {output_text(o)}: probability 0")
        if self.skipped:
            lines.append(f"  uniformity not tested in {len(self.skipped)} level(s), e.g. level "
                         f"{next(iter(self.skipped))}: {next(iter(self.skipped.values()))}")
        if verdict:
            lines.append(self.verdict_line())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary() + "\nworst bins:\n" + self.table()


def goodness_of_fit(
    samples: Iterable[OutputLike],
    mechanism: MechanismLike,
    *,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    min_power: float = DEFAULT_MIN_POWER,
    dps: Optional[int] = None,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
    progress: Optional[Callable[[int, int], None]] = None,
    max_n: int = DEFAULT_MAX_N,
    id_map: Optional[IdMap] = None,
) -> GoodnessOfFit:
    """Pearson's chi-square test of draws against the exact distribution of ``mechanism``
    (draws of labels are mapped to item positions by ``id_map``, :func:`relabel`).

    ``samples``: an iterable of draws (each an iterable of item ids, as
    :func:`normalise_output` accepts; :func:`read_samples` reads a file).  ``alpha``: the
    significance level, the false-alarm rate (default :data:`DEFAULT_ALPHA`); ``delta`` (default
    :data:`DEFAULT_DELTA`) and ``min_power`` (default :data:`DEFAULT_MIN_POWER`): the
    verdict is PASS only when the test has power at least ``min_power`` against the least
    favourable deviation of total variation ``delta`` (see :class:`GoodnessOfFit`);
    ``max_n`` (default :data:`DEFAULT_MAX_N`): the largest ``n`` the draws-needed search
    tries; ``progress``: ``None`` or a callable ``progress(done, total)`` called while the
    within-level test lists outputs.

    1. **By level**: observed draws per level against ``n * P(level)`` (exact level
       probabilities certified to ``dps`` digits, multiplied by ``n`` exactly, then
       converted); consecutive levels (best first) are pooled until each bin expects at
       least ``min_expected`` draws, but a rare level (expecting fewer) only with other rare
       levels, never with a level that fills a bin by itself (mass moved between them would
       be invisible).  Rare levels left over form the **rare tail** ``R``, tested exactly
       (:mod:`~exactdp.certify.tail`): the number ``T`` of draws in it is
       ``Binomial(n, P(R))`` under the mechanism, its p-value ``P(T >= t)``; the level bins
       then test the other ``n - T`` draws against ``n - T`` times the probabilities
       conditioned on leaving ``R``.  The two tests split ``alpha`` (Bonferroni: half
       each, or all of it for the tail when the chi-square stages have no degrees of
       freedom), so the false-alarm rate stays at most ``alpha``; ``p_value`` is their
       combination (see :class:`GoodnessOfFit`).
    2. **Within levels** (``within=True``): every output of a level is equally likely.
       Given the ``n_a`` draws in level ``a`` of ``m_a`` outputs, each output expects
       ``n_a / m_a`` when ``n P(a) >= min_expected * m_a``; otherwise the outputs are
       grouped into runs of ``g = ceil(min_expected * m_a / (n P(a)))`` consecutive
       outputs in the order of ``mechanism.outputs()`` (which needs the support listed,
       refused past ``max_enumerate``: such levels are skipped and reported).  Bins are
       chosen from ``n`` and the exact probabilities only, never from the draws.

    The statistic is the sum of both stages, with degrees of freedom summed; the p-value
    is ``Q(df/2, x/2)`` (mpmath's regularised incomplete gamma), combined with the rare
    tail's when there is one.  A draw that is not a
    valid output, or has probability 0, makes the p-value 0.
    """
    alpha, delta, min_power = check_design_args(alpha, delta, min_power)
    if samples is None or isinstance(samples, (str, bytes)) or not hasattr(samples, "__iter__"):
        raise ArgumentTypeError("samples", samples, "must be an iterable of draws (lists of item ids); "
                                "read a file with certify.read_samples")
    digits = as_dps(dps)
    lv = Groups(mechanism, digits)
    if id_map is not None:
        check_id_map(id_map, getattr(mechanism, "d", None))
    kind = lv.kind
    tally: Counter = Counter()
    invalid: list[tuple[object, str]] = []
    for s in samples:
        try:
            tally[normalise_output(s if id_map is None else relabel(s, id_map), kind)] += 1
        except ExactDPError as err:
            invalid.append((s, str(err)))
    n = sum(tally.values()) + len(invalid)
    if n == 0:
        raise InvalidParameterError("samples", samples, "must contain at least one draw")
    level_obs = [0] * len(lv.groups)
    per_output: dict[Output, tuple[int, int]] = {}  # output -> (level, count)
    impossible = []
    outside = 0  # impossible draws (the invalid ones are counted from `invalid` below)
    for o, count in tally.items():
        try:
            a = lv.index(o)
        except ExactDPError as err:
            invalid.extend([(o, str(err))] * count)  # one entry per draw, as above
            continue
        if a is None:
            impossible.append(o)
            outside += count
            continue
        level_obs[a] += count
        per_output[o] = (a, count)
    probs = lv.group_probabilities()
    with mp_workdps(digits + 5):
        expected_exact = [n * p for p in probs]
    design = Design(lv, min_expected, within, max_enumerate)
    plan = design.plan(n)
    bins: list[Bin] = []
    # the rare tail: T draws in it, tested exactly; the chi-square sees the other n - T,
    # against the law conditioned on leaving the tail
    tail = None
    if plan.rare:
        t_obs = sum(level_obs[a] for a in plan.rare)
        with mp_workdps(digits + 5):
            p_tail = mpmath.fsum(probs[a] for a in plan.rare)
            e_tail = float(n * p_tail)
            scale = (n - t_obs) / (1 - p_tail)
            expected_exact = [p * scale for p in probs]
        tail = TailTest(tuple(plan.rare), t_obs, e_tail, p_tail, binomial_sf_upper(t_obs, n, p_tail, digits), plan.tail_share)
    # stage 1
    level_stat = 0.0
    for group in plan.level_bins:
        o = sum(level_obs[a] for a in group)
        with mp_workdps(digits + 5):
            e = float(mpmath.fsum(expected_exact[a] for a in group))
        contrib = (o - e) ** 2 / e if e > 0 else (0.0 if o == 0 else math.inf)
        level_stat += contrib
        label = levels_label(group) if group != list(range(group[0], group[-1] + 1)) or len(group) == 1 \
            else f"levels {group[0]}-{group[-1]}"
        bins.append(Bin("level", label, o, e, contrib))
    level_df = len(plan.level_bins) - 1
    # stage 2
    positions: dict[Output, int] = {}
    if plan.needs_enumeration:
        wanted = {o for o, (a, _) in per_output.items() if plan.within.get(a, LevelPlan("skip")).mode == "groups"}
        counters = [0] * len(lv.groups)
        if wanted:
            for a, o in lv.enumerate(max_enumerate, "the within-level test", progress):
                if o in wanted:
                    positions[o] = counters[a]
                counters[a] += 1
    within_stat, within_df = 0.0, 0
    skipped = {}
    by_level: dict[int, list[tuple[Output, int]]] = {}
    for o, (a, count) in per_output.items():
        by_level.setdefault(a, []).append((o, count))
    for a, lp in sorted(plan.within.items()):
        if lp.mode == "skip":
            skipped[a] = lp.reason
            continue
        n_a = level_obs[a]
        m = lv.groups[a].multiplicity
        if n_a == 0:
            continue  # no information about uniformity in this level
        if lp.mode == "outputs":
            e = n_a / m
            seen = by_level.get(a, [])
            for o, count in seen:
                contrib = (count - e) ** 2 / e
                within_stat += contrib
                bins.append(Bin("within", f"level {a} output {output_text(o)}", count, e, contrib))
            unseen = m - len(seen)
            if unseen:
                within_stat += unseen * e
                bins.append(Bin("within", f"level {a}: {unseen} unobserved outputs", 0, unseen * e, unseen * e))
            within_df += m - 1
        else:
            counts = [0] * lp.groups
            for o, count in by_level.get(a, []):
                counts[group_of(lp, positions[o])] += count
            for g, count in enumerate(counts):
                size = group_size(lp, m, g)
                e = n_a * size / m
                contrib = (count - e) ** 2 / e
                within_stat += contrib
                bins.append(Bin("within", f"level {a} outputs {g * lp.size}-{g * lp.size + size - 1}", count, e, contrib))
            within_df += lp.groups - 1
    statistic = level_stat + within_stat
    df = level_df + within_df
    shape = bin_plan(lv.groups, probs, plan, n, level_obs)
    assert shape.df == df, (shape, df)
    bad = bool(invalid or impossible)
    zero = mpmath.mpf(0)
    p_value = zero if bad else chi2_sf(statistic, df)
    if tail is not None and not bad:  # Bonferroni over the two tests, shares fixed by the plan
        with mp_workdps(30):
            parts = [tail.p_value / tail.share]
            if tail.share < 1:
                parts.append(p_value / (1 - tail.share))
            p_value = min(mpmath.mpf(1), *parts)
    return GoodnessOfFit(
        n=n, statistic=math.inf if bad else statistic, df=df,
        p_value=p_value,
        level_statistic=level_stat, level_df=level_df, level_p_value=zero if bad else chi2_sf(level_stat, level_df),
        within_statistic=within_stat, within_df=within_df,
        within_p_value=chi2_sf(within_stat, within_df),
        bins=tuple(bins), invalid=tuple(invalid), impossible=tuple(impossible),
        outside=outside + len(invalid), skipped=skipped,
        plan=shape, tail=tail, alpha=alpha, delta=delta, min_power=min_power, max_n=as_positive_int(max_n, "max_n"),
        _design=design,
    )


# -------------------------------------------------------------------------------------
# power against a given alternative
# -------------------------------------------------------------------------------------


