"""Command-line output: exact numbers as text, aligned tables, JSON and the progress bar.

Tables abbreviate integers of more than :data:`ABBREVIATE_DIGITS` digits; ``--json`` is
always exact (unbounded integers and utilities as decimal strings).  Nothing here computes
a probability: every function turns an already certified or exact value into text.

>>> format_int(10**70, ellipsis="...")
'1.000...e+70 (71 digits)'
>>> list(_table(["a", "bb"], [["1", "2"], ["10", "3"]]))
[' a  bb', ' 1   2', '10   3']
"""

from __future__ import annotations

import json
import re
import sys
from fractions import Fraction
from typing import Any, Iterable, Iterator, Optional, Sequence, TextIO

import gmpy2
import mpmath

from ..core.levels import Level
from ..core.mechanism import Mechanism
from .registry import OPTIONS, MechanismSpec

__all__ = ["format_int", "ABBREVIATE_DIGITS"]

#: The program's name in messages, usage lines and progress labels.
PROG = "exactdp"
#: Integers with more digits than this are abbreviated in tables (``--json`` is exact).
ABBREVIATE_DIGITS = 60


def _int_digits(n: int) -> str:
    """Decimal digits of ``n`` (gmpy2: no CPython int/str digit limit, fast for huge ints)."""
    return gmpy2.mpz(n).digits(10)


def format_int(n: int, limit: int = ABBREVIATE_DIGITS, ellipsis: str = "\u2026") -> str:
    """``n`` in full, or ``d.ddd…e+E (N digits)`` (truncated, not rounded) past ``limit`` digits."""
    text = _int_digits(n)
    sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
    if len(body) <= limit:
        return text
    return f"{sign}{body[0]}.{body[1:4]}{ellipsis}e+{len(body) - 1} ({len(body)} digits)"


def _json_int(n: int) -> str:
    """An exact, unbounded integer (a multiplicity, a support size, a count) for JSON: always
    its decimal string, whatever its size, so the field's JSON type never depends on the
    value (Python's ``json.loads`` refuses integer literals of more than 4300 digits by
    default).  One gmpy2 conversion, linear-ish in the number of digits; no power of ten
    is formed.  Bounded integers (``d``, ``k``, indices, item ids) are JSON numbers.

    >>> _json_int(12), _json_int(-3), _json_int(10**70)[:5]
    ('12', '-3', '10000')
    """
    return _int_digits(n)


def _exact_str(value: object) -> str:
    """An exact rational/int as text (``"-9/2"``, ``"3"``), whatever its size."""
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return _int_digits(value.numerator)
        return f"{_int_digits(value.numerator)}/{_int_digits(value.denominator)}"
    if isinstance(value, int):
        return _int_digits(value)
    return str(value)


def _format_exact(value: object, ellipsis: str) -> str:
    """An exact int/Fraction for a table: like :func:`_exact_str`, long integers abbreviated."""
    if isinstance(value, Fraction) and value.denominator != 1:
        return f"{format_int(value.numerator, ellipsis=ellipsis)}/{format_int(value.denominator, ellipsis=ellipsis)}"
    if isinstance(value, (int, Fraction)):
        return format_int(int(value), ellipsis=ellipsis)
    return str(value)


def _json_utility(u: object) -> str:
    """An exact utility for JSON: always a string, ``"-4"`` or ``"-9/2"``.

    >>> _json_utility(-4), _json_utility(Fraction(-9, 2)), _json_utility(Fraction(6, 3))
    ('-4', '-9/2', '2')
    """
    return _exact_str(u)


