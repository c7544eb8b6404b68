"""A black-box lower bound on a real sampler's epsilon from its draws, at an event chosen from the exact law.

:func:`lower_bound_from_draws` (exported by :mod:`exactdp.audit`) audits a third-party
sampler that claims to implement an exactdp mechanism on two neighbouring datasets: it
draws ``n`` outputs per side, counts those in one event ``E`` fixed before any draw from the
exact models (:mod:`.events`), and turns the two counts into a lower bound on the epsilon (or,
with ``epsilon=``, the delta) of the sampler's *real* law, valid at the stated confidence
whatever that law is (:mod:`.clopper_pearson`).  :class:`DrawsBound` carries the verdict
against the claim (default the model's own): ``"violated"`` when the bound exceeds it
(decided exactly: the bound is a dyadic rational), else ``"no evidence"`` with the draws
that would catch an excess.  The derivation and the coverage proof are in docs/audit.md
("A lower bound from a sampler's draws").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence, Union
import math
import random

import mpmath

from ..core.lazy import sympy
from ..core.aliases import MechanismLike, Output, RationalLike
from ..core.formatting import exact_text, json_scalar, output_ids, output_text
from ..core.precision import dyadic_mpf as exact_mpf, mpf_fraction as as_fraction
from ..core.results import NoTruthValue
from ..core.validation import as_dps, as_positive_int, as_rational
from ..errors import ExactDPError, InvalidOutputError, InvalidParameterError
from .clopper_pearson import as_confidence, cp_bound, delta_lower_bound, epsilon_argument, ln_lower
from .events import DEFAULT_DRAWS, PlannedEvent, draws_to_detect, plan_event
from .groups import Groups
from .ids import IdMap
from .samplers import Sampler, SamplerLike, SeedLike, as_sampler, as_seed  # noqa: F401 (Sampler: SamplerLike's hint)
from .worst import claimed_epsilon

__all__ = ["DrawsBound", "floor_text", "ceil_text", "lower_bound_from_draws"]


#: Draws per call of a sampler (the progress bar moves between chunks).
_CHUNK = 2000


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
    conf = as_confidence(confidence)
    eps = None if epsilon is None else epsilon_argument(epsilon)
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
    low, up = cp_bound(first, count, alpha / 2, "lower"), cp_bound(second, count, alpha / 2, "upper")
    value = ln_lower(low, up)
    eps_lower = Fraction(0) if value is None else max(Fraction(0), value)
    delta_lower = None if eps is None else delta_lower_bound(low, up, eps)
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
