"""Errors raised by exactdp.

Every error names the argument at fault and the offending value (or position), and is a
subclass of :class:`ValueError` or :class:`TypeError` so that callers who catch the
built-in types keep working.  Catch :class:`ExactDPError` to catch all of them.

>>> from exactdp.errors import InvalidParameterError
>>> err = InvalidParameterError("k", 7, "must satisfy 1 <= k <= d = 4")
>>> str(err)
'k=7: must satisfy 1 <= k <= d = 4'
>>> isinstance(err, ValueError), err.argument, err.value
(True, 'k', 7)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ExactDPError",
    "ExactDPValueError",
    "ExactDPTypeError",
    "InvalidCountsError",
    "InvalidParameterError",
    "InvalidOutputError",
    "ArgumentTypeError",
    "TooManyOutputsError",
    "NoClosedFormError",
    "PrecisionError",
]


def show_value(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (the last three ``...``), for an error
    message that quotes a value; an int or Fraction past CPython's int/str digit limit is
    abbreviated rather than raising (public inside exactdp: the probability tables quote
    values with it)."""
    try:
        text = repr(value)
    except ValueError:  # an int past CPython's int/str digit limit (4300), or one inside value
        text = _long_repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _long_int(n: int) -> str:
    """``n`` in full up to 60 digits, else as ``d.ddd...e+E (N digits)`` (truncated), without
    CPython's int/str digit limit."""
    import gmpy2  # only for an integer of more than 4300 digits

    text = gmpy2.mpz(n).digits(10)
    sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
    if len(body) <= 60:
        return text
    return f"{sign}{body[0]}.{body[1:4]}...e+{len(body) - 1} ({len(body)} digits)"


def _long_repr(value: Any) -> str:
    """A short text of a value whose ``repr`` raised: ints and Fractions with too many
    digits for ``repr`` abbreviated (also inside a list or tuple), else the value's type."""
    from fractions import Fraction

    if isinstance(value, int):
        return _long_int(value)
    if isinstance(value, Fraction):
        return f"Fraction({_long_int(value.numerator)}, {_long_int(value.denominator)})"
    if type(value) in (list, tuple):
        # the first few items only: the message is cut at 80 characters anyway
        items = ", ".join(_long_repr(v) for v in value[:8]) + (", ..." if len(value) > 8 else "")
        return f"[{items}]" if type(value) is list else f"({items}{',' if len(value) == 1 else ''})"
    try:
        return repr(value)
    except ValueError:
        return f"<{type(value).__name__} with an integer too long to show>"


class ExactDPError(Exception):
    """Base class of every exactdp error.

    ``argument`` is the name of the argument at fault (``None`` when the error is not
    about one argument), ``value`` the offending value and ``reason`` what is wrong with
    it; the message is ``"argument=value: reason"`` (``reason`` alone without an argument).
    """

    def __init__(self, argument: str | None, value: Any, reason: str):
        self.argument = argument
        self.value = value
        self.reason = reason
        if argument is None:
            message = reason
        else:
            message = f"{argument}={show_value(value)}: {reason}"
        super().__init__(message)


class ExactDPValueError(ExactDPError, ValueError):
    """A value of the right type but outside what the mechanism accepts."""


class ExactDPTypeError(ExactDPError, TypeError):
    """A value of a type exactdp does not accept."""


class InvalidCountsError(ExactDPValueError):
    """Counts that are empty, non-finite, non-integral, or of the wrong shape."""


class InvalidParameterError(ExactDPValueError):
    """k, epsilon, base, sensitivity, dps, rho, noise, ... out of range."""


class InvalidOutputError(ExactDPValueError):
    """An output of the wrong length, with repeats, or with unknown item ids."""


class ArgumentTypeError(ExactDPTypeError):
    """An argument of a type exactdp does not accept (bool counts, str k, ...)."""


class TooManyOutputsError(ExactDPValueError):
    """Enumerating every output would exceed the caller's ``max_outputs`` limit."""


class NoClosedFormError(ExactDPValueError):
    """``probability_exact`` cannot produce a closed form within its stated limit."""


class NotSingleRuleError(ExactDPValueError, NotImplementedError):
    """A level-based method was called on a mechanism that is not one selection rule over
    utility levels (:class:`~exactdp.mechanisms.canonical.gamma1.CanonicalGamma1`): outputs
    with equal utility may have different probabilities there, so ``levels()`` would be
    misleading.  Subclasses both ``ValueError`` (via :class:`ExactDPValueError`) and
    ``NotImplementedError``."""


__all__ += ["NotSingleRuleError"]


class NoLevelArraysError(ExactDPValueError, NotImplementedError):
    """``iter_level_arrays()`` was called on a mechanism that does not provide its levels as
    arrays (the message names the mechanism and the streamed alternative,
    ``iter_level_probabilities()``).  Subclasses both ``ValueError`` (via
    :class:`ExactDPValueError`) and ``NotImplementedError``."""


__all__ += ["NoLevelArraysError"]


class PrecisionError(ExactDPError, ArithmeticError):
    """A certified enclosure could not be made tight enough within the precision cap."""


class NothingToDetectError(ExactDPValueError):
    """A power or sample-size question about an alternative the test cannot tell from the
    mechanism (e.g. the same distribution): no number of draws detects it."""


__all__ += ["NothingToDetectError"]


class InputLimitError(InvalidParameterError):
    """A number or size given as input is past a stated limit (too many digits, too large
    an exponent, too many counts).

    Raised *before* the number is built, so that ``"1e100000000"`` fails at once instead
    of building a hundred-million-digit integer.  ``argument``, ``value`` and ``reason`` as
    for :class:`ExactDPError`; ``limit`` is the limit that was exceeded (default ``None``);
    the message names it and says how to go past it.
    """

    def __init__(self, argument: str | None, value: Any, reason: str, limit: Any = None):
        super().__init__(argument, value, reason)
        self.limit = limit


__all__ += ["InputLimitError"]


class MemoryBudgetError(InputLimitError):
    """An operation would hold more exact data in memory at once than the mechanism's
    ``memory_budget`` allows.  The message names the budget, the size needed, and the
    streamed alternative (for example ``iter_levels()`` instead of ``levels()``)."""


__all__ += ["MemoryBudgetError"]
