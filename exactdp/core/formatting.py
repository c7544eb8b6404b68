"""Text of exactdp's results: numbers, outputs and tables as strings, and JSON-safe scalars.

One place for what the oracle (:mod:`exactdp.audit`, :mod:`exactdp.certify`) and the
command line print:

- :func:`int_text`, :func:`format_int`, :func:`abbreviate_ints`, :func:`exact_text`,
  :func:`exact_repr`: exact integers and rationals, in full or with long integers abbreviated;
- :func:`number_text`: a certified ``mpmath.mpf`` (or a float) to a given number of
  significant digits, whatever mpmath's global precision;
- :func:`output_ids`, :func:`output_text`, :func:`change_text`: outputs and change vectors;
- :func:`table`, :func:`table_lines`: aligned plain-text tables;
- :func:`json_scalar`: a value as JSON can carry it exactly (unbounded integers and exact
  rationals as strings, so a field's JSON type never depends on its value).

Floats never decide anything here: these functions only turn values into text.

>>> number_text(mpmath.mpf(2) / 3, 6), number_text(-mpmath.inf, 6), number_text(None, 6)
('0.666667', '-inf', '-')
>>> output_text((3, 1)), output_text(frozenset({3, 1})), output_text((3, 1), brackets=False)
('(3,1)', '{1,3}', '3,1')
>>> print(table(["level", "P"], [["0", "0.5"], ["12", "0.25"]]))
level     P
    0   0.5
   12  0.25
"""

from __future__ import annotations

import math
import re
from collections.abc import Set as AbstractSet
from fractions import Fraction
from typing import Iterable, Optional, Sequence, SupportsIndex, Union

import gmpy2
import mpmath

from ..errors import InvalidParameterError
from .precision import mp_workprec

__all__ = [
    "ABBREVIATE_DIGITS",
    "int_text",
    "format_int",
    "abbreviate_ints",
    "exact_text",
    "exact_repr",
    "number_text",
    "output_ids",
    "output_text",
    "change_text",
    "table_lines",
    "table",
    "json_scalar",
]

#: Integers longer than this many digits are abbreviated in human-readable text.
ABBREVIATE_DIGITS = 60
_LOG10_2 = math.log10(2)

#: A number :func:`number_text` shows: an ``mpmath.mpf`` (kept at its own precision), a
#: float or anything ``mpmath.mpf`` converts, an int (shown exactly), or ``None`` (``"-"``).
NumberLike = Union[mpmath.mpf, float, int, Fraction, str, None]

_LONG_INT = re.compile(r"[0-9]{%d,}" % (ABBREVIATE_DIGITS + 1))


def int_text(n: SupportsIndex) -> str:
    """Every decimal digit of ``n`` (gmpy2: no CPython int/str digit limit, fast for huge ints).

    >>> int_text(-12), len(int_text(10**5000))
    ('-12', 5001)
    """
    return gmpy2.mpz(n).digits(10)


def format_int(n: SupportsIndex, limit: int = ABBREVIATE_DIGITS, ellipsis: str = "\u2026") -> str:
    """``n`` in full, or ``d.ddd…e+E (N digits)`` (truncated, not rounded) past ``limit``
    digits, the dots being ``ellipsis`` (default ``…``).

    >>> format_int(12345), format_int(-(10**70) - 1, ellipsis="...")
    ('12345', '-1.000...e+70 (71 digits)')
    """
    text = int_text(n)
    sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
    if len(body) <= limit:
        return text
    return f"{sign}{body[0]}.{body[1:4]}{ellipsis}e+{len(body) - 1} ({len(body)} digits)"


def abbreviate_ints(text: str, ellipsis: str = "\u2026") -> str:
    """Every run of more than :data:`ABBREVIATE_DIGITS` digits in ``text`` abbreviated
    like :func:`format_int` (with its ``ellipsis``, default ``…``)."""
    return _LONG_INT.sub(lambda mo: format_int(int(gmpy2.mpz(mo.group())), ellipsis=ellipsis), text)


