"""The walk-through object: a title, the paper it follows, and ordered steps of exact data.

An :class:`Explanation` is what :func:`exactdp.teaching.explain` returns: immutable, made
of :class:`Step` s, each with the paper's notation, one sentence of what it does and its
data (``int``, ``Fraction``, ``str``, ``bool``, tuples of those, and :class:`Table` s).
It renders as plain text (``str``), Markdown (:meth:`Explanation.to_markdown`) and a
JSON-ready ``dict`` (:meth:`Explanation.to_dict`: Fractions as ``"p/q"`` strings, integers
as JSON integers of any size; no other string of a walk-through has that form).
:func:`from_dict` reads that ``dict`` back, so a walk-through round-trips through JSON
exactly.

The walk-throughs draw with :class:`RecordingRandom`, a :class:`random.Random` that keeps
every integer the mechanism's sampler asked for (``getrandbits`` and ``randrange``, the only
two calls exactdp's samplers make), so each sampling step can show its random integers.

>>> e = Explanation("Demo", Citation("A paper", "ICML 2022", "arXiv:0000.00000", "Algorithm 1"),
...                 (Step("levels", "m(u)", "Counts outputs.", (("table", Table(("u", "m"), ((0, 1), (-1, 2)))),)),))
>>> print(e)
Demo
Paper: A paper, ICML 2022, arXiv:0000.00000 (Algorithm 1)
<BLANKLINE>
1. m(u): Counts outputs.
   table:
       u  m
       0  1
      -1  2
>>> from_dict(e.to_dict()) == e
True
"""

from __future__ import annotations

import operator
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, SupportsIndex

from ..core.formatting import exact_text, table_lines
from ..core.validation import as_positive_int, as_rng, seed_to_nonnegative
from ..errors import InputLimitError

__all__ = ["Citation", "Step", "Table", "Explanation", "RecordingRandom", "from_dict", "check_size",
           "render_value", "recording_generator", "DEFAULT_MAX_SIZE", "MAX_ROWS"]


@dataclass(frozen=True)
class Table:
    """Column names ``columns`` and ``rows`` of exact values (one tuple per row)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def column(self, name: str) -> tuple[Any, ...]:
        """Every row's value in column ``name``."""
        i = self.columns.index(name)
        return tuple(row[i] for row in self.rows)


@dataclass(frozen=True)
class Citation:
    """The paper a walk-through follows: ``title``, ``venue``, arXiv id ``arxiv``, and
    ``where`` in it (section, algorithm)."""

    title: str
    venue: str
    arxiv: str
    where: str

    def __str__(self) -> str:
        return f"{self.title}, {self.venue}, {self.arxiv} ({self.where})"


@dataclass(frozen=True)
class Step:
    """One step: a short ``key``, the paper's ``notation``, a sentence ``text``, and its
    ``data`` as ordered ``(name, value)`` pairs (``step["name"]`` reads one)."""

    key: str
    notation: str
    text: str
    data: tuple[tuple[str, Any], ...] = ()

    def __getitem__(self, name: str) -> Any:
        for n, v in self.data:
            if n == name:
                return v
        raise KeyError(name)

    def names(self) -> tuple[str, ...]:
        """The names of :attr:`data`, in order."""
        return tuple(n for n, _ in self.data)

    def __str__(self) -> str:
        """The step as plain text: notation, sentence, then each datum (tables aligned)."""
        lines = [f"{self.notation}: {self.text}"]
        for name, value in self.data:
            lines += _text_value(name, value)
        return "\n".join(lines)


@dataclass(frozen=True)
class Explanation:
    """A mechanism's walk-through: ``title``, ``citation`` and ordered ``steps``."""

    title: str
    citation: Citation
    steps: tuple[Step, ...]

    def step(self, key: str) -> Step:
        """The step with this ``key`` (``KeyError`` if none)."""
        for s in self.steps:
            if s.key == key:
                return s
        raise KeyError(key)

    def keys(self) -> tuple[str, ...]:
        """The steps' keys, in order."""
        return tuple(s.key for s in self.steps)

    def __str__(self) -> str:
        lines = [self.title, f"Paper: {self.citation}"]
        for n, s in enumerate(self.steps, 1):
            lines += ["", f"{n}. {s}"]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The walk-through as Markdown: a heading per step, tables as pipe tables."""
        lines = [f"# {self.title}", "", f"Paper: {self.citation}"]
        for n, s in enumerate(self.steps, 1):
            lines += ["", f"## {n}. {s.notation}", "", s.text]
            for name, value in s.data:
                lines.append("")
                if isinstance(value, Table):
                    lines.append(f"**{name}**:")
                    lines.append("")
                    lines.append("| " + " | ".join(value.columns) + " |")
                    lines.append("|" + "---|" * len(value.columns))
                    lines += ["| " + " | ".join(render_value(x) for x in row) + " |" for row in value.rows]
                else:
                    lines.append(f"- **{name}**: `{render_value(value)}`")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: Fractions as ``"p/q"`` strings, ints as ints, tuples as lists, each
        table as ``{"columns": [...], "rows": [[...], ...]}``."""
        return {
            "title": self.title,
            "citation": {"title": self.citation.title, "venue": self.citation.venue,
                         "arxiv": self.citation.arxiv, "where": self.citation.where},
            "steps": [{"key": s.key, "notation": s.notation, "text": s.text,
                       "data": [[n, _json(v)] for n, v in s.data]} for s in self.steps],
        }


_FRACTION = re.compile(r"-?[0-9]+/[0-9]+")


