"""A black-box lower bound on a real sampler's epsilon from its draws, at events chosen from the exact law.

:func:`lower_bound_from_draws` (exported by :mod:`exactdp.audit`) audits a third-party
sampler that claims to implement an exactdp mechanism on two neighbouring datasets.  It
never asks the sampler for a probability: it draws ``n`` outputs from each side, counts
how many fall in one event ``E``, and turns the two counts into a lower bound on the
epsilon of the sampler's *real* law, valid at the stated confidence whatever that law is.

**The event, from the exact models only, before any draw.**  Search-based auditors
(DP-Sniper, StatDP, DP-Auditorium) find a distinguishing event from samples and pay for it
in draws and in the validity of their confidence.  exactdp knows the law the sampler
claims, so it fixes the event first.  For pure epsilon the candidates are the super-level
sets ``E_t = {o : ln P_a(o) / P_b(o) >= t}`` of the exact privacy-loss random variable, at
every threshold ``t`` the pair attains, in both directions (``b`` over ``a`` too).  The
outputs of one cell of the pair (:func:`exactdp._oracle.cells.pair_cells`: one group under
``a``, one under ``b``) share one loss, so an event is a union of cells, and its exact
``p_a = P_a(E)``, ``p_b = P_b(E)`` are sums of certified cell masses.  Two thresholds whose
certified values overlap at the working precision (``dps + 10`` digits) are one threshold.
The rule that picks one candidate (:func:`plan_event`): the largest *planned bound*, the
bound :func:`lower_bound_from_counts` would give if the counts were their expectations
``n p_a`` and ``n p_b`` (the Clopper-Pearson quantiles continued to real counts: Beta
quantiles), ties to the higher threshold and to ``a`` over ``b``.  The planned bound costs
some fifty evaluations of the incomplete beta function, so the candidates (at most
:data:`MAX_THRESHOLDS` thresholds per direction, the highest) are first screened by the
same bound with Wilson's score interval in place of Clopper-Pearson's (Wilson, "Probable
inference, the law of succession, and statistical inference", JASA 1927), in mpmath at 30
digits, and the :data:`SCORED` best of them get the planned bound.  With
``epsilon=`` given (approximate DP) the event is the delta-carrying set ``{o : ln P_a(o) /
P_b(o) > epsilon}`` of the direction with the larger planned ``delta`` bound.  The scores
are computed in arb at a fixed precision, so the same models and ``n`` give the same event
on every machine; they choose the event only, and any event fixed before the draws gives a
valid bound (below), so their rounding never touches the coverage.

**The bound.**  With ``X_a ~ Binomial(n, q_a)`` and ``X_b ~ Binomial(n, q_b)`` the two
counts (``q`` the sampler's real probabilities of ``E``, unknown), ``alpha = 1 -
confidence``: ``L_a`` is the one-sided Clopper-Pearson lower bound of ``q_a`` at level
``alpha / 2`` and ``U_b`` the upper bound of ``q_b`` at ``alpha / 2`` (Clopper and
Pearson, "The use of confidence or fiducial limits illustrated in the case of the
binomial", Biometrika 1934).  Then

    ``epsilon_lower = max(0, ln(L_a / U_b))``, ``delta_lower = max(0, L_a - e^epsilon U_b)``.

*Coverage* (a union bound).  ``P(L_a > q_a) <= alpha / 2`` and ``P(U_b < q_b) <= alpha / 2``
(each one-sided Clopper-Pearson bound is exact-conservative), so with probability at least
``1 - alpha`` both ``L_a <= q_a`` and ``U_b >= q_b`` hold.  If the sampler is
``epsilon*``-DP then ``q_a <= e^epsilon* q_b`` for every event, so ``L_a / U_b <=
e^epsilon*`` and ``epsilon_lower <= epsilon*``; if it is ``(epsilon, delta*)``-DP then
``q_a - e^epsilon q_b <= delta*`` and ``delta_lower <= delta*``.  This holds for any event
fixed before the draws (here: from the models only) and needs no independence between the
two sides beyond each count being binomial.  The bound is therefore ``> epsilon*`` in at
most ``1 - confidence`` of repeated runs (tested by simulation in
``tests/oracle/engine/test_draws.py``).

*Exactness.*  ``L_a`` and ``U_b`` are dyadic rationals found by bisection with arb's
certified regularised incomplete beta function (``P(Binomial(n, p) >= x) = I_p(x, n - x +
1)``): ``L_a`` is a point where ``I_p(x_a, n - x_a + 1) < alpha / 2`` is *proven*, so
``L_a`` is at most the exact Clopper-Pearson bound; ``U_b`` a point where ``I_p(x_b + 1,
n - x_b) > 1 - alpha / 2`` is proven, so at least it.  The logarithm (and ``e^epsilon``)
are arb balls, and the reported bounds are their lower ends: outward throughout, so the
reported bound is never above the exact Clopper-Pearson one.

**Verdict** against a claimed epsilon (default the model's own, :func:`exactdp.audit.claimed_epsilon`):
``"violated"`` when ``epsilon_lower`` exceeds it (decided exactly: the bound is a dyadic
rational), else ``"no evidence"`` with :func:`draws_to_detect`: the ``n`` at which a
sampler spending ``claim + excess`` on this event is caught with probability at least 1/4
(see there).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence, Union

import mpmath
from flint import arb, fmpz

from .cells import Pair, pair_cells
from .groups import Groups
from .samplers import Sampler, SamplerLike, SeedLike, as_sampler, as_seed  # noqa: F401 (Sampler: SamplerLike's hint)
from .worst import claimed_epsilon
from .ids import IdMap
from ..core._lazy import sympy
from ..core._typing import MechanismLike, Output, RationalLike
from ..core.formatting import exact_text, json_scalar, output_ids, output_text
from ..core.precision import dyadic_mpf as exact_mpf, flint_workprec, mp_workdps, mpf_fraction as as_fraction, \
    mpf_man_exp, prec_for_dps, rational_ball
from ..core.results import NoTruthValue
from ..core.validation import as_dps, as_positive_int, as_rational
from ..errors import ArgumentTypeError, ExactDPError, InvalidOutputError, InvalidParameterError

__all__ = ["DrawsBound", "lower_bound_from_draws", "lower_bound_from_counts", "draws_to_detect", "plan_event",
           "PlannedEvent", "clopper_pearson", "MAX_THRESHOLDS", "SCORED", "DEFAULT_DRAWS", "floor_text", "ceil_text",
           "as_fraction", "exact_mpf"]

#: Thresholds screened per direction when the event is planned (the highest ones).
MAX_THRESHOLDS = 64
#: Candidates (the best by the Wilson screen) that get the planned Clopper-Pearson bound.
SCORED = 4
#: :func:`lower_bound_from_draws` draws this many outputs from each sampler unless told otherwise.
DEFAULT_DRAWS = 20_000
#: Working precision (bits) of the certified Clopper-Pearson quantiles (raised once if undecided).
_PREC = 128
#: Bisection steps of the certified quantiles (relative accuracy about 2**-50) and of the
#: planning scores (about 2**-20: they only rank events).
_STEPS, _PLAN_STEPS = 60, 26
#: The logit range searched (|ln(p / (1 - p))| <= 60: p within e^-60 of 0 or 1 is not told apart at
#: the working precision): quantiles beyond it are reported as 0 (lower) or 1 (upper),
#: which are valid bounds.
_LOGIT = 60.0
#: Draws per call of a sampler (the progress bar moves between chunks).
_CHUNK = 2000


# =====================================================================================
# Clopper-Pearson, certified
# =====================================================================================


def _quantile(a: Any, b: Any, level: Fraction, side: str, steps: int) -> Fraction:
    """A dyadic point ``p`` bracketing the ``level`` quantile of ``Beta(a, b)`` from one side.

    ``side="below"``: ``I_p(a, b) < level`` is proven at ``p`` (so ``p`` is at most the
    quantile); ``"above"``: ``I_p(a, b) > level`` is proven (``p`` at least the quantile).
    ``a``, ``b`` are ints or (planning) rationals.  Bisection in the logit of ``p``, the
    midpoints Python floats taken at their exact binary value (they only choose where to
    look: each decision is made on a certified ball, at :data:`_PREC` bits and then twice
    that; a point still undecided counts as failing, which only moves the answer outward).
    """
    def ball(x: Any) -> Callable[[], arb]:
        return lambda: rational_ball(x) if isinstance(x, Fraction) else arb(x)

    lvl = level

    def decide(p: Fraction) -> Optional[bool]:
        """True: p is on the answer side (proven); False: proven on the other; None: undecided."""
        for prec in (_PREC, 2 * _PREC):
            with flint_workprec(prec):
                v = rational_ball(p).beta_lower(ball(a)(), ball(b)(), regularized=1)
                target = rational_ball(lvl)
                if side == "below":
                    if v < target:
                        return True
                    if v > target:
                        return False
                else:
                    if v > target:
                        return True
                    if v < target:
                        return False
        return None

    # answer side: "below" -> small p (logit -> -inf); "above" -> large p (logit -> +inf).
    # Start at the mean a / (a + b) and step outward in doubling steps to bracket the
    # quantile (arb's incomplete beta loses its accuracy far out in the tails, so the
    # search stays near the quantile); then bisect.
    sign = -1.0 if side == "below" else 1.0
    mean = float(Fraction(a) / (Fraction(a) + Fraction(b)))
    start = max(-_LOGIT, min(_LOGIT, math.log(mean) - math.log1p(-mean))) if 0 < mean < 1 else 0.0
    step = 0.25
    if decide(_logistic(start)):
        good, best, bad = start, _logistic(start), None
        while bad is None:  # toward the other side until the point is proven on it
            point = good - sign * step
            if abs(point) >= _LOGIT:
                bad = -sign * _LOGIT
            elif decide(_logistic(point)):
                good, best = point, _logistic(point)
            else:
                bad = point
            step *= 2
    else:
        bad, good, best = start, None, None
        while good is None:
            point = bad + sign * step
            if abs(point) >= _LOGIT:
                return Fraction(0) if side == "below" else Fraction(1)
            if decide(_logistic(point)):
                good, best = point, _logistic(point)
            else:
                bad = point
            step *= 2
    for _ in range(steps):
        mid = (good + bad) / 2
        p = _logistic(mid)
        if p == best:
            break
        if decide(p):
            good, best = mid, p
        else:
            bad = mid
    return best


def _logistic(s: float) -> Fraction:
    """``1 / (1 + e^-s)`` to float accuracy, as an exact dyadic rational; near 1 as ``1 - q``
    with ``q`` a float, so points next to 1 are told apart as finely as points next to 0."""
    if s < 0:
        return Fraction(1.0 / (1.0 + math.exp(-s)))
    return 1 - Fraction(1.0 / (1.0 + math.exp(s)))


def clopper_pearson(count: int, n: int, alpha: RationalLike, side: str) -> Fraction:
    """The one-sided Clopper-Pearson bound at level ``alpha`` for ``count`` successes in
    ``n`` trials, rounded outward to a dyadic rational: ``side="lower"`` gives ``L <=
    p_L`` where ``P(Binomial(n, p_L) >= count) = alpha`` (``0`` for ``count = 0``);
    ``"upper"`` gives ``U >= p_U`` where ``P(Binomial(n, p_U) <= count) = alpha`` (``1`` for
    ``count = n``).  ``P(L > p) <= alpha`` and ``P(U < p) <= alpha`` for every ``p``.

    >>> from exactdp._oracle.draws import ceil_text, floor_text
    >>> low, up = clopper_pearson(5, 10, Fraction(1, 40), "lower"), clopper_pearson(5, 10, Fraction(1, 40), "upper")
    >>> floor_text(low, 6), ceil_text(up, 6)  # the 95% two-sided interval of 5 in 10
    ('0.187086', '0.812914')
    """
    n = as_positive_int(n, "n")
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= n:
        raise InvalidParameterError("count", count, f"must be an integer in [0, n = {n}]")
    level = as_rational(alpha, "alpha")
    if not 0 < level < 1:
        raise InvalidParameterError("alpha", alpha, "must be in (0, 1)")
    if side not in ("lower", "upper"):
        raise InvalidParameterError("side", side, "must be 'lower' or 'upper'")
    return _cp(count, n, level, side)


_CP_CACHE: dict[tuple[int, int, Fraction, str], Fraction] = {}


def _cp(count: int, n: int, level: Fraction, side: str) -> Fraction:
    key = (count, n, level, side)
    found = _CP_CACHE.get(key)
    if found is None:
        if side == "lower":
            found = Fraction(0) if count == 0 else _quantile(count, n - count + 1, level, "below", _STEPS)
        else:
            found = Fraction(1) if count == n else _quantile(count + 1, n - count, 1 - level, "above", _STEPS)
        if len(_CP_CACHE) > 100_000:
            _CP_CACHE.clear()
        _CP_CACHE[key] = found
    return found


def _planned_cp(mean: Fraction, n: int, level: Fraction, side: str) -> Fraction:
    """:func:`clopper_pearson` continued to a real count ``mean`` in ``[0, n]`` (Beta
    quantiles with real parameters), to about :data:`_PLAN_STEPS` bits: a planning score."""
    if side == "lower":
        if mean <= 0:
            return Fraction(0)
        return _quantile(mean, n - mean + 1, level, "below", _PLAN_STEPS)
    if mean >= n:
        return Fraction(1)
    return _quantile(mean + 1, n - mean, 1 - level, "above", _PLAN_STEPS)


def _ln_lower(x: Fraction, y: Fraction) -> Optional[Fraction]:
    """The lower end of a ball containing ``ln(x / y)`` as a dyadic rational; None when
    ``x == 0`` (minus infinity)."""
    if x == 0:
        return None
    with flint_workprec(_PREC):
        ball = (rational_ball(x) / rational_ball(y)).log()
        return _mid_fraction(ball.lower())


def _delta_lower(low_a: Fraction, up_b: Fraction, epsilon: Fraction) -> Fraction:
    """A dyadic rational at most ``low_a - e^epsilon up_b`` (clipped at 0)."""
    with flint_workprec(_PREC):
        ball = rational_ball(low_a) - rational_ball(epsilon).exp() * rational_ball(up_b)
        value = _mid_fraction(ball.lower())
    return max(Fraction(0), value)


def lower_bound_from_counts(count_a: int, count_b: int, n: int, confidence: RationalLike = Fraction(19, 20),
                            epsilon: Optional[RationalLike] = None) -> tuple[Fraction, Optional[Fraction]]:
    """``(epsilon_lower, delta_lower)`` from ``count_a`` of ``n`` draws of one sampler and
    ``count_b`` of ``n`` of the other in one event fixed before the draws (the module
    docstring: Clopper-Pearson per side at ``(1 - confidence) / 2``, a union bound);
    ``delta_lower`` is ``None`` unless ``epsilon`` is given.  Both are dyadic rationals
    (exact ``mpmath.mpf`` values), at most the exact Clopper-Pearson values, clipped at 0.

    >>> from exactdp._oracle.draws import as_fraction, floor_text
    >>> eps, _ = lower_bound_from_counts(9_000, 1_000, 20_000)
    >>> floor_text(as_fraction(eps), 6)
    '2.12137'
    """
    n = as_positive_int(n, "n")
    for name, x in (("count_a", count_a), ("count_b", count_b)):
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= n:
            raise InvalidParameterError(name, x, f"must be an integer in [0, n = {n}]")
    alpha = 1 - _confidence(confidence)
    low_a, up_b = _cp(count_a, n, alpha / 2, "lower"), _cp(count_b, n, alpha / 2, "upper")
    eps = _ln_lower(low_a, up_b)
    eps_lower = Fraction(0) if eps is None else max(Fraction(0), eps)
    if epsilon is None:
        return exact_mpf(eps_lower), None
    return exact_mpf(eps_lower), exact_mpf(_delta_lower(low_a, up_b, _epsilon(epsilon)))


def _confidence(confidence: RationalLike) -> Fraction:
    c = as_rational(confidence, "confidence")
    if not 0 < c < 1:
        raise InvalidParameterError("confidence", confidence, "must be strictly between 0 and 1")
    return c


def _epsilon(epsilon: RationalLike) -> Fraction:
    e = as_rational(epsilon, "epsilon")
    if e < 0:
        raise InvalidParameterError("epsilon", epsilon, "must be >= 0")
    return e


# =====================================================================================
# The event, from the exact models
# =====================================================================================


@dataclass(frozen=True)
class PlannedEvent(NoTruthValue):
    """The event :func:`plan_event` fixes before any draw.

    ``direction`` ``"a>b"`` (outputs where ``P_a / P_b`` is large; the bound is on
    ``ln P_a(E) / P_b(E)``) or ``"b>a"``; ``threshold``: the least ``ln`` ratio in the
    event (certified, ``dps`` digits); ``cells``: its ``(group under a, group under b)``
    pairs; ``outputs``: its exact number of outputs; ``witness``: one output of it (of
    its first cell in that order);
    ``p_a``, ``p_b``: its exact probabilities under the two models (certified to ``dps``
    digits); ``planned``: the planned bound at this ``n`` (epsilon, or delta with
    ``epsilon`` given); ``model_loss``: the models' exact pure privacy loss (the largest
    ``|ln P_a(o) / P_b(o)|``), certified."""

    direction: str
    threshold: mpmath.mpf
    cells: frozenset
    outputs: int
    witness: Output
    p_a: mpmath.mpf
    p_b: mpmath.mpf
    planned: Fraction
    model_loss: mpmath.mpf
    n: int
    epsilon: Optional[Fraction] = None

    _truth_hint = ".p_a, .p_b or .planned"

    @property
    def event_epsilon(self) -> mpmath.mpf:
        """``ln(P_a(E) / P_b(E))`` in the event's direction under the models (``dps`` digits)."""
        first, second = (self.p_a, self.p_b) if self.direction == "a>b" else (self.p_b, self.p_a)
        if not second:
            return mpmath.inf
        with mp_workdps(mpmath.mp.dps + 10):
            return mpmath.log(first / second)


