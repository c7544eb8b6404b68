"""Power of the sampler test against a given wrong distribution, and the draws it needs.

:func:`power` is the probability of rejecting draws from an alternative;
:func:`samples_needed` the number of draws that makes a power reach a target.

Powers are statistics, computed in floating point: the noncentral chi-square
approximation over the bins the test uses with ``n`` draws, or a seeded Monte Carlo
simulation of them.

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> samples_needed(m)
5280
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

import mpmath
import numpy as np

from .._oracle.groups import Groups
from ..core.results import NoTruthValue
from ..core.aliases import AlternativeLike, MechanismLike, Output
from ..core.validation import as_dps, as_positive_int
from ..errors import InvalidParameterError, NothingToDetectError
from .chi2 import critical, ncx2_sf_fast
from .design import (DEFAULT_ALPHA, DEFAULT_DELTA, DEFAULT_MAX_ENUMERATE, DEFAULT_MAX_N, DEFAULT_MIN_POWER,
                     MIN_EXPECTED, Design, Plan, check_design_args, group_size, search_n)
from .io import normalise_output, to_mpf
from .least_favourable import n_needed
from .tail import binomial_sf_float, critical_count

__all__ = ["Power", "power", "samples_needed"]


@dataclass(frozen=True)
class Power(NoTruthValue):
    """Result of :func:`power`: ``power`` (probability that :func:`goodness_of_fit` with
    ``n`` draws rejects at ``alpha`` when the draws come from the alternative), the
    ``method`` (``"noncentral"``: Pearson's statistic approximated by a noncentral
    chi-square with noncentrality ``n * sum (q - p)**2 / p`` over the test's bins;
    ``"monte-carlo"``: the binned counts simulated ``trials`` times, of which
    ``rejections`` rejected, with a 95% Wilson interval in ``interval``), ``df``,
    ``critical`` value, ``noncentrality``, and
    ``outside``: the alternative's probability of outputs the mechanism never gives
    (any such draw is detected).  With a rare tail, ``tail_critical``: the number of draws
    in it at which its exact test rejects, and ``tail_power`` the probability of that
    under the alternative (``noncentrality`` is then the chi-square stages' with
    ``n - tail_critical + 1`` draws, and ``critical`` at their share of ``alpha``)."""

    power: float
    n: int
    alpha: float
    method: str
    df: int
    critical: float
    noncentrality: float
    outside: float
    trials: int = 0
    rejections: int = 0
    interval: tuple[float, float] = (math.nan, math.nan)
    tail_critical: Optional[int] = None
    tail_power: float = 0.0

    _truth_hint = ".power"

    def __float__(self) -> float:
        return self.power

    def __str__(self) -> str:
        text = (f"power {self.power:.4g} with n = {self.n} at alpha = {self.alpha:g} ({self.method}; "
                f"df = {self.df}, critical value {self.critical:.6g}, noncentrality {self.noncentrality:.6g})")
        if self.method == "monte-carlo":
            text += f"; {self.rejections}/{self.trials} rejections, 95% interval [{self.interval[0]:.4g}, {self.interval[1]:.4g}]"
        if self.tail_critical is not None:
            text += (f"; rare tail rejects at {self.tail_critical} draws or more, with probability "
                     f"{self.tail_power:.4g}")
        return text


def _alternative_pmf(alternative: AlternativeLike, kind: str) -> Callable[[Output], float]:
    if isinstance(alternative, Mapping):
        table: dict[Output, float] = {}
        for key, value in alternative.items():
            o = normalise_output(key, kind)
            if o in table:  # e.g. the sequences (0, 1) and (1, 0) against a set mechanism
                raise InvalidParameterError("alternative", key, f"names the same {kind} output as another key"
                                            + (" (sum the orderings of a set first)" if kind == "set" else ""))
            q = float(to_mpf(value, "alternative"))
            if not (q >= 0 and math.isfinite(q)):
                raise InvalidParameterError("alternative", key, f"has probability {value!r}: must be >= 0 and finite")
            table[o] = q
        total = math.fsum(table.values())
        if abs(total - 1) > 1e-9:
            raise InvalidParameterError("alternative", f"<{len(table)} outputs>", f"its probabilities sum to "
                                        f"{total:.12g}, not 1: give a distribution (mass outside the support "
                                        "under keys that are not outputs)")
        return lambda o: table.get(o, 0.0)
    if hasattr(alternative, "probability") and callable(alternative.probability):
        return lambda o: float(alternative.probability(o))
    if callable(alternative):
        return lambda o: float(to_mpf(alternative(o), "alternative"))
    raise InvalidParameterError("alternative", alternative, "must be a mapping output -> probability, a callable, "
                                "or an object with .probability(output)")


class _Alternative:
    """An alternative's probabilities over the mechanism's support, listed once: per level,
    and per output position inside every level of two or more outputs (numpy arrays), so
    that the binned probabilities for any ``n`` cost no new enumeration."""

    def __init__(self, design: Design, lv: Groups, alternative: AlternativeLike, max_enumerate: int):
        self.design = design
        pmf = _alternative_pmf(alternative, lv.kind)
        if design.support > max_enumerate:
            raise InvalidParameterError("max_enumerate", max_enumerate,
                                        f"power() needs every output, and the mechanism has {design.support}; "
                                        "raise max_enumerate")
        self.q_level = [0.0] * len(lv.groups)
        outs: dict[int, list[float]] = {}
        for a, o in lv.enumerate(max_enumerate, "power()"):
            q = pmf(o)
            self.q_level[a] += q
            if lv.groups[a].multiplicity >= 2:
                outs.setdefault(a, []).append(q)
        self.q_out = {a: np.array(v, dtype=float) for a, v in outs.items()}
        total_q = sum(self.q_level)
        if isinstance(alternative, Mapping):
            total_claimed = math.fsum(float(to_mpf(p, "alternative")) for p in alternative.values())
            gap = total_claimed - total_q
            self.outside = gap if gap > 1e-12 else 0.0  # not rounding noise of the float sums
        else:
            if total_q > 1 + 1e-9:
                raise InvalidParameterError("alternative", alternative, f"gives the mechanism's outputs probability "
                                            f"{total_q:.12g} in all, more than 1: give a distribution")
            self.outside = max(0.0, 1.0 - total_q) if total_q < 1 - 1e-9 else 0.0

    def tail(self, plan: Plan) -> tuple[mpmath.mpf, float]:
        """``(P(R), q(R))``: the rare tail's probability (certified) and the alternative's."""
        if not plan.rare:
            return mpmath.mpf(0), 0.0
        return mpmath.fsum(self.design.probs[a] for a in plan.rare), math.fsum(self.q_level[a] for a in plan.rare)

    def binned(self, plan: Plan):
        """Null and alternative probabilities of the level bins, and per tested level
        ``(p_bins|a, q_bins)``; with a rare tail, the level bins' probabilities are
        conditioned on leaving it (the chi-square stages see the draws outside it)."""
        probs = self.design.probs
        p_r, q_r = self.tail(plan)
        keep_p, keep_q = 1.0 - float(p_r), 1.0 - q_r  # both 1.0 without a tail
        p_lb = [float(mpmath.fsum(probs[a] for a in g)) / keep_p for g in plan.level_bins]
        q_lb = [sum(self.q_level[a] for a in g) / keep_q if keep_q > 0 else 0.0 for g in plan.level_bins]
        parts = {}
        for a, lp in plan.within.items():
            if lp.mode == "skip":
                continue
            m = self.design.levels[a].multiplicity
            q = self.q_out.get(a, np.zeros(m))
            if lp.mode == "outputs":
                p_cond, q_bins = [1.0 / m] * m, [float(x) for x in q]
            else:
                starts = np.arange(lp.groups) * lp.size
                p_cond = [group_size(lp, m, g) / m for g in range(lp.groups)]
                q_bins = [float(x) for x in np.add.reduceat(q, starts)]
            parts[a] = (p_cond, q_bins)
        return p_lb, q_lb, parts

    def noncentrality(self, n: int) -> tuple[float, int, Plan, list, list, dict]:
        """The chi-square stages' noncentrality with ``n`` draws (outside the rare tail,
        if any, on the law conditioned on leaving it), their ``df``, the plan and the
        binned probabilities of :meth:`binned`."""
        plan = self.design.plan(n)
        p_lb, q_lb, parts = self.binned(plan)
        keep_q = 1.0 - self.tail(plan)[1]
        df = (len(p_lb) - 1) + sum(len(p) - 1 for p, _ in parts.values())
        lam = sum((q - p) ** 2 / p for p, q in zip(p_lb, q_lb) if p > 0)
        for a, (p_cond, q_bins) in parts.items():
            qa = self.q_level[a]
            if qa <= 0 or keep_q <= 0:
                continue
            lam += qa / keep_q * sum((q / qa - p) ** 2 / p for p, q in zip(p_cond, q_bins))
        return lam * n, df, plan, p_lb, q_lb, parts

    def inside(self, n: int, alpha: float) -> tuple[float, float, int, float, Optional[int], float]:
        """``(power inside the support, noncentrality, df, critical value, tail critical
        count, tail power)``.  Without a rare tail: the noncentral chi-square power.  With
        one: the tail test (at share ``s`` of ``alpha``) rejects when ``T >= c``, with
        probability ``G = P(Binomial(n, q(R)) >= c)``; when it does not, the chi-square
        stages (at ``(1 - s) alpha``) have at least ``n - c + 1`` draws, so the power is at
        least ``G + (1 - G) F`` with ``F`` their power with ``n - c + 1`` draws."""
        lam, df, plan, *_ = self.noncentrality(n)
        if not plan.rare:
            crit = critical(alpha, df) if df > 0 else math.inf
            return (ncx2_sf_fast(crit, df, lam) if df > 0 else 0.0), lam, df, crit, None, 0.0
        share = plan.tail_share
        p_r, q_r = self.tail(plan)
        c = critical_count(n, p_r, alpha * share)
        g = binomial_sf_float(c, n, q_r)
        n_c = n - c + 1
        lam_c = lam * n_c / n if n_c > 0 else 0.0
        crit = critical(alpha * (1 - share), df) if df > 0 and share < 1 else math.inf
        f = ncx2_sf_fast(crit, df, lam_c) if df > 0 and share < 1 and n_c > 0 else 0.0
        return g + (1.0 - g) * f, lam_c, df, crit, c, g

    def power(self, n: int, alpha: float) -> float:
        inside = self.inside(n, alpha)[0]
        return 1.0 - (1.0 - self.outside) ** n * (1.0 - inside)


def power(
    mechanism: MechanismLike,
    alternative: AlternativeLike,
    n: int,
    alpha: float = DEFAULT_ALPHA,
    *,
    method: str = "noncentral",
    trials: int = 1000,
    seed: int = 0,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    dps: Optional[int] = None,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
) -> Power:
    """The probability that :func:`goodness_of_fit` with ``n`` draws rejects at level
    ``alpha`` when the draws come from ``alternative`` (a wrong distribution: a mapping
    ``output -> probability``, a callable, or an object with ``.probability(output)``)
    instead of ``mechanism``.  ``seed``: the seed of numpy's generator for
    ``method="monte-carlo"`` (default 0, so the estimate is reproducible).
    ``min_expected``, ``within``, ``dps`` and ``max_enumerate``: as for
    :func:`goodness_of_fit` (they choose the bins).

    ``method="noncentral"`` (default): Pearson's statistic under a fixed alternative is
    approximately noncentral chi-square with the test's ``df`` and noncentrality
    ``lambda = n * [sum_levelbins (q - p)**2 / p + sum_a q_a sum_bins (q_b|a - p_b|a)**2 / p_b|a]``
    over the bins the test uses with ``n`` draws (the classical approximation; good when
    ``lambda`` is not tiny and bins are not sparse), evaluated in floating point.
    ``method="monte-carlo"``: the bin counts are simulated ``trials`` times with numpy
    (seeded) and the statistic compared with the critical value; the estimate comes with a
    95% Wilson interval.  Either way, mass the alternative puts outside the mechanism's
    support is detected by any draw of it: ``1 - (1 - outside)**n`` is combined in.

    With a rare tail (levels too rare for the chi-square, tested exactly, see
    :func:`goodness_of_fit`), the level bins' probabilities are conditioned on leaving the
    tail and the power combines both tests: the noncentral method gives the lower bound
    ``G + (1 - G) F`` (``G``: the tail test's power, an exact binomial tail in floating
    point; ``F``: the chi-square stages' power with the fewest draws they can have when the
    tail test does not reject, ``n - c + 1``; ``c`` is :attr:`Power.tail_critical`), never
    more than the two-part test has; the Monte Carlo method simulates both.
    Needs the support enumerated (``max_enumerate``).  This is the power against this one
    alternative; :func:`sensitivity` gives the power against the least favourable one at a
    given total variation distance.
    """
    count = as_positive_int(n, "n")
    if method not in ("noncentral", "monte-carlo"):
        raise InvalidParameterError("method", method, "must be 'noncentral' or 'monte-carlo'")
    alpha = check_design_args(alpha, DEFAULT_DELTA, DEFAULT_MIN_POWER)[0]
    lv = Groups(mechanism, as_dps(dps))
    alt = _Alternative(Design(lv, min_expected, within, max_enumerate), lv, alternative, max_enumerate)
    inside, lam, df, crit, tail_c, tail_power = alt.inside(count, alpha)
    _, _, plan, p_lb, q_lb, within_parts = alt.noncentrality(count)
    outside = alt.outside
    miss_outside = (1.0 - outside) ** count
    if method == "noncentral":
        value = 1.0 - miss_outside * (1.0 - inside)
        return Power(value, count, alpha, method, df, crit, lam, outside, tail_critical=tail_c, tail_power=tail_power)
    rng = np.random.default_rng(seed)
    trials = as_positive_int(trials, "trials")
    q_arr = np.array(alt.q_level + [outside], dtype=float)
    q_arr = q_arr / q_arr.sum()
    rare = list(plan.rare)
    rejections = 0
    for _ in range(trials):
        draws = rng.multinomial(count, q_arr)
        if draws[-1] > 0:
            rejections += 1
            continue
        t = int(sum(draws[a] for a in rare))
        if tail_c is not None and t >= tail_c:
            rejections += 1
            continue
        stat = 0.0
        for g, group in enumerate(plan.level_bins):
            o = int(sum(draws[a] for a in group))
            e = (count - t) * p_lb[g]
            stat += (o - e) ** 2 / e if e > 0 else (0.0 if o == 0 else math.inf)
        for a, (p_cond, q_bins) in within_parts.items():
            n_a = int(draws[a])
            if n_a == 0:
                continue
            qb = np.array(q_bins, dtype=float)
            qb = qb / qb.sum() if qb.sum() > 0 else np.full(len(q_bins), 1.0 / len(q_bins))
            obs = rng.multinomial(n_a, qb)
            e = n_a * np.array(p_cond)
            stat += float(((obs - e) ** 2 / e).sum())
        if stat > crit:
            rejections += 1
    est = rejections / trials
    z = 1.959963984540054
    centre = (est + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(est * (1 - est) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return Power(est, count, alpha, method, df, crit, lam, outside, trials, rejections,
                 (max(0.0, centre - half), min(1.0, centre + half)), tail_c, tail_power)


#: Noncentrality per draw at or below which an alternative counts as the mechanism itself
#: (float rounding of its probabilities): :func:`samples_needed` raises
#: :class:`~exactdp.errors.NothingToDetectError`.
_SAME = 1e-20


def samples_needed(
    mechanism: MechanismLike,
    alternative: Optional[AlternativeLike] = None,
    target: float = DEFAULT_MIN_POWER,
    alpha: float = DEFAULT_ALPHA,
    *,
    delta: Optional[float] = None,
    max_n: int = DEFAULT_MAX_N,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    dps: Optional[int] = None,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
) -> int:
    """The smallest ``n`` (doubling, then bisection to within 1%) at which the sampler test
    reaches power ``target``, with its bins re-chosen at every ``n`` as
    :func:`goodness_of_fit` would, for draws tested against ``mechanism`` at significance
    level ``alpha`` (default :data:`DEFAULT_ALPHA`).  ``min_expected``, ``within``,
    ``dps`` and ``max_enumerate``: as for :func:`goodness_of_fit` (they choose the bins).

    With ``alternative`` (a wrong distribution, as in :func:`power`): the noncentral
    approximation of :func:`power` against it.  Without: the least favourable alternative at
    total variation ``delta`` (default :data:`DEFAULT_DELTA`; see :func:`sensitivity`).

    Raises :class:`~exactdp.errors.NothingToDetectError` at once when the mechanism has a
    single output (0 degrees of freedom at any ``n``) or the alternative
    cannot be told from the mechanism on the test's bins with any number of draws (the
    finest bins, those of ``max(max_n, DEFAULT_MAX_N)`` draws; e.g. it is the same
    distribution), and :class:`~exactdp.errors.InvalidParameterError` (argument
    ``max_n``) when the power stays below ``target`` up to ``max_n`` draws.
    """
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise InvalidParameterError("target", target, "must satisfy 0 < target < 1")
    target = float(target)
    if alternative is not None and delta is not None:
        raise InvalidParameterError("delta", delta, "give either an alternative or delta, not both")
    alpha = check_design_args(alpha, DEFAULT_DELTA, DEFAULT_MIN_POWER)[0]
    max_n = as_positive_int(max_n, "max_n")
    lv = Groups(mechanism, as_dps(dps))
    design = Design(lv, min_expected, within, max_enumerate)
    if alternative is None:
        delta = check_design_args(alpha, DEFAULT_DELTA if delta is None else delta, target)[1]
        if lv.support_size == 1:  # raising max_n or delta cannot help: the test has 0 df at every n
            raise NothingToDetectError(
                "mechanism", mechanism, "has a single output, so the chi-square test has 0 degrees of freedom at "
                "any n: a sampler of it is right exactly when every draw is that output (an invalid draw still fails "
                "goodness_of_fit)")
        found = n_needed(design, delta, alpha, target, max_n)
        if found is None:
            raise InvalidParameterError("max_n", max_n, f"power at TV {delta:g} stays below {target} up to {max_n} "
                                        "draws; raise max_n or delta")
        return found
    alt = _Alternative(design, lv, alternative, max_enumerate)
    # "nothing to detect" is decided on the finest bins (those of at least DEFAULT_MAX_N
    # draws): with a small max_n every level may share one bin, although more draws would
    # split them and see the alternative (then max_n is what is too small).  Per draw, the
    # noncentrality is sum (q - p)**2 / p over the bins: float rounding of a claimed table
    # leaves ~1e-32; 1e-20 (relative deviations of ~1e-10) is still "the same
    # probabilities".  A larger deviation is real: too small for max_n draws, not
    # undetectable (it used to be called "the same" up to relative deviations of ~1e-6).
    finest = max(max_n, DEFAULT_MAX_N)
    lam_finest, df_finest, plan_finest, *_ = alt.noncentrality(finest)
    p_r, q_r = alt.tail(plan_finest)  # more mass on the rare tail is seen by its exact test
    tail_seen = plan_finest.rare and q_r - float(p_r) > 1e-10 * float(p_r) + 1e-300
    if alt.outside <= 0 and not tail_seen and (df_finest <= 0 or lam_finest <= _SAME * finest):
        raise NothingToDetectError(
            "alternative", alternative,
            f"has the same probabilities as {mechanism!r} on every bin the test uses, up to float rounding "
            f"(even with {finest} draws: noncentrality {lam_finest:.3g}): there is nothing to detect, so no number "
            "of draws suffices",
        )
    lam = lam_finest if finest == max_n else alt.noncentrality(max_n)[0]
    if alt.power(max_n, alpha) < target:
        raise InvalidParameterError("max_n", max_n, f"power stays below {target} up to {max_n} draws "
                                    f"(noncentrality {lam:.3g} at {max_n}); raise max_n")
    found = search_n(lambda n: alt.power(n, alpha) >= target, max_n)
    assert found is not None
    return found
