"""Certify another implementation against the exact mechanism.

Three kinds of evidence a fast (float64, log-space, vectorised) implementation can give,
each compared with exactdp's exact values:

- :func:`compare_probabilities` -- its probabilities or log-probabilities of outputs;
- :func:`compare_mtilde` -- its array of ``log m̃`` (Joint's refined counts, in the order
  float implementations use);
- :func:`goodness_of_fit` -- draws from its sampler, tested against the exact
  distribution: first by level, then for uniformity within each level.  Its verdict is
  PASS, FAIL or INCONCLUSIVE: a test that could not have failed (0 degrees of freedom)
  or was too weak to trust (power below ``min_power`` against the least favourable
  deviation of total variation ``delta``) never says PASS;

and :func:`sensitivity` says what the sampler test can detect with ``n`` draws,
:func:`power` how likely it is to detect a given wrong distribution, and
:func:`samples_needed` how many draws make either power reach a target, so a test suite
can choose ``n`` honestly.

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
>>> fit.df, fit.p_value > 1e-6, fit.verdict()     # not rejected, but too few draws
(2, True, 'inconclusive')
>>> fit.samples_needed()                           # for power 0.99 at TV 0.05
5280
>>> goodness_of_fit(m.samples(5280, rng=1), m).verdict()
'pass'
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import mpmath
import numpy as np
import numpy.typing as npt
from flint import arb, fmpz

from ..core._typing import AlternativeLike, ClaimedProbabilities, MechanismLike, Output, OutputLike
from ..errors import ExactDPError, InvalidOutputError, InvalidParameterError, NothingToDetectError
from ..core.precision import certify as _certify, mp_workdps
from ..core.validation import as_dps, as_positive_int

if TYPE_CHECKING:
    from ..mechanisms.joint import Joint

__all__ = [
    "ComparisonRow",
    "ProbabilityComparison",
    "MtildeRow",
    "MtildeComparison",
    "Bin",
    "GoodnessOfFit",
    "BinPlan",
    "Sensitivity",
    "Power",
    "compare_probabilities",
    "compare_mtilde",
    "goodness_of_fit",
    "sensitivity",
    "power",
    "samples_needed",
    "chi2_sf",
    "chi2_isf",
    "ncx2_sf",
    "normalise_output",
    "read_samples",
    "DEFAULT_ALPHA",
    "DEFAULT_DELTA",
    "DEFAULT_MIN_POWER",
    "DEFAULT_MAX_N",
    "DEFAULT_MIN_COVERAGE",
]

#: Enumerating outputs (within-level bins, callables, power) is refused past this.
DEFAULT_MAX_ENUMERATE = 1_000_000
#: Pool bins until each expects at least this many draws (the usual chi-square rule).
MIN_EXPECTED = 5
#: A probability comparison is inconclusive when the compared outputs carry less exact
#: probability than this.
DEFAULT_MIN_COVERAGE = 0.5


# =====================================================================================
# Helpers
# =====================================================================================


def _kind(mechanism: MechanismLike) -> str:
    return getattr(mechanism, "output_kind", "sequence")


def normalise_output(output: OutputLike, kind: str = "sequence") -> Output:
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
            from ..core.levels import Level

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

    output: Optional[Output]
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

    ``verdict``: ``"fail"`` when some output is out of tolerance
    (``|claimed - exact| > atol + rtol*|exact|``); else ``"inconclusive"`` when nothing was
    compared or the compared outputs carry exact probability ``coverage`` below
    ``min_coverage`` (``reason`` says which); else ``"pass"``.  ``passed``: the verdict is
    ``"pass"``;
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
    missing: dict[int, int]
    claimed_total: Optional[mpmath.mpf]
    dps: int
    verdict: str = "pass"
    coverage: float = 1.0
    min_coverage: float = DEFAULT_MIN_COVERAGE
    reason: str = ""

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
            f"{self.verdict.upper()}: {self.reason + '; ' if self.reason else ''}{self.n_outputs} outputs compared "
            f"({'log-probabilities' if self.log else 'probabilities'}), {self.failures} out of "
            f"tolerance (rtol={self.rtol:g}, atol={self.atol:g}); max abs error "
            f"{_fmt(self.max_abs_error, 3)}, max rel error {_fmt(self.max_rel_error, 3)}"
        )
        if self.claimed_total is not None:
            head += f"; claimed total {_fmt(self.claimed_total, 17)}"
        head += f"; they carry {self.coverage:.6g} of the exact probability (at least {self.min_coverage:g} needed)"
        return head + ("\n" + self.table() if self.worst else "")


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
    claimed: ClaimedProbabilities,
    mechanism: MechanismLike,
    *,
    log: bool = False,
    outputs: Optional[Iterable[OutputLike]] = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    dps: Optional[int] = None,
    worst: int = 10,
    max_outputs: int = DEFAULT_MAX_ENUMERATE,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
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

    Verdict: FAIL when an output is out of tolerance; otherwise INCONCLUSIVE when the
    comparison cannot decide: nothing was compared (an empty claim, or ``outputs``
    selecting none), or the compared outputs carry less than ``min_coverage`` (default
    0.5) of the exact probability (``coverage``, computed from the certified
    probabilities: a claimed table of a few outputs, or ``outputs`` listing a few, says
    nothing about the rest of the distribution; a mapping without ``outputs`` covers the
    whole support, since what it omits is compared with claimed probability 0); otherwise
    PASS.  ``min_coverage=0`` accepts any non-empty spot check.
    """
    digits = as_dps(dps)
    try:
        cover_ok = not isinstance(min_coverage, bool) and 0 <= float(min_coverage) <= 1
    except (TypeError, ValueError):
        cover_ok = False
    if not cover_ok:
        raise InvalidParameterError("min_coverage", min_coverage, "must satisfy 0 <= min_coverage <= 1")
    min_coverage = float(min_coverage)
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
        covered = mpmath.mpf(0)
        for o, value in items:
            if o in seen:
                raise InvalidParameterError("claimed", _out_text(o), "names the same output twice")
            seen.add(o)
            a = lv.level_of(o)
            e = zero if a is None else exact_level[a]
            if a is not None:
                seen_per_level[a] += 1
                covered += out_p[a]
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
                    covered += left * out_p[a]
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
        coverage = float(min(covered, mpmath.mpf(1)))
    n_compared = len(items) + sum(missing.values())
    if failures:
        verdict, reason = "fail", ""
    elif not rows:
        verdict, reason = "inconclusive", "nothing was compared"
    elif coverage < min_coverage:
        verdict, reason = "inconclusive", (f"the {n_compared} compared output{'s' if n_compared != 1 else ''} carry "
                                           f"only {coverage:.3g} of the exact probability, below "
                                           f"min_coverage = {min_coverage:g}")
    else:
        verdict, reason = "pass", ""
    return ProbabilityComparison(
        passed=verdict == "pass", log=log, n_outputs=n_compared,
        failures=failures, max_abs_error=max_abs, max_rel_error=max_rel, worst=tuple(ranked[:worst]),
        rtol=rtol, atol=atol, missing=missing, claimed_total=claimed_total, dps=digits,
        verdict=verdict, coverage=coverage, min_coverage=min_coverage, reason=reason,
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
    log_counts: npt.ArrayLike,
    mechanism: Joint,
    *,
    rows: Optional[npt.ArrayLike] = None,
    cols: Optional[npt.ArrayLike] = None,
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


def chi2_sf(x: Union[float, mpmath.mpf], df: int) -> mpmath.mpf:
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


def ncx2_sf(x: Union[float, mpmath.mpf], df: int, nc: Union[float, mpmath.mpf]) -> mpmath.mpf:
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


# -------------------------------------------------------------------------------------
# What the test can see with n draws, and its power against the least favourable
# total-variation deviation
# -------------------------------------------------------------------------------------

#: Significance level of the sampler test unless told otherwise.
DEFAULT_ALPHA = 1e-6
#: Smallest deviation (total variation distance, see :func:`sensitivity`) a sampler test
#: must be able to detect before it may say PASS.
DEFAULT_DELTA = 0.05
#: Power the test must have against that deviation before it may say PASS.
DEFAULT_MIN_POWER = 0.99
#: :func:`sensitivity` and :func:`samples_needed` search ``n`` up to this many draws.
DEFAULT_MAX_N = 10**9

VERDICTS = ("pass", "fail", "inconclusive")


def _spread(probs: Sequence[float]) -> float:
    """An upper bound on ``max_S P(S) (1 - P(S))`` over unions ``S`` of the given bins:
    ``p (1 - p)`` when one bin holds ``p >= 1/2`` (then it is the maximum), else ``1/4``
    (the maximum when some union holds exactly half the mass)."""
    top = max(probs)
    return top * (1.0 - top) if top >= 0.5 else 0.25


@dataclass(frozen=True)
class BinPlan:
    """What the sampler test looks at with ``n`` draws (chosen from ``n`` and the exact
    probabilities only, exactly as :func:`goodness_of_fit` chooses its bins).

    ``df``: degrees of freedom; ``levels`` utility levels pooled into ``level_bins`` bins
    (``pooled_levels`` of them share a bin with another level: mass moved between those
    is invisible); ``within_outputs`` outputs of levels whose uniformity is tested, in
    ``within_bins`` bins (``within_grouped`` of those outputs share a bin with other
    outputs); ``untested_outputs`` outputs of levels of two or more outputs whose
    uniformity is not tested at all (too few draws expected, no draw observed, the support
    too large to list, or ``within=False``); ``spread``: the largest ``V`` of
    :func:`sensitivity` (0 when ``df = 0``).
    """

    n: int
    df: int
    levels: int
    level_bins: int
    pooled_levels: int
    within_outputs: int
    within_bins: int
    within_grouped: int
    untested_outputs: int
    spread: float

    def describe(self) -> str:
        """``"levels: 5 in 4 bins (2 pooled); within levels: 16 outputs in 12 bins (6
        grouped), 4 untested"``."""
        return (f"levels: {self.levels} in {self.level_bins} bin{'s' if self.level_bins != 1 else ''} "
                f"({self.pooled_levels} pooled); within levels: {self.within_outputs} outputs in "
                f"{self.within_bins} bins ({self.within_grouped} grouped), {self.untested_outputs} untested")


def _bin_plan(levels: Sequence[Any], probs: Sequence[mpmath.mpf], plan: _Plan, n: int,
              level_obs: Optional[Sequence[int]] = None) -> BinPlan:
    """The :class:`BinPlan` of ``plan``; with ``level_obs`` (observed draws per level),
    levels without a draw have no within-level test, as in :func:`goodness_of_fit`."""
    p_bins = [float(mpmath.fsum(probs[a] for a in g)) for g in plan.level_bins]
    df = len(plan.level_bins) - 1
    spreads = [_spread(p_bins)] if df > 0 else []
    pooled = sum(len(g) for g in plan.level_bins if len(g) > 1)
    tested = wbins = grouped = untested = 0
    for a, lv in enumerate(levels):
        m = lv.multiplicity
        if m < 2:
            continue
        lp = plan.within.get(a)
        if lp is None or lp.mode == "skip" or (level_obs is not None and level_obs[a] == 0):
            untested += m
            continue
        if lp.mode == "outputs":
            slots, cond = m, 0.25  # m >= 2 equal bins: some union holds half, or m = 2
        else:
            slots = lp.groups
            cond = _spread([lp.size / m, _group_size(lp, m, lp.groups - 1) / m])
            grouped += m
        tested += m
        wbins += slots
        df += slots - 1
        spreads.append(float(probs[a]) * cond)
    return BinPlan(n, df, len(levels), len(plan.level_bins), pooled, tested, wbins, grouped, untested,
                   max(spreads) if df > 0 and spreads else 0.0)


@functools.lru_cache(maxsize=4096)
def _critical(alpha: float, df: int) -> float:
    return float(chi2_isf(alpha, df))


#: Tail cut of :func:`_ncx2_sf_fast`: probabilities below ``exp(-_TAIL)`` are rounded.
_TAIL = 40.0


def _ncx2_sf_fast(x: float, df: int, nc: float) -> float:
    """:func:`ncx2_sf` in double precision after one mpmath incomplete gamma (the power
    is a statistic: 1e-12 relative error is plenty, and it is called many times).

    Far tails are answered at once from Birge's bounds for the noncentral chi-square
    (L. Birge, "An alternative point of view on Lepski's method", 2001, Lemma 8.1):
    ``P(X <= D + L - 2 sqrt((D + 2L) t)) <= e**-t`` and
    ``P(X >= D + L + 2 sqrt((D + 2L) t) + 2t) <= e**-t``; with ``t = 40`` the answer 1 or 0
    is off by less than ``4.3e-18``.  This keeps huge noncentralities (``n`` up to 1e9)
    from summing hundreds of thousands of Poisson terms."""
    if df <= 0:
        return 0.0
    if x <= 0:
        return 1.0
    if nc / 2.0 <= 0:  # also a subnormal nc, whose half is 0
        return float(chi2_sf(x, df))
    spread = 2.0 * math.sqrt((df + 2.0 * nc) * _TAIL)
    if x <= df + nc - spread:
        return 1.0
    if x >= df + nc + spread + 2.0 * _TAIL:
        return 0.0
    mu, y = nc / 2.0, x / 2.0
    width = 12.0 * math.sqrt(mu) + 20.0
    j0 = int(max(0.0, math.floor(mu - width)))
    j1 = int(math.ceil(mu + width))
    s = df / 2.0 + j0
    with mp_workdps(20):
        q = float(mpmath.gammainc(s, y, mpmath.inf, regularized=True))
    log_w = -mu + j0 * math.log(mu) - math.lgamma(j0 + 1)
    log_y, log_mu = math.log(y), math.log(mu)
    total = 0.0
    for j in range(j0, j1 + 1):
        total += math.exp(log_w) * min(q, 1.0)
        q += math.exp(s * log_y - y - math.lgamma(s + 1))
        s += 1.0
        log_w += log_mu - math.log(j + 1)
    return min(total, 1.0)


def _lambda_for_power(alpha: float, df: int, target: float) -> float:
    """The noncentrality at which the level-``alpha`` test on ``df`` degrees of freedom has
    power ``target`` (bisection, relative accuracy 1e-7)."""
    crit = _critical(alpha, df)
    lo, hi = 0.0, max(1.0, crit)
    while _ncx2_sf_fast(crit, df, hi) < target:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-7 * hi:
        mid = (lo + hi) / 2
        if _ncx2_sf_fast(crit, df, mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def _lf_power(shape: BinPlan, delta: float, alpha: float) -> tuple[float, float]:
    """(power, noncentrality) against the least favourable alternative at TV ``delta``."""
    if shape.df <= 0 or shape.spread <= 0:
        return 0.0, 0.0
    lam = shape.n * delta * delta / shape.spread
    return _ncx2_sf_fast(_critical(alpha, shape.df), shape.df, lam), lam


def _lf_delta(shape: BinPlan, alpha: float, target: float) -> float:
    """The smallest TV deviation detected with power ``target`` (``inf`` when ``df = 0``)."""
    if shape.df <= 0 or shape.spread <= 0:
        return math.inf
    return math.sqrt(_lambda_for_power(alpha, shape.df, target) * shape.spread / shape.n)


class _Design:
    """The test's bins as a function of ``n`` for one mechanism (exact level
    probabilities certified once)."""

    def __init__(self, lv: _Levels, min_expected: float, within: bool, max_enumerate: int):
        self.levels = lv.levels
        with mp_workdps(lv.dps + 5):
            self.probs = lv.level_probabilities
        self.support = lv.support_size()
        self.min_expected, self.within, self.max_enumerate = min_expected, within, max_enumerate

    def plan(self, n: int) -> _Plan:
        return _make_plan(self.levels, self.probs, n, self.min_expected, self.within, self.support, self.max_enumerate)

    def shape(self, n: int) -> BinPlan:
        return _bin_plan(self.levels, self.probs, self.plan(n), n)

    def n_needed(self, delta: float, alpha: float, target: float, max_n: int) -> Optional[int]:
        """The smallest ``n`` (doubling, then bisection to within 1%) whose least
        favourable power at ``delta`` reaches ``target``; ``None`` past ``max_n``."""
        return _search_n(lambda n: _lf_power(self.shape(n), delta, alpha)[0] >= target, max_n)


def _search_n(ok: Callable[[int], bool], max_n: int) -> Optional[int]:
    hi = 1
    while not ok(hi):
        if hi >= max_n:
            return None
        hi = min(2 * hi, max_n)
    lo = hi // 2
    if lo < 1:
        return hi
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _check_design_args(alpha: float, delta: float, min_power: float) -> tuple[float, float, float]:
    for name, value, ok, rule in (("alpha", alpha, lambda x: 0 < x < 1, "0 < alpha < 1"),
                                  ("delta", delta, lambda x: 0 < x <= 1, "0 < delta <= 1 (a total variation distance)"),
                                  ("min_power", min_power, lambda x: 0 < x < 1, "0 < min_power < 1")):
        try:
            good = not isinstance(value, bool) and ok(float(value))
        except (TypeError, ValueError):
            good = False
        if not good:
            raise InvalidParameterError(name, value, f"must satisfy {rule}")
    return float(alpha), float(delta), float(min_power)


def _fmt_needed(n: Optional[int], max_n: int) -> str:
    return f"more than {max_n:,}" if n is None else f"{n:,}"


def _fmt_delta(d: float) -> str:
    if math.isinf(d):
        return "none (0 df)"
    if d > 1:
        return "none (would need TV > 1)"
    return f">= {d:.3g}"


@dataclass(frozen=True)
class Sensitivity:
    """Result of :func:`sensitivity`: the test's :class:`BinPlan` with ``n`` draws, its
    ``power`` against the least favourable alternative at total variation ``delta``
    (``noncentrality`` of that alternative), ``detectable_delta`` (smallest TV deviation
    detected with power ``min_power`` at this ``n``) and ``n_needed`` (smallest ``n`` for
    which the power at ``delta`` reaches ``min_power``; ``None`` past ``max_n``)."""

    plan: BinPlan
    alpha: float
    delta: float
    min_power: float
    power: float
    noncentrality: float
    detectable_delta: float
    n_needed: Optional[int]
    max_n: int

    @property
    def conclusive(self) -> bool:
        return self.plan.df > 0 and self.power >= self.min_power

    def __str__(self) -> str:
        p = self.plan
        return (f"n = {p.n}: {p.df} df; power {self.power:.3g} against TV {self.delta:g} at alpha = {self.alpha:g} "
                f"(PASS needs {self.min_power:g}); TV detectable with power {self.min_power:g} at this n: "
                f"{_fmt_delta(self.detectable_delta)}; n needed for TV {self.delta:g}: "
                f"{_fmt_needed(self.n_needed, self.max_n)}; {p.describe()}")


def sensitivity(
    mechanism: MechanismLike,
    n: int,
    alpha: float = DEFAULT_ALPHA,
    *,
    delta: float = DEFAULT_DELTA,
    min_power: float = DEFAULT_MIN_POWER,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    dps: Optional[int] = None,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
    max_n: int = DEFAULT_MAX_N,
) -> Sensitivity:
    """What :func:`goodness_of_fit` with ``n`` draws can detect, before drawing anything.

    **Deviation measure.**  ``delta`` is a total variation distance (default
    :data:`DEFAULT_DELTA` = 0.05, i.e. 5% of the probability mass moved).  The test only
    sees counts per bin, so a deviation that stays inside one bin (between pooled levels,
    between outputs grouped in one within-level bin, or inside a level whose uniformity is
    not tested) is invisible whatever its size: :class:`BinPlan` counts those.  The power
    is therefore computed against the **least favourable single-stage alternative**: the
    distribution at total variation ``delta`` from the exact one that either

    * moves mass between the level bins, proportionally inside each bin (so every
      within-level distribution is unchanged).  Pearson's noncentrality is
      ``lambda = n * sum_b (q_b - p_b)**2 / p_b``; under ``sum |q_b - p_b| = 2 delta`` it
      is at least ``n delta**2 / (P(S) (1 - P(S)))`` where ``S`` is the set of bins gaining
      mass (Cauchy-Schwarz on each sign class), hence at least ``n delta**2 / V_L`` with
      ``V_L = 1/4``, or ``p (1 - p)`` when one bin holds ``p >= 1/2``; the bound is
      attained when the bins can be split into two halves of equal mass (or one holds
      ``p >= 1/2``), otherwise it is a lower bound; or
    * moves mass ``delta`` between the within-level bins of one tested level ``a`` of
      probability ``p_a``: the same argument on the conditional distribution gives
      ``lambda >= n delta**2 / (p_a V_a)``;

    and ``lambda = n delta**2 / V`` with ``V`` the largest of these ``V_L`` and
    ``p_a V_a`` (:attr:`BinPlan.spread`).  The constraint ``q >= 0`` is ignored, which
    only lowers ``lambda``.  The power reported is thus a lower bound on the power against
    every alternative whose deviation, of total variation at least ``delta``, lies in one
    stage; it is **not** a power against every alternative at that distance: deviations
    inside a bin have power ``alpha``, and for a deviation split across both stages the
    same argument only guarantees the smaller noncentrality
    ``n delta**2 / (V_L + sum_a q_a V_a)``.

    **Approximation.**  Power is ``P(X > c)`` with ``X`` noncentral chi-square on the
    test's ``df`` and noncentrality ``lambda``, ``c`` the level-``alpha`` critical value:
    the classical large-sample approximation of Pearson's statistic under an alternative
    (S. K. Mitra, "On the limiting power function of the frequency chi-square test", Ann.
    Math. Statist. 29, 1958), evaluated in floating point (mpmath incomplete gamma, then double
    precision): p-values and powers are statistics, never exact outputs.

    ``detectable_delta`` solves ``power = min_power`` for ``delta`` at this ``n``
    (bisection on ``lambda``); ``n_needed`` searches ``n`` (doubling, then bisection to
    within 1%) with the bins re-chosen at every ``n``, since they depend on ``n``.
    """
    count = as_positive_int(n, "n")
    alpha, delta, min_power = _check_design_args(alpha, delta, min_power)
    design = _Design(_Levels(mechanism, as_dps(dps), max_enumerate), min_expected, within, max_enumerate)
    shape = design.shape(count)
    pw, lam = _lf_power(shape, delta, alpha)
    return Sensitivity(shape, alpha, delta, min_power, pw, lam, _lf_delta(shape, alpha, min_power),
                       design.n_needed(delta, alpha, min_power, max_n), max_n)


@dataclass(frozen=True)
class GoodnessOfFit:
    """Result of :func:`goodness_of_fit`.

    ``statistic``, ``df``, ``p_value``: Pearson's chi-square over all bins (level stage plus
    within-level stage; the multinomial splits into the level counts and, given them, the
    counts within each level, so the two statistics add).  ``level_*`` and ``within_*`` are
    the two stages alone.  ``bins``: every bin (unobserved single-output bins of one level
    are summarised in one row); ``invalid``: draws that are not outputs at all;
    ``impossible``: valid outputs with exact probability 0 (either makes ``p_value`` 0);
    ``skipped``: ``{level: reason}`` for levels whose uniformity was not tested;
    ``plan``: the :class:`BinPlan` (what was pooled or left untested).

    **Verdict** (:meth:`verdict`), at level ``alpha`` (default the one given to
    :func:`goodness_of_fit`):

    * ``"fail"``: an invalid or impossible draw, or ``p_value < alpha``;
    * ``"inconclusive"``: not rejected, but the test could not have failed (``df = 0``) or
      was too weak to trust: its power against the least favourable alternative at total variation ``delta``
      (see :func:`sensitivity`) is below ``min_power``;
    * ``"pass"``: not rejected by a test that had power ``>= min_power`` at ``delta``.

    :meth:`passed` is true only for ``"pass"``.
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
    invalid: tuple[tuple[object, str], ...] = ()  # (the draw as given, why it is not an output)
    impossible: tuple[Output, ...] = ()
    skipped: dict[int, str] = field(default_factory=dict)
    plan: Optional[BinPlan] = None
    alpha: float = DEFAULT_ALPHA
    delta: float = DEFAULT_DELTA
    min_power: float = DEFAULT_MIN_POWER
    max_n: int = DEFAULT_MAX_N
    _design: Optional[_Design] = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def _alpha(self, alpha: Optional[float]) -> float:
        return self.alpha if alpha is None else _check_design_args(alpha, self.delta, self.min_power)[0]

    def rejected(self, alpha: Optional[float] = None) -> bool:
        """True when the draws are rejected: an invalid or impossible draw, or
        ``p_value < alpha``."""
        return bool(self.invalid or self.impossible or self.p_value < self._alpha(alpha))

    def power(self, alpha: Optional[float] = None) -> float:
        """Power of this test (its bins and ``df``) against the least favourable
        alternative at total variation ``delta`` (:func:`sensitivity`)."""
        a = self._alpha(alpha)
        key = ("power", a)
        if key not in self._cache:
            self._cache[key] = _lf_power(self.plan, self.delta, a)[0] if self.plan is not None else 0.0
        return self._cache[key]

    def detectable_delta(self, alpha: Optional[float] = None) -> float:
        """The smallest total variation deviation this test detects with power
        ``min_power`` (least favourable alternative; ``inf`` when ``df = 0``)."""
        a = self._alpha(alpha)
        key = ("delta", a)
        if key not in self._cache:
            self._cache[key] = _lf_delta(self.plan, a, self.min_power) if self.plan is not None else math.inf
        return self._cache[key]

    def samples_needed(self, alpha: Optional[float] = None) -> Optional[int]:
        """The smallest ``n`` at which the test (its bins re-chosen for that ``n``) has
        power ``min_power`` at ``delta``; ``None`` past ``max_n``."""
        a = self._alpha(alpha)
        key = ("n", a)
        if key not in self._cache:
            self._cache[key] = (self._design.n_needed(self.delta, a, self.min_power, self.max_n)
                                if self._design is not None else None)
        return self._cache[key]

    def verdict(self, alpha: Optional[float] = None) -> str:
        """``"pass"``, ``"fail"`` or ``"inconclusive"`` (see the class docstring)."""
        if self.rejected(alpha):
            return "fail"
        if self.df <= 0 or self.power(alpha) < self.min_power:
            return "inconclusive"
        return "pass"

    def passed(self, alpha: Optional[float] = None) -> bool:
        """True only for the verdict ``"pass"``: not rejected at ``alpha`` by a test with
        enough power (an inconclusive test is not a pass)."""
        return self.verdict(alpha) == "pass"

    def verdict_line(self, alpha: Optional[float] = None) -> str:
        """One line with everything the verdict rests on: verdict, n, df, statistic,
        p-value, alpha, power at ``delta``, the TV deviation detectable with power
        ``min_power`` at this ``n``, the ``n`` needed for ``delta``, and what was pooled
        or left untested."""
        a = self._alpha(alpha)
        v = self.verdict(a)
        if v == "fail":
            bad = len(self.invalid) + len(self.impossible)
            why = (f"{bad} draw{'s' if bad != 1 else ''} outside the support" if bad
                   else "the draws do not follow the exact distribution")
        elif self.df <= 0:
            why = "0 degrees of freedom: this test cannot reject anything"
        elif v == "inconclusive":
            why = "not rejected, but the test is too weak to say PASS"
        else:
            why = "no evidence against the exact distribution"
        rel = "<" if self.p_value < a else ">="
        return (
            f"{v.upper()}: {why}; n = {self.n}, chi-square {self.statistic:.6g} on {self.df} df, "
            f"p-value {_fmt(self.p_value, 4)} {rel} alpha = {a:g}; power {self.power(a):.3g} at TV deviation "
            f"{self.delta:g} (PASS needs {self.min_power:g}); TV detectable with power {self.min_power:g} at this n: "
            f"{_fmt_delta(self.detectable_delta(a))}; n needed for TV {self.delta:g}: "
            f"{_fmt_needed(self.samples_needed(a), self.max_n)}; " + (self.plan.describe() if self.plan is not None else "")
        )

    def worst_bins(self, limit: int = 10) -> list[Bin]:
        return sorted(self.bins, key=lambda b: -b.contribution)[:limit]

    def table(self, limit: int = 10) -> str:
        rows = [["stage", "bin", "observed", "expected", "(O-E)^2/E"]]
        for b in self.worst_bins(limit):
            rows.append([b.stage, b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"])
        return _align(rows)

    def summary(self, verdict: bool = True) -> str:
        """The two stages, notes on invalid draws and untested levels, then (with
        ``verdict``) :meth:`verdict_line`."""
        untested = self.plan.untested_outputs if self.plan is not None else 0
        if self.within_df > 0:
            within = f"{self.within_statistic:.6g} on {self.within_df} df, p = {_fmt(self.within_p_value, 4)}"
        elif untested:
            within = f"not tested (0 df; {untested} outputs in levels whose uniformity is untested)"
        else:
            within = "nothing to test (0 df: every level has a single output)"
        lines = [
            f"n = {self.n} draws; chi-square {self.statistic:.6g} on {self.df} df, p-value {_fmt(self.p_value, 4)}",
            f"  by level:     {self.level_statistic:.6g} on {self.level_df} df, p = {_fmt(self.level_p_value, 4)}",
            f"  within level: {within}",
        ]
        for o, why in self.invalid[:5]:
            lines.append(f"  invalid draw {o!r}: {why}")
        for o in self.impossible[:5]:
            lines.append(f"  impossible draw {_out_text(o)}: probability 0")
        if self.skipped:
            lines.append(f"  uniformity not tested in {len(self.skipped)} level(s), e.g. level "
                         f"{next(iter(self.skipped))}: {next(iter(self.skipped.values()))}")
        if verdict:
            lines.append(self.verdict_line())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary() + "\nworst bins:\n" + self.table()


def goodness_of_fit(
    samples: Iterable[OutputLike],
    mechanism: MechanismLike,
    *,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    min_power: float = DEFAULT_MIN_POWER,
    dps: Optional[int] = None,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
    progress: Optional[Callable[[int, int], None]] = None,
    max_n: int = DEFAULT_MAX_N,
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
    alpha, delta, min_power = _check_design_args(alpha, delta, min_power)
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
    design = _Design(lv, min_expected, within, max_enumerate)
    plan = design.plan(n)
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
    shape = _bin_plan(lv.levels, probs, plan, n, level_obs)
    assert shape.df == df, (shape, df)
    bad = bool(invalid or impossible)
    zero = mpmath.mpf(0)
    return GoodnessOfFit(
        n=n, statistic=math.inf if bad else statistic, df=df,
        p_value=zero if bad else chi2_sf(statistic, df),
        level_statistic=level_stat, level_df=level_df, level_p_value=zero if bad else chi2_sf(level_stat, level_df),
        within_statistic=within_stat, within_df=within_df,
        within_p_value=chi2_sf(within_stat, within_df),
        bins=tuple(bins), invalid=tuple(invalid), impossible=tuple(impossible), skipped=skipped,
        plan=shape, alpha=alpha, delta=delta, min_power=min_power, max_n=as_positive_int(max_n, "max_n"),
        _design=design,
    )


# -------------------------------------------------------------------------------------
# power against a given alternative
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


def _alternative_pmf(alternative: AlternativeLike, kind: str) -> Callable[[Output], float]:
    if isinstance(alternative, Mapping):
        table = {normalise_output(o, kind): float(_to_mpf(p)) for o, p in alternative.items()}
        return lambda o: table.get(o, 0.0)
    if hasattr(alternative, "probability") and callable(alternative.probability):
        return lambda o: float(alternative.probability(o))
    if callable(alternative):
        return lambda o: float(_to_mpf(alternative(o)))
    raise InvalidParameterError("alternative", alternative, "must be a mapping output -> probability, a callable, "
                                "or an object with .probability(output)")


class _Alternative:
    """An alternative's probabilities over the mechanism's support, listed once: per level,
    and per output position inside every level of two or more outputs (numpy arrays), so
    that the binned probabilities for any ``n`` cost no new enumeration."""

    def __init__(self, design: _Design, lv: _Levels, alternative: Any, max_enumerate: int):
        self.design = design
        pmf = _alternative_pmf(alternative, lv.kind)
        if design.support > max_enumerate:
            raise InvalidParameterError("max_enumerate", max_enumerate,
                                        f"power() needs every output, and the mechanism has {design.support}; "
                                        "raise max_enumerate")
        self.q_level = [0.0] * len(lv.levels)
        outs: dict[int, list[float]] = {}
        for a, o in lv.enumerate(max_enumerate, "power()"):
            q = pmf(o)
            self.q_level[a] += q
            if lv.levels[a].multiplicity >= 2:
                outs.setdefault(a, []).append(q)
        self.q_out = {a: np.array(v, dtype=float) for a, v in outs.items()}
        total_q = sum(self.q_level)
        if isinstance(alternative, Mapping):
            total_claimed = math.fsum(float(_to_mpf(p)) for p in alternative.values())
            gap = total_claimed - total_q
            self.outside = gap if gap > 1e-12 else 0.0  # not rounding noise of the float sums
        else:
            self.outside = max(0.0, 1.0 - total_q) if total_q < 1 - 1e-9 else 0.0

    def binned(self, plan: _Plan):
        """Null and alternative probabilities of the level bins, and per tested level
        ``(p_bins|a, q_bins)``."""
        probs = self.design.probs
        p_lb = [float(mpmath.fsum(probs[a] for a in g)) for g in plan.level_bins]
        q_lb = [sum(self.q_level[a] for a in g) for g in plan.level_bins]
        parts = {}
        for a, lp in plan.within.items():
            if lp.mode == "skip":
                continue
            m = self.design.levels[a].multiplicity
            q = self.q_out.get(a, np.zeros(m))
            if lp.mode == "outputs":
                p_cond, q_bins = [1.0 / m] * m, [float(x) for x in q]
            else:
                starts = np.arange(lp.groups) * lp.size
                p_cond = [_group_size(lp, m, g) / m for g in range(lp.groups)]
                q_bins = [float(x) for x in np.add.reduceat(q, starts)]
            parts[a] = (p_cond, q_bins)
        return p_lb, q_lb, parts

    def noncentrality(self, n: int) -> tuple[float, int, _Plan, list, list, dict]:
        plan = self.design.plan(n)
        p_lb, q_lb, parts = self.binned(plan)
        df = (len(p_lb) - 1) + sum(len(p) - 1 for p, _ in parts.values())
        lam = sum((q - p) ** 2 / p for p, q in zip(p_lb, q_lb) if p > 0)
        for a, (p_cond, q_bins) in parts.items():
            qa = self.q_level[a]
            if qa <= 0:
                continue
            lam += qa * sum((q / qa - p) ** 2 / p for p, q in zip(p_cond, q_bins))
        return lam * n, df, plan, p_lb, q_lb, parts

    def power(self, n: int, alpha: float) -> float:
        lam, df, *_ = self.noncentrality(n)
        inside = _ncx2_sf_fast(_critical(alpha, df), df, lam) if df > 0 else 0.0
        return 1.0 - (1.0 - self.outside) ** n * (1.0 - inside)


def power(
    mechanism: MechanismLike,
    alternative: AlternativeLike,
    n: int,
    alpha: float = DEFAULT_ALPHA,
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
    over the bins the test uses with ``n`` draws (the classical approximation; good when
    ``lambda`` is not tiny and bins are not sparse), evaluated in floating point.
    ``method="monte-carlo"``: the bin counts are simulated ``trials`` times with numpy
    (seeded) and the statistic compared with the critical value; the estimate comes with a
    95% Wilson interval.  Either way, mass the alternative puts outside the mechanism's
    support is detected by any draw of it: ``1 - (1 - outside)**n`` is combined in.
    Needs the support enumerated (``max_enumerate``).  This is the power against this one
    alternative; :func:`sensitivity` gives the power against the least favourable one at a
    given total variation distance.
    """
    count = as_positive_int(n, "n")
    if method not in ("noncentral", "monte-carlo"):
        raise InvalidParameterError("method", method, "must be 'noncentral' or 'monte-carlo'")
    alpha = _check_design_args(alpha, DEFAULT_DELTA, DEFAULT_MIN_POWER)[0]
    lv = _Levels(mechanism, as_dps(dps), max_enumerate)
    alt = _Alternative(_Design(lv, min_expected, within, max_enumerate), lv, alternative, max_enumerate)
    lam, df, plan, p_lb, q_lb, within_parts = alt.noncentrality(count)
    outside = alt.outside
    crit = _critical(alpha, df) if df > 0 else math.inf
    miss_outside = (1.0 - outside) ** count
    if method == "noncentral":
        inside = _ncx2_sf_fast(crit, df, lam) if df > 0 else 0.0
        value = 1.0 - miss_outside * (1.0 - inside)
        return Power(value, count, alpha, method, df, crit, lam, outside)
    rng = np.random.default_rng(seed)
    trials = as_positive_int(trials, "trials")
    q_arr = np.array(alt.q_level + [outside], dtype=float)
    q_arr = q_arr / q_arr.sum()
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
    mechanism: MechanismLike,
    alternative: Optional[AlternativeLike] = None,
    target: float = DEFAULT_MIN_POWER,
    alpha: float = DEFAULT_ALPHA,
    *,
    delta: Optional[float] = None,
    max_n: int = DEFAULT_MAX_N,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    dps: Optional[int] = None,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
) -> int:
    """The smallest ``n`` (doubling, then bisection to within 1%) at which the sampler test
    reaches power ``target``, with its bins re-chosen at every ``n`` as
    :func:`goodness_of_fit` would.

    With ``alternative`` (a wrong distribution, as in :func:`power`): the noncentral
    approximation of :func:`power` against it.  Without: the least favourable alternative at
    total variation ``delta`` (default :data:`DEFAULT_DELTA`; see :func:`sensitivity`).

    Raises :class:`~exactdp.errors.NothingToDetectError` at once when the alternative
    cannot be told from the mechanism on the test's bins even with ``max_n`` draws (e.g.
    it is the same distribution), and :class:`~exactdp.errors.InvalidParameterError`
    (argument ``max_n``) when the power stays below ``target`` up to ``max_n`` draws.
    """
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise InvalidParameterError("target", target, "must satisfy 0 < target < 1")
    target = float(target)
    if alternative is not None and delta is not None:
        raise InvalidParameterError("delta", delta, "give either an alternative or delta, not both")
    alpha = _check_design_args(alpha, DEFAULT_DELTA, DEFAULT_MIN_POWER)[0]
    max_n = as_positive_int(max_n, "max_n")
    lv = _Levels(mechanism, as_dps(dps), max_enumerate)
    design = _Design(lv, min_expected, within, max_enumerate)
    if alternative is None:
        delta = _check_design_args(alpha, DEFAULT_DELTA if delta is None else delta, target)[1]
        found = design.n_needed(delta, alpha, target, max_n)
        if found is None:
            raise InvalidParameterError("max_n", max_n, f"power at TV {delta:g} stays below {target} up to {max_n} "
                                        "draws; raise max_n or delta")
        return found
    alt = _Alternative(design, lv, alternative, max_enumerate)
    lam, df, *_ = alt.noncentrality(max_n)
    if alt.outside <= 0 and (df <= 0 or lam <= 1e-12 * max_n):
        raise NothingToDetectError(
            "alternative", alternative,
            f"has the same probabilities as {mechanism!r} on every bin the test uses (even with {max_n} draws: "
            f"noncentrality {lam:.3g}): there is nothing to detect, so no number of draws suffices",
        )
    if alt.power(max_n, alpha) < target:
        raise InvalidParameterError("max_n", max_n, f"power stays below {target} up to {max_n} draws "
                                    f"(noncentrality {lam:.3g} at {max_n}); raise max_n")
    found = _search_n(lambda n: alt.power(n, alpha) >= target, max_n)
    assert found is not None
    return found




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
