"""The ``exactdp`` command line: exact levels, certified probabilities and exact samples.

Usage (see ``docs/cli.md`` for every command with real output)::

    exactdp dist    joint --counts 10,5,1,1 -k 2 --epsilon 1    # table of levels
    exactdp levels  joint --counts 30,15,1x998 -k 2              # exact levels only
    exactdp prob    joint --counts 10,5,1,1 -k 2 --output 0,1 --exact
    exactdp sample  joint --counts 10,5,1,1 -k 2 -n 10 --seed 1
    exactdp audit   joint --counts 3,2,2,0 -k 2 --epsilon 1 --relation swap
    exactdp certify joint --counts 10,5,1,1 -k 2 --samples draws.csv

Every command is ``exactdp COMMAND MECHANISM [options]``; ``--json`` gives machine-readable
output.  Mechanisms come from the :data:`MECHANISMS` registry (one entry per mechanism),
their constructor options from :data:`OPTIONS`.

Exit status: 0 on success; 1 when ``audit`` finds a loss above epsilon or ``certify``
rejects the draws; 3 when ``certify`` is inconclusive (the test could not have failed, or
was too weak to trust);
2 for bad arguments (argparse errors and every
:class:`~exactdp.errors.ExactDPError` raised by the library), with a one-line
``exactdp: error: ...`` on stderr; 130 on Ctrl-C; 141 when stdout is closed early
(``exactdp sample ... | head``).

Counts are comma- and/or whitespace-separated integers, ``VALUExREPEAT`` meaning
``REPEAT`` copies of ``VALUE``:

>>> parse_counts("30, 15,1x3")
[30, 15, 1, 1, 1]
>>> format_int(10**70, ellipsis="...")
'1.000...e+70 (71 digits)'
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import textwrap
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterator, Optional, Sequence

import gmpy2
import mpmath

import exactdp

from ..errors import ExactDPError
from ..core.validation import as_rng

__all__ = [
    "main",
    "build_parser",
    "MechanismSpec",
    "Option",
    "MECHANISMS",
    "OPTIONS",
    "parse_counts",
    "format_int",
]

PROG = "exactdp"
#: Default certified digits (the library's default, docs/definitions.md section 3).
DEFAULT_DPS = 30
#: Default digits shown in human-readable tables (``--digits``).
DEFAULT_DIGITS = 15
#: Integers with more digits than this are abbreviated in tables (``--json`` is exact).
ABBREVIATE_DIGITS = 60
#: Default guard for ``dist --outputs``.
DEFAULT_MAX_OUTPUTS = 10_000


# =====================================================================================
# Mechanism options and the mechanism registry
# =====================================================================================


@dataclass(frozen=True)
class Option:
    """A keyword argument of a mechanism constructor, exposed as a command-line option.

    The value is passed to the constructor *as the string the user typed* (exactdp parses
    ``"0.1"`` as exactly 1/10 and ``"1/2"`` as a Fraction), and only when given, so the
    library's own defaults apply otherwise.  ``choices`` restricts the accepted strings.
    """

    flags: tuple[str, ...]
    dest: str
    help: str
    metavar: Optional[str] = None
    choices: Optional[tuple[str, ...]] = None


#: Every constructor option any mechanism takes, by name (the name is the keyword argument).
OPTIONS: dict[str, Option] = {
    "epsilon": Option(
        ("--epsilon",), "epsilon",
        "privacy parameter, a positive number parsed exactly: '0.1' is 1/10, '1/2' a "
        "fraction (the library's default, 1, when neither --epsilon nor --base is given)",
        metavar="EPS",
    ),
    "base": Option(
        ("--base",), "base",
        "exact rational 0 < BASE < 1 used as the weight of one unit of utility instead of "
        "the epsilon-derived one (exp(-epsilon/(2*sensitivity)) for the Joint family, "
        "exp(-epsilon) for canonical, exp(-epsilon/k) per round for peeling); every "
        "probability is then rational (exclusive with --epsilon)",
        metavar="BASE",
    ),
    "sensitivity": Option(
        ("--sensitivity",), "sensitivity",
        "utility sensitivity, a positive exact rational (default 1: add/remove "
        "neighbours; 2 models swap neighbours)",
        metavar="DELTA",
    ),
    "rho": Option(
        ("--rho",), "rho",
        "canonical loss parameter, an exact rational in [0, 1] (default 1/2)",
        metavar="RHO",
    ),
    "noise": Option(
        ("--noise",), "noise",
        "selection rule: 'gumbel' (exponential mechanism) or 'exponential' "
        "(permute-and-flip)",
        metavar="NOISE",
        choices=("gumbel", "exponential"),
    ),
}


@dataclass(frozen=True)
class MechanismSpec:
    """How the CLI builds one mechanism: ``factory(counts, k, **options)``.

    ``options`` names entries of :data:`OPTIONS` the constructor accepts as keyword
    arguments; ``summary`` is the one-line description shown in ``--help``.
    """

    factory: Callable[..., Any]
    options: tuple[str, ...]
    summary: str

    def build(self, counts: Sequence[int], k: int, args: argparse.Namespace) -> Any:
        kwargs = {}
        for name in self.options:
            dest = OPTIONS[name].dest
            value = getattr(args, dest, None)
            if value is not None:
                kwargs[dest] = value
        return self.factory(counts, k, **kwargs)


_JOINT_OPTIONS = ("epsilon", "base", "sensitivity")

# The registry: CLI name -> MechanismSpec.  Every command (dist, levels, prob, sample)
# accepts every registered mechanism, with --counts/--counts-file and -k/--k plus the
# options listed in the spec.  To add a mechanism, add ONE entry, e.g.
#
#     MECHANISMS["joint-set"] = MechanismSpec(
#         exactdp.JointSet, ("epsilon", "base", "sensitivity"),
#         "original JOINT over top-k sets")
#     MECHANISMS["canonical"] = MechanismSpec(
#         exactdp.Canonical, ("epsilon", "rho", "noise"),
#         "canonical loss over utility classes of k-subsets")
#     MECHANISMS["peeling"] = MechanismSpec(
#         exactdp.Peeling, ("epsilon", "noise"), "k rounds of peeling")
#
# (a constructor option no entry of OPTIONS describes yet gets a new OPTIONS entry first).
# The class must follow exactdp.Mechanism (levels(), level_probabilities(dps),
# probability(o, dps), ..., and the `rule`/`table` pair used for per-output probabilities
# in `dist`).  Nothing else in this file needs to change; tests/cli/test_cli.py runs its
# generic checks over every registered mechanism.  Use getattr(exactdp, "Name", None)
# while the class may not exist yet, as for PNFJoint below.
MECHANISMS: dict[str, MechanismSpec] = {
    "joint": MechanismSpec(
        exactdp.Joint, _JOINT_OPTIONS,
        "Joint exponential mechanism over top-k sequences",
    ),
}

_PNFJoint = getattr(exactdp, "PNFJoint", None)
if _PNFJoint is not None:
    MECHANISMS["pnf-joint"] = MechanismSpec(
        _PNFJoint, _JOINT_OPTIONS,
        "Joint with permute-and-flip over top-k sequences",
    )

MECHANISMS["joint-set"] = MechanismSpec(
    exactdp.JointSet, _JOINT_OPTIONS, "original JOINT over top-k sets",
)
MECHANISMS["canonical"] = MechanismSpec(
    exactdp.Canonical, ("epsilon", "base", "rho", "noise"),
    "canonical loss over utility classes of k-subsets",
)
MECHANISMS["peeling"] = MechanismSpec(
    exactdp.Peeling, ("epsilon", "base", "noise"), "k rounds of peeling",
)


# =====================================================================================
# Parsing counts and outputs
# =====================================================================================

_SEPARATORS = re.compile(r"[,\s]+")
# Counts: items separated by one comma (with any whitespace around it) or by whitespace.
_COUNT_SEPARATOR = re.compile(r"\s*,\s*|\s+")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INTEGRAL_DECIMAL = re.compile(r"([+-]?[0-9]+)\.0*")

#: Most counts one command accepts (after expanding ``VALUExREPEAT``): checked before the
#: list is built, so ``1x999999999999`` is refused at once instead of exhausting memory.
#: Measured: ``exactdp levels joint --counts 30,15,1x10000000 -k 2`` takes 41 s and 1.3 GB.
MAX_COUNTS = 10_000_000
#: Most digits of one count on the command line (the Python API takes any int).
MAX_COUNT_DIGITS = 1_000_000
#: Most digits of an integer option (``-k``, ``--seed``, ``-n``, ``--dps``, ...): CPython's
#: default int/str conversion limit.
MAX_OPTION_DIGITS = 4300


def _short(token: str, limit: int = 40) -> str:
    """``repr(token)``, cut to ``limit`` characters (an error line stays one short line)."""
    text = repr(token)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


class _TooManyDigits(ValueError):
    """An integer token longer than the digit limit it was parsed under."""


def _parse_integer(token: str, max_digits: int = MAX_COUNT_DIGITS, *, integral_decimals: bool = True) -> int:
    """An exact integer from ``"12"`` or ``"-3"`` (ASCII digits, no underscores), and from
    ``"2.0"`` when ``integral_decimals``; ValueError otherwise, :class:`_TooManyDigits` when
    it has more than ``max_digits`` digits (checked before converting; long strings go
    through gmpy2, which is not quadratic)."""
    mo = _INTEGRAL_DECIMAL.fullmatch(token) if integral_decimals else None
    if mo:
        token = mo.group(1)
    if not _INTEGER.fullmatch(token):
        raise ValueError(f"{_short(token)} is not an integer")
    digits = len(token.lstrip("+-"))
    if digits > max_digits:
        raise _TooManyDigits(f"{_short(token)} has {digits} digits, more than the limit of {max_digits}")
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
    count of more than :data:`MAX_COUNT_DIGITS` digits is refused before anything is built.
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
            raise fail(f"item {len(counts)}: {_short(token)} is not {what}") from None
        if repeat < 1:
            raise fail(f"item {len(counts)}: the repeat count in {_short(token)} must be at least 1")
        if len(counts) + repeat > max_counts:
            raise fail(
                f"item {len(counts)}: {_short(token)} would make more than {max_counts} counts, "
                "the command line's limit (the Python API takes any number)"
            )
        counts.extend([value] * repeat)
    if not counts:
        raise fail("no counts given")
    return counts


def _counts_arg(text: str) -> list[int]:
    try:
        return parse_counts(text, "")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _parse_file_arg(path: str, parse: Callable[[str, str], Any]) -> Any:
    """Read ``path`` (``-`` is standard input) and ``parse(text, repr(path))``, turning read
    and parse errors into argparse's one-line errors."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise argparse.ArgumentTypeError(f"cannot read {path!r}: {getattr(err, 'strerror', None) or err}") from None
    try:
        return parse(text, repr(path))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _counts_file_arg(path: str) -> list[int]:
    return _parse_file_arg(path, parse_counts)


