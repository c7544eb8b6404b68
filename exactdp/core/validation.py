"""Input validation shared by every mechanism (docs/definitions.md §1).

Each ``as_*`` function takes what a user may pass and returns the exact value exactdp
works with, or raises an :mod:`exactdp.errors` error naming the argument and the value.

Sizes are checked *before* a number is built: a decimal string, :class:`decimal.Decimal` or
sympy ``Float`` whose exact value would need more than :data:`MAX_NUMBER_DIGITS` decimal digits
(numerator or denominator) is refused with :class:`~exactdp.errors.InputLimitError` at once
(pass an exact ``Fraction`` or ``int`` to go past the limit, or raise it).  Integers given as
``Decimal`` (counts, ``k``, ``dps``) are limited to :data:`MAX_INTEGER_DIGITS` digits the same
way, and every count, an ``int`` included, to :data:`MAX_COUNT_DIGITS` digits.

Seeds and random generators (:func:`as_rng`, :func:`seed_to_nonnegative`) are checked in
:mod:`exactdp.core.seeds` and re-exported here.

>>> as_counts([3, 2.0, 2])
(3, 2, 2)
>>> as_epsilon("0.1"), as_epsilon(0.5)
(Fraction(1, 10), Fraction(1, 2))
>>> as_k(2, 3)
2
>>> as_k(4, 3)
Traceback (most recent call last):
...
exactdp.errors.InvalidParameterError: k=4: must satisfy 1 <= k <= d = 3
>>> as_epsilon("1e100000000")
Traceback (most recent call last):
...
exactdp.errors.InputLimitError: epsilon='1e100000000': the exact value would have 100000001 digits, more than the limit of 1000 for a number given as text or Decimal (exactdp.core.validation.MAX_NUMBER_DIGITS; raise it, or pass an exact Fraction or int)
"""

from __future__ import annotations

import decimal
import math
import numbers
import operator
import re
import unicodedata
from fractions import Fraction
from typing import Any, Optional, SupportsIndex, Union

from .aliases import CountsLike, IntLike, OutputLike, RationalLike
from .seeds import SEED_BOUND, as_rng, random_from_seed, seed_to_nonnegative
from ..errors import (
    ArgumentTypeError,
    InputLimitError,
    InvalidCountsError,
    InvalidOutputError,
    InvalidParameterError,
)

__all__ = [
    "as_counts",
    "as_k",
    "as_rational",
    "as_positive_rational",
    "as_epsilon",
    "as_base",
    "as_sensitivity",
    "as_dps",
    "as_rng",
    "as_rho",
    "as_sequence_output",
    "as_sequence_prefix",
    "as_set_output",
    "as_int",
    "as_index",
    "as_positive_int",
    "as_nonnegative_int",
    "DEFAULT_DPS",
    "MAX_DPS",
    "MAX_NUMBER_DIGITS",
    "MAX_INTEGER_DIGITS",
    "MAX_COUNT_DIGITS",
    "random_from_seed",
    "seed_to_nonnegative",
    "SEED_BOUND",
]

#: Default number of certified significant decimal digits (docs/definitions.md §3).
DEFAULT_DPS = 30

#: Largest number of decimal digits the numerator or the denominator of a rational given as
#: text (``"1e400"``, ``"0.1"``, ``"1/3"``), :class:`decimal.Decimal` or sympy ``Float``
#: may have (a sympy ``Float`` counts its binary digits as ``bits * log10(2)``).  The
#: check is made from the string's length and exponent, before the number is built.
#: Past about a thousand digits the certified exponentials of the weights get slow
#: (docs/benchmarks.md).
#: Module-level so that a caller who needs more can raise it; exact ``Fraction``/``int``
#: arguments are not limited.
MAX_NUMBER_DIGITS = 1000

#: Largest number of decimal digits of an integer given as a :class:`decimal.Decimal`
#: (``Decimal("1e100000000")`` as a count would build a hundred-million-digit integer).
MAX_INTEGER_DIGITS = 1_000_000

#: Largest number of decimal digits of one count (any integer type, an exact ``int``
#: included).  The certified probabilities of a count vector whose utilities differ by a
#: number of ``D`` digits take a time growing with ``D**2`` (Joint's weights; measured in
#: docs/benchmarks.md).  Module-level so that a caller who needs more can raise it
#: (``exactdp.core.validation.MAX_COUNT_DIGITS = 20_000``); the command line reads it too.
MAX_COUNT_DIGITS = 5000

_LIMIT_HINT = "exactdp.core.validation.MAX_NUMBER_DIGITS; raise it, or pass an exact Fraction or int"


