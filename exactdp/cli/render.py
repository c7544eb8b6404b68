"""Command-line output: exact numbers as text, aligned tables, JSON and the progress bar.

Tables abbreviate integers of more than :data:`ABBREVIATE_DIGITS` digits; ``--json`` is
always exact (unbounded integers and utilities as decimal strings).  Nothing here computes
a probability: every function turns an already certified or exact value into text.

Numbers, exact values, outputs and tables are formatted by :mod:`exactdp.core.formatting`
(shared with the oracle); this module holds what only the command line prints.

>>> precision_line(30, 6)
'precision:    probabilities certified to relative error 1e-30, shown to 6 significant digits'
"""

from __future__ import annotations

import json
import sys
from itertools import chain, islice
from typing import Any, Iterable, Iterator, Optional, Sequence, TextIO, TypeVar

from ..core.formatting import ABBREVIATE_DIGITS, abbreviate_ints, format_int, json_scalar
from ..core.mechanism import Mechanism
from .registry import OPTIONS, MechanismSpec

T = TypeVar("T")

__all__ = ["PROG", "format_int", "ABBREVIATE_DIGITS", "JsonArray", "TABLE_CHUNK_ROWS", "streamed_table_lines",
           "describe", "ellipsis_for", "emit_json", "write_line", "mechanism_json", "summary_lines", "precision_line",
           "started", "Totals", "Progress", "RowProgress", "larger_under"]

#: The program's name in messages, usage lines and progress labels.
PROG = "exactdp"


def started(items: Iterable[T]) -> Iterator[T]:
    """``items`` with its first item already computed, so that an error in computing the
    levels (a limit, a budget) is raised before anything is printed."""
    it = iter(items)
    first = next(it, _END)
    return it if first is _END else chain((first,), it)


class Totals:
    """Running totals of the rows printed: their number and the outputs they hold, for the
    summary after a streamed table (no second pass over the levels)."""

    def __init__(self) -> None:
        self.count = 0
        self.support = 0

    def add(self, multiplicity: int) -> None:
        self.count += 1
        self.support += multiplicity


def describe(m: Mechanism, limit: int = 200, ellipsis: str = "\u2026") -> str:
    """``repr(m)`` with every integer of more than 60 digits abbreviated (``epsilon=1e400``,
    a base of ``1/3**200``, huge counts: the exact values are in ``--json``'s parameters),
    and the counts list elided when the result is still long."""
    text = abbreviate_ints(repr(m), ellipsis)
    if len(text) > limit and text.startswith(f"{type(m).__name__}(["):
        head, sep, tail = text.partition("], k=")
        if sep:
            return f"{type(m).__name__}(<{m.d} counts>, k={tail}"
    return text


def ellipsis_for(stream: TextIO) -> str:
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        "\u2026".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return "..."
    return "\u2026"


def _is_flat(value: Any) -> bool:
    """A scalar, or a list/dict of scalars and lists of scalars (one line of JSON)."""
    if isinstance(value, dict):
        return all(_is_flat(v) and not isinstance(v, dict) for v in value.values())
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    return True


class JsonArray:
    """A JSON array written item by item as ``items`` yields them (by :func:`_json_lines`),
    so a long array (one entry per level) is never held: printed exactly as the same items
    in a list would be when that list holds an object (a list of scalars alone is printed
    on one line, so it is never streamed)."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def _json_lines(value: Any, indent: int, level: int) -> Iterator[str]:
    """Pieces of indented JSON: objects one key per line; lists of scalars (outputs, counts)
    and flat objects inside lists (one level, one output, one neighbour) on one line each.
    Every line is produced by the C encoder of :func:`json.dumps`, so the cost is linear in
    the output size (``json.dumps(indent=...)`` falls back to a pure-Python encoder).
    A :class:`JsonArray` is written as its items come."""
    pad, inner = " " * (indent * level), " " * (indent * (level + 1))
    if isinstance(value, dict) and value:
        items = list(value.items())
        yield "{\n"
        for i, (key, item) in enumerate(items):
            yield f"{inner}{json.dumps(key)}: "
            yield from _json_lines(item, indent, level + 1)
            yield ",\n" if i + 1 < len(items) else "\n"
        yield pad + "}"
    elif isinstance(value, JsonArray):
        yield from _json_items(iter(value.items), indent, level)
    elif isinstance(value, list) and value and not _is_flat(value):
        yield from _json_items(iter(value), indent, level)
    else:
        yield json.dumps(value)


def _json_items(items: Iterator[Any], indent: int, level: int) -> Iterator[str]:
    """A JSON array of ``items`` one a line, each written as soon as the next is known
    (the separator after an item depends on whether another follows)."""
    pad, inner = " " * (indent * level), " " * (indent * (level + 1))
    item = next(items, _END)
    if item is _END:
        yield "[]"
        return
    yield "[\n"
    while item is not _END:
        yield inner
        if isinstance(item, dict) and _is_flat(item):
            yield json.dumps(item)
        else:
            yield from _json_lines(item, indent, level + 1)
        item = next(items, _END)
        yield ",\n" if item is not _END else "\n"
    yield pad + "]"


_END = object()


def emit_json(obj: Any, indent: Optional[int] = 2) -> None:
    """JSON on stdout: indented as :func:`_json_lines` says, or on one line (``indent=None``)."""
    if indent is None:
        sys.stdout.write(json.dumps(obj) + "\n")
        return
    sys.stdout.writelines(_json_lines(obj, indent, 0))
    sys.stdout.write("\n")


def write_line(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def mechanism_json(name: str, m: Mechanism, spec: MechanismSpec) -> dict[str, Any]:
    params: dict[str, Any] = {"d": int(m.d), "k": int(m.k)}
    for option in spec.options:
        if OPTIONS[option].resource:
            continue
        dest = OPTIONS[option].dest
        params[dest] = json_scalar(getattr(m, dest, None))
    return {
        "mechanism": name,
        "class": type(m).__name__,
        "description": abbreviate_ints(repr(m), "..."),  # exact values: "parameters"
        "output_kind": getattr(m, "output_kind", "sequence"),
        "parameters": params,
    }


def summary_lines(name: str, m: Mechanism, spec: MechanismSpec, count: int, support: int,
                   unit: str = "level", units: str = "levels") -> list[str]:
    """The lines after a table of ``count`` levels (or classes) holding ``support`` outputs,
    both running totals of the rows printed."""
    kind = getattr(m, "output_kind", "sequence")
    return [
        f"support size: {format_int(support, ellipsis=ellipsis_for(sys.stdout))} "
        f"outputs ({kind}s) in {count} {unit if count == 1 else units}",
        f"mechanism:    {describe(m)}  [{name}: {spec.summary}]",
    ]


#: Rows of a streamed table aligned together (see :func:`streamed_table_lines`).
TABLE_CHUNK_ROWS = 4096


def streamed_table_lines(headers: Sequence[str], rows: Iterable[Sequence[str]],
                         left: Sequence[int] = ()) -> Iterator[str]:
    """:func:`~exactdp.core.formatting.table_lines` over rows as they come, holding at most
    :data:`TABLE_CHUNK_ROWS` of them: the columns are as wide as the widest cell read so far,
    so a table of up to that many rows is exactly ``table_lines``' and a longer one keeps
    its first rows' alignment, widening a column only where a later cell needs it."""
    widths = [len(h) for h in headers]

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    it = iter(rows)
    chunk = list(islice(it, TABLE_CHUNK_ROWS))
    yield_header = True
    while chunk or yield_header:
        for row in chunk:
            for i, cell in enumerate(row):
                widths[i] = max(widths[i], len(cell))
        if yield_header:
            yield line(headers)
            yield_header = False
        for row in chunk:
            yield line(row)
        chunk = list(islice(it, TABLE_CHUNK_ROWS)) if chunk else []


