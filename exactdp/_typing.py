"""Type aliases of the public API: what each kind of argument accepts (validated at run
time by :mod:`exactdp.validation`, which names the argument and value of a bad input).

Only the standard library is imported here, so these aliases cost nothing at import time.
"""

from __future__ import annotations

import numbers
import random
from decimal import Decimal
from fractions import Fraction
from typing import FrozenSet, Iterable, Optional, SupportsIndex, Tuple, Union

__all__ = ["IntLike", "CountsLike", "RationalLike", "OutputLike", "Output", "RngLike"]

#: An integer: ``int``, numpy integer scalars, gmpy2 ``mpz`` (all ``SupportsIndex``); a
#: ``float`` or ``Decimal`` only when finite and integral.
IntLike = Union[SupportsIndex, float, Decimal]
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