def _digits_int(text: str) -> int:
    """``int(text)`` for a string of ASCII digits, past CPython's int/str digit limit too
    (through gmpy2, which is not quadratic either)."""
    if len(text) <= 4000:
        return int(text)
    import gmpy2

    return int(gmpy2.mpz(text))


def _decimal_fraction(x: decimal.Decimal) -> Fraction:
    """The exact value of a finite Decimal (``Fraction(x)`` and ``int(x)`` go through a
    string and raise ValueError past CPython's int/str digit limit)."""
    sign, digits, exponent = x.as_tuple()
    if not any(digits):  # zero whatever its exponent: 0E-100000000 must not build 10**100000000
        return Fraction(0)
    n = _digits_int("".join(map(str, digits)))
    q = Fraction(n * 10**exponent) if exponent >= 0 else Fraction(n, 10**-exponent)
    return -q if sign else q


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
    if isinstance(x, decimal.Decimal) and x.is_finite():
        sign, digits, exponent = x.as_tuple()
        if any(digits) and len(digits) + exponent > MAX_INTEGER_DIGITS:
            raise InputLimitError(
                label, x, f"would have about {len(digits) + exponent} digits, more than the limit of "
                f"{MAX_INTEGER_DIGITS} for an integer given as Decimal "
                "(exactdp.core.validation.MAX_INTEGER_DIGITS; raise it, or pass an int)", MAX_INTEGER_DIGITS,
            )
        # integral or not, decided on the Decimal itself (exact, whatever the context's
        # precision): 1e-100000000 must not build 10**100000000 to be refused
        if x == x.to_integral_value():
            return _decimal_fraction(x).numerator
    if isinstance(x, (Fraction, numbers.Rational, decimal.Decimal)):
        err = InvalidCountsError if argument == "counts" else InvalidParameterError
        raise err(label, x, "must be an integer")
    raise ArgumentTypeError(label, x, f"must be an integer, not {type(x).__name__}")


def as_counts(counts: CountsLike) -> tuple[int, ...]:
    """Validate ``counts``, a count vector (docs/definitions.md §1), and return it as a tuple of Python ints.

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
    if type(counts) in (list, tuple) and counts and set(map(type, counts)) == {int}:
        _check_count_digits(counts)  # Python ints already (bool is another type): nothing to convert
        return tuple(counts)
    if shape is not None and getattr(getattr(counts, "dtype", None), "kind", None) in ("i", "u"):
        items = counts.tolist()  # a numpy integer array: Python ints, checked below as such
    else:
        try:
            items = list(counts)
        except TypeError:
            raise ArgumentTypeError("counts", counts, "must be a sequence of integers") from None
    if not items:
        raise InvalidCountsError("counts", counts, "must not be empty")
    if set(map(type, items)) == {int}:
        _check_count_digits(items)
        return tuple(items)
    out = []
    for position, value in enumerate(items):
        if isinstance(value, (list, tuple)) or getattr(value, "shape", ()) not in ((), None):
            raise InvalidCountsError(f"counts[{position}]", value, "must be a scalar integer")
        out.append(_as_int(value, "counts", f"[{position}]"))
    _check_count_digits(out)
    return tuple(out)


def _check_count_digits(counts: list[int]) -> None:
    """:class:`~exactdp.errors.InputLimitError` for the first count of more than
    :data:`MAX_COUNT_DIGITS` decimal digits (read at each call, so raising it takes effect).
    One pass of ``int.bit_length`` in C; digits are counted only past ``limit * 3.3219``
    bits, compared in integers (fewer bits: ``|n| < 2**bits <= 10**limit`` as 3.3219 is
    below ``log2(10)``, so at most ``limit`` digits)."""
    limit = MAX_COUNT_DIGITS
    if max(map(int.bit_length, counts)) * 10_000 <= limit * 33_219:
        return
    import gmpy2

    for position, count in enumerate(counts):
        if count.bit_length() * 10_000 <= limit * 33_219:
            continue
        digits = len(gmpy2.mpz(abs(count)).digits(10))
        if digits <= limit:
            continue
        raise InputLimitError(
            f"counts[{position}]", count, f"has {digits} digits, more than the limit of {limit} for a count "
            "(exactdp.core.validation.MAX_COUNT_DIGITS; raise it: the time to compute probabilities grows with "
            "the square of the digits)", limit,
        )


def as_int(value: IntLike, argument: str) -> int:
    """``value`` as an int of any sign (a threshold, an offset): integral values only
    (``argument`` names it in the error)."""
    return _as_int(value, argument)


def as_index(value: SupportsIndex, argument: str) -> int:
    """``value`` as an integer index (a row, a column, a class coordinate; ``argument``
    names it in the error): an ``int``, a numpy integer or
    anything with ``__index__``; a bool or a number of another type (``1.0``,
    ``Fraction(1)``) is refused with :class:`~exactdp.errors.ArgumentTypeError`, as it
    usually hides a computed value.  The range is the caller's to check."""
    if _is_bool(value):
        raise ArgumentTypeError(argument, value, "booleans are not accepted as indices")
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(argument, value, f"must be an integer index, not {type(value).__name__}") from None


