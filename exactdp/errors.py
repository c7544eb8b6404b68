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


def _show(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ExactDPError(Exception):
    """Base class of every exactdp error.

    ``argument`` is the name of the argument at fault (``None`` when the error is not
    about one argument) and ``value`` the offending value.
    """

    def __init__(self, argument: str | None, value: Any, reason: str):
        self.argument = argument
        self.value = value
        self.reason = reason
        if argument is None:
            message = reason
        else:
            message = f"{argument}={_show(value)}: {reason}"
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
    utility levels (:class:`~exactdp.mechanisms.canonical_gamma1.CanonicalGamma1`): outputs
    with equal utility may have different probabilities there, so ``levels()`` would be
    misleading.  Subclasses both ``ValueError`` (via :class:`ExactDPValueError`) and
    ``NotImplementedError``."""


__all__ += ["NotSingleRuleError"]


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
    of building a hundred-million-digit integer.  ``limit`` is the limit that was exceeded;
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