def _output_arg(text: str) -> list[int]:
    ids = []
    for token in _SEPARATORS.split(text.strip()):
        if not token:
            continue
        try:
            ids.append(_int_arg(token))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"item id {_short(token)} is not an integer") from None
    if not ids:
        raise argparse.ArgumentTypeError("no item ids given")
    return ids


def _positive_int_arg(text: str) -> int:
    value = _int_arg(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _seed_arg(text: str) -> int:
    """Any integer: :func:`exactdp.core.validation.seed_to_nonnegative` maps seeds injectively
    (``random.Random`` alone would give ``-s`` the samples of ``s``)."""
    return _int_arg(text)


def _int_arg(text: str) -> int:
    """An integer option: ASCII digits with an optional sign, at most
    :data:`MAX_OPTION_DIGITS` digits (checked before converting)."""
    try:
        return _parse_integer(text.strip(), MAX_OPTION_DIGITS, integral_decimals=False)
    except _TooManyDigits as err:
        raise argparse.ArgumentTypeError(f"integer {err}") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer {_short(text)}") from None


# =====================================================================================
# Formatting
# =====================================================================================


@contextlib.contextmanager
def _no_int_str_limit() -> Iterator[None]:
    """Lift CPython's int/str digit limit for the duration of one CLI run: the library
    and sympy turn big integers into text with ``str``/``repr`` (``Mechanism.__repr__``,
    ``str(probability_exact(...))``).  Restored on exit, so ``main()`` leaves it unchanged."""
    getter = getattr(sys, "get_int_max_str_digits", None)
    if getter is None:  # Python without the limit
        yield
        return
    old = getter()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


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


def _exact_str(value: Any) -> str:
    """An exact rational/int as text (``"-9/2"``, ``"3"``), whatever its size."""
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return _int_digits(value.numerator)
        return f"{_int_digits(value.numerator)}/{_int_digits(value.denominator)}"
    if isinstance(value, int):
        return _int_digits(value)
    return str(value)


def _format_exact(value: Any, ellipsis: str) -> str:
    """An exact int/Fraction for a table: like :func:`_exact_str`, long integers abbreviated."""
    if isinstance(value, Fraction) and value.denominator != 1:
        return f"{format_int(value.numerator, ellipsis=ellipsis)}/{format_int(value.denominator, ellipsis=ellipsis)}"
    if isinstance(value, (int, Fraction)):
        return format_int(int(value), ellipsis=ellipsis)
    return str(value)


def _json_utility(u: Any) -> str:
    """An exact utility for JSON: always a string, ``"-4"`` or ``"-9/2"``.

    >>> _json_utility(-4), _json_utility(Fraction(-9, 2)), _json_utility(Fraction(6, 3))
    ('-4', '-9/2', '2')
    """
    return _exact_str(u)


def _json_param(value: Any) -> Optional[str | bool]:
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


def _describe(m: Any, limit: int = 200, ellipsis: str = "\u2026") -> str:
    """``repr(m)`` with every integer of more than 60 digits abbreviated (``epsilon=1e400``,
    a base of ``1/3**200``, huge counts: the exact values are in ``--json``'s parameters),
    and the counts list elided when the result is still long."""
    text = _abbreviate_ints(repr(m), ellipsis)
    if len(text) > limit and text.startswith(f"{type(m).__name__}(["):
        head, sep, tail = text.partition("], k=")
        if sep:
            return f"{type(m).__name__}(<{m.d} counts>, k={tail}"
    return text


def _output_ids(output: Any) -> list[int]:
    """Item ids of an output: sequences in selection order, sets sorted."""
    if isinstance(output, (set, frozenset)):
        return sorted(int(i) for i in output)
    return [int(i) for i in output]


def _output_text(output: Any) -> str:
    return ",".join(str(i) for i in _output_ids(output))


def _ellipsis(stream: Any) -> str:
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


# =====================================================================================
# Commands
# =====================================================================================


def _mechanism_json(name: str, m: Any, spec: MechanismSpec) -> dict[str, Any]:
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


def _summary_lines(name: str, m: Any, spec: MechanismSpec, levels: Sequence[Any]) -> list[str]:
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


def _digits(args: argparse.Namespace) -> tuple[int, int]:
    """(dps to compute at, digits to show).  Human output never shows uncertified digits."""
    if args.json:
        return args.dps, args.dps
    return max(args.dps, args.digits), args.digits


def _per_output_probabilities(m: Any, dps: int) -> list[mpmath.mpf]:
    """Certified probability of one output of each level."""
    return [p for _, p in m.level_output_probabilities(dps)]


def cmd_dist(name: str, spec: MechanismSpec, m: Any, args: argparse.Namespace) -> None:
    dps, digits = _digits(args)
    levels = m.levels()
    if args.outputs and m.support_size() > args.max_outputs:
        raise _CommandError(
            f"the mechanism has {format_int(m.support_size(), ellipsis='...')} outputs, more than "
            f"--max-outputs {args.max_outputs}; raise --max-outputs to list them"
        )
    level_probs = [p for _, p in m.level_probabilities(dps)]
    output_probs = _per_output_probabilities(m, dps)

    def outputs_by_level() -> Iterator[tuple[Any, mpmath.mpf]]:
        it = m.outputs(max_outputs=args.max_outputs)  # best level first, levels() order
        for a, level in enumerate(levels):
            for _ in range(level.multiplicity):
                yield next(it), output_probs[a]

    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "dps": dps,
            "support_size": _json_int(m.support_size()),
            "levels": [
                {
                    "index": a,
                    "utility": _json_utility(level.utility),
                    "multiplicity": _json_int(level.multiplicity),
                    "level_probability": _num(level_probs[a], dps),
                    "output_probability": _num(output_probs[a], dps),
                }
                for a, level in enumerate(levels)
            ],
        })
        if args.outputs:
            obj["outputs"] = [
                {"output": _output_ids(o), "probability": _num(p, dps)} for o, p in outputs_by_level()
            ]
        _emit_json(obj)
        return

    ell = _ellipsis(sys.stdout)
    rows = [
        [
            str(a),
            _format_exact(level.utility, ell),
            format_int(level.multiplicity, ellipsis=ell),
            _num_table(level_probs[a], digits, ell),
            _num_table(output_probs[a], digits, ell),
        ]
        for a, level in enumerate(levels)
    ]
    for line in _table(["level", "utility", "multiplicity", "P(level)", "P(each output)"], rows, left=(3, 4)):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, levels):
        _out(line)
    _out(_precision_line(dps, digits))
    if args.outputs:
        _out()
        width = max(len("output"), m.k * len(str(m.d - 1)) + m.k - 1)
        _out(f"{'output'.ljust(width)}  probability")
        for o, p in outputs_by_level():
            _out(f"{_output_text(o).ljust(width)}  {_num_table(p, digits, ell)}")