def exact_text(value: object, ellipsis: Optional[str] = None) -> str:
    """``value``, an exact int or Fraction, as text (``"-9/2"``, ``"3"``), whatever its size; with
    ``ellipsis``, long integers are abbreviated (:func:`format_int`).  Anything else: ``str``.

    >>> exact_text(Fraction(-9, 2)), exact_text(Fraction(6, 3)), exact_text(10**61, ellipsis="...")
    ('-9/2', '2', '1.000...e+61 (62 digits)')
    """
    def whole(n: int) -> str:
        return int_text(n) if ellipsis is None else format_int(n, ellipsis=ellipsis)

    if isinstance(value, Fraction):
        if value.denominator == 1:
            return whole(value.numerator)
        return f"{whole(value.numerator)}/{whole(value.denominator)}"
    if isinstance(value, int) and not isinstance(value, bool):
        return whole(value)
    return str(value)


def exact_repr(value: object) -> str:
    """``repr(value)`` for an int, a Fraction or a tuple of them, also past CPython's
    4300-digit int/str conversion limit (every digit, through gmpy2); anything else: ``repr``.

    >>> exact_repr(Fraction(-9, 2)), exact_repr((3, 1)), exact_repr((7,)), len(exact_repr(10**5000))
    ('Fraction(-9, 2)', '(3, 1)', '(7,)', 5001)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return int_text(value)
    if isinstance(value, Fraction):
        return f"Fraction({int_text(value.numerator)}, {int_text(value.denominator)})"
    if type(value) is tuple:
        items = [exact_repr(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    return repr(value)


def number_text(x: NumberLike, digits: int, *, strip_zeros: bool = True, ellipsis: Optional[str] = None) -> str:
    """``x`` to ``digits`` significant digits: ``"nan"``, ``"inf"``/``"-inf"``, ``"-"`` for
    ``None``, an int exactly.  An ``mpmath.mpf`` is shown from its own bits (never rounded
    to mpmath's global precision first, so a certified value is not rounded twice); a float
    is converted exactly.  ``strip_zeros=False`` keeps trailing zeros; with ``ellipsis``,
    an exponent of more than :data:`ABBREVIATE_DIGITS` digits is abbreviated.

    >>> number_text(0.1, 3), number_text(mpmath.mpf(1) / 8, 4, strip_zeros=False), number_text(7, 2)
    ('0.1', '0.1250', '7')
    """
    if x is None:
        return "-"
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    if not isinstance(x, mpmath.mpf):
        with mp_workprec(max(53, mpmath.mp.prec)):  # a float converts exactly
            x = mpmath.mpf(x)
    if mpmath.isnan(x):
        return "nan"
    if mpmath.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = _far_text(x, digits, strip_zeros)
    if text is None:
        text = mpmath.nstr(x, digits, strip_zeros=strip_zeros)
    if ellipsis is not None:
        mant, sep, exp = text.partition("e")
        if sep and len(exp.lstrip("+-")) > ABBREVIATE_DIGITS:
            return f"{mant}e{format_int(int(gmpy2.mpz(exp)), ellipsis=ellipsis)}"
    return text


#: A binary exponent past this (a decimal exponent past about 1,000) is rounded with arb.
_FAR_BITS = 3400


def _far_text(x: mpmath.mpf, digits: int, strip_zeros: bool) -> Optional[str]:
    """``x`` in ``mpmath.nstr``'s scientific form, correctly rounded (half up), for a
    decimal exponent beyond about 1,000 and beyond ``digits`` (where ``nstr`` always uses
    that form); None when this does not apply or cannot decide.

    ``nstr`` forms ``10**e`` for the exponent by repeated squaring in Python (about 30 µs
    at ``e = 10**8``: most of the CLI's time on heavy-tailed counts; a time growing with
    the square of the exponent's digits past ``2**53``, where ``exactdp dist`` of a
    count of thousands of digits shows ``e`` of thousands of digits).  Here, with arb: the
    exact ball of ``x``, divided by ``10**(e - digits + 1)`` for the decimal exponent
    ``e`` (a guess checked by the ball, one lower or higher if needed: from a float below
    ``2**53``, past it from ``log10(2)`` to the exponent's bits and 64 more), gives a ball
    around the scaled value ``y``; its rounding is ``floor(y + 1/2)`` when that floor is
    one integer and ``y + 1/2`` is provably no integer (a Ziv loop: the precision doubles,
    four times at most, then ``nstr`` is used).  ``nstr`` is not always correctly rounded
    at such exponents: ``9.95511644493985e-2147538`` for ``6361991972799459 *
    2**-7134016``, whose correct 15 digits end in 984.

    >>> _far_text(mpmath.mpf(2) ** -20000, 15, True), _far_text(mpmath.mpf(3) * 2 ** 4000, 4, False)
    ('2.51238805769874e-6021', '3.955e+1204')
    >>> _far_text(mpmath.mpf(1) / 3, 15, True) is None
    True
    """
    sign, man, exp, bc = x._mpf_
    if not man or not max(_FAR_BITS, 4 * digits + 40) < abs(exp + bc):
        return None
    from flint import arb, fmpz  # (formatting is imported by the lightest commands)

    from .precision import flint_workprec

    top = int(exp + bc - 1)  # 2**top <= |x| < 2**(top + 1)
    if abs(top) < 2**53:
        guess = math.floor(top * _LOG10_2)  # floor(log10 |x|), or one off
    else:  # a float guess would be off by more than one: top * log10(2) to |top|'s bits and 64 more
        with flint_workprec(top.bit_length() + 64):
            guess = int((arb(fmpz(top)) * arb(2).log() / arb(10).log()).mid().floor().unique_fmpz())
    low = 10 ** (digits - 1)
    high, half = 10 * low, arb(1) / 2
    prec = 4 * digits + 64 + int(exp).bit_length()
    for _ in range(4):
        with flint_workprec(prec):
            ball = arb((fmpz(int(man)), fmpz(int(exp))))  # exact
            for e10 in (guess, guess + 1, guess - 1):  # 2**(exp+bc-1) <= |x| < 2**(exp+bc): guess or one above
                y = ball / arb(10) ** (e10 - digits + 1)
                if not (y >= low and y < high):
                    continue  # the wrong exponent, or undecided: the next one, then more bits
                r = y + half
                q = r.floor().unique_fmpz()
                if q is None or (r - q).contains(0):
                    break
                q, e = int(q), e10
                if q == high:
                    q, e = low, e + 1
                text = str(q)
                tail = (text[1:].rstrip("0") or "0") if strip_zeros else text[1:]
                return f"{'-' if sign else ''}{text[0]}.{tail}e{'+' if e >= 0 else '-'}{int_text(abs(e))}"
        prec *= 2
    return None


def output_ids(output: Iterable[SupportsIndex]) -> list[int]:
    """Item ids of ``output``: sequences in selection order, sets sorted (any
    ``collections.abc.Set``: the audit's witness sets are built when read)."""
    if isinstance(output, AbstractSet):
        return sorted(int(i) for i in output)
    return [int(i) for i in output]


def output_text(output: Optional[Iterable[SupportsIndex]], *, brackets: bool = True) -> str:
    """``output`` as text: ``(3,1)`` for a sequence, ``{1,3}`` for a set, ``-`` for ``None``;
    ``brackets=False`` gives the bare ids ``3,1`` (the command line's form)."""
    if output is None:
        return "-"
    ids = ",".join(str(i) for i in output_ids(output))
    if not brackets:
        return ids
    return "{" + ids + "}" if isinstance(output, AbstractSet) else "(" + ids + ")"


def change_text(change: Sequence[int]) -> str:
    """``change``, a change vector (neighbour minus counts), as ``+1,0,-1``."""
    return ",".join(f"{x:+d}" if x else "0" for x in change)


def table_lines(headers: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = ()) -> list[str]:
    """The lines of an aligned text table of column ``headers`` and ``rows`` (sequences of
    cell texts): columns separated by two spaces, right-aligned except those listed in
    ``left`` (column indices), trailing spaces removed."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    return [line(headers)] + [line(row) for row in rows]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = ()) -> str:
    """:func:`table_lines` of ``headers``, ``rows`` and ``left`` joined with newlines."""
    return "\n".join(table_lines(headers, rows, left))


def json_scalar(value: object, digits: Optional[int] = None) -> Optional[Union[str, bool]]:
    """``value`` as JSON carries it exactly: ``None``, bools and strings as they are; ints and
    Fractions as exact decimal text (strings, whatever their size); an ``mpf`` or float as
    :func:`number_text` with ``digits`` digits, trailing zeros kept.

    >>> json_scalar(10**70)[:4], json_scalar(Fraction(-9, 2)), json_scalar(None), json_scalar(mpmath.mpf(0.5), 3)
    ('1000', '-9/2', None, '0.500')
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, Fraction)):
        return exact_text(value)
    if digits is None:
        raise InvalidParameterError("digits", digits, f"is needed to show the number {value!r}")
    return number_text(value, digits, strip_zeros=False)  # type: ignore[arg-type]  # a number by now
