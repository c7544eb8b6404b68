"""Brute force: exact levels and probabilities by enumerating every output.

This is the twin every fast path is tested against (DEVELOPERS.md, standard 2).  It
knows nothing about any mechanism's structure: give it the outputs and an exact utility.

>>> from itertools import permutations
>>> from exactdp.core.scale import Scale
>>> from fractions import Fraction
>>> counts = (2, 1, 0)
>>> util = lambda s: -max(c - counts[i] for c, i in zip(sorted(counts, reverse=True), s))
>>> brute_levels(permutations(range(3), 2), util)
(Level(utility=0, multiplicity=1), Level(utility=-1, multiplicity=3), Level(utility=-2, multiplicity=2))
>>> probs = brute_probabilities(permutations(range(3), 2), util, Scale(base=Fraction(1, 2)))
>>> probs[(0, 1)], sum(probs.values())
(Fraction(1, 3), Fraction(1, 1))
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Callable, Hashable, Iterable, TypeVar

from .lazy import sympy

from .aliases import ExactRational
from .levels import Level, Utility
from .scale import Scale

__all__ = ["brute_levels", "brute_probabilities", "brute_symbolic_probabilities"]

#: An output of the brute-force enumeration (any hashable value: tuples, frozensets, ...).
O = TypeVar("O", bound=Hashable)


def brute_levels(outputs: Iterable[O], utility: Callable[[O], Utility]) -> tuple[Level, ...]:
    """Distinct utilities with the number of outputs having each, best first: every output
    of the finite iterable ``outputs`` is visited once and its exact utility is
    ``utility(output)`` (a callable returning an int, Fraction or other ordered value)."""
    tally = Counter(utility(o) for o in outputs)
    return tuple(Level(u, m) for u, m in sorted(tally.items(), key=lambda kv: kv[0], reverse=True))


def brute_probabilities(
    outputs: Iterable[O], utility: Callable[[O], ExactRational], scale: Scale
) -> dict[O, Fraction]:
    """Exact exponential-mechanism probabilities as Fractions, ``{output: P(output)}`` over
    every output of ``outputs`` (a finite iterable), with exact utility ``utility(output)``
    and the weight of a unit of utility given by the :class:`~exactdp.core.scale.Scale`
    ``scale`` (needs a rational base and integral utility differences; ValueError
    otherwise)."""
    outs = list(outputs)
    utils = {o: utility(o) for o in outs}
    best = max(utils.values())
    weights = {o: scale.rational_weight_ratio(u - best) for o, u in utils.items()}
    if any(w is None for w in weights.values()):
        raise ValueError("brute_probabilities needs a rational base and integral utility gaps")
    z = sum(weights.values())
    return {o: w / z for o, w in weights.items()}


def brute_symbolic_probabilities(
    outputs: Iterable[O], utility: Callable[[O], ExactRational], scale: Scale
) -> dict[O, sympy.Expr]:
    """Exact exponential-mechanism probabilities as sympy expressions, ``{output: P(output)}``
    over every output of ``outputs`` (a finite iterable), with exact utility
    ``utility(output)`` and the weight of a unit of utility given by ``scale`` (any
    :class:`~exactdp.core.scale.Scale`)."""
    outs = list(outputs)
    utils = {o: utility(o) for o in outs}
    best = max(utils.values())
    weights = {o: scale.symbolic_weight(u - best) for o, u in utils.items()}
    z = sympy.Add(*weights.values())
    return {o: w / z for o, w in weights.items()}