def cmd_levels(name: str, spec: MechanismSpec, m: Any, args: argparse.Namespace) -> None:
    levels = m.levels()
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "support_size": _json_int(m.support_size()),
            "levels": [
                {"index": a, "utility": _json_utility(lv.utility), "multiplicity": _json_int(lv.multiplicity)}
                for a, lv in enumerate(levels)
            ],
        })
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    rows = [[str(a), _format_exact(lv.utility, ell), format_int(lv.multiplicity, ellipsis=ell)] for a, lv in enumerate(levels)]
    for line in _table(["level", "utility", "multiplicity"], rows):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, levels):
        _out(line)


def cmd_prob(name: str, spec: MechanismSpec, m: Any, args: argparse.Namespace) -> None:
    dps, digits = _digits(args)
    output = args.output
    utility = m.utility(output)  # validates the output (length, repeats, unknown ids)
    levels = m.levels()
    index = next(a for a, lv in enumerate(levels) if lv.utility == utility)
    p = m.probability(output, dps)
    logp = m.log_probability(output, dps)
    exact = str(m.probability_exact(output)) if args.exact else None
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "output": list(output),
            "utility": _json_utility(utility),
            "level": index,
            "level_multiplicity": _json_int(levels[index].multiplicity),
            "dps": dps,
            "probability": _num(p, dps),
            "log_probability": _num(logp, dps),
        })
        if exact is not None:
            obj["exact"] = exact
        _emit_json(obj)
        return
    mult = levels[index].multiplicity
    ell = _ellipsis(sys.stdout)
    _out(f"output:          {_output_text(output)}")
    _out(
        f"utility:         {_format_exact(utility, ell)}  (level {index} of {len(levels)}; "
        f"{format_int(mult, ellipsis=ell)} output{'s' if mult != 1 else ''} in the level)"
    )
    _out(f"probability:     {_num_table(p, digits, ell)}")
    _out(f"log-probability: {_num_table(logp, digits, ell)}")
    if exact is not None:
        _out(f"exact:           {exact}")
    _out(f"mechanism:       {_describe(m)}")
    _out(f"precision:       certified to relative error 1e-{dps}, shown to {digits} significant digits")


