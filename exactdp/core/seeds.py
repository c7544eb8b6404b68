"""Seeds and random generators: the one way exactdp turns what a user passes as ``rng``
into a :class:`random.Random` it draws integer bits from (docs/definitions.md §1).

An int seed goes through an injective map onto the non-negative integers that leaves
``0 <= seed < 2**128`` unchanged (:func:`seed_to_nonnegative`): ``random.Random`` gives the
same samples for ``n`` and ``-n``, exactdp does not.  :func:`as_rng` refuses a generator
whose ``randrange`` CPython decides from floats.  :mod:`exactdp.core.validation`
re-exports these names, where they were first defined.

>>> as_rng(5).getrandbits(64) == random.Random(5).getrandbits(64)
True
"""

from __future__ import annotations

import operator
import random
from typing import SupportsIndex

from .aliases import RngLike
from ..errors import ArgumentTypeError

__all__ = ["as_rng", "random_from_seed", "seed_to_nonnegative", "SEED_BOUND"]


#: Seeds ``0 <= seed < SEED_BOUND`` are used as they are (``random.Random(seed)``).
SEED_BOUND = 2**128


def seed_to_nonnegative(seed: SupportsIndex, bound: int = SEED_BOUND) -> int:
    """A bijection from the ints onto the non-negative ints that ``random.Random`` is seeded
    with (it uses ``abs(seed)`` itself): ``0 <= seed < bound`` unchanged, ``seed >= bound`` to
    ``bound + 2*(seed - bound)``, ``seed < 0`` to ``bound + 2*(-seed) - 1``.

    >>> seed_to_nonnegative(5), seed_to_nonnegative(-1) == 2**128 + 1
    (5, True)
    """
    seed = operator.index(seed)
    if 0 <= seed < bound:
        return seed
    if seed >= bound:
        return bound + 2 * (seed - bound)
    return bound + 2 * (-seed) - 1


def random_from_seed(seed: SupportsIndex) -> random.Random:
    """``random.Random(seed_to_nonnegative(seed))``: distinct int seeds give distinct
    generators, and ``0 <= seed < 2**128`` gives exactly ``random.Random(seed)``.

    >>> random_from_seed(-5).random() == random_from_seed(5).random()
    False
    """
    return random.Random(seed_to_nonnegative(seed))


def _float_randbelow(cls: type) -> bool:
    """Whether ``randrange`` of instances of the :class:`random.Random` subclass ``cls``
    draws from floats: CPython gives a subclass the float-based ``_randbelow`` when, along
    its MRO, it meets an override of ``random()`` before one of ``getrandbits()``
    (``random.Random.__init_subclass__``)."""
    float_based = getattr(random.Random, "_randbelow_without_getrandbits", None)
    return float_based is not None and getattr(cls, "_randbelow", None) is float_based


def as_rng(rng: RngLike) -> random.Random:
    """A :class:`random.Random` from ``rng``: ``None`` (the OS generator), an int seed, or an instance.

    An int seed goes through :func:`seed_to_nonnegative` (an injective map): a seed
    ``0 <= n < 2**128`` gives exactly ``random.Random(n)``, and a negative seed another
    generator (``random.Random`` itself gives the same samples for ``n`` and ``-n``).
    Only ``getrandbits`` and ``randrange`` of the result are used: both are integer-valued,
    so samples are reproducible bit for bit from a seed on every platform.  A subclass
    whose ``randrange`` CPython builds from ``random()`` floats (it overrides ``random()``
    but not ``getrandbits()``) is refused with :class:`~exactdp.errors.ArgumentTypeError`.
    """
    if rng is None:
        return random.SystemRandom()
    if isinstance(rng, random.Random):
        if _float_randbelow(type(rng)):
            raise ArgumentTypeError(
                "rng", rng,
                "a random.Random subclass that overrides random() must also override getrandbits(): "
                "without it, its randrange() is decided by floats from random() (not exact past 2**53) and "
                "its getrandbits() ignores random(); exactdp draws from integer bits only",
            )
        return rng
    if isinstance(rng, bool) or type(rng).__name__ in ("bool_", "bool"):  # numpy's bools too
        raise ArgumentTypeError("rng", rng, "must be None, an int seed or a random.Random")
    try:
        seed = operator.index(rng)
    except TypeError:
        raise ArgumentTypeError(
            "rng", rng, "must be None, an int seed or a random.Random instance"
        ) from None
    return random_from_seed(seed)
