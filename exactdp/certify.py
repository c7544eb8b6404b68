"""Certify another implementation against the exact mechanism.

Three kinds of evidence a fast (float64, log-space, vectorised) implementation can give,
each compared with exactdp's exact values:

- :func:`compare_probabilities` -- its probabilities or log-probabilities of outputs;
- :func:`compare_mtilde` -- its array of ``log m̃`` (Joint's refined counts, in the order
  float implementations use);
- :func:`goodness_of_fit` -- draws from its sampler, tested against the exact
  distribution: first by level, then for uniformity within each level;

and :func:`power` says how likely the sampler test is to detect a given wrong
distribution with ``n`` draws (:func:`samples_needed` inverts it), so a test suite can
choose ``n`` honestly.

Exact values and floats: exact probabilities are certified to ``dps`` digits (default 30)
before any comparison; floats appear only in what is reported (errors, statistics,
p-values), never in an exact value.

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> claimed = {(0,): 0.7112345, (1,): 0.1946, (2,): 0.0942}
>>> r = compare_probabilities(claimed, m, rtol=1e-3)
>>> r.passed, r.worst[0].output
(False, (2,))
>>> fit = goodness_of_fit(m.samples(2000, rng=1), m)
>>> fit.df, fit.p_value > 1e-6
(2, True)
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import mpmath
import numpy as np
from flint import arb, fmpz

from .errors import InvalidOutputError, InvalidParameterError, ExactDPError
from .precision import certify as _certify, mp_workdps
from .validation import as_dps, as_positive_int

__all__ = [
    "ComparisonRow",
    "ProbabilityComparison",
    "MtildeRow",
    "MtildeComparison",
    "Bin",
    "GoodnessOfFit",
    "Power",
    "compare_probabilities",
    "compare_mtilde",
    "goodness_of_fit",
    "power",
    "samples_needed",
    "chi2_sf",
    "chi2_isf",
    "ncx2_sf",
    "normalise_output",
    "read_samples",
]

#: Enumerating outputs (within-level bins, callables, power) is refused past this.
DEFAULT_MAX_ENUMERATE = 1_000_000
#: Pool bins until each expects at least this many draws (the usual chi-square rule).
MIN_EXPECTED = 5


# =====================================================================================
# Helpers
# =====================================================================================


def _kind(mechanism: Any) -> str:
    return getattr(mechanism, "output_kind", "sequence")


def normalise_output(output: Any, kind: str = "sequence") -> Any:
    """An output as exactdp writes it: a tuple of Python ints (sequences) or a frozenset
    (sets).  Accepts lists, tuples, numpy arrays and numpy integers.

    >>> import numpy as np
    >>> normalise_output(np.array([3, 1]))
    (3, 1)
    >>> normalise_output([3, 1], "set") == frozenset({1, 3})
    True
    """
    if isinstance(output, (str, bytes)) or output is None:
        raise InvalidOutputError("output", output, "must be an iterable of item ids")
    try:
        items = list(output.tolist() if hasattr(output, "tolist") else output)
    except TypeError:
        raise InvalidOutputError("output", output, "must be an iterable of item ids") from None
    ids = []
    for x in items:
        if isinstance(x, bool) or not (isinstance(x, int) or hasattr(x, "__index__")):
            raise InvalidOutputError("output", output, f"item id {x!r} is not an integer")
        ids.append(int(x))
    return frozenset(ids) if kind == "set" else tuple(ids)


def _out_text(o: Any) -> str:
    if o is None:
        return "-"
    if isinstance(o, frozenset):
        return "{" + ",".join(str(i) for i in sorted(o)) + "}"
    return "(" + ",".join(str(i) for i in o) + ")"


def _fmt(x: Any, digits: int = 6) -> str:
    if x is None:
        return "-"
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return str(x)
    x = mpmath.mpf(x)
    if mpmath.isnan(x):
        return "nan"
    if mpmath.isinf(x):
        return "inf" if x > 0 else "-inf"
    return mpmath.nstr(x, digits)


def _align(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


class _Levels:
    """Level lookup and certified per-level probabilities of one mechanism.

    A mechanism whose probabilities are not a function of one utility level (its
    ``levels()`` raises ``NotImplementedError``, e.g. ``CanonicalGamma1``) is handled as if
    every output were its own level: its outputs are listed (``outputs()``, at most
    ``max_outputs``) with ``probability(output, dps)``; the within-level test is then void.
    """

    def __init__(self, mechanism: Any, dps: int, max_outputs: int = DEFAULT_MAX_ENUMERATE):
        self.m = mechanism
        self.dps = dps
        self.kind = _kind(mechanism)
        self._out: Optional[list] = None
        self._lev: Optional[list] = None
        try:
            self.levels = tuple(mechanism.levels())
            self.per_output = False
            self.index = {lv.utility: a for a, lv in enumerate(self.levels)}
        except NotImplementedError:
            self.per_output = True
            size = mechanism.support_size()
            if size > max_outputs:
                raise InvalidParameterError(
                    "max_outputs", max_outputs,
                    f"{mechanism!r} has no utility levels, so its {size} outputs must be listed; raise max_outputs",
                ) from None
            from .levels import Level

            outs = [normalise_output(o, self.kind) for o in mechanism.outputs()]
            self.index = {o: a for a, o in enumerate(outs)}
            self.levels = tuple(Level(a, 1) for a in range(len(outs)))
            self._outputs = outs

    def level_of(self, output: Any) -> Optional[int]:
        """Level index of a valid output, ``None`` when it has probability 0; raises the
        mechanism's error for an invalid output."""
        if self.per_output:
            self.m.probability(output, 1)  # validates
            return self.index.get(normalise_output(output, self.kind))
        return self.index.get(self.m.utility(output))

    @property
    def output_probabilities(self) -> list[mpmath.mpf]:
        if self._out is None:
            if self.per_output:
                self._out = [self.m.probability(o, self.dps) for o in self._outputs]
            else:
                self._out = [p for _, p in self.m.level_output_probabilities(self.dps)]
        return self._out

    @property
    def level_probabilities(self) -> list[mpmath.mpf]:
        if self._lev is None:
            if self.per_output:
                self._lev = self.output_probabilities
            else:
                self._lev = [p for _, p in self.m.level_probabilities(self.dps)]
        return self._lev

    def support_size(self) -> int:
        return len(self.levels) if self.per_output else self.m.support_size()

    def enumerate(self, max_outputs: int, what: str, progress: Optional[Callable[[int, int], None]] = None):
        """Every output with its level index, best level first (refuses past ``max_outputs``)."""
        if self.per_output:
            yield from ((a, o) for a, o in enumerate(self._outputs))
            return
        yield from _enumerate(self.m, max_outputs, what, progress)


