"""Reading what a caller gives the checks: draws in any shape, numbers, sample files.

Draws become exactdp outputs (:func:`normalise_output`, after :func:`relabel` for draws of
labels); sample files are CSV, JSON lines or one JSON list (:func:`read_samples`).

>>> normalise_output([3, 1], "set") == frozenset({1, 3})
True
>>> read_samples("0,1\\n1 0\\n")
[[0, 1], [1, 0]]
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

from typing import Any

import mpmath

from .._oracle.ids import IdMap, check_id_map, normalise_output, relabel  # noqa: F401 (public here, as before)
from ..errors import InvalidParameterError

__all__ = ["IdMap", "normalise_output", "relabel", "read_samples"]


def read_samples(text: str, source: str = "samples") -> list[list[int]]:
    """Draws from ``text`` (a file's contents): one draw per line as comma/space-separated
    item ids (CSV), or JSON lines (each a list of ids), or one JSON list of lists
    (``exactdp sample --json``).  Blank lines and ``#`` comments are ignored; errors
    (``ValueError``) name the line, after ``source``, the name the text came from (default
    ``"samples"``; a file name, say).

    >>> read_samples("0,1\\n1 0\\n")
    [[0, 1], [1, 0]]
    >>> read_samples("[[0, 1], [2, 0]]")
    [[0, 1], [2, 0]]
    >>> read_samples("[\\n  [0, 1],\\n  [2, 0]\\n]")
    [[0, 1], [2, 0]]
    >>> read_samples("[0, 1]\\n[2, 0]\\n")
    [[0, 1], [2, 0]]
    """
    text = text.removeprefix("\ufeff")  # a byte order mark (a CSV saved by a spreadsheet)
    stripped = text.strip()
    data = None
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)  # one JSON document (possibly pretty-printed)
        except json.JSONDecodeError as err:
            if stripped.startswith("[["):
                raise ValueError(f"{source}: invalid JSON: {err}") from None
            data = None  # JSON lines
        if isinstance(data, list) and data and all(isinstance(x, int) for x in data):
            data = None  # a single JSON line
    if data is not None:
        if not isinstance(data, list) or not all(isinstance(x, list) for x in data):
            raise ValueError(f"{source}: a JSON document must be a list of lists of item ids")
        out = []
        for i, x in enumerate(data):
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in x):
                raise ValueError(f"{source}: draw {i}: item ids must be integers")
            out.append(x)
        return out
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = re.sub(r"#.*", "", line).strip()
        if not line:
            continue
        if line.startswith("["):
            try:
                x = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{source}: line {lineno}: invalid JSON: {err.msg}") from None
            if not isinstance(x, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in x):
                raise ValueError(f"{source}: line {lineno}: expected a JSON list of item ids")
            out.append(x)
            continue
        ids = []
        for token in re.split(r"[,;\s]+", line):
            if not token:
                continue
            if not re.fullmatch(r"[+-]?[0-9]+", token):  # int() would also read "1_0" as 10
                raise ValueError(f"{source}: line {lineno}: {token!r} is not an item id")
            ids.append(int(token))
        out.append(ids)
    if not out:
        raise ValueError(f"{source}: no draws found")
    return out


def to_mpf(x: Any, argument: str = "claimed") -> mpmath.mpf:
    """A caller's number (float, Fraction, sympy number, mpf, string...) as an ``mpmath.mpf``
    at the working precision (a sympy expression such as ``1/(1 + exp(-1))`` is evaluated
    to it, not rounded to a float)."""
    if getattr(x, "is_Rational", False):
        return mpmath.mpf(int(x.p)) / int(x.q)
    if isinstance(x, Decimal) and x.is_finite():
        return mpmath.mpf(str(x))  # its decimal digits, not its float rounding
    if hasattr(x, "evalf") and getattr(x, "is_number", False):
        value = x.evalf(mpmath.mp.dps + 10)
        if getattr(value, "is_Float", False):
            return mpmath.mpf(value)
    try:
        return mpmath.mpf(x)
    except (TypeError, ValueError):
        pass
    if hasattr(x, "numerator") and hasattr(x, "denominator"):
        return mpmath.mpf(int(x.numerator)) / int(x.denominator)
    try:
        return mpmath.mpf(float(x))
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameterError(argument, x, "is not a real number (give floats, Fractions, "
                                    "sympy numbers or decimal strings)") from None