def precision_line(dps: int, digits: int) -> str:
    return (
        f"precision:    probabilities certified to relative error 1e-{dps}, "
        f"shown to {digits} significant digits"
    )


class Progress:
    """A progress bar on stderr drawn by :mod:`tqdm`, called as ``progress(done, total)``.

    Shown only when stderr is a terminal (tqdm's ``disable=None``), so never in pipes,
    files or captured test output; ``enabled=False`` (``--json``, ``--no-progress``) turns
    it off whatever stderr is.  tqdm is imported on the first call, so commands that never
    report progress do not load it.
    """

    def __init__(self, label: str, *, enabled: bool = True, stream: Optional[TextIO] = None) -> None:
        self.label = label
        self.enabled = enabled
        self.stream = stream
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=self.label, file=self.stream if self.stream is not None else sys.stderr,
                             disable=None, leave=False, dynamic_ncols=True)
        elif self._bar.total != total:  # a new phase with another total
            self._bar.reset(total=total)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class RowProgress:
    """A running count of the rows computed, on stderr, for a streamed table whose rows can
    take minutes to come (``dist`` at d = 166,000: the first level's probability needs a
    pass over every level, and a table is printed :data:`TABLE_CHUNK_ROWS` rows at a time).

    Drawn by :mod:`tqdm` only when stderr is a terminal (``disable=None``) and ``enabled``
    (off with ``--json`` and ``--no-progress``), so stdout is byte-identical with or without
    it.  A heartbeat thread redraws it every :attr:`interval` seconds, so the elapsed time
    moves while one row is being computed; :meth:`hide` clears it before stdout lines are
    written to the terminal, and the next row computed draws it again.
    """

    interval = 0.5

    def __init__(self, label: str, unit: str, *, enabled: bool = True, stream: Optional[TextIO] = None) -> None:
        self.label = label
        self.unit = unit
        self.enabled = enabled
        self.stream = stream
        self._bar: Any = None
        self._shown = False
        self._lock: Any = None
        self._stop: Any = None
        self._thread: Any = None

    def rows(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, counted as each is computed."""
        if not self.enabled:
            yield from items
            return
        self._start()
        if self._thread is None:  # stderr is not a terminal
            yield from items
            return
        it = iter(items)
        while True:
            with self._lock:
                self._shown = True  # computing: the bar may be drawn
            item = next(it, _END)
            if item is _END:
                return
            with self._lock:
                if self._bar is not None:
                    self._bar.update(1)
            yield item

    def hide(self) -> None:
        """Clear the bar from the terminal before a stdout line is written."""
        if self._lock is None:
            return
        with self._lock:
            if self._shown:
                self._shown = False
                if self._bar is not None:
                    self._bar.clear()

    def _start(self) -> None:
        if self._lock is not None:
            return
        import threading

        from tqdm import tqdm

        self._lock = threading.Lock()
        self._bar = tqdm(total=None, desc=self.label, unit=f" {self.unit}", leave=False, dynamic_ncols=True,
                         file=self.stream if self.stream is not None else sys.stderr, disable=None)
        if self._bar.disable:  # stderr is not a terminal: nothing to redraw
            return
        self._stop = threading.Event()

        def beat() -> None:
            while not self._stop.wait(self.interval):
                with self._lock:
                    if self._shown and self._bar is not None:
                        self._bar.refresh()

        self._thread = threading.Thread(target=beat, name="exactdp-progress", daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
        if self._bar is not None:
            with self._lock:
                self._bar.close()
        self._bar = self._stop = self._thread = None


def larger_under(direction: str) -> str:
    return {"a>b": "counts", "b>a": "neighbour"}.get(direction, "equal")

