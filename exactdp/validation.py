"""Input validation shared by every mechanism (docs/definitions.md §1).

Each ``as_*`` function takes what a user may pass and returns the exact value exactdp
works with, or raises an :mod:`exactdp.errors` error naming the argument and the value.

>>> as_counts([3, 2.0, 2])
(3, 2, 2)
>>> as_epsilon("0.1")
Fraction(1, 10)
>>> as_epsilon(0.5)
Fraction(1, 2)
>>> as_k(2, 3)
2
>>> as_k(4, 3)
Traceback (most recent call last):
...
exactdp.errors.InvalidParameterError: k=4: must satisfy 1 <= k <= d = 3
"""

from __future__ import annotations

import decimal
import math
import numbers
import operator
import random
from fractions import Fraction
from typing import Any, Iterable

from .errors import (
    ArgumentTypeError,
    InvalidCountsError,
    InvalidOutputError,
    InvalidParameterError,
)

__all__ = [
    "as_counts",
    "as_k",
    "as_rational",
    "as_epsilon",
    "as_base",
    "as_sensitivity",
    "as_dps",
    "as_rng",
    "as_sequence_output",
    "as_set_output",
    "as_positive_int",
    "as_nonnegative_int",
    "DEFAULT_DPS",
]

#: Default number of certified significant decimal digits (docs/definitions.md §3).
DEFAULT_DPS = 30


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or type(x).__name__ in ("bool_", "bool")


def _as_int(x: Any, argument: str, where: str = "") -> int:
    """An exact Python int from an integral value; floats only if finite and integral."""
    label = f"{argument}{where}"
    if _is_bool(x):
        raise ArgumentTypeError(label, x, "booleans are not accepted as integers")
    if isinstance(x, float) or type(x).__module__ == "numpy" and "float" in type(x).__name__:
        xf = float(x)
        if math.isnan(xf) or math.isinf(xf):
            raise InvalidCountsError(label, x, "must be finite") if argument == "counts" else \
                InvalidParameterError(label, x, "must be finite")
        if not xf.is_integer():
            err = InvalidCountsError if argument == "counts" else InvalidParameterError
            raise err(label, x, "must be an integer (a float is accepted only if integral)")
        return int(xf)
    if isinstance(x, (str, bytes)):
        raise ArgumentTypeError(label, x, "must be an integer, not a string")
    try:
        return operator.index(x)
    except TypeError:
        pass
    if isinstance(x, numbers.Rational) and x.denominator == 1:
        return int(x.numerator)
    if isinstance(x, decimal.Decimal) and x.is_finite() and x == x.to_integral_value():
        return int(x)
    if isinstance(x, (Fraction, numbers.Rational, decimal.Decimal)):
        err = InvalidCountsError if argument == "counts" else InvalidParameterError
        raise err(label, x, "must be an integer")
    raise ArgumentTypeError(label, x, f"must be an integer, not {type(x).__name__}")


def as_counts(counts: Any) -> tuple[int, ...]:
    """Validate a count vector (docs/definitions.md §1) and return it as a tuple of Python ints.

    Accepts any finite one-dimensional sequence of integers: Python ints, numpy integer
    scalars or arrays, gmpy2 ``mpz``, and floats that are finite and integral.  Rejects
    booleans, NaN, infinities, non-integral values, strings, nested sequences and empty
    input, naming the offending position.
    """
    if counts is None or isinstance(counts, (str, bytes, dict, set, frozenset)):
        raise ArgumentTypeError("counts", counts, "must be a sequence of integers")
    shape = getattr(counts, "shape", None)
    if shape is not None and len(shape) != 1:
        raise InvalidCountsError("counts", counts, f"must be one-dimensional, got shape {tuple(shape)}")
    try:
        items = list(counts)
    except TypeError:
        raise ArgumentTypeError("counts", counts, "must be a sequence of integers") from None
    if not items:
        raise InvalidCountsError("counts", counts, "must not be empty")
    out = []
    for position, value in enumerate(items):
        if isinstance(value, (list, tuple)) or getattr(value, "shape", ()) not in ((), None):
            raise InvalidCountsError(f"counts[{position}]", value, "must be a scalar integer")
        out.append(_as_int(value, "counts", f"[{position}]"))
    return tuple(out)


def as_positive_int(value: Any, argument: str) -> int:
    """An int >= 1."""
    n = _as_int(value, argument)
    if n < 1:
        raise InvalidParameterError(argument, value, "must be a positive integer")
    return n


def as_nonnegative_int(value: Any, argument: str) -> int:
    """An int >= 0."""
    n = _as_int(value, argument)
    if n < 0:
        raise InvalidParameterError(argument, value, "must be a non-negative integer")
    return n


def as_k(k: Any, d: int) -> int:
    """Validate ``k`` against the number of items ``d``: an integer with 1 <= k <= d."""
    kk = _as_int(k, "k")
    if not 1 <= kk <= d:
        raise InvalidParameterError("k", k, f"must satisfy 1 <= k <= d = {d}")
    return kk


