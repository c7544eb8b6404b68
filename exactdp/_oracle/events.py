"""The event of a draws audit, fixed from the exact models before any draw.

For pure epsilon the candidates are the super-level sets ``E_t = {o : ln P_a(o)/P_b(o) >= t}``
of the exact privacy-loss variable, in both directions; an event is a union of cells of the
pair (:func:`~exactdp._oracle.cells.pair_cells`), its ``P_a(E)``, ``P_b(E)`` sums of certified
cell masses.  :func:`plan_event` picks the candidate with the largest *planned bound* (the
bound at the expected counts), after a screen by Wilson's score interval (Wilson, "Probable
inference, the law of succession, and statistical inference", JASA 1927); with ``epsilon=``
the delta-carrying set.  :func:`draws_to_detect` is the ``n`` at which a sampler spending
``claim + excess`` on the event is caught with probability at least 1/4.  The scores are
arb at a fixed precision, so one event on every machine; they choose the event only, never
the coverage.  Derivation: docs/audit.md ("A lower bound from a sampler's draws").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

import mpmath
from flint import arb, fmpz

from ..core.aliases import MechanismLike, Output, RationalLike
from ..core.precision import flint_workprec, mp_workdps, mpf_man_exp, prec_for_dps, rational_ball
from ..core.results import NoTruthValue
from ..core.validation import as_dps, as_positive_int, as_rational
from ..errors import ArgumentTypeError, InvalidParameterError
from .cells import Pair, pair_cells
from .clopper_pearson import PLAN_STEPS, PREC, as_confidence, cp_quantile, delta_lower_bound, epsilon_argument, ln_lower, mid_fraction, planned_cp

__all__ = ["MAX_THRESHOLDS", "SCORED", "DEFAULT_DRAWS", "PlannedEvent", "plan_event", "draws_to_detect"]


#: Thresholds screened per direction when the event is planned (the highest ones).
MAX_THRESHOLDS = 64


#: Candidates (the best by the Wilson screen) that get the planned Clopper-Pearson bound.
SCORED = 4


#: :func:`lower_bound_from_draws` draws this many outputs from each sampler unless told otherwise.
DEFAULT_DRAWS = 20_000


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
    keyed = sorted(finite, key=lambda r: mid_fraction(r[3]) * -sign)
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
    alpha = 1 - as_confidence(confidence)
    eps = None if epsilon is None else epsilon_argument(epsilon)
    digits = as_dps(dps)
    _, rows = _cells_with_losses(a, b, digits, as_positive_int(max_outputs, "max_outputs"))
    prec = prec_for_dps(digits + 10)
    with flint_workprec(prec):
        finite = [abs(r[3]) for r in rows if not isinstance(r[3], str)]
        infinite = any(isinstance(r[3], str) for r in rows)
        model_loss = mpmath.inf if infinite else _mpf(max(finite, key=lambda x: mid_fraction(x)) if finite else arb(0))
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
        threshold = _mpf(min(finite_losses, key=mid_fraction)) if finite_losses else mpmath.inf
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
    low = planned_cp(mean_a, n, alpha / 2, "lower")
    up = planned_cp(mean_b, n, alpha / 2, "upper")
    if eps is not None:
        return delta_lower_bound(low, up, eps)
    value = ln_lower(low, up)
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
    value = mid_fraction(ball)
    value = Fraction(round(value * 2**40), 2**40)
    return min(max(value, Fraction(0)), Fraction(n))


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
    alpha = 1 - as_confidence(confidence)
    p = event.p_a if event.direction == "a>b" else event.p_b
    if not p:
        return None
    with flint_workprec(PREC):
        man, exp = mpf_man_exp(mpmath.mpf(p))
        first = arb(fmpz(int(man))) * arb(2) ** int(exp)
        second = first * (-rational_ball(c + x)).exp()

    def caught(m: int) -> bool:
        with flint_workprec(PREC):
            x_1 = max(0, int((first * m).lower().floor().unique_fmpz()))
            x_2 = min(m, int((second * m).upper().ceil().unique_fmpz()))
        if x_1 == 0:
            return False
        low = cp_quantile(x_1, m - x_1 + 1, alpha / 2, "below", PLAN_STEPS)
        up = Fraction(1) if x_2 >= m else cp_quantile(x_2 + 1, m - x_2, 1 - alpha / 2, "above", PLAN_STEPS)
        value = ln_lower(low, up)
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