def _cells_with_losses(a: MechanismLike, b: MechanismLike, dps: int, max_outputs: int) -> tuple[Pair, list]:
    """Per cell: ``(cell, P ball, Q ball, loss ball or +-inf marker)`` at ``dps + 10`` digits."""
    for name, m in (("a", a), ("b", b)):
        if not (hasattr(m, "groups") and hasattr(m, "group_index")):
            raise ArgumentTypeError(name, m, "must be an exactdp mechanism (the law the sampler claims), e.g. "
                                    "exactdp.Joint(counts, k, epsilon=...)")
    pair = pair_cells(a, b, dps, max_outputs)
    digits = dps + 10
    rows = []
    with flint_workprec(prec_for_dps(digits)):
        for cell, (pa, pb) in zip(pair.cells, pair.balls(digits)):
            if pa is None:
                loss: Any = "-inf"
            elif pb is None:
                loss = "+inf"
            else:
                loss = pa.log() - pb.log()
            rows.append((cell, pa, pb, loss))
    return pair, rows


def _classes(rows: list, sign: int, prec: int) -> list[list]:
    """Rows of one direction (loss times ``sign``) grouped by loss value, highest first:
    infinite first, then finite losses sorted by midpoint, consecutive overlapping balls merged."""
    inf_key, minus = ("+inf", "-inf") if sign > 0 else ("-inf", "+inf")
    top = [r for r in rows if r[3] == inf_key]
    finite = [r for r in rows if not isinstance(r[3], str)]
    keyed = sorted(finite, key=lambda r: _mid_fraction(r[3]) * -sign)
    classes: list[list] = [top] if top else []
    for r in keyed:
        if classes and classes[-1] is not top and _overlaps(classes[-1][-1][3], r[3], prec):
            classes[-1].append(r)
        else:
            classes.append([r])
    bottom = [r for r in rows if r[3] == minus]
    if bottom:
        classes.append(bottom)
    return classes