def as_positive_int(value: IntLike, argument: str) -> int:
    """``value`` as an int >= 1 (``argument`` names it in the error)."""
    n = _as_int(value, argument)
    if n < 1:
        raise InvalidParameterError(argument, value, "must be a positive integer")
    return n


def as_memory_budget(value: Union[IntLike, str]) -> int:
    """A memory budget in bytes: a positive integer, or its decimal digits as a string
    (as the command line gives it, ``"2000000000"`` or ``"2_000_000_000"``)."""
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        if not (text.isascii() and text.isdigit()) or len(text) > 30:
            raise InvalidParameterError("memory_budget", value, "must be a positive integer number of bytes")
        value = int(text)
    return as_positive_int(value, "memory_budget")


def as_nonnegative_int(value: IntLike, argument: str) -> int:
    """``value`` as an int >= 0 (``argument`` names it in the error)."""
    n = _as_int(value, argument)
    if n < 0:
        raise InvalidParameterError(argument, value, "must be a non-negative integer")
    return n


def as_k(k: SupportsIndex, d: int) -> int:
    """Validate ``k`` against the number of items ``d``: an integer with 1 <= k <= d.

    ``k`` must be of an integer type (``int``, numpy integers, gmpy2 ``mpz``, anything with
    ``__index__``): unlike counts, where an integral float such as ``2.0`` is accepted
    (data often arrive as floats), a number of another type (``2.0``, ``Fraction(2)``,
    ``Decimal(2)``) is refused with :class:`~exactdp.errors.InvalidParameterError`, since it
    usually hides a computed value such as ``d / 2``; a non-number (``"2"``) with
    :class:`~exactdp.errors.ArgumentTypeError`.
    """
    if _is_bool(k):
        raise ArgumentTypeError("k", k, "booleans are not accepted as integers")
    try:
        kk = operator.index(k)
    except TypeError:
        reason = f"must be an integer (int or numpy integer), not {type(k).__name__}"
        if isinstance(k, numbers.Number) or getattr(k, "is_Number", False) or (
            type(k).__module__ == "numpy" and "float" in type(k).__name__
        ):
            raise InvalidParameterError("k", k, reason) from None
        raise ArgumentTypeError("k", k, reason) from None
    if not 1 <= kk <= d:
        raise InvalidParameterError("k", k, f"must satisfy 1 <= k <= d = {d}")
    return kk


# A decimal number or a fraction, as Python's Fraction accepts them but in ASCII and without
# underscores (``"1_0"`` is not decimal notation) and with the exponent and digits kept as text until
# their size has been checked.
_RATIONAL = re.compile(
    r"""\s*(?P<sign>[-+]?)(?=\d|\.\d)(?P<num>\d*)
    (?:\s*/\s*(?P<den>\d+)
      |(?:\.(?P<frac>\d*))?(?:[eE](?P<exp>[-+]?\d+))?)\s*""",
    re.VERBOSE | re.ASCII,  # ASCII digits and spaces only: not '١/٣' or '０.５' (str patterns' \d is Unicode)
)
_EXAMPLES = "such as '0.1', '1/2' or '2'"


def _check_digits(value: Any, argument: str, num_digits: int, den_digits: int, shown: str = "") -> None:
    """Refuse a number whose numerator or denominator would have too many digits."""
    digits = max(num_digits, den_digits)
    if digits > MAX_NUMBER_DIGITS:
        raise InputLimitError(
            argument, value,
            f"the exact value would have {shown or digits} digits, more than the limit of {MAX_NUMBER_DIGITS} "
            f"for a number given as text or Decimal ({_LIMIT_HINT})",
            MAX_NUMBER_DIGITS,
        )


def _non_ascii(text: str) -> str:
    """``"character U+0661 ARABIC-INDIC DIGIT ONE at position 0"``: the first non-ASCII one."""
    i, c = next((i, c) for i, c in enumerate(text) if not c.isascii())
    return f"character U+{ord(c):04X} {unicodedata.name(c, 'without a name')} at position {i}"


