"""Set outputs of the sequence mechanisms by brute force: the k! orderings of every set.

``P(S) = sum over the orderings of S of P(sequence)``, from any table of exact sequence
probabilities (the twins of Joint, PNFJoint and Peeling), and the number of orderings of a
set at each Joint level by enumerating them.  Written from the definitions, never by
calling exactdp."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import permutations
from typing import Mapping, Sequence

from .joint import joint_utility


def set_marginal(sequence_probabilities: Mapping[tuple, Fraction]) -> dict[frozenset, Fraction]:
    """``{S: sum of P(σ) over the orderings σ of S}`` from ``{sequence: P(sequence)}``."""
    out: dict[frozenset, Fraction] = {}
    for seq, p in sequence_probabilities.items():
        key = frozenset(seq)
        out[key] = out.get(key, Fraction(0)) + p
    return out


def orderings_by_level(counts: Sequence[int], subset) -> Counter:
    """``{Joint utility -M: number of orderings of subset with that utility}``, by listing
    the ``k!`` orderings."""
    return Counter(joint_utility(counts, seq) for seq in permutations(sorted(subset)))
