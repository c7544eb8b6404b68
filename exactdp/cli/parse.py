"""Command-line token parsing: counts, integers, item ids and the other option values.

Every name ending in ``_arg`` is an argparse ``type=``: it returns the parsed value or
raises :class:`argparse.ArgumentTypeError` with a one-line message naming the bad token.
Rational options (``--epsilon``, ``--base``, ...) are not parsed here: the library parses
the string the user typed exactly (:mod:`exactdp.core.validation`).

>>> parse_counts("30, 15,1x3")
[30, 15, 1, 1, 1]
"""

from __future__ import annotations

import argparse
import re
import sys
from fractions import Fraction
from typing import Callable, Optional, TypeVar

import gmpy2

__all__ = ["parse_counts", "MAX_COUNTS", "MAX_OPTION_DIGITS", "short", "counts_arg", "counts_file_arg", "output_arg",
           "positive_int_arg", "dps_arg", "digits_arg", "claimed_epsilon_arg", "rational_arg", "seed_arg", "int_arg",
           "samples_file_arg", "delta_arg", "min_power_arg", "alpha_arg", "relation_arg"]

_T = TypeVar("_T")

# Counts: items separated by one comma (with any whitespace around it) or by whitespace.
_COUNT_SEPARATOR = re.compile(r"\s*,\s*|\s+")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INTEGRAL_DECIMAL = re.compile(r"([+-]?[0-9]+)\.0*")

#: Most counts one command accepts (after expanding ``VALUExREPEAT``): checked before the
#: list is built, so ``1x999999999999`` is refused at once instead of exhausting memory.
#: Measured: ``exactdp levels joint --counts 30,15,1x10000000 -k 2`` takes 41 s and 1.3 GB.
MAX_COUNTS = 10_000_000
#: Most digits of an integer option (``-k``, ``--seed``, ``-n``, ``--dps``, ...): CPython's
#: default int/str conversion limit.
MAX_OPTION_DIGITS = 4300


def short(token: str, limit: int = 40) -> str:
    """``repr(token)``, cut to ``limit`` characters (an error line stays one short line)."""
    text = repr(token)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


class _TooManyDigits(ValueError):
    """An integer token longer than the digit limit it was parsed under."""


def _parse_integer(token: str, max_digits: Optional[int] = None, *, integral_decimals: bool = True) -> int:
    """An exact integer from ``"12"`` or ``"-3"`` (ASCII digits, no underscores), and from
    ``"2.0"`` when ``integral_decimals``; ValueError otherwise, :class:`_TooManyDigits` when
    it has more than ``max_digits`` digits (default: a count's limit,
    ``exactdp.core.validation.MAX_COUNT_DIGITS``, named in the message; checked before
    converting; long strings go through gmpy2, which is not quadratic)."""
    hint = ""
    if max_digits is None:
        from ..core import validation

        max_digits, hint = validation.MAX_COUNT_DIGITS, " for a count (exactdp.core.validation.MAX_COUNT_DIGITS)"
    mo = _INTEGRAL_DECIMAL.fullmatch(token) if integral_decimals else None
    if mo:
        token = mo.group(1)
    if not _INTEGER.fullmatch(token):
        raise ValueError(f"{short(token)} is not an integer")
    digits = len(token.lstrip("+-"))
    if digits > max_digits:
        raise _TooManyDigits(f"{short(token)} has {digits} digits, more than the limit of {max_digits}{hint}")
    if digits <= 4000:
        return int(token)
    return int(gmpy2.mpz(token))