def _parse_rational(text: str, argument: str) -> Fraction:
    """An exact Fraction from a decimal or ``p/q`` string, sizes checked before building it."""
    mo = _RATIONAL.fullmatch(text)
    if mo is None:
        if not text.isascii():
            raise InvalidParameterError(argument, text, f"must be written in ASCII ({_non_ascii(text)}): a "
                                        f"decimal or fraction with the digits 0-9, {_EXAMPLES}")
        if "_" in text and _RATIONAL.fullmatch(text.replace("_", "")):
            raise InvalidParameterError(
                argument, text,
                "underscores are not decimal notation: write the number without them "
                f"({text.replace('_', '')!r})",
            )
        raise InvalidParameterError(argument, text, f"must be a finite number {_EXAMPLES}")
    num, den = mo.group("num"), mo.group("den")
    negative = mo.group("sign") == "-"
    if den is not None:
        _check_digits(text, argument, len(num.lstrip("0")), len(den.lstrip("0")))
        if not den.strip("0"):
            raise InvalidParameterError(argument, text, f"division by zero: must be a finite number {_EXAMPLES}")
        q = Fraction(_digits_int(num), _digits_int(den))
        return -q if negative else q
    frac = mo.group("frac") or ""
    mantissa = (num + frac).lstrip("0")
    if not mantissa:
        return Fraction(0)  # "0", "0.000", "0e99999999999": zero whatever the exponent
    exp_text = mo.group("exp") or "0"
    if len(exp_text.lstrip("+-").lstrip("0")) > 18:  # |exponent| >= 10**18: far past any limit
        _check_digits(text, argument, 10**18, 0, "more than 10**18")
    shift = int(exp_text) - len(frac)  # value = int(num + frac) * 10**shift
    # the mantissa's trailing zeros make the denominator smaller: count them exactly
    stripped = mantissa.rstrip("0")
    shift_after = shift + (len(mantissa) - len(stripped))
    _check_digits(text, argument, len(stripped) + max(shift_after, 0), max(-shift_after, 0) + 1)
    m = _digits_int(stripped)
    q = Fraction(m * 10**shift_after) if shift_after >= 0 else Fraction(m, 10**-shift_after)
    return -q if negative else q