def _json_param(value: object) -> Optional[str | bool]:
    """An exact parameter for JSON: its exact text (``"1/10"``), or ``null`` when not set."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, Fraction)):
        return _exact_str(value)
    return str(value)


def _num(x: mpmath.mpf, digits: int) -> str:
    """``x`` to ``digits`` significant digits (independent of mpmath's global precision)."""
    return mpmath.nstr(x, digits, strip_zeros=False)


def _num_table(x: mpmath.mpf, digits: int, ellipsis: str) -> str:
    """:func:`_num` with an exponent of more than 60 digits abbreviated (``--json`` is full)."""
    text = _num(x, digits)
    mant, sep, exp = text.partition("e")
    if sep and len(exp.lstrip("+-")) > ABBREVIATE_DIGITS:
        return f"{mant}e{format_int(int(gmpy2.mpz(exp)), ellipsis=ellipsis)}"
    return text


_LONG_INT = re.compile(r"[0-9]{%d,}" % (ABBREVIATE_DIGITS + 1))


def _abbreviate_ints(text: str, ellipsis: str) -> str:
    """Every run of more than 60 digits in ``text`` abbreviated like :func:`format_int`."""
    return _LONG_INT.sub(lambda mo: format_int(int(gmpy2.mpz(mo.group())), ellipsis=ellipsis), text)


def _describe(m: Mechanism, limit: int = 200, ellipsis: str = "\u2026") -> str:
    """``repr(m)`` with every integer of more than 60 digits abbreviated (``epsilon=1e400``,
    a base of ``1/3**200``, huge counts: the exact values are in ``--json``'s parameters),
    and the counts list elided when the result is still long."""
    text = _abbreviate_ints(repr(m), ellipsis)
    if len(text) > limit and text.startswith(f"{type(m).__name__}(["):
        head, sep, tail = text.partition("], k=")
        if sep:
            return f"{type(m).__name__}(<{m.d} counts>, k={tail}"
    return text


def _output_ids(output: Iterable[int]) -> list[int]:
    """Item ids of an output: sequences in selection order, sets sorted."""
    if isinstance(output, (set, frozenset)):
        return sorted(int(i) for i in output)
    return [int(i) for i in output]


def _output_text(output: Iterable[int]) -> str:
    return ",".join(str(i) for i in _output_ids(output))


def _ellipsis(stream: TextIO) -> str:
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        "\u2026".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return "..."
    return "\u2026"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = ()) -> Iterator[str]:
    """Aligned text table: columns right-aligned except those listed in ``left``."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    yield line(headers)
    for row in rows:
        yield line(row)


def _is_flat(value: Any) -> bool:
    """A scalar, or a list/dict of scalars and lists of scalars (one line of JSON)."""
    if isinstance(value, dict):
        return all(_is_flat(v) and not isinstance(v, dict) for v in value.values())
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    return True


def _json_lines(value: Any, indent: int, level: int) -> Iterator[str]:
    """Pieces of indented JSON: objects one key per line; lists of scalars (outputs, counts)
    and flat objects inside lists (one level, one output, one neighbour) on one line each.
    Every line is produced by the C encoder of :func:`json.dumps`, so the cost is linear in
    the output size (``json.dumps(indent=...)`` falls back to a pure-Python encoder)."""
    pad, inner = " " * (indent * level), " " * (indent * (level + 1))
    if isinstance(value, dict) and value:
        items = list(value.items())
        yield "{\n"
        for i, (key, item) in enumerate(items):
            yield f"{inner}{json.dumps(key)}: "
            yield from _json_lines(item, indent, level + 1)
            yield ",\n" if i + 1 < len(items) else "\n"
        yield pad + "}"
    elif isinstance(value, list) and value and not _is_flat(value):
        yield "[\n"
        for i, item in enumerate(value):
            yield inner
            if isinstance(item, dict) and _is_flat(item):
                yield json.dumps(item)
            else:
                yield from _json_lines(item, indent, level + 1)
            yield ",\n" if i + 1 < len(value) else "\n"
        yield pad + "]"
    else:
        yield json.dumps(value)


def _emit_json(obj: Any, indent: Optional[int] = 2) -> None:
    """JSON on stdout: indented as :func:`_json_lines` says, or on one line (``indent=None``)."""
    if indent is None:
        sys.stdout.write(json.dumps(obj) + "\n")
        return
    sys.stdout.writelines(_json_lines(obj, indent, 0))
    sys.stdout.write("\n")


def _out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def _mechanism_json(name: str, m: Mechanism, spec: MechanismSpec) -> dict[str, Any]:
    params: dict[str, Any] = {"d": int(m.d), "k": int(m.k)}
    for option in spec.options:
        dest = OPTIONS[option].dest
        params[dest] = _json_param(getattr(m, dest, None))
    return {
        "mechanism": name,
        "class": type(m).__name__,
        "description": _abbreviate_ints(repr(m), "..."),  # exact values: "parameters"
        "output_kind": getattr(m, "output_kind", "sequence"),
        "parameters": params,
    }


def _summary_lines(name: str, m: Mechanism, spec: MechanismSpec, levels: Sequence[Level]) -> list[str]:
    kind = getattr(m, "output_kind", "sequence")
    return [
        f"support size: {format_int(m.support_size(), ellipsis=_ellipsis(sys.stdout))} "
        f"outputs ({kind}s) in {len(levels)} level{'s' if len(levels) != 1 else ''}",
        f"mechanism:    {_describe(m)}  [{name}: {spec.summary}]",
    ]


def _precision_line(dps: int, digits: int) -> str:
    return (
        f"precision:    probabilities certified to relative error 1e-{dps}, "
        f"shown to {digits} significant digits"
    )



class _Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal (so never
    in pipes, files or captured test output).  Call it with ``(done, total)``."""

    WIDTH = 30

    def __init__(self, label: str, stream: Optional[TextIO] = None) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        try:
            self.enabled = bool(isatty and isatty())
        except (OSError, ValueError):
            self.enabled = False
        self._shown = False
        self._last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        filled = self.WIDTH * done // total
        if filled == self._last and done != total:
            return
        self._last = filled
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * (len(self.label) + self.WIDTH + 30) + "\r")
            self.stream.flush()
            self._shown = False


def _change_text(change: Sequence[int]) -> str:
    return ",".join(f"{x:+d}" if x else "0" for x in change)


def _loss_text(x: mpmath.mpf, digits: int) -> str:
    return "inf" if mpmath.isinf(x) else _num(x, digits)


def _larger_under(direction: str) -> str:
    return {"a>b": "counts", "b>a": "neighbour"}.get(direction, "equal")

