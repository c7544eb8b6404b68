"""Steps every walk-through shares: the ranking, levels with their probabilities, one level draw.

Each function reads a mechanism through its own methods (``levels()``,
``level_probabilities(dps)``, ``level_output_probabilities(dps)``, the rule's exact values
and its ``sample_level``) and returns a :class:`~exactdp.teaching.explanation.Step`.
Certified numbers are shown as decimal strings of ``digits`` significant digits, each
certified by python-flint arb balls (relative error at most ``10**-digits``); exact ones as
``int`` and ``Fraction``.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any, Optional

from flint import arb

from ..core.formatting import number_text
from ..core.mechanism import Mechanism
from ..errors import ExactDPError
from ..core.precision import certify_many
from ..rules.permute_and_flip import PermuteAndFlip
from .explanation import RecordingRandom, Step, Table

__all__ = ["JOINT_PAPER", "certified", "exact_fraction", "ranking_step", "probability_step", "level_draw_step",
           "sample_check", "uniform_bits", "summary_step", "decimal_text"]

#: The Joint paper (Joint, PNFJoint and the peeling baselines).
JOINT_PAPER = ("A Joint Exponential Mechanism for Differentially Private Top-k",
               "Gillenwater, Joseph, Munoz Medina, Ribero, ICML 2022", "arXiv:2201.12333")


def certified(x: Any, digits: int) -> str:
    """A certified ``mpf``, ``x``, as a decimal string of ``digits`` significant digits."""
    return number_text(x, digits, strip_zeros=False)


def exact_fraction(expr: Any) -> Optional[Fraction]:
    """``expr``, a sympy Rational (or Integer), as a ``Fraction``; ``None`` for anything else."""
    if getattr(expr, "is_Rational", False):
        return Fraction(int(expr.p), int(expr.q))
    return None


def ranking_step(m: Mechanism, notation: str = "c_(1) >= ... >= c_(d)") -> Step:
    """The sorted counts of mechanism ``m`` with their item ids (ranks 1-based, ties by the
    smaller id); ``notation``: the step's formula as the paper writes it."""
    rows = tuple((j + 1, m.ranking.order[j], c) for j, c in enumerate(m.ranking.sorted_counts))
    return Step("ranking", notation,
                "Sort the items by count, largest first (ties: the smaller item id first); "
                "rank j is 1-based as in the paper.",
                (("ranking", Table(("j", "item", "c_(j)"), rows)),))


def _exact_outputs(m: Mechanism) -> Optional[list[Fraction]]:
    """Exact probability of one output of each level, when every one is a rational (a
    rational ``base`` and integral utility gaps)."""
    if m.base is None:
        return None
    try:
        out = [exact_fraction(m.rule.output_probability_exact(m.table, a)) for a in range(len(m.table))]
    except ExactDPError:  # no closed form this size: the certified values stand alone
        return None
    return None if None in out else out  # type: ignore[return-value]


def probability_step(m: Mechanism, digits: int, weight: str, text: str) -> Step:
    """Every level of mechanism ``m`` with its probabilities certified to ``digits``
    significant digits (and, with a rational base, exact); ``weight`` (the weight
    formula) and ``text`` (the step's sentence) are shown as given."""
    levels = m.levels()
    per_level = [p for _, p in m.level_probabilities(digits)]
    per_output = [p for _, p in m.level_output_probabilities(digits)]
    exact = _exact_outputs(m)
    columns = ["u", "m(u)", "P(level)", "P(one output)"]
    if exact is not None:
        columns += ["P(level) exact", "P(one output) exact"]
    rows = []
    for a, lv in enumerate(levels):
        row: list[Any] = [lv.utility, lv.multiplicity, certified(per_level[a], digits), certified(per_output[a], digits)]
        if exact is not None:
            row += [exact[a] * lv.multiplicity, exact[a]]
        rows.append(tuple(row))
    data: list[tuple[str, Any]] = [("weight", weight), ("digits", digits), ("probabilities", Table(tuple(columns), tuple(rows)))]
    return Step("probabilities", "P(level u) = m(u) P(one output of u)", text, tuple(data))