def _json(value: Any) -> Any:
    if isinstance(value, Table):
        return {"columns": list(value.columns), "rows": [[_json(x) for x in row] for row in value.rows]}
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, tuple):
        return [_json(x) for x in value]
    return value


def _unjson(value: Any) -> Any:
    if isinstance(value, dict) and "columns" in value:
        return Table(tuple(value["columns"]), tuple(tuple(_unjson(x) for x in row) for row in value["rows"]))
    if isinstance(value, str) and _FRACTION.fullmatch(value):
        num, den = value.split("/")
        return Fraction(int(num), int(den))
    if isinstance(value, list):
        return tuple(_unjson(x) for x in value)
    return value


def from_dict(obj: dict[str, Any]) -> Explanation:
    """The :class:`Explanation` of ``obj``, a dict made by :meth:`Explanation.to_dict`
    (the inverse, exactly)."""
    c = obj["citation"]
    steps = tuple(Step(s["key"], s["notation"], s["text"], tuple((n, _unjson(v)) for n, v in s["data"]))
                  for s in obj["steps"])
    return Explanation(obj["title"], Citation(c["title"], c["venue"], c["arxiv"], c["where"]), steps)


def render_value(value: Any) -> str:
    """One ``value`` as text: exact ints and Fractions in full, tuples as ``(a, b)``, ``None``
    as ``-``, booleans as yes or no."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, Fraction)):
        return exact_text(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(render_value(x) for x in value) + ")"
    return str(value)


def _text_value(name: str, value: Any) -> list[str]:
    if isinstance(value, Table):
        rows = [[render_value(x) for x in row] for row in value.rows]
        return [f"   {name}:"] + ["      " + line for line in table_lines(value.columns, rows)]
    return [f"   {name}: {render_value(value)}"]


# ---------------------------------------------------------------------------------------
# the size guard and the recording generator
# ---------------------------------------------------------------------------------------
#: Largest number of items ``d`` a walk-through accepts by default (``max_size=``).
DEFAULT_MAX_SIZE = 12
#: Largest number of rows one table of a walk-through may have.
MAX_ROWS = 5000


def check_size(d: int, max_size: SupportsIndex, rows: int = 0) -> None:
    """Refuse a walk-through of ``d`` items past ``max_size`` items, or one with a table of
    ``rows`` rows past :data:`MAX_ROWS` printed rows
    (:class:`~exactdp.errors.InputLimitError` naming the limit, ``max_size=`` and the
    command line's ``--max-size``)."""
    max_size = as_positive_int(max_size, "max_size")
    if d > max_size:
        raise InputLimitError(
            "max_size", max_size,
            f"a walk-through prints every step, so it is limited to d <= {max_size} items "
            f"(got d = {d}); raise max_size= (command line: --max-size) to allow more",
            limit=max_size,
        )
    if rows > MAX_ROWS * max(1, max_size // DEFAULT_MAX_SIZE):
        raise InputLimitError(
            "max_size", max_size,
            f"a table of this walk-through would have {rows} rows, more than "
            f"{MAX_ROWS * max(1, max_size // DEFAULT_MAX_SIZE)}; raise max_size= (command line: "
            f"--max-size) to allow more",
            limit=max_size,
        )


class RecordingRandom(random.Random):
    """A :class:`random.Random` that records each top-level ``getrandbits(n)`` and
    ``randrange(n)`` call with its result (calls made inside ``randrange`` are not
    listed again).  Seeded like ``random.Random`` (``seed``: an int, or ``None`` for the
    OS's randomness), it produces the very same stream."""

    def __init__(self, seed: Optional[int] = None) -> None:
        self.calls: list[tuple[str, int, int]] = []
        self._depth = 0
        super().__init__(seed)

    def getrandbits(self, k: int) -> int:
        """``random.Random.getrandbits(k)``: a non-negative int of ``k`` random bits,
        recorded."""
        value = super().getrandbits(k)
        if self._depth == 0:
            self.calls.append(("getrandbits", k, value))
        return value

    def randrange(self, start: int, stop: Optional[int] = None, step: int = 1) -> int:  # type: ignore[override]
        self._depth += 1
        try:
            value = super().randrange(start, stop, step)
        finally:
            self._depth -= 1
        if self._depth == 0:
            self.calls.append(("randrange", start if stop is None else stop - start, value))
        return value

    def since(self, mark: int) -> Table:
        """The calls recorded after the first ``mark`` ones, as a table."""
        return Table(("call", "argument", "result"), tuple(self.calls[mark:]))



def recording_generator(rng: Any) -> tuple[RecordingRandom, Optional[int], Any]:
    """``(generator, seed shown, finish)`` for a walk-through's draw from ``rng``: an int
    seed gives the generator ``exactdp`` would make of it (so the walk-through draws what
    ``mechanism.sample(rng=seed)`` draws); ``None`` a fresh seed from the OS, shown so the
    draw can be repeated; a :class:`random.Random` is copied, and ``finish()`` moves it on
    past the integers the walk-through used."""
    if rng is None:
        seed = random.SystemRandom().getrandbits(64)
        return RecordingRandom(seed), seed, lambda: None
    if isinstance(rng, random.Random) and not isinstance(rng, random.SystemRandom):
        rec = RecordingRandom()
        rec.setstate(rng.getstate())
        return rec, None, lambda: rng.setstate(rec.getstate())
    if isinstance(rng, random.Random):
        seed = rng.getrandbits(64)
        return RecordingRandom(seed), seed, lambda: None
    as_rng(rng)  # validates: an int seed, or the error naming rng
    seed = operator.index(rng)
    return RecordingRandom(seed_to_nonnegative(seed)), seed, lambda: None
