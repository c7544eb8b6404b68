"""Type aliases of the public API: what each kind of argument accepts (validated at run
time by :mod:`exactdp.core.validation`, which names the argument and value of a bad input).

Only the standard library is imported here, so these aliases cost nothing at import time.
"""

from __future__ import annotations

import numbers
import random
from decimal import Decimal
from fractions import Fraction
from typing import (Any, Callable, FrozenSet, Iterable, Iterator, Mapping, Optional, Protocol, Sequence, SupportsFloat,
                    SupportsIndex, Tuple, Union)

__all__ = ["IntLike", "ExactRational", "CountsLike", "RationalLike", "OutputLike", "Output", "RngLike", "MechanismLike",
           "ProbabilityLike", "ClaimedTable", "ClaimedProbabilities", "SupportsProbability", "AlternativeLike",
           "SupportsRandomise"]

#: An integer: ``int``, numpy integer scalars, gmpy2 ``mpz`` (all ``SupportsIndex``); a
#: ``float`` or ``Decimal`` only when finite and integral.
IntLike = Union[SupportsIndex, float, Decimal]
#: An exact rational result (a loss, a numeric utility): an ``int`` when integral, else a
#: ``Fraction``.
ExactRational = Union[int, Fraction]
#: A count vector: any finite one-dimensional iterable of integers (numpy arrays included).
CountsLike = Iterable[IntLike]
#: An exact rational parameter (epsilon, base, sensitivity, rho, delta): ``int``,
#: ``Fraction``, a decimal or ``"p/q"`` string (``"0.1"`` is exactly 1/10), sympy
#: ``Rational`` (a ``numbers.Rational``), or a ``float``/``Decimal`` taken at its exact value.
RationalLike = Union[int, Fraction, numbers.Rational, str, float, Decimal]
#: An output given by the caller: an iterable of item ids (any order for sets).
OutputLike = Iterable[SupportsIndex]
#: An output returned by a mechanism: a tuple of item ids in selection order (sequence
#: mechanisms) or a frozenset of item ids (set mechanisms).
Output = Union[Tuple[int, ...], FrozenSet[int]]
#: Randomness for ``sample``: ``None`` (the OS generator), an int seed, or a ``random.Random``.
RngLike = Optional[Union[SupportsIndex, random.Random]]



class MechanismLike(Protocol):
    """Any exactdp mechanism object: what the oracle reads of it, the public API of every
    :class:`~exactdp.core.mechanism.Mechanism` subclass (CanonicalGamma1 included: it has
    probability groups but no utility levels), documented there.  A protocol, so that this
    module imports no mechanism: the class provides it."""

    counts: Tuple[int, ...]
    d: int
    k: int
    output_kind: str

    def groups(self) -> Sequence[Any]: ...
    def group_index(self, output: OutputLike) -> int:
        """The index of the group of ``output``."""
        ...

    def group_output_probabilities(self, dps: Optional[int] = None) -> Sequence[Tuple[Any, Any]]:
        """Every group with one output's probability, to ``dps`` digits."""
        ...

    def outputs(self, max_outputs: Optional[int] = None) -> Iterator[Output]:
        """Every output, refused past ``max_outputs``."""
        ...

    def probability(self, output: OutputLike, dps: Optional[int] = None) -> Any:
        """The probability of ``output`` to ``dps`` digits."""
        ...

    def probability_exact(self, output: OutputLike) -> Any:
        """The exact probability of ``output``."""
        ...

    @property
    def table(self) -> Any: ...
    def support_size(self) -> int: ...
    def sample(self, rng: RngLike = None) -> Output:
        """One draw from ``rng``."""
        ...



#: A probability (or log-probability) given by the caller: a ``float``, an ``int``, a
#: ``Fraction``/``Decimal``, numpy floats, ``mpmath.mpf``, a sympy number (all
#: ``SupportsFloat``), or a string ``mpmath.mpf`` parses.
ProbabilityLike = Union[SupportsFloat, str]
#: Claimed probabilities of outputs: a mapping ``output -> value`` (keys: tuples of item
#: ids, frozensets for set mechanisms, numpy integers allowed) or a callable
#: ``output -> value`` (called with an :data:`Output`).  The mapping's key type is ``Any``
#: on purpose: ``Mapping`` is invariant in its keys, so any narrower key type would reject
#: valid tables such as a ``dict[tuple[int, int], float]``; keys are validated at run time.
ClaimedTable = Mapping[Any, ProbabilityLike]
ClaimedProbabilities = Union[ClaimedTable, Callable[[Output], ProbabilityLike]]


class SupportsProbability(Protocol):
    """An object with a ``probability(output)`` method (e.g. another mechanism)."""

    def probability(self, output: Output, /) -> SupportsFloat:
        """The probability of ``output``."""


#: A wrong distribution to compute a test's power against: a mapping
#: ``output -> probability``, a callable ``output -> probability``, or an object with
#: ``.probability(output)``.
AlternativeLike = Union[ClaimedProbabilities, SupportsProbability]


class SupportsRandomise(Protocol):
    """A diffprivlib-style mechanism: ``randomise(*args, **kwargs)`` returns one output.
    Its arguments and its raw output belong to the third-party library (converted to item
    ids at run time), hence ``object``."""

    def randomise(self, *args: object, **kwargs: object) -> object:
        """One draw; ``args`` and ``kwargs`` are the library's own."""