def as_rational(value: Any, argument: str) -> Fraction:
    """An exact rational from int, Fraction, decimal string, Decimal, sympy Rational or float.

    A float is taken at its exact binary value (``0.1`` is not ``1/10``; pass ``"0.1"``).
    NaN and infinities are rejected with :class:`~exactdp.errors.InvalidParameterError`;
    other types with :class:`~exactdp.errors.ArgumentTypeError`.
    """
    if _is_bool(value):
        raise ArgumentTypeError(argument, value, "booleans are not accepted")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        try:
            result = Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise InvalidParameterError(
                argument, value, "must be a finite number such as '0.1', '1/2' or '2'"
            ) from None
        return result
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise InvalidParameterError(argument, value, "must be finite")
        return Fraction(value)
    if isinstance(value, float) or (type(value).__module__ == "numpy" and "float" in type(value).__name__):
        f = float(value)
        if math.isnan(f) or math.isinf(f):
            raise InvalidParameterError(argument, value, "must be finite")
        return Fraction(f)
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    # sympy numbers are not registered with the numbers ABCs.
    if getattr(value, "is_Rational", False):
        return Fraction(int(value.p), int(value.q))
    if getattr(value, "is_Float", False):
        if not value.is_finite:
            raise InvalidParameterError(argument, value, "must be finite")
        # A sympy Float is a binary number: take its exact value (its str() is rounded to
        # decimal digits, so Fraction(str(value)) would turn Float(0.1) into 1/10).
        sign, man, exp, _ = value._mpf_
        exact = Fraction(int(man) * 2**exp) if exp >= 0 else Fraction(int(man), 2**-exp)
        return -exact if sign else exact
    try:
        return Fraction(operator.index(value))
    except TypeError:
        pass
    sympy_nan = type(value).__name__ == "NaN" and type(value).__module__.startswith("sympy")
    if getattr(value, "is_infinite", False) or getattr(value, "is_nan", False) or sympy_nan:
        raise InvalidParameterError(argument, value, "must be finite")
    raise ArgumentTypeError(
        argument, value, f"must be an int, Fraction, decimal string or float, not {type(value).__name__}"
    )


def as_epsilon(epsilon: Any) -> Fraction:
    """Validate the privacy parameter: a positive, finite exact rational."""
    eps = as_rational(epsilon, "epsilon")
    if eps <= 0:
        raise InvalidParameterError("epsilon", epsilon, "must be positive")
    return eps


def as_base(base: Any) -> Fraction:
    """Validate a weight base: an exact rational with 0 < base < 1."""
    b = as_rational(base, "base")
    if not 0 < b < 1:
        raise InvalidParameterError("base", base, "must satisfy 0 < base < 1")
    return b


def as_sensitivity(sensitivity: Any) -> Fraction:
    """Validate the utility sensitivity: a positive, finite exact rational."""
    s = as_rational(sensitivity, "sensitivity")
    if s <= 0:
        raise InvalidParameterError("sensitivity", sensitivity, "must be positive")
    return s


def as_dps(dps: Any) -> int:
    """``None`` -> the default (30); otherwise an integer number of digits, 1 <= dps <= 10**5."""
    if dps is None:
        return DEFAULT_DPS
    n = _as_int(dps, "dps")
    if not 1 <= n <= 100_000:
        raise InvalidParameterError("dps", dps, "must satisfy 1 <= dps <= 100000")
    return n


def as_rng(rng: Any) -> random.Random:
    """A :class:`random.Random` from ``None`` (the OS generator), an int seed, or an instance.

    Only ``getrandbits`` and ``randrange`` of the result are used: both are integer-valued,
    so samples are reproducible bit for bit from a seed on every platform.
    """
    if rng is None:
        return random.SystemRandom()
    if isinstance(rng, random.Random):
        return rng
    if _is_bool(rng):
        raise ArgumentTypeError("rng", rng, "must be None, an int seed or a random.Random")
    try:
        seed = operator.index(rng)
    except TypeError:
        raise ArgumentTypeError(
            "rng", rng, "must be None, an int seed or a random.Random instance"
        ) from None
    return random.Random(seed)


def _output_ids(output: Any, d: int, k: int) -> list[int]:
    if output is None or isinstance(output, (str, bytes, dict)):
        raise ArgumentTypeError("output", output, "must be an iterable of item ids")
    try:
        items = list(output)
    except TypeError:
        raise ArgumentTypeError("output", output, "must be an iterable of item ids") from None
    if len(items) != k:
        raise InvalidOutputError("output", output, f"must contain exactly k = {k} item ids, got {len(items)}")
    ids = []
    for position, value in enumerate(items):
        if _is_bool(value):
            raise ArgumentTypeError(f"output[{position}]", value, "item ids must be integers")
        try:
            item = operator.index(value)
        except TypeError:
            raise ArgumentTypeError(f"output[{position}]", value, "item ids must be integers") from None
        if not 0 <= item < d:
            raise InvalidOutputError(f"output[{position}]", value, f"unknown item id (items are 0..{d - 1})")
        ids.append(item)
    if len(set(ids)) != len(ids):
        seen = set()
        for position, item in enumerate(ids):
            if item in seen:
                raise InvalidOutputError(f"output[{position}]", item, "repeats an item id")
            seen.add(item)
    return ids


def as_sequence_output(output: Iterable[Any], d: int, k: int) -> tuple[int, ...]:
    """A sequence output: exactly ``k`` distinct item ids in ``0..d-1``, as a tuple.

    Unordered containers (``set``, ``frozenset``) are refused: a sequence has an order.
    """
    if isinstance(output, (set, frozenset)):
        raise ArgumentTypeError(
            "output", output, "a sequence mechanism needs an ordered output (tuple or list), not a set"
        )
    return tuple(_output_ids(output, d, k))


def as_set_output(output: Iterable[Any], d: int, k: int) -> frozenset[int]:
    """A set output: exactly ``k`` distinct item ids in ``0..d-1``, as a frozenset."""
    return frozenset(_output_ids(output, d, k))