def _mid_fraction(ball: arb) -> Fraction:
    man, exp = ball.mid().man_exp()
    man, exp = int(man), int(exp)
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def _overlaps(x: arb, y: arb, prec: int) -> bool:
    with flint_workprec(prec):
        return bool(x.overlaps(y))


def plan_event(a: MechanismLike, b: MechanismLike, n: int = DEFAULT_DRAWS, confidence: RationalLike = Fraction(19, 20),
               epsilon: Optional[RationalLike] = None, *, dps: Optional[int] = None,
               max_outputs: int = 200_000) -> PlannedEvent:
    """The event :func:`lower_bound_from_draws` uses for ``n`` draws per side at
    ``confidence``, from the exact models ``a`` and ``b`` only (the rule in the module
    docstring); with ``epsilon``, the delta-carrying set at that epsilon.  ``dps``: the
    certified digits of the models' probabilities (default 30); ``max_outputs``: as in
    :func:`exactdp.audit.privacy_loss`.

    >>> import exactdp
    >>> e = plan_event(exactdp.Joint([6, 5, 3, 0], 2, epsilon=1), exactdp.Joint([7, 5, 3, 0], 2, epsilon=1), 20_000)
    >>> e.direction, e.outputs, sorted(e.cells)
    ('a>b', 6, [(1, 1), (3, 2), (5, 4)])
    """
    n = as_positive_int(n, "n")
    alpha = 1 - _confidence(confidence)
    eps = None if epsilon is None else _epsilon(epsilon)
    digits = as_dps(dps)
    _, rows = _cells_with_losses(a, b, digits, as_positive_int(max_outputs, "max_outputs"))
    prec = prec_for_dps(digits + 10)
    with flint_workprec(prec):
        finite = [abs(r[3]) for r in rows if not isinstance(r[3], str)]
        infinite = any(isinstance(r[3], str) for r in rows)
        model_loss = mpmath.inf if infinite else _mpf(max(finite, key=lambda x: _mid_fraction(x)) if finite else arb(0))
    listed = []  # (direction, rows, pa, pb, the larger side's mass, the other's), thresholds descending
    for direction, sign in (("a>b", 1), ("b>a", -1)):
        classes = _classes(rows, sign, prec)
        if eps is not None:
            chosen = _delta_classes(classes, eps, sign, prec)
            candidates = [chosen] if chosen else []
        else:
            candidates = [[r for c in classes[:j + 1] for r in c] for j in range(min(len(classes) - 1, MAX_THRESHOLDS))]
        for event_rows in candidates:
            pa, pb = _masses(event_rows, prec)
            first, second = (pa, pb) if sign > 0 else (pb, pa)
            listed.append((direction, event_rows, pa, pb, first, second))
    if len(listed) > SCORED:
        screen = [_wilson_score(c[4], c[5], n, alpha, eps) for c in listed]
        keep = sorted(sorted(range(len(listed)), key=lambda i: -screen[i])[:SCORED])  # stable: ties to the earlier
        listed = [listed[i] for i in keep]
    best: Optional[tuple] = None
    for direction, event_rows, pa, pb, first, second in listed:
        score = _planned(first, second, n, alpha, eps)
        if best is None or score > best[0]:
            best = (score, direction, event_rows, pa, pb)
    if best is None:  # no candidate: equal laws, or (with epsilon) no loss proven above epsilon
        pa, pb = _masses(rows, prec)
        best = (Fraction(0), "a>b", rows, pa, pb)
    score, direction, event_rows, pa, pb = best
    sign = 1 if direction == "a>b" else -1
    with flint_workprec(prec):  # the least loss in the event (infinite when all are)
        finite_losses = [r[3] * sign for r in event_rows if not isinstance(r[3], str)]
        threshold = _mpf(min(finite_losses, key=_mid_fraction)) if finite_losses else mpmath.inf
        p_a, p_b = _mpf(pa), _mpf(pb)
    cells = frozenset((r[0].ga, r[0].gb) for r in event_rows)
    first_row = min(event_rows, key=lambda r: tuple((g is None, g or 0) for g in (r[0].ga, r[0].gb)))
    return PlannedEvent(direction, threshold, cells, sum(r[0].outputs for r in event_rows), first_row[0].witness,
                        p_a, p_b, score, model_loss, n, eps)


