r"""Reading another implementation's probability tables (JSON or CSV) for the audits.

A third-party top-k mechanism is audited from its own output distributions: one table
``output -> probability`` per count vector.  :func:`read_probability_tables` reads them
from a file, :func:`parse_probability_tables` from text; the result's
:meth:`ProbabilityTables.factory` is a picklable ``factory(counts) -> mapping`` that
:func:`exactdp.audit.worst_case` accepts (and a process pool can ship to its workers), and
every mapping is what :func:`exactdp.audit.privacy_loss` and the other pair notions take.
It lives in the oracle layer, not in the command line, because auditing a file of tables
is as useful from Python as from ``exactdp audit``.

Contract: every probability is read exactly (a string such as ``"1/3"`` or ``"0.25"``, a
JSON integer, or a float at its exact binary value); each table is ``>= 0`` and sums to
exactly 1, or within ``2**-40`` of 1 when floats or decimal strings are among its values
(then it is divided by its exact sum); outputs not listed have probability 0.  Anything
else -- a key named twice or unknown (:data:`JSON_KEYS`, :data:`JSON_TABLE_KEYS`), a
non-ASCII digit or whitespace, a count over ``MAX_COUNT_DIGITS`` digits, JSON nested past
the recursion limit -- is a :class:`ProbabilityTableError` naming the file, the table or
line and the value.  The two formats and every rule: docs/cli.md, "Auditing another
implementation's tables".

>>> t = parse_probability_tables('counts,output,probability\n1 0,0,3/4\n1 0,1,1/4\n', "t.csv")
>>> t.k, t.output_kind, t.counts_list
(1, 'sequence', [(1, 0)])
>>> t.factory()((1, 0))
{(0,): Fraction(3, 4), (1,): Fraction(1, 4)}
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence, Union

import gmpy2

from ._oracle.distributions import FLOAT_SUM_TOLERANCE
from ._oracle.neighbours import neighbours
from .core import validation
from .core.formatting import exact_text, format_int, output_text
from .core.validation import as_rational
from .errors import ExactDPError, InvalidParameterError, show_value as _show

__all__ = ["ProbabilityTables", "TableFactory", "ProbabilityTableError", "MissingTableError",
           "read_probability_tables", "parse_probability_tables", "OUTPUT_KINDS", "CSV_HEADER",
           "JSON_KEYS", "JSON_TABLE_KEYS"]

#: The output kinds a table file may declare.
OUTPUT_KINDS = ("sequence", "set")
#: The CSV header, in this order.
CSV_HEADER = ("counts", "output", "probability")
#: The keys a JSON file's top-level object may have: any other key is refused (a misspelt
#: ``"epsilon"`` or ``"output"`` would otherwise be ignored silently, and the file read as
#: something it does not say).
JSON_KEYS = ("k", "output", "epsilon", "tables")
#: The keys each object of a JSON file's ``"tables"`` may have; any other is refused.
JSON_TABLE_KEYS = ("counts", "probabilities")

#: What is trimmed around a CSV cell, a counts string or an output key, and what separates
#: ids besides commas: spaces and tabs only, as a number in a string must be ASCII.  Any other
#: whitespace (a no-break space U+00A0, a line separator U+2028, a form feed) is refused,
#: naming the character: ``str.strip()`` dropped it silently while other scripts' digits
#: were refused.
_TRIMMED = " \t"
_IDS = re.compile(r"[, \t]+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # str.splitlines() also breaks at U+2028, U+0085, form feeds, ...
_CONTROL_NAMES = {"\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\x0b": "LINE TABULATION", "\x0c": "FORM FEED",
                  "\x1c": "FILE SEPARATOR", "\x1d": "GROUP SEPARATOR", "\x1e": "RECORD SEPARATOR",
                  "\x1f": "UNIT SEPARATOR", "\x85": "NEXT LINE"}
Probability = Union[Fraction, float]


def _other_whitespace(text: str) -> Optional[str]:
    """``"character U+00A0 NO-BREAK SPACE at position 3"``: the first whitespace character
    of ``text`` that is not a space or a tab, or ``None``."""
    for i, c in enumerate(text):
        if c.isspace() and c not in _TRIMMED:
            name = _CONTROL_NAMES.get(c) or unicodedata.name(c, "without a name")
            return f"character U+{ord(c):04X} {name} at position {i}"
    return None


class ProbabilityTableError(InvalidParameterError):
    """A malformed table file; the message names the file, the table or line, and the value:
    ``"source: where: reason"`` (``source`` the file's name, ``where`` the table or line,
    empty for the whole file, ``reason`` what is wrong)."""

    def __init__(self, source: str, where: str, reason: str):
        super().__init__(None, None, f"{source}: {where}: {reason}" if where else f"{source}: {reason}")


class MissingTableError(InvalidParameterError):
    """The audit needs a count vector the file has no table for."""


def _counts_text(counts: Sequence[int]) -> str:
    return ",".join(format_int(c, ellipsis="...") for c in counts)  # (also past CPython's int/str digit limit)


@dataclass(frozen=True)
class TableFactory:
    """``factory(counts) -> the table of counts`` of ``tables`` (a
    :class:`ProbabilityTables`; a module-level class, so it pickles)."""

    tables: "ProbabilityTables"

    def __call__(self, counts: Sequence[int]) -> dict[Any, Probability]:
        key = tuple(int(c) for c in counts)
        table = self.tables.tables.get(key)
        if table is None:
            raise MissingTableError(
                None, None, f"{self.tables.source} has no table for counts {_counts_text(key)} "
                f"(it has {len(self.tables.tables)}: {self.tables.summary()})")
        return table


@dataclass(frozen=True)
class ProbabilityTables:
    """The tables of one file: ``tables[counts] = {output: probability}`` in file order.

    Outputs are tuples of item ids (``output_kind == "sequence"``) or frozensets
    (``"set"``); probabilities are Fractions, or floats where the file gave JSON floats
    (their exact binary values).  ``k``: the number of items of an output; ``epsilon`` is
    the file's claim, if it makes one; ``source``: the file's name (in messages); ``lines``:
    where each count vector's table is in the file (a table number or line, for messages).
    """

    k: int
    output_kind: str
    tables: dict[tuple[int, ...], dict[Any, Probability]]
    source: str = "tables"
    epsilon: Optional[Fraction] = None
    lines: dict[tuple[int, ...], str] = field(default_factory=dict, compare=False)

    @property
    def counts_list(self) -> list[tuple[int, ...]]:
        """The count vectors, in file order."""
        return list(self.tables)

    @property
    def d(self) -> int:
        return len(next(iter(self.tables)))

    def factory(self) -> TableFactory:
        """A picklable ``factory(counts) -> table`` for :func:`exactdp.audit.worst_case`;
        raises :class:`MissingTableError` for a count vector the file does not have."""
        return TableFactory(self)

    def summary(self, limit: int = 5) -> str:
        """The first ``limit`` count vectors (default 5) as text, with how many more there are."""
        shown = [_counts_text(c) for c in list(self.tables)[:limit]]
        more = len(self.tables) - len(shown)
        return "; ".join(shown) + (f"; ... ({more} more)" if more > 0 else "")

    def missing_neighbours(self, counts: Sequence[int], relation: str = "add_remove", *,
                           contribution: Optional[int] = None, max_neighbours: int = 10_000) -> list[tuple[int, ...]]:
        """The neighbours of ``counts`` (:func:`exactdp.audit.neighbours` with ``relation``,
        ``contribution`` and ``max_neighbours``, default 10,000; every one: a third-party
        implementation need not treat tied items alike) without a table."""
        todo = neighbours(counts, relation, contribution=contribution, max_neighbours=max_neighbours)
        return [n for n in todo if n not in self.tables]


def read_probability_tables(path: Union[str, "os.PathLike[str]"], output_kind: Optional[str] = None,
                            fmt: Optional[str] = None) -> ProbabilityTables:
    """The tables of the JSON or CSV file at ``path`` (format from ``fmt``, else the file's
    extension, else its first character: ``{`` is JSON).  ``output_kind``: ``"sequence"``
    or ``"set"``, as in :func:`parse_probability_tables`.  See the module docstring for the
    formats."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8-sig") as handle:  # a byte-order mark (spreadsheets write one) is not text
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise ProbabilityTableError(source, "", f"cannot read it: {getattr(err, 'strerror', None) or err}") from None
    if fmt is None:
        ext = os.path.splitext(source)[1].lower()
        fmt = {".json": "json", ".csv": "csv"}.get(ext)
    return parse_probability_tables(text, source, fmt, output_kind)