def _enumerate(mechanism: Any, max_outputs: int, what: str, progress: Optional[Callable[[int, int], None]] = None):
    """Every output with its level index, best level first (refuses past ``max_outputs``)."""
    size = mechanism.support_size()
    if size > max_outputs:
        raise InvalidParameterError(
            "max_outputs", max_outputs,
            f"{what} needs every output, and the mechanism has {size}; raise max_outputs",
        )
    levels = mechanism.levels()
    it = mechanism.outputs()
    done = 0
    step = max(1, size // 200)
    for a, lv in enumerate(levels):
        for _ in range(lv.multiplicity):
            yield a, next(it)
            done += 1
            if progress is not None and done % step == 0:
                progress(done, size)
    if progress is not None:
        progress(size, size)


# =====================================================================================
# compare_probabilities
# =====================================================================================


@dataclass(frozen=True)
class ComparisonRow:
    """One output (``None`` for a group of outputs the claim left out): the claimed and
    exact values, absolute and relative errors, and whether it is within tolerance."""

    output: Any
    level: Optional[int]
    claimed: mpmath.mpf
    exact: mpmath.mpf
    abs_error: mpmath.mpf
    rel_error: mpmath.mpf
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class ProbabilityComparison:
    """Result of :func:`compare_probabilities`.

    ``passed``: every output within ``|claimed - exact| <= atol + rtol*|exact|``;
    ``max_abs_error``, ``max_rel_error`` over every compared output; ``worst``: the rows
    with the largest errors (relative, then absolute); ``failures``: how many outputs are
    out of tolerance; ``missing``: ``{level: number of outputs}`` of the support that a
    mapping did not mention (counted as claimed probability 0); ``claimed_total``: sum of
    the claimed probabilities (probability scale only).
    """

    passed: bool
    log: bool
    n_outputs: int
    failures: int
    max_abs_error: mpmath.mpf
    max_rel_error: mpmath.mpf
    worst: tuple[ComparisonRow, ...]
    rtol: float
    atol: float
    missing: dict
    claimed_total: Optional[mpmath.mpf]
    dps: int

    def __bool__(self) -> bool:
        return self.passed

    def table(self, limit: int = 10) -> str:
        what = "log P" if self.log else "P"
        rows = [["output", "level", f"claimed {what}", f"exact {what}", "abs error", "rel error", ""]]
        for r in self.worst[:limit]:
            rows.append([
                _out_text(r.output) if r.output is not None else r.note, "-" if r.level is None else str(r.level),
                _fmt(r.claimed, 12), _fmt(r.exact, 12), _fmt(r.abs_error, 3), _fmt(r.rel_error, 3),
                "ok" if r.ok else "FAIL",
            ])
        return _align(rows)

    def __str__(self) -> str:
        head = (
            f"{'PASS' if self.passed else 'FAIL'}: {self.n_outputs} outputs compared "
            f"({'log-probabilities' if self.log else 'probabilities'}), {self.failures} out of "
            f"tolerance (rtol={self.rtol:g}, atol={self.atol:g}); max abs error "
            f"{_fmt(self.max_abs_error, 3)}, max rel error {_fmt(self.max_rel_error, 3)}"
        )
        if self.claimed_total is not None:
            head += f"; claimed total {_fmt(self.claimed_total, 17)}"
        return head + "\n" + self.table()


def _to_mpf(x: Any) -> mpmath.mpf:
    try:
        return mpmath.mpf(x)
    except (TypeError, ValueError):
        pass
    if hasattr(x, "numerator") and hasattr(x, "denominator"):
        return mpmath.mpf(int(x.numerator)) / int(x.denominator)
    return mpmath.mpf(float(x))


def _errors(claimed: mpmath.mpf, exact: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
    if mpmath.isnan(claimed):
        return mpmath.inf, mpmath.inf
    if mpmath.isinf(exact) or mpmath.isinf(claimed):
        if claimed == exact:
            return mpmath.mpf(0), mpmath.mpf(0)
        return mpmath.inf, mpmath.inf
    err = abs(claimed - exact)
    if exact == 0:
        return err, (mpmath.mpf(0) if err == 0 else mpmath.inf)
    return err, err / abs(exact)


def compare_probabilities(
    claimed: Any,
    mechanism: Any,
    *,
    log: bool = False,
    outputs: Optional[Iterable[Any]] = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    dps: Optional[int] = None,
    worst: int = 10,
    max_outputs: int = DEFAULT_MAX_ENUMERATE,
) -> ProbabilityComparison:
    """Compare claimed probabilities (or log-probabilities with ``log=True``) of outputs
    with the exact ones.

    ``claimed`` is a mapping ``output -> value`` (keys: tuples of item ids, frozensets for
    set mechanisms, or anything :func:`normalise_output` accepts such as lists converted
    to tuples beforehand) or a callable ``output -> value``.  A mapping is a claimed
    distribution: outputs of the support it leaves out count as claimed probability 0 (they
    are found per level from the multiplicities, without listing outputs).  A callable is
    evaluated on ``outputs`` if given, else on every output (refused past
    ``max_outputs``).

    An output passes when ``|claimed - exact| <= atol + rtol * |exact|``.  Defaults:
    ``rtol = 1e-9``; ``atol = 0`` for probabilities, ``1e-9`` for log-probabilities (an
    absolute error ``e`` in a log is a relative error of about ``e`` in the probability).
    Exact values are certified to ``dps`` digits (default 30), so any float error shows.
    """
    digits = as_dps(dps)
    rtol = 1e-9 if rtol is None else float(rtol)
    atol = (1e-9 if log else 0.0) if atol is None else float(atol)
    lv = _Levels(mechanism, digits, max_outputs)
    kind = lv.kind
    with mp_workdps(digits + 10):
        out_p = lv.output_probabilities
        if log:
            exact_level = [mpmath.log(p) for p in out_p]
            zero = -mpmath.inf
        else:
            exact_level = list(out_p)
            zero = mpmath.mpf(0)

        items: list[tuple[Any, Any]] = []
        if isinstance(claimed, Mapping):
            for key, value in claimed.items():
                items.append((normalise_output(key, kind), value))
            if outputs is not None:
                wanted = {normalise_output(o, kind) for o in outputs}
                items = [(o, v) for o, v in items if o in wanted]
        elif callable(claimed):
            if outputs is None:
                outs = [o for _, o in lv.enumerate(max_outputs, "compare_probabilities with a callable")]
            else:
                outs = [normalise_output(o, kind) for o in outputs]
            items = [(o, claimed(o)) for o in outs]
        else:
            raise InvalidParameterError("claimed", claimed, "must be a mapping output -> value or a callable")

        rows: list[ComparisonRow] = []
        seen_per_level: Counter = Counter()
        seen: set = set()
        total = mpmath.mpf(0)
        for o, value in items:
            if o in seen:
                raise InvalidParameterError("claimed", _out_text(o), "names the same output twice")
            seen.add(o)
            a = lv.level_of(o)
            e = zero if a is None else exact_level[a]
            if a is not None:
                seen_per_level[a] += 1
            c = _to_mpf(value)
            if not log and not mpmath.isnan(c):
                total += c
            ae, re = _errors(c, e)
            ok = bool(ae <= atol + rtol * (abs(e) if not mpmath.isinf(e) else 0)) if not mpmath.isinf(ae) else False
            rows.append(ComparisonRow(o, a, c, e, ae, re, ok))
        missing = {}
        if isinstance(claimed, Mapping) and outputs is None:
            for a, level in enumerate(lv.levels):
                left = level.multiplicity - seen_per_level.get(a, 0)
                if left:
                    missing[a] = left
                    c = zero
                    ae, re = _errors(c, exact_level[a])
                    rows.append(ComparisonRow(None, a, c, exact_level[a], ae, re, False,
                                              f"<{left} output{'s' if left != 1 else ''} not claimed>"))
        failures = sum(1 for r in rows if not r.ok)
        failures += sum(missing.values()) - len(missing)  # each "missing" row stands for several
        max_abs = max((r.abs_error for r in rows), default=mpmath.mpf(0))
        max_rel = max((r.rel_error for r in rows), default=mpmath.mpf(0))
        ranked = sorted(rows, key=lambda r: (r.ok, -r.rel_error, -r.abs_error))
        claimed_total = None if log or not isinstance(claimed, Mapping) else total
    return ProbabilityComparison(
        passed=failures == 0 and bool(rows), log=log, n_outputs=len(items) + sum(missing.values()),
        failures=failures, max_abs_error=max_abs, max_rel_error=max_rel, worst=tuple(ranked[:worst]),
        rtol=rtol, atol=atol, missing=missing, claimed_total=claimed_total, dps=digits,
    )


# =====================================================================================
# compare_mtilde
# =====================================================================================


@dataclass(frozen=True)
class MtildeRow:
    """Entry ``position`` (0-based, in increasing refined difference = decreasing ``Ũ``):
    its ``(row, col)`` over ranks, exact ``m̃``, exact ``ln m̃`` (certified), the claimed
    value and the absolute error in the log."""

    position: int
    row: int
    col: int
    mtilde: int
    exact_log: mpmath.mpf
    claimed: float
    abs_error: mpmath.mpf
    ok: bool


@dataclass(frozen=True)
class MtildeComparison:
    """Result of :func:`compare_mtilde`: ``passed``, ``max_abs_error`` of the logs,
    ``failures``, ``zero_mismatches`` (entries where exactly one of exact ``m̃`` and the
    claim is 0, i.e. ``-inf``), ``order_mismatches`` (positions whose claimed
    ``(row, col)`` differs from the exact order, when positions were given) and ``worst``
    rows."""

    passed: bool
    entries: int
    failures: int
    max_abs_error: mpmath.mpf
    zero_mismatches: int
    order_mismatches: tuple[tuple[int, tuple[int, int], tuple[int, int]], ...]
    worst: tuple[MtildeRow, ...]
    atol: float
    rtol: float

    def __bool__(self) -> bool:
        return self.passed

    def table(self, limit: int = 10) -> str:
        rows = [["position", "row", "col", "exact m~", "exact log", "claimed log", "abs error", ""]]
        for r in self.worst[:limit]:
            rows.append([str(r.position), str(r.row), str(r.col), str(r.mtilde), _fmt(r.exact_log, 15),
                         _fmt(r.claimed, 15), _fmt(r.abs_error, 3), "ok" if r.ok else "FAIL"])
        return _align(rows)

    def __str__(self) -> str:
        text = (
            f"{'PASS' if self.passed else 'FAIL'}: {self.entries} log m~ entries, {self.failures} out of "
            f"tolerance (atol={self.atol:g}, rtol={self.rtol:g}), max abs error {_fmt(self.max_abs_error, 3)}, "
            f"{self.zero_mismatches} zero mismatches, {len(self.order_mismatches)} order mismatches"
        )
        return text + "\n" + self.table()


def compare_mtilde(
    log_counts: Any,
    mechanism: Any,
    *,
    rows: Any = None,
    cols: Any = None,
    atol: float = 1e-9,
    rtol: float = 1e-9,
    worst: int = 10,
    dps: Optional[int] = None,
) -> MtildeComparison:
    """Compare a float array of ``log m̃`` with the exact ``m̃`` of a Joint-family mechanism.

    ``log_counts[p]`` is the log of the number of sequences whose largest refined
    difference is the ``p``-th smallest entry of the ``k x d`` matrix
    ``diff[i][j] = c_(i) - c_(j) + (d(k-i-1) + j + 1)/(2dk)`` (0-based ranks, counts sorted
    descending), as the public dp_topk code computes it (``compute_log_diff_counts``):
    row-major positions sorted by the differences, i.e. decreasing ``Ũ = -diff``, the
    order of :meth:`exactdp.Joint.mtilde`.  Entries with ``m̃ = 0`` must be ``-inf``.
    Optional ``rows``/``cols`` (the implementation's positions, e.g. dp_topk's
    ``diffs_to_positions``) are checked against the exact order: a float sort can
    misorder entries once ``|c_i - c_j| * 2dk`` nears ``2**53``.

    An entry passes when ``|claimed - ln m̃| <= atol + rtol * |ln m̃|``.
    """
    digits = as_dps(dps)
    if not hasattr(mechanism, "mtilde"):
        raise InvalidParameterError("mechanism", mechanism, "has no mtilde() (Joint family only)")
    claimed = np.asarray(log_counts, dtype=float).ravel()
    dk = mechanism.d * mechanism.k
    if claimed.shape[0] != dk:
        raise InvalidParameterError("log_counts", f"<{claimed.shape[0]} values>", f"must have d*k = {dk} entries")
    pos_rows = None if rows is None else np.asarray(rows).ravel()
    pos_cols = None if cols is None else np.asarray(cols).ravel()
    for name, arr in (("rows", pos_rows), ("cols", pos_cols)):
        if arr is not None and arr.shape[0] != dk:
            raise InvalidParameterError(name, f"<{arr.shape[0]} values>", f"must have d*k = {dk} entries")
    out: list[MtildeRow] = []
    order_bad = []
    zero_bad = 0
    failures = 0
    max_err = mpmath.mpf(0)
    log_cache: dict[int, mpmath.mpf] = {}
    with mp_workdps(digits + 5):
        for p, (i, j, _, mt) in enumerate(mechanism.mtilde()):
            if pos_rows is not None and pos_cols is not None:
                if (int(pos_rows[p]), int(pos_cols[p])) != (i, j):
                    order_bad.append((p, (int(pos_rows[p]), int(pos_cols[p])), (i, j)))
            c = float(claimed[p])
            if mt == 0:
                exact = -mpmath.inf
            else:
                exact = log_cache.get(mt)
                if exact is None:
                    exact = _certify(lambda: arb(fmpz(mt)).log(), digits) if mt > 1 else mpmath.mpf(0)
                    if len(log_cache) < 100_000:
                        log_cache[mt] = exact
            if math.isnan(c):
                err = mpmath.inf
            elif mt == 0 or math.isinf(c):
                if mt == 0 and c == -math.inf:
                    err = mpmath.mpf(0)
                else:
                    err = mpmath.inf
                    zero_bad += 1
            else:
                err = abs(mpmath.mpf(c) - exact)
            ok = (not mpmath.isinf(err)) and err <= atol + rtol * (0 if mpmath.isinf(exact) else abs(exact))
            if not ok:
                failures += 1
            if err > max_err:
                max_err = err
            out.append(MtildeRow(p, i, j, mt, exact, c, err, bool(ok)))
            if len(out) > 4 * worst + 64:  # keep only the worst rows
                out.sort(key=lambda r: (r.ok, -r.abs_error))
                del out[2 * worst:]
    out.sort(key=lambda r: (r.ok, -r.abs_error))
    return MtildeComparison(
        passed=failures == 0 and not order_bad, entries=dk, failures=failures, max_abs_error=max_err,
        zero_mismatches=zero_bad, order_mismatches=tuple(order_bad[:worst]), worst=tuple(out[:worst]),
        atol=atol, rtol=rtol,
    )


# =====================================================================================
# Chi-square distribution (mpmath; no scipy)
# =====================================================================================


def chi2_sf(x: Any, df: int) -> mpmath.mpf:
    """``P(X > x)`` for ``X ~ chi-square(df)``: the regularised upper incomplete gamma
    function ``Q(df/2, x/2)`` (mpmath, 30 digits).  ``df = 0``: 1 for ``x <= 0``."""
    with mp_workdps(30):
        x = mpmath.mpf(x)
        if df <= 0:
            return mpmath.mpf(1) if x <= 0 else mpmath.mpf(0)
        if mpmath.isinf(x):
            return mpmath.mpf(0)
        if x <= 0:
            return mpmath.mpf(1)
        return +mpmath.gammainc(mpmath.mpf(df) / 2, x / 2, mpmath.inf, regularized=True)


def chi2_isf(alpha: float, df: int) -> mpmath.mpf:
    """The critical value ``c`` with ``P(X > c) = alpha`` for ``X ~ chi-square(df)``
    (bisection on :func:`chi2_sf`, relative accuracy about 1e-12)."""
    if not 0 < alpha < 1:
        raise InvalidParameterError("alpha", alpha, "must satisfy 0 < alpha < 1")
    if df <= 0:
        return mpmath.mpf(0)
    with mp_workdps(30):
        a = mpmath.mpf(alpha)
        lo, hi = mpmath.mpf(0), mpmath.mpf(df) + 10
        while chi2_sf(hi, df) > a:
            lo, hi = hi, hi * 2
        while hi - lo > hi * mpmath.mpf(10) ** -13:
            mid = (lo + hi) / 2
            if chi2_sf(mid, df) > a:
                lo = mid
            else:
                hi = mid
        return hi


def ncx2_sf(x: Any, df: int, nc: Any) -> mpmath.mpf:
    """``P(X > x)`` for the noncentral chi-square law with ``df`` degrees of freedom and
    noncentrality ``nc``: the Poisson mixture ``sum_j Pois(j; nc/2) Q(df/2 + j, x/2)``,
    summed over a window of +-12 standard deviations of the Poisson weights with the
    recurrence ``Q(s + 1, y) = Q(s, y) + y**s e**-y / Gamma(s + 1)``."""
    with mp_workdps(30):
        x, nc = mpmath.mpf(x), mpmath.mpf(nc)
        if nc <= 0:
            return chi2_sf(x, df)
        if x <= 0:
            return mpmath.mpf(1)
        mu = nc / 2
        y = x / 2
        width = 12 * mpmath.sqrt(mu) + 20
        j0 = int(max(0, mpmath.floor(mu - width)))
        j1 = int(mpmath.ceil(mu + width))
        s = mpmath.mpf(df) / 2 + j0
        q = mpmath.gammainc(s, y, mpmath.inf, regularized=True)
        log_w = -mu + j0 * mpmath.log(mu) - mpmath.loggamma(j0 + 1)
        log_y = mpmath.log(y)
        total = mpmath.mpf(0)
        for j in range(j0, j1 + 1):
            total += mpmath.exp(log_w) * q
            # advance the Poisson weight and Q(s, y) -> Q(s + 1, y)
            q += mpmath.exp(s * log_y - y - mpmath.loggamma(s + 1))
            s += 1
            log_w += mpmath.log(mu) - mpmath.log(j + 1)
        return min(total, mpmath.mpf(1))


# =====================================================================================
# The sampler test: bins, goodness of fit, power
# =====================================================================================


@dataclass(frozen=True)
class Bin:
    """One bin of the test: ``stage`` ``"level"`` (a run of consecutive levels) or
    ``"within"`` (outputs of one level); ``label`` says which; ``observed`` draws,
    ``expected`` draws (exact expectation converted to float) and the bin's contribution
    ``(observed - expected)**2 / expected`` to the statistic."""

    stage: str
    label: str
    observed: int
    expected: float
    contribution: float


@dataclass(frozen=True)
class _LevelPlan:
    """How the within-level test treats level ``a``: ``"outputs"`` (a bin per output),
    ``"groups"`` of ``size`` consecutive outputs in enumeration order (the last group takes
    the remainder), or ``"skip"`` with a reason."""

    mode: str
    size: int = 0
    groups: int = 0
    reason: str = ""


@dataclass(frozen=True)
class _Plan:
    level_bins: list  # list of lists of level indices
    within: dict  # level -> _LevelPlan
    needs_enumeration: bool


def _pool_levels(expected: Sequence[float], min_expected: float) -> list[list[int]]:
    """Consecutive levels (best first) pooled until each bin expects ``min_expected``;
    a short tail is merged into the last bin."""
    bins: list[list[int]] = []
    cur: list[int] = []
    acc = 0.0
    for a, e in enumerate(expected):
        cur.append(a)
        acc += e
        if acc >= min_expected:
            bins.append(cur)
            cur, acc = [], 0.0
    if cur:
        if bins:
            bins[-1].extend(cur)
        else:
            bins.append(cur)
    return bins


def _make_plan(levels: Sequence[Any], level_probs: Sequence[mpmath.mpf], n: int, min_expected: float,
               within: bool, support: int, max_enumerate: int) -> _Plan:
    expected = [float(n * p) for p in level_probs]
    plan_within: dict[int, _LevelPlan] = {}
    needs = False
    if within:
        for a, (lv, e) in enumerate(zip(levels, expected)):
            m = lv.multiplicity
            if m < 2:
                continue
            if e >= min_expected * m:
                plan_within[a] = _LevelPlan("outputs")
                continue
            size = max(1, math.ceil(min_expected * m / e)) if e > 0 else m
            groups = m // size
            if groups < 2:
                plan_within[a] = _LevelPlan("skip", reason=f"{m} outputs, {e:.3g} draws expected: too few to test")
                continue
            if support > max_enumerate:
                plan_within[a] = _LevelPlan("skip", reason=f"needs the {support} outputs enumerated (max_enumerate={max_enumerate})")
                continue
            plan_within[a] = _LevelPlan("groups", size=size, groups=groups)
            needs = True
    return _Plan(_pool_levels(expected, min_expected), plan_within, needs)


def _group_of(plan: _LevelPlan, position: int) -> int:
    return min(position // plan.size, plan.groups - 1)


def _group_size(plan: _LevelPlan, m: int, g: int) -> int:
    return plan.size if g < plan.groups - 1 else m - plan.size * (plan.groups - 1)


@dataclass(frozen=True)
class GoodnessOfFit:
    """Result of :func:`goodness_of_fit`.

    ``statistic``, ``df``, ``p_value``: Pearson's chi-square over all bins (level stage plus
    within-level stage; the multinomial splits into the level counts and, given them, the
    counts within each level, so the two statistics add).  ``level_*`` and ``within_*`` are
    the two stages alone.  ``bins``: every bin (unobserved single-output bins of one level
    are summarised in one row); ``invalid``: draws that are not outputs at all;
    ``impossible``: valid outputs with exact probability 0 (either makes ``p_value`` 0);
    ``skipped``: ``{level: reason}`` for levels whose uniformity was not tested.
    """

    n: int
    statistic: float
    df: int
    p_value: mpmath.mpf
    level_statistic: float
    level_df: int
    level_p_value: mpmath.mpf
    within_statistic: float
    within_df: int
    within_p_value: mpmath.mpf
    bins: tuple[Bin, ...]
    invalid: tuple[tuple[Any, str], ...] = ()
    impossible: tuple[Any, ...] = ()
    skipped: dict = field(default_factory=dict)

    def passed(self, alpha: float = 1e-6) -> bool:
        """True when the test does not reject at level ``alpha``."""
        return not self.invalid and not self.impossible and self.p_value >= alpha

    def worst_bins(self, limit: int = 10) -> list[Bin]:
        return sorted(self.bins, key=lambda b: -b.contribution)[:limit]

    def table(self, limit: int = 10) -> str:
        rows = [["stage", "bin", "observed", "expected", "(O-E)^2/E"]]
        for b in self.worst_bins(limit):
            rows.append([b.stage, b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"])
        return _align(rows)

    def summary(self) -> str:
        lines = [
            f"n = {self.n} draws; chi-square {self.statistic:.6g} on {self.df} df, p-value {_fmt(self.p_value, 4)}",
            f"  by level:     {self.level_statistic:.6g} on {self.level_df} df, p = {_fmt(self.level_p_value, 4)}",
            f"  within level: {self.within_statistic:.6g} on {self.within_df} df, p = {_fmt(self.within_p_value, 4)}",
        ]
        for o, why in self.invalid[:5]:
            lines.append(f"  invalid draw {o!r}: {why}")
        for o in self.impossible[:5]:
            lines.append(f"  impossible draw {_out_text(o)}: probability 0")
        if self.skipped:
            lines.append(f"  uniformity not tested in {len(self.skipped)} level(s), e.g. level "
                         f"{next(iter(self.skipped))}: {next(iter(self.skipped.values()))}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary() + "\nworst bins:\n" + self.table()


def goodness_of_fit(
    samples: Iterable[Any],
    mechanism: Any,
    *,
    dps: Optional[int] = None,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
    progress: Optional[Callable[[int, int], None]] = None,
) -> GoodnessOfFit:
    """Pearson's chi-square test of draws against the exact distribution of ``mechanism``.

    1. **By level**: observed draws per level against ``n * P(level)`` (exact level
       probabilities certified to ``dps`` digits, multiplied by ``n`` exactly, then
       converted); consecutive levels (best first) are pooled until each bin expects at
       least ``min_expected`` draws.
    2. **Within levels** (``within=True``): every output of a level is equally likely.
       Given the ``n_a`` draws in level ``a`` of ``m_a`` outputs, each output expects
       ``n_a / m_a`` when ``n P(a) >= min_expected * m_a``; otherwise the outputs are
       grouped into runs of ``g = ceil(min_expected * m_a / (n P(a)))`` consecutive
       outputs in the order of ``mechanism.outputs()`` (which needs the support listed,
       refused past ``max_enumerate``: such levels are skipped and reported).  Bins are
       chosen from ``n`` and the exact probabilities only, never from the draws.

    The statistic is the sum of both stages, with degrees of freedom summed; the p-value
    is ``Q(df/2, x/2)`` (mpmath's regularised incomplete gamma).  A draw that is not a
    valid output, or has probability 0, makes the p-value 0.
    """
    digits = as_dps(dps)
    lv = _Levels(mechanism, digits, max_enumerate)
    kind = lv.kind
    tally: Counter = Counter()
    invalid: list[tuple[Any, str]] = []
    for s in samples:
        try:
            tally[normalise_output(s, kind)] += 1
        except ExactDPError as err:
            invalid.append((s, str(err)))
    n = sum(tally.values()) + len(invalid)
    if n == 0:
        raise InvalidParameterError("samples", samples, "must contain at least one draw")
    level_obs = [0] * len(lv.levels)
    per_output: dict[Any, tuple[int, int]] = {}  # output -> (level, count)
    impossible = []
    for o, count in tally.items():
        try:
            a = lv.level_of(o)
        except ExactDPError as err:
            invalid.append((o, str(err)))
            continue
        if a is None:
            impossible.append(o)
            continue
        level_obs[a] += count
        per_output[o] = (a, count)
    with mp_workdps(digits + 5):
        probs = lv.level_probabilities
        expected_exact = [n * p for p in probs]
    plan = _make_plan(lv.levels, probs, n, min_expected, within, lv.support_size(), max_enumerate)
    bins: list[Bin] = []
    # stage 1
    level_stat = 0.0
    for group in plan.level_bins:
        o = sum(level_obs[a] for a in group)
        with mp_workdps(digits + 5):
            e = float(mpmath.fsum(expected_exact[a] for a in group))
        contrib = (o - e) ** 2 / e if e > 0 else (0.0 if o == 0 else math.inf)
        level_stat += contrib
        label = f"level {group[0]}" if len(group) == 1 else f"levels {group[0]}-{group[-1]}"
        bins.append(Bin("level", label, o, e, contrib))
    level_df = len(plan.level_bins) - 1
    # stage 2
    positions: dict[Any, int] = {}
    if plan.needs_enumeration:
        wanted = {o for o, (a, _) in per_output.items() if plan.within.get(a, _LevelPlan("skip")).mode == "groups"}
        counters = [0] * len(lv.levels)
        if wanted:
            for a, o in lv.enumerate(max_enumerate, "the within-level test", progress):
                if o in wanted:
                    positions[o] = counters[a]
                counters[a] += 1
    within_stat, within_df = 0.0, 0
    skipped = {}
    by_level: dict[int, list[tuple[Any, int]]] = {}
    for o, (a, count) in per_output.items():
        by_level.setdefault(a, []).append((o, count))
    for a, lp in sorted(plan.within.items()):
        if lp.mode == "skip":
            skipped[a] = lp.reason
            continue
        n_a = level_obs[a]
        m = lv.levels[a].multiplicity
        if n_a == 0:
            continue  # no information about uniformity in this level
        if lp.mode == "outputs":
            e = n_a / m
            seen = by_level.get(a, [])
            for o, count in seen:
                contrib = (count - e) ** 2 / e
                within_stat += contrib
                bins.append(Bin("within", f"level {a} output {_out_text(o)}", count, e, contrib))
            unseen = m - len(seen)
            if unseen:
                within_stat += unseen * e
                bins.append(Bin("within", f"level {a}: {unseen} unobserved outputs", 0, unseen * e, unseen * e))
            within_df += m - 1
        else:
            counts = [0] * lp.groups
            for o, count in by_level.get(a, []):
                counts[_group_of(lp, positions[o])] += count
            for g, count in enumerate(counts):
                size = _group_size(lp, m, g)
                e = n_a * size / m
                contrib = (count - e) ** 2 / e
                within_stat += contrib
                bins.append(Bin("within", f"level {a} outputs {g * lp.size}-{g * lp.size + size - 1}", count, e, contrib))
            within_df += lp.groups - 1
    statistic = level_stat + within_stat
    df = level_df + within_df
    bad = bool(invalid or impossible)
    zero = mpmath.mpf(0)
    return GoodnessOfFit(
        n=n, statistic=math.inf if bad else statistic, df=df,
        p_value=zero if bad else chi2_sf(statistic, df),
        level_statistic=level_stat, level_df=level_df, level_p_value=zero if bad else chi2_sf(level_stat, level_df),
        within_statistic=within_stat, within_df=within_df,
        within_p_value=chi2_sf(within_stat, within_df),
        bins=tuple(bins), invalid=tuple(invalid), impossible=tuple(impossible), skipped=skipped,
    )


# -------------------------------------------------------------------------------------
# power
# -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Power:
    """Result of :func:`power`: ``power`` (probability that :func:`goodness_of_fit` with
    ``n`` draws rejects at ``alpha`` when the draws come from the alternative), the
    ``method`` (``"noncentral"``: Pearson's statistic approximated by a noncentral
    chi-square with noncentrality ``n * sum (q - p)**2 / p`` over the test's bins;
    ``"monte-carlo"``: the binned counts simulated ``trials`` times, with a 95% Wilson
    interval in ``interval``), ``df``, ``critical`` value, ``noncentrality``, and
    ``outside``: the alternative's probability of outputs the mechanism never gives
    (any such draw is detected)."""

    power: float
    n: int
    alpha: float
    method: str
    df: int
    critical: float
    noncentrality: float
    outside: float
    trials: int = 0
    rejections: int = 0
    interval: tuple[float, float] = (math.nan, math.nan)

    def __float__(self) -> float:
        return self.power

    def __str__(self) -> str:
        text = (f"power {self.power:.4g} with n = {self.n} at alpha = {self.alpha:g} ({self.method}; "
                f"df = {self.df}, critical value {self.critical:.6g}, noncentrality {self.noncentrality:.6g})")
        if self.method == "monte-carlo":
            text += f"; {self.rejections}/{self.trials} rejections, 95% interval [{self.interval[0]:.4g}, {self.interval[1]:.4g}]"
        return text


def _alternative_pmf(alternative: Any, kind: str) -> Callable[[Any], float]:
    if isinstance(alternative, Mapping):
        table = {normalise_output(o, kind): float(_to_mpf(p)) for o, p in alternative.items()}
        return lambda o: table.get(o, 0.0)
    if hasattr(alternative, "probability") and callable(alternative.probability):
        return lambda o: float(alternative.probability(o))
    if callable(alternative):
        return lambda o: float(_to_mpf(alternative(o)))
    raise InvalidParameterError("alternative", alternative, "must be a mapping output -> probability, a callable, "
                                "or an object with .probability(output)")


def _binned(mechanism: Any, alternative: Any, n: int, min_expected: float, within: bool, dps: int,
            max_enumerate: int):
    """The test's bins for ``n`` draws: null and alternative probabilities of every level
    bin, and per level ``(q_a, [(p_g|a, q_g), ...])`` for the within stage."""
    lv = _Levels(mechanism, dps, max_enumerate)
    probs = lv.level_probabilities
    plan = _make_plan(lv.levels, probs, n, min_expected, within, lv.support_size(), max_enumerate)
    pmf = _alternative_pmf(alternative, lv.kind)
    support = lv.support_size()
    if support > max_enumerate:
        raise InvalidParameterError("max_enumerate", max_enumerate,
                                    f"power() needs every output, and the mechanism has {support}; raise max_enumerate")
    q_level = [0.0] * len(lv.levels)
    q_within: dict[int, list[float]] = {}
    counters = [0] * len(lv.levels)
    for a, o in lv.enumerate(max_enumerate, "power()"):
        q = pmf(o)
        q_level[a] += q
        lp = plan.within.get(a)
        if lp is not None and lp.mode != "skip":
            m = lv.levels[a].multiplicity
            slots = m if lp.mode == "outputs" else lp.groups
            arr = q_within.setdefault(a, [0.0] * slots)
            pos = counters[a]
            arr[pos if lp.mode == "outputs" else _group_of(lp, pos)] += q
        counters[a] += 1
    total_q = sum(q_level)
    if isinstance(alternative, Mapping):
        total_claimed = sum(float(_to_mpf(p)) for p in alternative.values())
        outside = max(0.0, total_claimed - total_q)
    else:
        outside = max(0.0, 1.0 - total_q) if total_q < 1 - 1e-9 else 0.0
    p_level_bins = [float(sum(probs[a] for a in g)) for g in plan.level_bins]
    q_level_bins = [sum(q_level[a] for a in g) for g in plan.level_bins]
    within_parts = {}
    for a, lp in plan.within.items():
        if lp.mode == "skip":
            continue
        m = lv.levels[a].multiplicity
        if lp.mode == "outputs":
            p_cond = [1.0 / m] * m
        else:
            p_cond = [_group_size(lp, m, g) / m for g in range(lp.groups)]
        within_parts[a] = (p_cond, q_within.get(a, [0.0] * len(p_cond)))
    return plan, probs, q_level, p_level_bins, q_level_bins, within_parts, outside


def power(
    mechanism: Any,
    alternative: Any,
    n: int,
    alpha: float = 1e-6,
    *,
    method: str = "noncentral",
    trials: int = 1000,
    seed: int = 0,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    dps: Optional[int] = None,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
) -> Power:
    """The probability that :func:`goodness_of_fit` with ``n`` draws rejects at level
    ``alpha`` when the draws come from ``alternative`` (a wrong distribution: a mapping
    ``output -> probability``, a callable, or an object with ``.probability(output)``).

    ``method="noncentral"`` (default): Pearson's statistic under a fixed alternative is
    approximately noncentral chi-square with the test's ``df`` and noncentrality
    ``lambda = n * [sum_levelbins (q - p)**2 / p + sum_a q_a sum_bins (q_b|a - p_b|a)**2 / p_b|a]``
    (the classical approximation; good when ``lambda`` is not tiny and bins are not
    sparse).  ``method="monte-carlo"``: the bin counts are simulated ``trials`` times with
    numpy (seeded) and the statistic compared with the critical value; the estimate comes
    with a 95% Wilson interval.  Either way, mass the alternative puts outside the
    mechanism's support is detected by any draw of it: ``1 - (1 - outside)**n`` is
    combined in.  Needs the support enumerated (``max_enumerate``).
    """
    count = as_positive_int(n, "n")
    if method not in ("noncentral", "monte-carlo"):
        raise InvalidParameterError("method", method, "must be 'noncentral' or 'monte-carlo'")
    digits = as_dps(dps)
    plan, probs, q_level, p_lb, q_lb, within_parts, outside = _binned(
        mechanism, alternative, count, min_expected, within, digits, max_enumerate)
    df = (len(p_lb) - 1) + sum(len(p) - 1 for p, _ in within_parts.values())
    crit = float(chi2_isf(alpha, df)) if df > 0 else math.inf
    # noncentrality
    lam = sum((q - p) ** 2 / p for p, q in zip(p_lb, q_lb) if p > 0)
    for a, (p_cond, q_bins) in within_parts.items():
        qa = q_level[a]
        if qa <= 0:
            continue
        lam += qa * sum((q / qa - p) ** 2 / p for p, q in zip(p_cond, q_bins))
    lam *= count
    miss_outside = (1.0 - outside) ** count
    if method == "noncentral":
        inside = float(ncx2_sf(crit, df, lam)) if df > 0 else 0.0
        value = 1.0 - miss_outside * (1.0 - inside)
        return Power(value, count, alpha, method, df, crit, lam, outside)
    rng = np.random.default_rng(seed)
    trials = as_positive_int(trials, "trials")
    n_levels = len(q_level)
    q_arr = np.array(q_level + [outside], dtype=float)
    q_arr = q_arr / q_arr.sum()
    p_level = [float(p) for p in probs]
    rejections = 0
    for _ in range(trials):
        draws = rng.multinomial(count, q_arr)
        if draws[-1] > 0:
            rejections += 1
            continue
        stat = 0.0
        for g, group in enumerate(plan.level_bins):
            o = int(sum(draws[a] for a in group))
            e = count * p_lb[g]
            stat += (o - e) ** 2 / e
        for a, (p_cond, q_bins) in within_parts.items():
            n_a = int(draws[a])
            if n_a == 0:
                continue
            qb = np.array(q_bins, dtype=float)
            qb = qb / qb.sum() if qb.sum() > 0 else np.full(len(q_bins), 1.0 / len(q_bins))
            obs = rng.multinomial(n_a, qb)
            e = n_a * np.array(p_cond)
            stat += float(((obs - e) ** 2 / e).sum())
        if stat > crit:
            rejections += 1
    est = rejections / trials
    z = 1.959963984540054
    centre = (est + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(est * (1 - est) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return Power(est, count, alpha, method, df, crit, lam, outside, trials, rejections,
                 (max(0.0, centre - half), min(1.0, centre + half)))


def samples_needed(
    mechanism: Any, alternative: Any, target: float = 0.99, alpha: float = 1e-6, *, max_n: int = 10**9, **kwargs: Any
) -> int:
    """The smallest ``n`` (to within 1%) at which :func:`power` (noncentral approximation)
    reaches ``target``; raises when even ``max_n`` draws do not suffice."""
    if not 0 < target < 1:
        raise InvalidParameterError("target", target, "must satisfy 0 < target < 1")

    def ok(n: int) -> bool:
        return power(mechanism, alternative, n, alpha, **kwargs).power >= target

    hi = 64
    while not ok(hi):
        hi *= 2
        if hi > max_n:
            raise InvalidParameterError("max_n", max_n, f"power stays below {target} up to {max_n} draws")
    lo = hi // 2
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# =====================================================================================
# Reading samples (CSV or JSON lines), for the CLI and for users
# =====================================================================================


def read_samples(text: str, source: str = "samples") -> list[list[int]]:
    """Draws from text: one draw per line as comma/space-separated item ids (CSV), or JSON
    lines (each a list of ids), or one JSON list of lists (``exactdp sample --json``).
    Blank lines and ``#`` comments are ignored; errors name the line.

    >>> read_samples("0,1\\n1 0\\n")
    [[0, 1], [1, 0]]
    >>> read_samples("[[0, 1], [2, 0]]")
    [[0, 1], [2, 0]]
    >>> read_samples("[\\n  [0, 1],\\n  [2, 0]\\n]")
    [[0, 1], [2, 0]]
    >>> read_samples("[0, 1]\\n[2, 0]\\n")
    [[0, 1], [2, 0]]
    """
    import json
    import re

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
            try:
                ids.append(int(token))
            except ValueError:
                raise ValueError(f"{source}: line {lineno}: {token!r} is not an item id") from None
        out.append(ids)
    if not out:
        raise ValueError(f"{source}: no draws found")
    return out