def _mpf(ball: arb) -> mpmath.mpf:
    from ..core.precision import ball_to_mpf

    return ball_to_mpf(ball)


def _delta_classes(classes: list[list], eps: Fraction, sign: int, prec: int) -> list:
    """The rows whose loss (times ``sign``) is proven above ``eps`` (an undecided one, equal
    to ``eps`` in truth or too close to tell, adds nothing to delta either way: left out)."""
    out = []
    with flint_workprec(prec):
        e = rational_ball(eps)
        for c in classes:
            for r in c:
                loss = r[3]
                if isinstance(loss, str):
                    if (loss == "+inf") == (sign > 0):
                        out.append(r)
                elif loss * sign > e:
                    out.append(r)
    return out


def _masses(rows: list, prec: int) -> tuple[arb, arb]:
    with flint_workprec(prec):
        pa, pb = arb(0), arb(0)
        for cell, x, y, _ in rows:
            if x is not None:
                pa += x * cell.outputs
            if y is not None:
                pb += y * cell.outputs
        return pa, pb


def _planned(first: arb, second: arb, n: int, alpha: Fraction, eps: Optional[Fraction]) -> Fraction:
    """The planned bound: :func:`lower_bound_from_counts` at the expected counts ``n p``
    (real, rounded to 40 bits: a score)."""
    mean_a = _rounded(first * n, n)
    mean_b = _rounded(second * n, n)
    low = _planned_cp(mean_a, n, alpha / 2, "lower")
    up = _planned_cp(mean_b, n, alpha / 2, "upper")
    if eps is not None:
        return _delta_lower(low, up, eps)
    value = _ln_lower(low, up)
    return Fraction(-10**9) if value is None else value