def parse_probability_tables(text: str, source: str = "tables", fmt: Optional[str] = None,
                             output_kind: Optional[str] = None) -> ProbabilityTables:
    """The tables in ``text`` (``fmt``: ``"json"``, ``"csv"`` or ``None`` to tell by the
    first character); ``source`` names the file in errors.  ``output_kind``:
    ``"sequence"`` or ``"set"`` (``None``: a JSON file's own ``"output"``, default
    ``"sequence"``, which must agree when both are given; ``"sequence"`` for CSV)."""
    if output_kind is not None and output_kind not in OUTPUT_KINDS:
        raise InvalidParameterError("output_kind", output_kind, f"must be one of {', '.join(OUTPUT_KINDS)}")
    if fmt is None:
        fmt = "json" if text.lstrip().startswith("{") else "csv"
    if fmt == "json":
        return _parse_json(text, source, output_kind)
    if fmt == "csv":
        return _parse_csv(text, source, output_kind or "sequence")
    raise InvalidParameterError("fmt", fmt, "must be 'json' or 'csv'")


class _Builder:
    """Collects tables, validating each value where it is read (errors name the place)."""

    def __init__(self, source: str, output_kind: str, k: Optional[int]):
        self.source, self.kind, self.k = source, output_kind, k
        self.tables: dict[tuple[int, ...], dict[Any, Probability]] = {}
        self.where: dict[tuple[int, ...], str] = {}
        self.exact: dict[tuple[int, ...], bool] = {}
        self.decimal: set[tuple[int, ...]] = set()  # tables with a decimal string such as "0.1"

    def fail(self, where: str, reason: str) -> ProbabilityTableError:
        return ProbabilityTableError(self.source, where, reason)

    def trimmed(self, value: str, what: str, where: str) -> str:
        """``value`` without the spaces and tabs around it; other whitespace refused."""
        found = _other_whitespace(value)
        if found is not None:
            raise self.fail(where, f"{what} {_show(value)} has the {found}: only spaces and tabs are trimmed or "
                                   "separate ids (write the file in ASCII)")
        return value.strip(_TRIMMED)

    def counts(self, value: Any, where: str) -> tuple[int, ...]:
        items = _IDS.split(self.trimmed(value, "counts", where)) if isinstance(value, str) else value
        if not isinstance(items, list) or not items or items == [""]:
            raise self.fail(where, f"counts {_show(value)} must be a non-empty list of integers")
        out = []
        for x in items:
            if isinstance(x, str) and re.fullmatch(r"[+-]?[0-9]+", self.trimmed(x, "count", where)):
                x = self.integer(x.strip(_TRIMMED), where)
            if not isinstance(x, int) or isinstance(x, bool):
                raise self.fail(where, f"count {_show(x)} in counts {_show(value)} is not an integer")
            out.append(x)
        if self.tables and len(out) != len(next(iter(self.tables))):
            raise self.fail(where, f"counts {_counts_text(out)} have {len(out)} items, the first table "
                                   f"{len(next(iter(self.tables)))}: every table must have the same items")
        return tuple(out)

    def integer(self, text: str, where: str) -> int:
        """The count written ``text`` (ASCII digits and a sign), refused past
        ``exactdp.core.validation.MAX_COUNT_DIGITS`` digits before it is converted (through
        gmpy2: no CPython int/str digit limit, no quadratic conversion)."""
        digits = len(text.lstrip("+-"))
        limit = validation.MAX_COUNT_DIGITS
        if digits > limit:
            raise self.fail(where, f"count {_show(text)} has {digits} digits, more than the limit of {limit} for a "
                                   "count (exactdp.core.validation.MAX_COUNT_DIGITS; raise it)")
        return int(text) if digits <= 4000 else int(gmpy2.mpz(text))

    def start(self, counts: tuple[int, ...], where: str) -> dict[Any, Probability]:
        if counts in self.tables:
            raise self.fail(where, f"counts {_counts_text(counts)} already have a table ({self.where[counts]})")
        self.where[counts] = where
        self.exact[counts] = True
        self.tables[counts] = {}
        return self.tables[counts]

    def output(self, text: Any, counts: tuple[int, ...], where: str) -> Any:
        tokens = _IDS.split(self.trimmed(text, "output", where)) if isinstance(text, str) else None
        if not tokens or tokens == [""] or not all(re.fullmatch(r"[0-9]+", t) for t in tokens):
            raise self.fail(where, f"output {_show(text)} must be item ids separated by commas or spaces")
        long = next((t for t in tokens if len(t.lstrip("0")) > 18), None)
        if long is not None:  # no item id has 19 digits: refused before it is converted
            raise self.fail(where, f"output {_show(text)}: item id {_show(long)} is not among the {len(counts)} items "
                                   f"0..{len(counts) - 1}")
        ids = [int(t) for t in tokens]
        if self.k is None:
            self.k = len(ids)
        if len(ids) != self.k:
            raise self.fail(where, f"output {_show(text)} has {len(ids)} item ids, not k = {self.k}")
        if len(set(ids)) != len(ids):
            raise self.fail(where, f"output {_show(text)} repeats an item id")
        bad = [i for i in ids if i >= len(counts)]
        if bad:
            raise self.fail(where, f"output {_show(text)}: item id {bad[0]} is not among the {len(counts)} items 0..{len(counts) - 1}")
        return frozenset(ids) if self.kind == "set" else tuple(ids)

    def probability(self, value: Any, output: Any, table: dict, counts: tuple[int, ...], where: str) -> None:
        if output in table:
            raise self.fail(where, f"output {output_text(output)} is listed twice")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(where, f"probability {_show(value)} of output {output_text(output)} must be a string such as "
                                   "'1/3' or '0.25', or a number")
        try:
            q = as_rational(value, "probability")
        except ExactDPError as err:
            raise self.fail(where, f"probability {_show(value)} of output {output_text(output)}: {err.reason}") from None
        if not 0 <= q <= 1:
            raise self.fail(where, f"probability {_show(value)} of output {output_text(output)} is not in [0, 1]")
        if isinstance(value, float):
            self.exact[counts] = False
            table[output] = value  # kept a float: MappingDistribution's float rule applies
        else:
            if isinstance(value, str) and re.search(r"[.eE]", value) and "/" not in value:
                self.decimal.add(counts)  # printed digits, as code writes its floats: may miss 1 by a rounding
            table[output] = q

    def finish(self, epsilon: Optional[Fraction] = None) -> ProbabilityTables:
        if not self.tables:
            raise self.fail("", "no tables")
        for counts, table in self.tables.items():
            total = _exact_sum(table.values())
            exact = self.exact[counts] and counts not in self.decimal
            if (exact and total != 1) or (not exact and abs(total - 1) > FLOAT_SUM_TOLERANCE):
                need = "exactly 1" if exact else "1 within 2**-40 (float or decimal probabilities)"
                raise self.fail(self.where[counts], f"the probabilities of counts {_counts_text(counts)} sum to "
                                                    f"{exact_text(total, ellipsis='...') if exact else repr(float(total))}, not {need}")
            if total != 1 and self.exact[counts]:  # decimal strings only: divided by their exact sum, as floats are
                self.tables[counts] = {o: Fraction(p) / total for o, p in table.items()}
        assert self.k is not None
        return ProbabilityTables(self.k, self.kind, self.tables, self.source, epsilon, dict(self.where))