def cmd_sample(name: str, spec: MechanismSpec, m: Any, args: argparse.Namespace) -> None:
    # One generator for all draws: identical to m.samples(n, rng=seed) for a seed.
    gen = as_rng(args.seed)  # None: random.SystemRandom; a seed: exactly as in the library
    if args.json:
        _emit_json([_output_ids(m.sample(gen)) for _ in range(args.n)], indent=None)
        return
    for _ in range(args.n):
        _out(_output_text(m.sample(gen)))


class _Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal (so never
    in pipes, files or captured test output).  Call it with ``(done, total)``."""

    WIDTH = 30

    def __init__(self, label: str, stream: Any = None):
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


_VERDICTS = {
    "below": "below epsilon at every neighbour of these counts (the bound is not attained here)",
    "attained": "attained: the loss equals epsilon",
    "violated": "VIOLATED: the loss exceeds epsilon",
}


def cmd_audit(name: str, spec: MechanismSpec, m: Any, args: argparse.Namespace) -> None:
    from .. import audit

    dps, digits = _digits(args)
    relation = args.relation.replace("-", "_")
    progress = _Progress(f"{PROG} audit: neighbours")
    try:
        w = audit.worst_case(
            lambda c: spec.build(c, args.k, args), m.counts, relation, dps,
            contribution=args.contribution, max_neighbours=args.max_neighbours,
            max_outputs=args.max_outputs, progress=progress,
        )
    finally:
        progress.close()
    args._status = 1 if w.verdict == "violated" else 0
    detail = w.detail
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "relation": relation,
            "contribution": args.contribution,
            "dps": dps,
            "epsilon": _exact_str(w.epsilon) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon),
            "epsilon_value": _num(w.epsilon_value, dps),
            "verdict": w.verdict,
            "attained_exactly": w.attained_exactly,
            "worst": {
                "privacy_loss": _loss_text(w.loss, dps),
                "neighbour": [_json_int(x) for x in w.neighbour],
                "change": list(w.change),
                "witness": _output_ids(w.witness),
                "larger_under": _larger_under(w.direction),
                "log_probability_counts": _loss_text(detail.log_p_a, dps),
                "log_probability_neighbour": _loss_text(detail.log_p_b, dps),
                "outputs_with_this_loss": _json_int(detail.witness_outputs),
            },
            "margin": _loss_text(w.margin, dps),
            "neighbours_total": _json_int(w.neighbours_total),
            "neighbours_audited": len(w.results),
            "results": [
                {
                    "neighbour": [_json_int(x) for x in r.neighbour],
                    "change": list(r.change),
                    "privacy_loss": _loss_text(r.loss.value, dps),
                    "witness": _output_ids(r.loss.witness),
                    "larger_under": _larger_under(r.loss.direction),
                }
                for r in w.results
            ],
        })
        _emit_json(obj)
        return
    shown = w.results[: args.rows]
    rows = [
        [",".join(map(str, r.neighbour)), _change_text(r.change), _loss_text(r.loss.value, digits),
         _output_text(r.loss.witness), _larger_under(r.loss.direction)]
        for r in shown
    ]
    for line in _table(["neighbour", "change", "privacy loss", "witness", "larger under"], rows, left=(0, 1, 3)):
        _out(line)
    classes = "neighbours" if len(w.results) == w.neighbours_total else "classes of neighbours (up to exchanging tied items)"
    _out(f"({len(shown)} of {len(w.results)} {classes} shown, worst first; {w.neighbours_total} {relation} neighbours in all)")
    _out()
    _out(f"worst case:   privacy loss {_loss_text(w.loss, digits)} at neighbour {','.join(map(str, w.neighbour))}, output {_output_text(w.witness)}")
    _out(f"              ln P(output | counts) = {_loss_text(detail.log_p_a, digits)}, "
         f"ln P(output | neighbour) = {_loss_text(detail.log_p_b, digits)}")
    eps_text = _format_exact(w.epsilon, _ellipsis(sys.stdout)) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon)
    _out(f"epsilon:      {eps_text} (claimed) = {_num_table(w.epsilon_value, digits, _ellipsis(sys.stdout))}")
    verdict = _VERDICTS[w.verdict]
    if w.verdict == "attained" and w.attained_exactly:
        verdict += " (exactly)"
    elif w.verdict == "attained":
        verdict += f" (to {dps} digits)"
    _out(f"verdict:      {verdict}; margin epsilon - loss = {_loss_text(w.margin, digits)}")
    _out(f"mechanism:    {_describe(m)}  [{name}: {spec.summary}]")
    _out(f"precision:    losses certified to relative error 1e-{dps}, shown to {digits} significant digits")


def _samples_file_arg(path: str) -> list[list[int]]:
    from ..certify import read_samples

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


_delta_arg = _unit_interval_arg("TV", closed_above=True)  # a total variation distance
_min_power_arg = _unit_interval_arg("P", closed_above=False)
_alpha_arg = _unit_interval_arg("ALPHA", closed_above=False)


#: ``exactdp certify`` exit status per verdict.
CERTIFY_STATUS = {"pass": 0, "fail": 1, "inconclusive": 3}


def cmd_certify(name: str, spec: MechanismSpec, m: Any, args: argparse.Namespace) -> None:
    from .. import certify

    progress = _Progress(f"{PROG} certify: listing outputs")
    try:
        fit = certify.goodness_of_fit(args.samples, m, within=not args.levels_only, alpha=args.alpha,
                                      delta=args.delta, min_power=args.min_power,
                                      max_enumerate=args.max_enumerate, progress=progress)
    finally:
        progress.close()
    verdict = fit.verdict()
    passed = verdict == "pass"
    args._status = CERTIFY_STATUS[verdict]
    if args.json:
        plan = fit.plan
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "n": fit.n,
            "alpha": args.alpha,
            "verdict": verdict,
            "passed": passed,
            "verdict_line": fit.verdict_line(),
            "delta": fit.delta,
            "min_power": fit.min_power,
            "power": fit.power(),
            "detectable_delta": None if mpmath.isinf(fit.detectable_delta()) else fit.detectable_delta(),
            "n_needed": fit.samples_needed(),
            "plan": {"levels": plan.levels, "level_bins": plan.level_bins, "pooled_levels": plan.pooled_levels,
                     "within_outputs": plan.within_outputs, "within_bins": plan.within_bins,
                     "within_grouped": plan.within_grouped, "untested_outputs": plan.untested_outputs},
            "statistic": fit.statistic,
            "df": fit.df,
            "p_value": _num(fit.p_value, 6),
            "level_stage": {"statistic": fit.level_statistic, "df": fit.level_df, "p_value": _num(fit.level_p_value, 6)},
            "within_stage": {"statistic": fit.within_statistic, "df": fit.within_df, "p_value": _num(fit.within_p_value, 6)},
            "invalid": [{"draw": str(o), "reason": why} for o, why in fit.invalid],
            "impossible": [_output_ids(o) for o in fit.impossible],
            "skipped_levels": {str(a): why for a, why in fit.skipped.items()},
            "bins": [
                {"stage": b.stage, "bin": b.label, "observed": b.observed, "expected": b.expected,
                 "contribution": b.contribution}
                for b in fit.bins
            ],
        })
        _emit_json(obj)
        return
    level_bins = [b for b in fit.bins if b.stage == "level"]
    rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in level_bins]
    _out("by level (consecutive levels pooled until each bin expects >= 5 draws):")
    for line in _table(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
        _out("  " + line)
    within = sorted((b for b in fit.bins if b.stage == "within"), key=lambda b: -b.contribution)[: args.rows]
    if within:
        _out(f"within levels (the {len(within)} largest contributions):")
        rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in within]
        for line in _table(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
            _out("  " + line)
    _out()
    for line in fit.summary(verdict=False).splitlines():
        _out(line)
    _out(f"verdict: {fit.verdict_line()}")
    _out(f"mechanism: {_describe(m)}  [{name}: {spec.summary}]")


@dataclass(frozen=True)
class Command:
    run: Callable[[str, MechanismSpec, Any, argparse.Namespace], None]
    help: str
    description: str
    example: str
    add_arguments: Callable[[argparse.ArgumentParser], None]


def _add_precision(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dps", type=_positive_int_arg, default=DEFAULT_DPS, metavar="N",
        help=f"certified significant digits: relative error at most 1e-N (default {DEFAULT_DPS})",
    )
    p.add_argument(
        "--digits", type=_positive_int_arg, default=DEFAULT_DIGITS, metavar="N",
        help=f"significant digits shown in tables (default {DEFAULT_DIGITS}; computed "
        "at max(--dps, --digits) so every shown digit is certified; --json shows --dps digits)",
    )


def _add_json(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"machine-readable output: {what}")


def _args_dist(p: argparse.ArgumentParser) -> None:
    _add_precision(p)
    p.add_argument("--outputs", action="store_true", help="also list every output with its probability")
    p.add_argument(
        "--max-outputs", type=_positive_int_arg, default=DEFAULT_MAX_OUTPUTS, metavar="N",
        help=f"refuse --outputs for more than N outputs (default {DEFAULT_MAX_OUTPUTS})",
    )
    _add_json(p, "a JSON object; exact integers and utilities as strings, probabilities as decimal "
              "strings of --dps digits (schema: docs/cli.md)")


def _args_levels(p: argparse.ArgumentParser) -> None:
    _add_json(p, "a JSON object; exact integers and utilities as strings (schema: docs/cli.md)")


def _args_prob(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output", type=_output_arg, required=True, metavar="IDS",
        help="the output: comma-separated item ids (0-based positions in the counts), in "
        "selection order for sequence mechanisms",
    )
    p.add_argument("--exact", action="store_true", help="also print the exact probability (sympy expression)")
    _add_precision(p)
    _add_json(p, "a JSON object, probabilities as decimal strings of --dps digits")


def _args_sample(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=_positive_int_arg, default=1, metavar="N", help="number of samples (default 1)")
    p.add_argument(
        "--seed", type=_seed_arg, default=None, metavar="SEED",
        help="integer seed (reproducible on every platform): 0 <= SEED < 2**128 seeds "
        "random.Random(SEED), other seeds are mapped injectively so that SEED and -SEED "
        "differ (exactdp.core.validation.seed_to_nonnegative); default: the OS generator "
        "(random.SystemRandom)",
    )
    _add_json(p, "one JSON list of outputs (lists of item ids)")


def _relation_arg(text: str) -> str:
    value = text.replace("-", "_")
    if value not in ("add_remove", "swap"):
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from 'add_remove', 'swap')")
    return value


def _args_audit(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--relation", type=_relation_arg, default="add_remove", metavar="REL",
        help="neighbours: 'add_remove' (one user added or removed: counts +1 together or -1 "
        "together; default) or 'swap' (one user's items replaced: any mix of +1 and -1)",
    )
    p.add_argument(
        "--contribution", type=_positive_int_arg, default=None, metavar="L",
        help="a user contributes to at most L items (default: any number)",
    )
    p.add_argument(
        "--max-neighbours", type=_positive_int_arg, default=10_000, metavar="N",
        help="refuse to audit more than N neighbours (default 10000)",
    )
    p.add_argument(
        "--max-outputs", type=_positive_int_arg, default=200_000, metavar="N",
        help="refuse to visit more than N output orbits per neighbour (default 200000)",
    )
    p.add_argument("--rows", type=_positive_int_arg, default=10, metavar="N", help="neighbours shown (default 10)")
    _add_precision(p)
    _add_json(p, "a JSON object with every neighbour audited; losses as decimal strings of --dps digits")


def _args_certify(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--samples", type=_samples_file_arg, required=True, metavar="FILE",
        help="the draws to test: one per line as comma-separated item ids (CSV), JSON lines, "
        "or one JSON list of lists (the output of 'exactdp sample --json'); '-' is stdin",
    )
    p.add_argument("--alpha", type=_alpha_arg, default=1e-6, metavar="ALPHA",
                   help="significance level: FAIL when the p-value is below ALPHA (default 1e-6)")
    p.add_argument("--delta", type=_delta_arg, default=0.05, metavar="TV",
                   help="smallest total variation deviation the test must detect: INCONCLUSIVE (exit status 3) "
                   "unless its power against the least favourable such deviation reaches --min-power (default 0.05)")
    p.add_argument("--min-power", type=_min_power_arg, default=0.99, metavar="P",
                   help="power needed at --delta before the verdict may be PASS (default 0.99)")
    p.add_argument("--levels-only", action="store_true", help="test the level frequencies only, not uniformity within levels")
    p.add_argument(
        "--max-enumerate", type=_positive_int_arg, default=1_000_000, metavar="N",
        help="list at most N outputs for the within-level bins (default 1000000)",
    )
    p.add_argument("--rows", type=_positive_int_arg, default=10, metavar="N", help="within-level bins shown (default 10)")
    _add_json(p, "a JSON object with the statistic, p-values and every bin")


COMMANDS: dict[str, Command] = {
    "dist": Command(
        cmd_dist,
        "the output distribution: one row per utility level",
        "Print the distribution level by level: exact utility, exact multiplicity (number of "
        "outputs with that utility), certified probability of the level and of each output "
        "in it; then the support size and the mechanism.",
        "--counts 10,5,1,1 -k 2 --epsilon 1",
        _args_dist,
    ),
    "levels": Command(
        cmd_levels,
        "the exact utility levels and their multiplicities",
        "Print the exact levels: every distinct utility with the exact number of outputs "
        "having it, best first (no probabilities are computed).",
        "--counts 30,15,1x998 -k 2",
        _args_levels,
    ),
    "prob": Command(
        cmd_prob,
        "probability and log-probability of one output",
        "Print the certified probability and natural log-probability of one output, its "
        "utility and level, and with --exact the exact probability as a sympy expression.",
        "--counts 10,5,1,1 -k 2 --epsilon 1 --output 0,1 --exact",
        _args_prob,
    ),
    "sample": Command(
        cmd_sample,
        "exact samples, one output per line",
        "Draw outputs exactly (integer randomness only), one per line as comma-separated "
        "item ids in selection order.",
        "--counts 10,5,1,1 -k 2 --epsilon 1 -n 5 --seed 1",
        _args_sample,
    ),
    "audit": Command(
        cmd_audit,
        "exact worst-case privacy loss over the neighbours of the counts",
        "Audit the privacy claim: for every neighbour of the counts (add/remove or swap "
        "one user), the exact privacy loss max_o |ln P(o | counts) - ln P(o | neighbour)|, "
        "certified, with the output attaining it; the worst case beside the claimed epsilon. "
        "Exit status 1 when the loss exceeds epsilon.",
        "--counts 3,2,2,0 -k 2 --epsilon 1",
        _args_audit,
    ),
    "certify": Command(
        cmd_certify,
        "chi-square test of a sampler's draws against the exact distribution",
        "Test draws from another implementation against the exact distribution: Pearson's "
        "chi-square by level (small bins pooled), then uniformity within each level; "
        "p-value from the regularised incomplete gamma function. Verdict PASS (exit status 0), "
        "FAIL when the test rejects at --alpha (exit status 1), or INCONCLUSIVE when it could not "
        "have failed (0 degrees of freedom) or was too weak (power below --min-power against the least "
        "favourable deviation of total variation --delta): exit status 3, the verdict line gives "
        "the number of draws needed.",
        "--counts 10,5,1,1 -k 2 --epsilon 1 --samples draws.csv",
        _args_certify,
    ),
}


# =====================================================================================
# Parser
# =====================================================================================


class _UsageError(Exception):
    def __init__(self, message: str, prog: str):
        super().__init__(message)
        self.message = message
        self.prog = prog


class _CommandError(Exception):
    """A bad request detected by the CLI itself (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one-line messages in :func:`main`."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise _UsageError(message, self.prog)


_FORMATTER = argparse.RawDescriptionHelpFormatter  # keeps the examples in epilogs as written


def _fill(text: str) -> str:
    """Wrap a description paragraph by paragraph (the raw formatter does not)."""
    return "\n\n".join(textwrap.fill(par, 79) for par in text.split("\n\n"))


def _add_mechanism_parser(subs: Any, command: str, cmd: Command, name: str, spec: MechanismSpec) -> None:
    p = subs.add_parser(
        name,
        help=spec.summary,
        description=_fill(f"{cmd.description}\n\nMechanism '{name}': {spec.summary}."),
        epilog=f"example:\n  {PROG} {command} {name} {cmd.example}",
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    counts = p.add_argument_group("input")
    source = counts.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--counts", type=_counts_arg, metavar="COUNTS",
        help="comma/space-separated integer counts; VALUExREPEAT means REPEAT copies of "
        "VALUE (e.g. 30,15,1x998); write --counts=-1,2 when the first count is negative",
    )
    source.add_argument(
        "--counts-file", type=_counts_file_arg, dest="counts", metavar="PATH",
        help="read the counts from a file (same syntax, any whitespace; '#' comments; '-' is stdin)",
    )
    counts.add_argument("-k", "--k", type=_int_arg, required=True, metavar="K", help="number of items to select")
    mech = p.add_argument_group(f"{name} options")
    for option_name in spec.options:
        opt = OPTIONS[option_name]
        mech.add_argument(*opt.flags, dest=opt.dest, default=None, metavar=opt.metavar, choices=opt.choices, help=opt.help)
    cmd.add_arguments(p.add_argument_group(f"{command} options"))
    p.set_defaults(mechanism=name)


# `check` runs the executable checks of the papers (the top-level package proofs_checks of
# the source repository, next to exactdp/).  It takes no mechanism, so it is not in COMMANDS.
def _add_check_parser(commands: Any) -> None:
    cp = commands.add_parser(
        "check",
        help="run the executable checks of the papers' lemmas and theorems (proofs_checks)",
        description=_fill(
            "Run proofs_checks: every lemma and theorem of the papers as a check over an "
            "exhaustive small instance space, each with its control (a deliberately wrong "
            "variant that must be rejected, or for an erratum the corrected statement, which "
            "must hold), and print one row per check (pass, erratum = the statement is false "
            "as printed and documented in docs/errata.md, illustration = a worked example, not "
            "a pass, FAIL, or not run).  Exit status 1 when a check FAILs, 2 when proofs_checks "
            "is not importable (it ships with the source repository, not with the package)."
        ),
        epilog=f"example:\n  {PROG} check --only joint.lemma_3_4\n  {PROG} check --full --report REPORT.md",
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    cp.add_argument("--full", action="store_true", help="the full instance spaces (minutes) instead of the fast subset")
    cp.add_argument("--only", action="append", metavar="NAME",
                    help="run only checks whose name is, starts with or contains NAME (repeatable)")
    cp.add_argument("--report", metavar="PATH", default=None, help="also write the Markdown report to PATH")
    cp.add_argument("--jobs", type=_positive_int_arg, default=None, metavar="N",
                    help="worker processes (default: 2 when 2+ CPUs, else 1)")
    cp.add_argument("--json", action="store_true", help="machine-readable output: a JSON object with every result")
    cp.set_defaults(mechanism=None)


def _import_proofs_checks() -> Any:
    """``proofs_checks``, from ``sys.path`` or else from the checkout that holds this exactdp."""
    import importlib

    try:
        return importlib.import_module("proofs_checks")
    except ImportError:
        pass
    root = os.path.dirname(os.path.dirname(os.path.abspath(exactdp.__file__)))
    if not os.path.isfile(os.path.join(root, "proofs_checks", "__init__.py")):
        raise _CommandError(
            "check: the proofs_checks package is not importable; it ships with the exactdp "
            "source repository (next to exactdp/), so run 'exactdp check' from a checkout"
        )
    sys.path.insert(0, root)
    try:
        return importlib.import_module("proofs_checks")
    except ImportError as err:
        raise _CommandError(f"check: cannot import proofs_checks from {root}: {err}") from None


def cmd_check(args: argparse.Namespace) -> int:
    import time

    pc = _import_proofs_checks()
    try:
        checks = pc.select(args.only)
    except KeyError as err:
        raise _CommandError(f"check: {err.args[0]}") from None
    jobs = args.jobs if args.jobs is not None else (2 if (os.cpu_count() or 1) >= 2 else 1)
    start = time.perf_counter()
    results = pc.run_checks(checks, full=args.full, jobs=jobs)
    seconds = time.perf_counter() - start
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                handle.write(pc.render_markdown(results, full=args.full, seconds=seconds))
        except OSError as err:
            raise _CommandError(f"check: cannot write {args.report!r}: {err.strerror or err}") from None
    text = pc.results_json(results, full=args.full, seconds=seconds) if args.json else pc.render_table(results)
    for line in text.splitlines():
        _out(line)
    return 1 if any(r.status == "FAIL" for r in results) else 0


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (commands, then one sub-parser per registered mechanism)."""
    mechanisms = ", ".join(MECHANISMS)
    parser = _Parser(
        prog=PROG,
        description=_fill(
            "exactdp: exact reference implementation of differentially private top-k "
            "selection.  Exact levels, certified probabilities and exact samples."
        ),
        epilog="examples:\n"
        + "".join(f"  {PROG} {c} joint {cmd.example}\n" for c, cmd in COMMANDS.items())
        + f"  {PROG} check --only joint.lemma_3_4\n"
        + f"\nmechanisms: {mechanisms}\n"
        f"run '{PROG} COMMAND --help' or '{PROG} COMMAND MECHANISM --help' for details.",
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {exactdp.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, cmd in COMMANDS.items():
        cp = commands.add_parser(
            command,
            help=cmd.help,
            description=_fill(cmd.description),
            epilog="mechanisms:\n"
            + "".join(f"  {n:<12} {s.summary}\n" for n, s in MECHANISMS.items())
            + f"\nexample:\n  {PROG} {command} joint {cmd.example}",
            formatter_class=_FORMATTER,
            allow_abbrev=False,
        )
        subs = cp.add_subparsers(dest="mechanism", metavar="MECHANISM", required=True)
        for name, spec in MECHANISMS.items():
            _add_mechanism_parser(subs, command, cmd, name, spec)
    _add_check_parser(commands)
    return parser


# =====================================================================================
# Entry point
# =====================================================================================


def _error(message: str) -> None:
    try:
        sys.stderr.write(f"{PROG}: error: {' '.join(message.splitlines())}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # e.g. captured stdout without a fileno
        pass


def _run(argv: Optional[Sequence[str]]) -> int:
    with _no_int_str_limit():
        return _run_unlimited(argv)


def _run_unlimited(argv: Optional[Sequence[str]]) -> int:
    args, extras = build_parser().parse_known_args(argv)
    if args.command == "check":
        if extras:
            raise _UsageError(f"unrecognized arguments: {' '.join(extras)}", f"{PROG} check")
        status = cmd_check(args)
        sys.stdout.flush()
        return status
    if extras:
        shown = " ".join(x if len(x) <= 40 else _short(x) for x in extras)
        raise _UsageError(f"unrecognized arguments: {shown}", f"{PROG} {args.command} {args.mechanism}")
    spec = MECHANISMS[args.mechanism]
    m = spec.build(args.counts, args.k, args)
    COMMANDS[args.command].run(args.mechanism, spec, m, args)
    sys.stdout.flush()
    return getattr(args, "_status", 0)  # audit/certify: 1 when the check fails


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    try:
        return _run(argv)
    except _UsageError as err:
        _error(f"{err.message} (see '{err.prog} --help')")
        return 2
    except (ExactDPError, _CommandError) as err:
        _error(str(err))
        return 2
    except SystemExit as err:  # --help, --version
        code = err.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