def _wilson_score(first: arb, second: arb, n: int, alpha: Fraction, eps: Optional[Fraction]) -> mpmath.mpf:
    """The screen of :func:`plan_event`: the planned bound with Wilson's score interval
    (``z`` the ``1 - alpha/2`` normal quantile) in place of Clopper-Pearson's, in mpmath at 30
    digits (a ranking only)."""
    with mp_workdps(30):
        z = mpmath.sqrt(2) * mpmath.erfinv(1 - mpmath.mpf(alpha.numerator) / alpha.denominator)
        ends = []
        for ball, side in ((first, -1), (second, 1)):
            p = min(max(_mpf(ball), mpmath.mpf(0)), mpmath.mpf(1))
            centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
            half = z / (1 + z**2 / n) * mpmath.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
            ends.append(min(max(centre + side * half, mpmath.mpf(0)), mpmath.mpf(1)))
        low, up = ends
        if eps is not None:
            return low - mpmath.exp(mpmath.mpf(eps.numerator) / eps.denominator) * up
        return mpmath.log(low / up) if low > 0 else mpmath.mpf(-10**9)


def _rounded(ball: arb, n: int) -> Fraction:
    value = _mid_fraction(ball)
    value = Fraction(round(value * 2**40), 2**40)
    return min(max(value, Fraction(0)), Fraction(n))


# =====================================================================================
# n needed
# =====================================================================================