def as_rational(value: RationalLike, argument: str) -> Fraction:
    """``value`` as an exact rational, from int, Fraction, decimal string, Decimal, sympy
    Rational or float (``argument`` names it in the error).

    A float is taken at its exact binary value (``0.1`` is not ``1/10``; pass ``"0.1"``).
    Strings are decimal numbers (``"0.1"``, ``"-2.5e-3"``) or fractions (``"1/3"``) in
    ASCII: other scripts' digits and spaces (``"١/٣"``, ``"０.５"``, which ``Fraction``
    reads) are refused, naming the first non-ASCII character;
    underscores (``"1_0"``, accepted by Python's ``Fraction``) are refused, and so is a
    string, ``Decimal`` or sympy ``Float`` whose exact value needs more than
    :data:`MAX_NUMBER_DIGITS` digits (:class:`~exactdp.errors.InputLimitError`, raised
    before the number is built).  NaN and infinities are rejected with :class:`~exactdp.errors.InvalidParameterError`;
    other types with :class:`~exactdp.errors.ArgumentTypeError`.
    """
    if _is_bool(value):
        raise ArgumentTypeError(argument, value, "booleans are not accepted")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        return _parse_rational(value, argument)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise InvalidParameterError(argument, value, "must be finite")
        sign, digits, exponent = value.as_tuple()
        if any(digits):
            _check_digits(value, argument, len(digits) + max(exponent, 0), max(-exponent, 0) + 1)
        return _decimal_fraction(value)
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
        sign, man, exp, bc = value._mpf_
        if man:  # bits -> decimal digits, rounded up (log10(2) < 0.30103)
            _check_digits(value, argument, -(-(bc + max(exp, 0)) * 30103 // 100000),
                          -(-max(-exp, 0) * 30103 // 100000) + 1)
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


def as_positive_rational(value: RationalLike, argument: str) -> Fraction:
    """``value`` as a positive, finite exact rational (``argument`` names it in the error)."""
    r = as_rational(value, argument)
    if r <= 0:
        raise InvalidParameterError(argument, value, "must be positive")
    return r


def as_epsilon(epsilon: RationalLike) -> Fraction:
    """Validate ``epsilon``, the privacy parameter: a positive, finite exact rational."""
    return as_positive_rational(epsilon, "epsilon")


def as_base(base: RationalLike) -> Fraction:
    """Validate ``base``, a weight base: an exact rational with ``0 < base < 1``."""
    b = as_rational(base, "base")
    if not 0 < b < 1:
        raise InvalidParameterError("base", base, "must satisfy 0 < base < 1")
    return b


def as_sensitivity(sensitivity: RationalLike) -> Fraction:
    """Validate ``sensitivity``, the utility sensitivity: a positive, finite exact rational."""
    return as_positive_rational(sensitivity, "sensitivity")


def as_rho(rho: RationalLike) -> Fraction:
    """The canonical loss parameter: an exact rational with ``0 <= rho <= 1``."""
    r = as_rational(rho, "rho")
    if not 0 <= r <= 1:
        raise InvalidParameterError("rho", rho, "must satisfy 0 <= rho <= 1")
    return r


#: The most significant digits a certified value can be asked for (``dps``).
MAX_DPS = 100_000


def as_dps(dps: Optional[IntLike]) -> int:
    """``dps``: ``None`` -> the default (30); otherwise an integer number of digits,
    ``1 <= dps <= 10**5``."""
    if dps is None:
        return DEFAULT_DPS
    n = _as_int(dps, "dps")
    if not 1 <= n <= MAX_DPS:
        raise InvalidParameterError("dps", dps, f"must satisfy 1 <= dps <= {MAX_DPS}")
    return n


def _listed(output: Any, argument: str) -> list[Any]:
    """The items of an iterable output (or prefix), refusing non-iterables and text."""
    if output is None or isinstance(output, (str, bytes, dict)):
        raise ArgumentTypeError(argument, output, "must be an iterable of item ids")
    try:
        return list(output)
    except TypeError:
        raise ArgumentTypeError(argument, output, "must be an iterable of item ids") from None


def _output_ids(output: Any, d: int, k: int, argument: str = "output", items: Optional[list[Any]] = None) -> list[int]:
    if items is None:
        items = _listed(output, argument)
    if len(items) != k:
        raise InvalidOutputError(argument, output, f"must contain exactly k = {k} item ids, got {len(items)}")
    ids = []
    for position, value in enumerate(items):
        if _is_bool(value):
            raise ArgumentTypeError(f"{argument}[{position}]", value, "item ids must be integers")
        try:
            item = operator.index(value)
        except TypeError:
            raise ArgumentTypeError(f"{argument}[{position}]", value, "item ids must be integers") from None
        if not 0 <= item < d:
            raise InvalidOutputError(f"{argument}[{position}]", value, f"unknown item id (items are 0..{d - 1})")
        ids.append(item)
    if len(set(ids)) != len(ids):
        seen = set()
        for position, item in enumerate(ids):
            if item in seen:
                raise InvalidOutputError(f"{argument}[{position}]", item, "repeats an item id")
            seen.add(item)
    return ids


def as_sequence_output(output: OutputLike, d: int, k: int) -> tuple[int, ...]:
    """``output`` as a sequence output: exactly ``k`` distinct item ids in ``0..d-1``, as a tuple.

    Unordered containers (``set``, ``frozenset``) are refused: a sequence has an order.
    """
    if isinstance(output, (set, frozenset)):
        raise ArgumentTypeError(
            "output", output, "a sequence mechanism needs an ordered output (tuple or list), not a set"
        )
    return tuple(_output_ids(output, d, k))


def as_sequence_prefix(prefix: OutputLike, d: int, k: int) -> tuple[int, ...]:
    """The first rounds of a sequence output (Peeling's ``prefix``): fewer than ``k``
    distinct item ids in ``0..d-1``, as a tuple; errors name ``prefix``.

    Unordered containers are refused as for :func:`as_sequence_output`: a prefix is the
    order in which the items were picked.
    """
    if isinstance(prefix, (set, frozenset)):
        raise ArgumentTypeError(
            "prefix", prefix, "a prefix of a sequence needs an order (tuple or list), not a set"
        )
    items = _listed(prefix, "prefix")
    if len(items) >= k:
        raise InvalidOutputError("prefix", prefix, f"must hold fewer than k = {k} item ids, got {len(items)}")
    return tuple(_output_ids(prefix, d, len(items), "prefix", items))


def as_set_output(output: OutputLike, d: int, k: int) -> frozenset[int]:
    """``output`` as a set output: exactly ``k`` distinct item ids in ``0..d-1``, as a frozenset."""
    return frozenset(_output_ids(output, d, k))