def _level_balls(m: Mechanism) -> list[arb]:
    """Enclosures of the level probabilities at flint's current precision."""
    table = m.table
    if isinstance(m.rule, PermuteAndFlip):
        return list(m.rule._enclosures(table)[1])
    total = table.total()
    return [w / total for w in table.level_weights()]


def uniform_bits(calls: list[tuple[str, int, int]]) -> tuple[int, int]:
    """``(u, n)``: the ``getrandbits`` results of ``calls`` read as one ``n``-bit prefix of
    ``U`` (the samplers refine ``U`` by appending bits)."""
    u, n = 0, 0
    for name, bits, value in calls:
        if name == "getrandbits":
            u, n = (u << bits) | value, n + bits
    return u, n


def level_draw_step(m: Mechanism, rec: RecordingRandom, digits: int, line: str) -> tuple[Step, int]:
    """One exact level draw by the own rule of mechanism ``m`` (``rule.sample_level``) from
    the recording generator ``rec``, with the random integers it used and the cumulative
    bounds (certified to ``digits`` digits) that decided it; ``line`` (the paper's line)
    starts the step's sentence.  Returns the step and the level index drawn."""
    mark = len(rec.calls)
    a = m.rule.sample_level(m.table, rec)
    u, n = uniform_bits(rec.calls[mark:])
    levels = m.levels()

    def cumulative() -> list[arb]:
        out, run = [], arb(0)
        for ball in _level_balls(m):
            run += ball
            out.append(run)
        return out

    cum = certify_many(cumulative, digits, extra_bits=2 * len(levels).bit_length() + 8)
    low, high = decimal_text(Fraction(u, 1 << n), digits), decimal_text(Fraction(u + 1, 1 << n), digits, up=True)
    data: list[tuple[str, Any]] = [("random integers", rec.since(mark))]
    if n:
        data.append(("U lies in", f"[{low}, {high}]: the {n} bits drawn are u = {u}, U in [u, u+1) / 2^{n}"))
    data += [("cumulative", Table(("u", "C(u) = P(level >= u)"),
                                  tuple((lv.utility, certified(c, digits)) for lv, c in zip(levels, cum)))),
             ("level drawn", levels[a].utility)]
    text = (f"{line} Exact inverse-CDF draw: U in [0, 1) is read from the generator's bits (64, then "
            "32 more whenever needed), and the level is the first whose cumulative probability "
            "certainly exceeds U, decided on certified enclosures (no float decides)."
            + ("" if n else " There is only one level, so no bit is drawn."))
    return Step("sample_level", "u ~ P(level u)", text, tuple(data)), a


def decimal_text(x: Fraction, places: int, up: bool = False) -> str:
    """``x`` to ``places`` decimals, rounded down (``up``: up), exactly."""
    scaled = x * 10**places
    q = scaled.numerator // scaled.denominator
    if up and q * scaled.denominator != scaled.numerator:
        q += 1
    sign, q = ("-", -q) if q < 0 else ("", q)
    whole, frac = divmod(q, 10**places)
    return f"{sign}{whole}.{frac:0{places}d}"


def sample_check(m: Mechanism, state: object, drawn: Any) -> bool:
    """Whether ``m.sample`` from a generator in ``state`` draws ``drawn`` (the walk-through
    followed the mechanism's own route)."""
    gen = random.Random()
    gen.setstate(state)  # type: ignore[arg-type]
    return m.sample(gen) == drawn


def summary_step(m: Any, drawn: Any, seed: Optional[int], same: Optional[bool], sampler: str = "mechanism.sample") -> Step:
    """The output ``drawn`` from mechanism ``m`` (with its utility), the ``seed`` that
    repeats it (``None``: not shown), and ``same``, whether ``sampler`` (the mechanism's
    own, or the named twin) draws it from the same generator (``None``: the walk-through
    took an equivalent route, so it may not)."""
    data: list[tuple[str, Any]] = [("sample", drawn), ("utility", m.utility(drawn))]
    if seed is not None:
        data.append(("seed", seed))
    if same is not None:
        data.append((f"equals {sampler} with the same generator", same))
        text = f"The walk-through followed the sampler of {sampler}, so it drew what that draws."
    else:
        text = ("The walk-through drew by an exactly equivalent route (same law, not the same "
                "random integers), so sample() with the same seed may draw another output.")
    return Step("sample", "the output", text, tuple(data))