def parse_counts(text: str, source: str = "--counts", max_counts: int = MAX_COUNTS) -> list[int]:
    """Counts from text: integers separated by commas and/or whitespace.

    ``VALUExREPEAT`` stands for ``REPEAT`` copies of ``VALUE`` (``1x998``).  ``#`` starts a
    comment running to the end of the line (useful in ``--counts-file``).  ``2.0`` is read
    as 2; other non-integers are rejected, naming the item, and so is an empty item
    (``10,,5``, or a comma at the start or end), which would shift every later item id.
    More than ``max_counts`` counts (default :data:`MAX_COUNTS`, repeats included) or a
    count of more than ``exactdp.core.validation.MAX_COUNT_DIGITS`` digits is refused before
    anything is built.
    """

    def fail(message: str) -> ValueError:
        return ValueError(f"{source}: {message}" if source else message)

    text = re.sub(r"#[^\n]*", " ", text)
    counts: list[int] = []
    stripped = text.strip()
    tokens = _COUNT_SEPARATOR.split(stripped) if stripped else []
    for token in tokens:
        if not token:
            raise fail(f"item {len(counts)} is empty (two commas in a row, or a comma at the start or end)")
        value_text, sep, repeat_text = token.lower().partition("x")
        what = "an integer or VALUExREPEAT" if sep else "an integer"
        try:
            value = _parse_integer(value_text)
            repeat = 1
            if sep and len(repeat_text) > 30 and re.fullmatch(r"\+?[0-9]+", repeat_text):
                repeat = max_counts + 1  # more than 30 digits: past any limit, do not convert it
            elif sep:
                repeat = _parse_integer(repeat_text, 30)
        except _TooManyDigits as err:
            raise fail(f"item {len(counts)}: {err}") from None
        except ValueError:
            raise fail(f"item {len(counts)}: {short(token)} is not {what}") from None
        if repeat < 1:
            raise fail(f"item {len(counts)}: the repeat count in {short(token)} must be at least 1")
        if len(counts) + repeat > max_counts:
            raise fail(
                f"item {len(counts)}: {short(token)} would make more than {max_counts} counts, "
                "the command line's limit (the Python API takes any number)"
            )
        counts.extend([value] * repeat)
    if not counts:
        raise fail("no counts given")
    return counts


def counts_arg(text: str) -> list[int]:
    try:
        return parse_counts(text, "")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _parse_file_arg(path: str, parse: Callable[[str, str], _T]) -> _T:
    """Read ``path`` (``-`` is standard input) and ``parse(text, repr(path))``, turning read
    and parse errors into argparse's one-line errors."""
    try:
        if path == "-":
            text = sys.stdin.read().removeprefix("\ufeff")
        else:
            with open(path, encoding="utf-8-sig") as handle:  # a byte order mark (spreadsheet CSV) is skipped
                text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise argparse.ArgumentTypeError(f"cannot read {path!r}: {getattr(err, 'strerror', None) or err}") from None
    try:
        return parse(text, repr(path))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def counts_file_arg(path: str) -> list[int]:
    return _parse_file_arg(path, parse_counts)


def output_arg(text: str) -> list[int]:
    ids: list[int] = []
    stripped = text.strip()
    for token in _COUNT_SEPARATOR.split(stripped) if stripped else []:
        if not token:  # '0,,1' is refused as --counts '10,,5' is: an id may be missing
            raise argparse.ArgumentTypeError(f"the id at position {len(ids)} is empty (two commas in a row, or a comma at "
                                             "the start or end)")
        try:
            ids.append(int_arg(token))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"item id {short(token)} is not an integer") from None
    if not ids:
        raise argparse.ArgumentTypeError("no item ids given")
    return ids


def positive_int_arg(text: str) -> int:
    value = int_arg(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _at_most_max_dps(text: str, why: str = "") -> int:
    """A positive integer at most ``MAX_DPS``, refused as an argparse error of the option
    being parsed (the library's own check would name ``dps=``, not the option typed)."""
    from ..core.validation import MAX_DPS

    value = positive_int_arg(text)
    if value > MAX_DPS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_DPS}{why}, got {value}")
    return value


def dps_arg(text: str) -> int:
    """``--dps``: a positive integer, at most ``MAX_DPS``."""
    return _at_most_max_dps(text)