def _exact_sum(values: Any) -> Fraction:
    """The exact sum of Fractions and floats (at their binary value), added in pairs up a
    balanced tree in gmpy2 rationals: a time quasi-linear in the size of the result, where
    ``sum()`` of Fractions adds one at a time into a denominator that grows with every
    distinct denominator (quadratic)."""
    terms = [gmpy2.mpq(v) if isinstance(v, float) else gmpy2.mpq(v.numerator, v.denominator) for v in values]
    if not terms:
        return Fraction(0)
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return Fraction(int(terms[0].numerator), int(terms[0].denominator))


class _JsonObject(dict):  # type: ignore[type-arg]
    """A JSON object that remembers the keys it holds more than once (``json.loads``
    keeps only the last value of a repeated key, silently)."""

    repeated: list[str]


def _json_object(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject()
    obj.repeated = []
    for key, value in pairs:
        if key in obj and key not in obj.repeated:
            obj.repeated.append(key)
        obj[key] = value
    return obj


def _no_repeated_keys(obj: Any, source: str, where: str, what: str) -> None:
    repeated = getattr(obj, "repeated", None)
    if repeated:
        raise ProbabilityTableError(source, where, f"{what} names the key {_show(repeated[0])} twice: a JSON reader keeps "
                                    "only the last of the two values, so the file is ambiguous; give each key once")


def _only_known_keys(obj: dict, accepted: tuple[str, ...], source: str, where: str, what: str) -> None:
    unknown = [key for key in obj if key not in accepted]
    if unknown:
        raise ProbabilityTableError(source, where, f"{what} has the unknown key {_show(unknown[0])}; the accepted keys "
                                    f"are {', '.join(repr(a) for a in accepted)}")


def _json_int(source: str) -> Callable[[str], int]:
    """``json.loads``'s ``parse_int``: an integer literal of more than
    ``exactdp.core.validation.MAX_COUNT_DIGITS`` digits is refused before it is converted
    (``int`` raises ValueError past CPython's 4300-digit limit, and is quadratic past it
    when the limit is lifted); long ones go through gmpy2."""
    def parse(text: str) -> int:
        digits = len(text.lstrip("-"))
        limit = validation.MAX_COUNT_DIGITS
        if digits > limit:
            raise ProbabilityTableError(source, "", f"the integer {_show(text)} has {digits} digits, more than a "
                                        f"count may have ({limit}: exactdp.core.validation.MAX_COUNT_DIGITS; "
                                        "raise it)")
        return int(text) if digits <= 4000 else int(gmpy2.mpz(text))
    return parse


def _parse_json(text: str, source: str, output_kind: Optional[str]) -> ProbabilityTables:
    try:
        data = json.loads(text, object_pairs_hook=_json_object, parse_int=_json_int(source))
    except json.JSONDecodeError as err:
        raise ProbabilityTableError(source, f"line {err.lineno}", f"invalid JSON: {err.msg}") from None
    except RecursionError:  # "[[[[..." nested past the reader's depth: a well-formed file nests 4 levels
        raise ProbabilityTableError(source, "", "nested deeper than the JSON reader can follow (Python's recursion "
                                    f"limit, {sys.getrecursionlimit()}); a table file nests 4 levels: the top object, "
                                    'its "tables" list, a table object, its "counts" list or "probabilities" object') \
            from None
    _no_repeated_keys(data, source, "", "the top-level object")
    if not isinstance(data, dict) or not isinstance(data.get("tables"), list):
        raise ProbabilityTableError(source, "", 'a JSON file must be an object with a list "tables" '
                                    '(see docs/cli.md)')
    _only_known_keys(data, JSON_KEYS, source, "", "the top-level object")
    kind = data.get("output", output_kind or "sequence")
    if kind not in OUTPUT_KINDS or (output_kind is not None and kind != output_kind):
        raise ProbabilityTableError(source, '"output"', f"{_show(kind)} must be 'sequence' or 'set'"
                                    + (f" (and agree with {_show(output_kind)})" if output_kind else ""))
    k = data.get("k")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise ProbabilityTableError(source, '"k"', f"{_show(k)} must be a positive integer")
    epsilon = None
    if data.get("epsilon") is not None:
        try:
            epsilon = as_rational(data["epsilon"], "epsilon")
        except ExactDPError as err:
            raise ProbabilityTableError(source, '"epsilon"', f"{_show(data['epsilon'])}: {err.reason}") from None
        if epsilon <= 0:
            raise ProbabilityTableError(source, '"epsilon"', f"{_show(data['epsilon'])} must be positive")
    b = _Builder(source, kind, k)
    for i, entry in enumerate(data["tables"]):
        where = f"table {i}"
        if not isinstance(entry, dict) or not isinstance(entry.get("probabilities"), dict):
            raise b.fail(where, 'each table must be an object with "counts" and an object "probabilities"')
        _no_repeated_keys(entry, source, where, "the table")
        _only_known_keys(entry, JSON_TABLE_KEYS, source, where, "the table")
        counts = b.counts(entry.get("counts"), where)
        where = f"table {i} (counts {_counts_text(counts)})"
        _no_repeated_keys(entry["probabilities"], source, where, '"probabilities"')
        table = b.start(counts, where)
        for out, p in entry["probabilities"].items():
            b.probability(p, b.output(out, counts, where), table, counts, where)
    return b.finish(epsilon)


def _parse_csv(text: str, source: str, output_kind: str) -> ProbabilityTables:
    b = _Builder(source, output_kind, None)
    header_seen = False
    lines = _LINE_BREAK.split(text)
    for lineno, row in zip(range(1, len(lines) + 1), csv.reader(lines)):
        where = f"line {lineno}"
        if not row or not "".join(row).strip(_TRIMMED) or row[0].lstrip(_TRIMMED).startswith("#"):
            continue
        names = CSV_HEADER if header_seen and len(row) == len(CSV_HEADER) else ("cell",) * len(row)
        cells = [b.trimmed(c, name, where) for c, name in zip(row, names)]
        if not header_seen:
            if tuple(c.lower() for c in cells) != CSV_HEADER:
                raise b.fail(where, f"the first line must be the header {','.join(CSV_HEADER)}, got {_show(','.join(cells))}")
            header_seen = True
            continue
        if len(cells) != 3:
            raise b.fail(where, f"{len(cells)} columns, not 3 ({','.join(CSV_HEADER)}): {_show(','.join(cells))}")
        counts = b.counts(cells[0], where)
        table = b.tables.get(counts)
        if table is None:
            table = b.start(counts, f"the table of counts {_counts_text(counts)} (from {where})")
        b.probability(cells[2], b.output(cells[1], counts, where), table, counts, where)
    if not header_seen:
        raise b.fail("", f"empty: a CSV file starts with the header {','.join(CSV_HEADER)}")
    return b.finish()