def draws_to_detect(event: PlannedEvent, claim: RationalLike, excess: RationalLike,
                    confidence: RationalLike = Fraction(19, 20), *, limit: int = 10**12) -> Optional[int]:
    """The draws per side at which a sampler that spends ``claim + excess`` on ``event`` is
    reported as violating ``claim`` with probability at least 1/4: the alternative keeps the
    model probability ``q_1 = p`` of the event's larger side and has ``q_2 = p
    e^-(claim + excess)`` on the other.  ``confidence`` is that of the bound.

    Exact binomial reasoning: the reported bound increases with the count ``X_1`` and
    decreases with ``X_2``, and a median ``m`` of ``Binomial(n, q)`` lies in ``[floor(n q),
    ceil(n q)]`` with ``P(X >= floor(n q)) >= 1/2`` and ``P(X <= ceil(n q)) >= 1/2``.  So when
    the bound at the counts ``floor(n q_1)`` and ``ceil(n q_2)`` exceeds the claim, the two
    samplers' independent counts reach at least that far with probability at least
    ``1/2 * 1/2``.  That bound is checked with the Clopper-Pearson quantiles rounded outward
    (to about 2**-20; looser than the reported bound's, so a pass here is a pass there) and the
    counts rounded outward from certified balls.  The ``n`` is found by doubling and
    bisection to 0.1% (the check is monotone in ``n`` up to the rounding of the counts) and
    given to 3 significant digits, rounded up.  ``None`` when not found below ``limit`` (or
    ``p`` is 0)."""
    c, x = as_rational(claim, "claim"), as_rational(excess, "excess")
    if x <= 0:
        raise InvalidParameterError("excess", excess, "must be positive")
    alpha = 1 - _confidence(confidence)
    p = event.p_a if event.direction == "a>b" else event.p_b
    if not p:
        return None
    with flint_workprec(_PREC):
        man, exp = mpf_man_exp(mpmath.mpf(p))
        first = arb(fmpz(int(man))) * arb(2) ** int(exp)
        second = first * (-rational_ball(c + x)).exp()

    def caught(m: int) -> bool:
        with flint_workprec(_PREC):
            x_1 = max(0, int((first * m).lower().floor().unique_fmpz()))
            x_2 = min(m, int((second * m).upper().ceil().unique_fmpz()))
        if x_1 == 0:
            return False
        low = _quantile(x_1, m - x_1 + 1, alpha / 2, "below", _PLAN_STEPS)
        up = Fraction(1) if x_2 >= m else _quantile(x_2 + 1, m - x_2, 1 - alpha / 2, "above", _PLAN_STEPS)
        value = _ln_lower(low, up)
        return value is not None and value > c

    lo, hi = 1, 16
    while not caught(hi):
        lo, hi = hi, hi * 4
        if hi > limit:
            return None
    while hi - lo > max(1, hi // 1000):
        mid = (lo + hi) // 2
        if caught(mid):
            hi = mid
        else:
            lo = mid
    digits = len(str(hi)) - 3
    if digits > 0:
        hi = -(-hi // 10**digits) * 10**digits
    return hi


# =====================================================================================
# Draws
# =====================================================================================


@dataclass(frozen=True)
class DrawsBound(NoTruthValue):
    """A lower bound on a sampler pair's epsilon (or delta) from ``n`` draws per side.

    - ``epsilon_lower``: ``max(0, ln(L / U))`` (a dyadic rational as an exact ``mpf``, at most the exact
      Clopper-Pearson value); ``delta_lower``: ``max(0, L - e^epsilon U)`` when
      ``epsilon`` was given, else None;
    - ``event``: the :class:`PlannedEvent` (fixed from the models before drawing, with its
      exact ``p_a``, ``p_b`` under the claimed law); ``count_a``, ``count_b``: draws of
      each sampler in it, of ``n``;
    - ``lower``, ``upper``: the Clopper-Pearson bounds of the larger side's and the other
      side's probabilities of the event; ``confidence``; ``method``;
    - ``claim``: the epsilon compared with (pure) or the delta (with ``epsilon``);
      ``verdict``: ``"violated"`` when the lower bound exceeds it, else ``"no evidence"``;
      ``n_needed``: with ``"no evidence"``, :func:`draws_to_detect` of ``excess``;
    - ``seed``: the integer the draws were seeded from (None: unseeded); ``seed_note``:
      why a sampler ignores it (OpenDP), else None.
    """

    epsilon_lower: mpmath.mpf
    delta_lower: Optional[mpmath.mpf]
    epsilon: Optional[Fraction]
    event: PlannedEvent
    n: int
    count_a: int
    count_b: int
    lower: mpmath.mpf
    upper: mpmath.mpf
    confidence: Fraction
    claim: Union[Fraction, sympy.Expr]
    verdict: str
    excess: Optional[Fraction]
    n_needed: Optional[int]
    seed: Optional[int]
    seed_note: Optional[str] = None
    method: str = "Clopper-Pearson per side at (1 - confidence)/2 each (Bonferroni), outward-rounded"

    _truth_hint = ".passed or .verdict ('violated' or 'no evidence')"

    @property
    def passed(self) -> bool:
        """True when the draws show no violation of the claim (verdict ``"no evidence"``)."""
        return self.verdict != "violated"

    def summary(self, digits: int = 6) -> str:
        """The bound, its event and its verdict as lines of text (bounds rounded down, the
        other values rounded, to ``digits`` significant digits)."""
        e = self.event
        what = (f"epsilon >= {floor_text(as_fraction(self.epsilon_lower), digits)}" if self.epsilon is None else
                f"delta at epsilon {exact_text(self.epsilon)} >= "
                f"{floor_text(as_fraction(self.delta_lower), digits)}")
        lines = [
            f"lower bound at confidence {exact_text(self.confidence)}: {what}",
            f"event ({e.direction}): {e.outputs} outputs, ln ratio >= {_text(e.threshold, digits)}, "
            f"e.g. {output_text(e.witness)}",
            f"  draws in it: a {self.count_a} / {self.n}, b {self.count_b} / {self.n}",
            f"  exact under the claimed law: P_a = {_text(e.p_a, digits)}, P_b = {_text(e.p_b, digits)}; "
            f"model loss {_text(e.model_loss, digits)}",
            f"claim {_claim_text(self.claim)}: {self.verdict}",
        ]
        if self.verdict != "violated" and self.excess is not None:
            needed = "not found" if self.n_needed is None else f"{self.n_needed:,}"
            lines.append(f"  draws per side to catch (probability >= 1/4) a sampler spending claim + "
                         f"{exact_text(self.excess)} on this event: {needed}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def to_json(self, digits: int = 15) -> dict[str, object]:
        """The result as JSON values: exact rationals as text, certified values to ``digits`` digits."""
        e = self.event
        return {
            "epsilon_lower": floor_text(as_fraction(self.epsilon_lower), digits),
            "epsilon_lower_exact": exact_text(as_fraction(self.epsilon_lower)),
            "delta_lower": None if self.delta_lower is None else floor_text(as_fraction(self.delta_lower), digits),
            "epsilon": None if self.epsilon is None else exact_text(self.epsilon),
            "n": self.n, "count_a": self.count_a, "count_b": self.count_b,
            "lower": floor_text(as_fraction(self.lower), digits), "upper": ceil_text(as_fraction(self.upper), digits),
            "confidence": exact_text(self.confidence), "method": self.method,
            "event": {"direction": e.direction, "outputs": e.outputs, "witness": output_ids(e.witness),
                      "threshold": json_scalar(e.threshold, digits), "p_a": json_scalar(e.p_a, digits),
                      "p_b": json_scalar(e.p_b, digits), "model_loss": json_scalar(e.model_loss, digits),
                      "cells": sorted(([ga, gb] for ga, gb in e.cells), key=lambda c: [(x is None, x or 0) for x in c])},
            "claim": _claim_text(self.claim), "verdict": self.verdict,
            "excess": None if self.excess is None else exact_text(self.excess), "n_needed": self.n_needed,
            "seed": self.seed, "seed_note": self.seed_note,
        }


def _claim_text(claim: Any) -> str:
    return exact_text(claim) if isinstance(claim, (int, Fraction)) else str(claim)


def _text(x: mpmath.mpf, digits: int) -> str:
    from ..core.formatting import number_text

    return number_text(x, digits)


def floor_text(x: Fraction, digits: int) -> str:
    """``x`` rounded *down* to ``digits`` significant digits, as decimal text (a lower bound
    stays a lower bound when printed).

    >>> floor_text(Fraction(2, 3), 3), floor_text(Fraction(-2, 3), 3), floor_text(Fraction(0), 3)
    ('0.666', '-0.667', '0')
    """
    return _directed_text(Fraction(x), digits, math.floor)


def ceil_text(x: Fraction, digits: int) -> str:
    """``x`` rounded *up* to ``digits`` significant digits (an upper bound stays one)."""
    return _directed_text(Fraction(x), digits, math.ceil)


def _directed_text(x: Fraction, digits: int, rounding: Callable[[Fraction], int]) -> str:
    if x == 0:
        return "0"
    e = 0
    ax = abs(x)
    while ax >= 10:
        ax /= 10
        e += 1
    while ax < 1:
        ax *= 10
        e -= 1
    scale = digits - 1 - e  # keep `digits` significant digits: x * 10**scale is an integer after rounding
    m = rounding(x * Fraction(10) ** scale)
    text = str(abs(m))
    if scale > 0:
        text = text.rjust(scale + 1, "0")
        text = text[:-scale] + "." + text[-scale:]
        text = text.rstrip("0").rstrip(".")
    else:
        text = text + "0" * (-scale)
    return ("-" if m < 0 else "") + text


def _model_form(mechanism: Any) -> Callable[[Any], Output]:
    if getattr(mechanism, "output_kind", "sequence") == "set":
        return lambda o: frozenset(int(i) for i in o)
    return lambda o: tuple(int(i) for i in o)


def _space_text(m: Any) -> str:
    kind = getattr(m, "output_kind", "sequence")
    return f"{kind}s of k = {m.k} distinct item ids in 0..{m.d - 1}"


def _count(draws: Sequence[Any], groups_a: Groups, groups_b: Groups, cells: frozenset, form: Callable[[Any], Output],
           argument: str, offset: int) -> int:
    """How many ``draws`` fall in the event; a draw outside the models' output space is an
    :class:`~exactdp.errors.InvalidOutputError` naming the sampler and the draw."""
    inside = 0
    known: dict[Any, bool] = {}
    for i, raw in enumerate(draws):
        try:
            o = form(raw)
            hit = known.get(o)
            if hit is None:
                hit = known[o] = (groups_a.index(o), groups_b.index(o)) in cells
        except (ExactDPError, TypeError, ValueError) as err:
            reason = getattr(err, "reason", str(err))
            raise InvalidOutputError(argument, raw, f"draw {offset + i + 1} is not an output of the model: "
                                     f"{reason} (the model's outputs are {_space_text(groups_a.mechanism)})") from None
        inside += hit
    return inside


def lower_bound_from_draws(
    sampler_a: SamplerLike,
    sampler_b: SamplerLike,
    a: MechanismLike,
    b: MechanismLike,
    n: int = DEFAULT_DRAWS,
    confidence: RationalLike = Fraction(19, 20),
    rng: SeedLike = None,
    epsilon: Optional[RationalLike] = None,
    *,
    claim: Optional[Union[RationalLike, sympy.Expr]] = None,
    excess: Optional[RationalLike] = None,
    data_a: object = None,
    data_b: object = None,
    id_map: Optional[IdMap] = None,
    takes_rng: Optional[bool] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    dps: Optional[int] = None,
    max_outputs: int = 200_000,
) -> DrawsBound:
    """A lower bound on the epsilon of a real sampler pair from ``n`` draws of each, with
    the event chosen from the exact models ``a`` and ``b`` before any draw (the module
    docstring: the rule, the Clopper-Pearson bounds with a Bonferroni split, the proof of
    coverage: the bound exceeds the sampler's true epsilon in at most ``1 - confidence`` of
    runs, whatever the sampler does).

    ``sampler_a``, ``sampler_b``: third-party samplers for the two neighbouring datasets,
    anything :func:`exactdp.testing.as_sampler` accepts (a callable returning one output,
    an object with ``randomise``, an OpenDP measurement, an exactdp mechanism), with
    ``data_a`` / ``data_b`` (called as ``fn(data)`` or ``fn(data, rng)``), ``id_map`` and
    ``takes_rng`` as there; ``a``, ``b``: the exactdp mechanisms they claim to implement.
    ``rng``: an int seed, a ``random.Random`` or ``numpy.random.Generator`` (one integer
    drawn from it), or None (unseeded); the two samplers get independent seeds derived
    from it, ``n`` draws each in chunks (``progress(done, 2 n)`` after each chunk).

    ``epsilon``: audit approximate DP at that epsilon: ``delta_lower`` bounds the
    sampler's delta from below, on the delta-carrying set.  ``claim``: the epsilon to
    compare with (pure; default the model's, :func:`exactdp.audit.claimed_epsilon` of
    ``a``) or the delta (with ``epsilon``; default 0).  ``excess`` (default: the claim;
    with ``epsilon``, ignored): the excess whose detection :func:`draws_to_detect` sizes
    when the verdict is ``"no evidence"``.  ``dps``: the certified digits of the models'
    probabilities (default 30); ``max_outputs``: as in :func:`exactdp.audit.privacy_loss`
    (the pair's output orbits, refused past it).
    """
    count = as_positive_int(n, "n")
    conf = _confidence(confidence)
    eps = None if epsilon is None else _epsilon(epsilon)
    event = plan_event(a, b, count, conf, eps, dps=dps, max_outputs=max_outputs)
    if eps is None:
        claimed = claimed_epsilon(a) if claim is None else _claim(claim)
    else:
        claimed = Fraction(0) if claim is None else as_rational(claim, "claim")
        if not 0 <= claimed < 1:
            raise InvalidParameterError("claim", claim, "a claimed delta must be in [0, 1)")
    s_a = as_sampler(sampler_a, data_a, id_map=id_map, takes_rng=takes_rng)
    s_b = as_sampler(sampler_b, data_b, id_map=id_map, takes_rng=takes_rng)
    seed = as_seed(rng)
    streams = [random.Random(seed * 2 + side) if seed is not None else None for side in (0, 1)]
    groups_a, groups_b = Groups(a, as_dps(dps)), Groups(b, as_dps(dps))
    form = _model_form(a)
    counts = []
    done = 0
    for side, (sampler, stream, name) in enumerate(((s_a, streams[0], "sampler_a"), (s_b, streams[1], "sampler_b"))):
        inside = 0
        left = count
        while left:
            size = min(_CHUNK, left)
            chunk_seed = None if stream is None else stream.getrandbits(63)
            draws = sampler.draw(size, chunk_seed)
            if len(draws) != size:
                raise InvalidOutputError(name, len(draws), f"returned {len(draws)} draws when asked for {size}")
            inside += _count(draws, groups_a, groups_b, event.cells, form, name, count - left)
            left -= size
            done += size
            if progress is not None:
                progress(done, 2 * count)
        counts.append(inside)
    x_a, x_b = counts
    first, second = (x_a, x_b) if event.direction == "a>b" else (x_b, x_a)
    alpha = 1 - conf
    low, up = _cp(first, count, alpha / 2, "lower"), _cp(second, count, alpha / 2, "upper")
    value = _ln_lower(low, up)
    eps_lower = Fraction(0) if value is None else max(Fraction(0), value)
    delta_lower = None if eps is None else _delta_lower(low, up, eps)
    if eps is None:
        violated = _exceeds(eps_lower, claimed)
    else:
        violated = delta_lower > claimed
    verdict = "violated" if violated else "no evidence"
    extra = None
    needed = None
    if eps is None:
        extra = _excess(claimed) if excess is None else as_rational(excess, "excess")
        if verdict != "violated":
            needed = draws_to_detect(event, _claim_fraction(claimed), extra, conf)
    note = s_a.seed_note or s_b.seed_note
    return DrawsBound(exact_mpf(eps_lower), None if delta_lower is None else exact_mpf(delta_lower), eps, event,
                      count, x_a, x_b, exact_mpf(low), exact_mpf(up), conf, claimed, verdict,
                      extra, needed, seed, note)


def _claim(value: Any) -> Any:
    if isinstance(value, sympy.Basic) and not getattr(value, "is_Rational", False):
        return value
    q = as_rational(value, "claim")
    if q <= 0:
        raise InvalidParameterError("claim", value, "a claimed epsilon must be positive")
    return q


def _claim_fraction(claim: Any) -> Fraction:
    """A rational at least ``claim`` (a sympy claim, from above to 30 digits)."""
    if isinstance(claim, Fraction):
        return claim
    return Fraction(str(sympy.N(claim, 40))) + Fraction(1, 10**30)


def _excess(claim: Any) -> Fraction:
    return _claim_fraction(claim)


def _exceeds(bound: Fraction, claim: Any) -> bool:
    """``bound > claim``, exactly (a sympy claim compared by sympy's certified evaluation)."""
    if isinstance(claim, Fraction):
        return bound > claim
    return bool(sympy.Rational(bound.numerator, bound.denominator) > claim)