def digits_arg(text: str) -> int:
    """``--digits``: a positive integer, at most the most digits exactdp computes (the
    range of ``dps``), so that a too large value is refused naming ``--digits``, not ``dps``."""
    from ..core.validation import MAX_DPS

    return _at_most_max_dps(text, f" (shown digits are computed, and dps is at most {MAX_DPS})")


def claimed_epsilon_arg(text: str) -> Fraction:
    """A claimed epsilon, parsed exactly as ``--epsilon`` is ('1/2', '0.1', '2e-3'); ``>= 0``
    (0 only makes sense for ``--notion approx``: delta(0) is the total variation, and the
    audit command refuses it for the other notions)."""
    from ..core.validation import as_rational
    from ..errors import ExactDPError

    try:
        value = as_rational(text, "--claimed-epsilon")
    except ExactDPError as err:
        raise argparse.ArgumentTypeError(err.reason) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def rational_arg(name: str, low: int, high: Optional[int], *, low_open: bool = True) -> Callable[[str], Fraction]:
    """An argparse type for an exact rational in ``(low, high)`` (``[low, high)`` when not
    ``low_open``; no upper bound when ``high`` is None), parsed like ``--epsilon``."""
    def parse(text: str) -> Fraction:
        from ..core.validation import as_rational
        from ..errors import ExactDPError

        try:
            value = as_rational(text, name)
        except ExactDPError as err:
            raise argparse.ArgumentTypeError(err.reason) from None
        above = value > low if low_open else value >= low
        if not above or (high is not None and value >= high):
            bounds = f"{low} {'<' if low_open else '<='} {name.lstrip('-').upper()}" + (f" < {high}" if high is not None else "")
            raise argparse.ArgumentTypeError(f"must satisfy {bounds}, got {text}")
        return value

    return parse


def seed_arg(text: str) -> int:
    """Any integer: :func:`exactdp.core.validation.seed_to_nonnegative` maps seeds injectively
    (``random.Random`` alone would give ``-s`` the samples of ``s``)."""
    return int_arg(text)


def int_arg(text: str) -> int:
    """An integer option: ASCII digits with an optional sign, at most
    :data:`MAX_OPTION_DIGITS` digits (checked before converting)."""
    try:
        return _parse_integer(text.strip(), MAX_OPTION_DIGITS, integral_decimals=False)
    except _TooManyDigits as err:
        raise argparse.ArgumentTypeError(f"integer {err}") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {short(text)}") from None


def samples_file_arg(path: str) -> list[list[int]]:
    """Draws to test from ``path`` (``-`` is standard input), as :func:`exactdp.certify.read_samples` reads them."""
    from ..certify import read_samples  # the certifier loads only when the certify command runs

    return _parse_file_arg(path, read_samples)


def _unit_interval_arg(name: str, *, closed_above: bool) -> Callable[[str], float]:
    """An argparse type for a number in ``(0, 1)`` (or ``(0, 1]``) named ``name`` in errors."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
        if not (0 < value <= 1 if closed_above else 0 < value < 1):
            raise argparse.ArgumentTypeError(f"must satisfy 0 < {name} {'<=' if closed_above else '<'} 1, got {text}")
        return value

    return parse


delta_arg = _unit_interval_arg("TV", closed_above=True)  # a total variation distance
min_power_arg = _unit_interval_arg("P", closed_above=False)
alpha_arg = _unit_interval_arg("ALPHA", closed_above=False)


def relation_arg(text: str) -> str:
    """A neighbour relation of :data:`exactdp.audit.RELATIONS` (``add-remove`` accepted too)."""
    from ..audit import RELATIONS  # the auditor loads only when the audit command runs

    value = text.replace("-", "_")
    if value not in RELATIONS:
        choices = ", ".join(repr(r) for r in RELATIONS)
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")
    return value
