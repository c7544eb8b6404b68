"""Comparing another implementation's probability tables with the exact ones.

Claimed probabilities or log-probabilities of outputs (:func:`compare_probabilities`) and
the canonical mechanisms' class probabilities (:func:`compare_class_probabilities`);
Joint's ``log m~`` array is compared by :mod:`~exactdp.certify.mtilde`
(:func:`compare_mtilde`, importable from here too).

Exact values are certified to ``dps`` digits (default 30) before any comparison; floats
appear only in what is reported (errors), never in an exact value.

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> r = compare_probabilities({(0,): 0.7112345, (1,): 0.1946, (2,): 0.0942}, m, rtol=1e-3)
>>> r.verdict, r.worst[0].output
('fail', (2,))
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, Optional

import mpmath
import numpy as np

from .._oracle.groups import Groups
from ..core.aliases import ClaimedProbabilities, ClaimedTable, MechanismLike, Output, OutputLike
from ..core.formatting import number_text, output_text, table
from ..core.precision import mp_workdps, mpf_fraction
from ..core.results import VERDICT_HINT, NoTruthValue
from ..core.validation import as_dps
from ..errors import ExactDPError, InvalidParameterError
from .design import DEFAULT_MAX_ENUMERATE
from .io import normalise_output, to_mpf
from .mtilde import compare_mtilde  # noqa: F401  (importable from here, as before)
from .mtilde_rows import MtildeComparison, MtildeRow  # noqa: F401  (likewise)

__all__ = ["ComparisonRow", "ProbabilityComparison", "MtildeRow", "MtildeComparison", "ClassRow", "ClassComparison",
           "compare_probabilities", "compare_class_probabilities", "compare_mtilde", "DEFAULT_MIN_COVERAGE"]

#: A probability comparison is inconclusive when the compared outputs carry less exact
#: probability than this.
DEFAULT_MIN_COVERAGE = 0.5


@dataclass(frozen=True)
class ComparisonRow(NoTruthValue):
    """One ``output`` (``None`` for a group of outputs the claim left out) and its
    ``level`` (index of its probability group; ``None`` for an output not in the support):
    the ``claimed`` and ``exact`` values (probabilities, or logs with ``log=True``), the
    absolute and relative errors ``abs_error`` and ``rel_error``, ``ok`` when it is within
    tolerance, and a ``note`` (``"not claimed"`` for an output the mapping left out)."""

    output: Optional[Output]
    level: Optional[int]
    claimed: mpmath.mpf
    exact: mpmath.mpf
    abs_error: mpmath.mpf
    rel_error: mpmath.mpf
    ok: bool
    note: str = ""

    _truth_hint = ".ok (within tolerance)"


@dataclass(frozen=True)
class ProbabilityComparison(NoTruthValue):
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
    the claimed probabilities (probability scale only).  ``log``: whether log-probabilities
    were compared; ``n_outputs``: how many outputs were compared; ``rtol``, ``atol``: the
    tolerances used; ``dps``: the digits the exact values were certified to;
    ``min_coverage``: the coverage asked for.

    A result has no truth value: ``bool(r)`` raises ``TypeError`` (it used to be
    ``passed``); read :attr:`passed` or :attr:`verdict`.
    """

    _truth_hint = VERDICT_HINT

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

    def table(self, limit: int = 10) -> str:
        """The first ``limit`` rows of ``worst`` (default 10) as an aligned text table."""
        what = "log P" if self.log else "P"
        rows = [[output_text(r.output) if r.output is not None else r.note, number_text(r.level, 1),
                 number_text(r.claimed, 12), number_text(r.exact, 12), number_text(r.abs_error, 3),
                 number_text(r.rel_error, 3), "ok" if r.ok else "FAIL"] for r in self.worst[:limit]]
        return table(["output", "level", f"claimed {what}", f"exact {what}", "abs error", "rel error", ""], rows)

    def __str__(self) -> str:
        head = (
            f"{self.verdict.upper()}: {self.reason + '; ' if self.reason else ''}{self.n_outputs} outputs compared "
            f"({'log-probabilities' if self.log else 'probabilities'}), {self.failures} out of "
            f"tolerance (rtol={self.rtol:g}, atol={self.atol:g}); max abs error "
            f"{number_text(self.max_abs_error, 3)}, max rel error {number_text(self.max_rel_error, 3)}"
        )
        if self.claimed_total is not None:
            head += f"; claimed total {number_text(self.claimed_total, 17)}"
        head += f"; they carry {self.coverage:.6g} of the exact probability (at least {self.min_coverage:g} needed)"
        return head + ("\n" + self.table() if self.worst else "")


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


def _as_fraction(value: Any) -> Optional[Fraction]:
    """A claimed value's exact rational value (ints, Fractions, sympy Rationals,
    Decimals, decimal or ``p/q`` strings, and floats at their exact binary value), or
    ``None`` when it has none."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, np.integer)):
            return Fraction(int(value))
        if isinstance(value, Fraction):
            return value
        if isinstance(value, (float, np.floating)):
            f = float(value)  # float32/float16 widen exactly
            return Fraction(f) if math.isfinite(f) else None
        if isinstance(value, Decimal):
            return Fraction(value) if value.is_finite() else None
        if isinstance(value, str):
            return Fraction(value.strip())
        if getattr(value, "is_Rational", False):
            return Fraction(int(value.p), int(value.q))
        if isinstance(value, mpmath.mpf) and mpmath.isfinite(value):
            return mpf_fraction(value)
    except (ValueError, ZeroDivisionError, TypeError, OverflowError):
        return None
    return None


class _ExactProbabilities:
    """The exact rational probability of one output of each group, asked of the
    mechanism (``probability_exact``) only when a certified comparison is too close to
    its tolerance to decide; ``None`` where the probability is not a known rational."""

    def __init__(self, mechanism: MechanismLike):
        self.mechanism = mechanism
        self.cache: dict[int, Optional[Fraction]] = {}

    def get(self, output: Output, group: int) -> Optional[Fraction]:
        if group not in self.cache:
            self.cache[group] = _rational_probability(self.mechanism, output)
        return self.cache[group]


def _rational_probability(mechanism: Any, output: Output) -> Optional[Fraction]:
    """``mechanism.probability_exact(output)`` as a Fraction, or ``None`` when it is not a
    known rational (an ``epsilon`` mechanism, whose probabilities involve ``exp``, is not
    asked: seconds of sympy for a value that cannot be rational)."""
    if getattr(mechanism, "base", None) is None:
        return None
    try:
        e = mechanism.probability_exact(output)
    except (ExactDPError, NotImplementedError, AttributeError, ValueError, IndexError, MemoryError):
        return None
    return Fraction(int(e.p), int(e.q)) if getattr(e, "is_Rational", False) else None


def _within(claimed: mpmath.mpf, exact: mpmath.mpf, abs_error: mpmath.mpf, rtol: float, atol: float,
            digits: int, value: Any, exact_rational: Optional[Callable[[], Optional[Fraction]]]) -> bool:
    """``|claimed - exact| <= atol + rtol * |exact|``, decided on the certified values;
    when they are too close to the tolerance to decide (within the certification's
    ``10**-digits`` relative error: an exact claim with ``rtol = atol = 0``), decided on
    the exact rationals where both are known."""
    if mpmath.isinf(abs_error):
        return False
    tol = atol + rtol * (abs(exact) if not mpmath.isinf(exact) else 0)
    ok = bool(abs_error <= tol)
    slack = (abs(exact) + abs(claimed)) * mpmath.mpf(10) ** (1 - digits)
    if exact_rational is not None and abs(abs_error - tol) <= slack:
        c = _as_fraction(value)
        e = exact_rational() if c is not None else None
        if e is not None:
            return abs(c - e) <= Fraction(atol) + Fraction(rtol) * abs(e)
    return ok



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
    with the exact ones of ``mechanism`` (an exactdp mechanism); the result keeps the
    ``worst`` rows (default 10).

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
    Exact values are certified to ``dps`` digits (default 30), so any float error shows;
    where the certified values are too close to the bound to decide it (an exact table
    with ``rtol = atol = 0``), a claim with an exact rational value (int, Fraction, sympy
    Rational, Decimal, decimal or ``p/q`` string, float at its exact binary value) is
    decided on the mechanism's exact probability when that is rational (``base=``).
    With ``outputs``, an output the mapping leaves out is compared as claimed 0 too.

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
    lv = Groups(mechanism, digits)
    kind = lv.kind
    with mp_workdps(digits + 10):
        out_p = lv.output_probabilities()
        if log:
            exact_level = [mpmath.log(p) for p in out_p]
            zero = -mpmath.inf
        else:
            exact_level = list(out_p)
            zero = mpmath.mpf(0)

        items: list[tuple[Any, Any]] = []
        unclaimed: set = set()  # outputs asked for through `outputs` that the mapping leaves out
        if isinstance(claimed, Mapping):
            for key, value in claimed.items():
                items.append((normalise_output(key, kind), value))
            if outputs is not None:
                wanted = list(dict.fromkeys(normalise_output(o, kind) for o in outputs))
                keep = set(wanted)
                named = {o for o, _ in items}
                items = [(o, v) for o, v in items if o in keep]
                # a mapping is a claimed distribution: what it leaves out is claimed 0
                unclaimed = {o for o in wanted if o not in named}
                items += [(o, zero) for o in wanted if o in unclaimed]
        elif callable(claimed):
            if outputs is None:
                outs = [o for _, o in lv.enumerate(max_outputs, "compare_probabilities with a callable")]
            else:
                outs = [normalise_output(o, kind) for o in outputs]
            items = [(o, claimed(o)) for o in outs]
        else:
            raise InvalidParameterError("claimed", claimed, "must be a mapping output -> value or a callable")

        rows: list[ComparisonRow] = []
        exact_rationals = _ExactProbabilities(mechanism)
        seen_per_level: Counter = Counter()
        seen: set = set()
        total = mpmath.mpf(0)
        covered = mpmath.mpf(0)
        for o, value in items:
            if o in seen:
                raise InvalidParameterError("claimed", output_text(o), "names the same output twice")
            seen.add(o)
            a = lv.index(o)
            e = zero if a is None else exact_level[a]
            if a is not None:
                seen_per_level[a] += 1
                covered += out_p[a]
            c = to_mpf(value)
            if not log and not mpmath.isnan(c):
                total += c
            ae, re = _errors(c, e)
            rational = (None if log or a is None
                        else (lambda o=o, a=a: exact_rationals.get(o, a)))
            ok = _within(c, e, ae, rtol, atol, digits, value, rational)
            rows.append(ComparisonRow(o, a, c, e, ae, re, ok, "not claimed" if o in unclaimed else ""))
        missing = {}
        if isinstance(claimed, Mapping) and outputs is None:
            for a, level in enumerate(lv.groups):
                left = level.multiplicity - seen_per_level.get(a, 0)
                if left:
                    missing[a] = left
                    covered += left * out_p[a]
                    c = zero
                    ae, re = _errors(c, exact_level[a])
                    # left out = claimed 0: within tolerance when atol covers the exact value
                    ok = _within(c, exact_level[a], ae, rtol, atol, digits, 0, None)
                    rows.append(ComparisonRow(None, a, c, exact_level[a], ae, re, ok,
                                              f"<{left} output{'s' if left != 1 else ''} not claimed>"))
        failures = sum(1 for r in rows if not r.ok)
        # each "missing" row stands for several outputs
        failures += sum(missing[r.level] - 1 for r in rows if r.output is None and not r.ok)
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




@dataclass(frozen=True)
class ClassRow(NoTruthValue):
    """One class ``(h, t)``: its ``size`` (``None`` for a class the mechanism does not
    have), the ``claimed`` and ``exact`` values (``None`` where there is none: a class the
    claim left out, or one the mechanism does not have), the errors ``abs_error`` and
    ``rel_error``, ``ok`` when it is within tolerance, and a ``note`` (missing from the
    claim, or not a class of the mechanism)."""

    h: int
    t: int
    size: Optional[int]
    claimed: Optional[mpmath.mpf]
    exact: Optional[mpmath.mpf]
    abs_error: mpmath.mpf
    rel_error: mpmath.mpf
    ok: bool
    note: str = ""

    _truth_hint = ".ok (within tolerance)"


@dataclass(frozen=True)
class ClassComparison(NoTruthValue):
    """Result of :func:`compare_class_probabilities`.

    ``verdict``: ``"fail"`` when a class is out of tolerance, missing from the claim or
    claimed though the mechanism has no such class (with a non-zero value); otherwise
    ``"pass"``.  ``per``: ``"set"`` (the values are the probability of one set of the
    class) or ``"class"`` (of the whole class).  ``rows``: every class in the mechanism's
    order, then the extra ones; ``missing`` and ``extra``: the classes the claim left out,
    and the claimed ones the mechanism does not have.  ``passed``: the verdict is
    ``"pass"``; ``failures``: how many rows fail; ``max_abs_error``, ``max_rel_error``: over
    the rows; ``rtol``, ``atol``: the tolerances used; ``dps``: the digits certified.
    A result has no truth value: ``bool(r)`` raises ``TypeError``; read :attr:`passed`
    or :attr:`verdict`.
    """

    _truth_hint = ".passed or .verdict ('pass' or 'fail')"

    passed: bool
    verdict: str
    per: str
    rows: tuple[ClassRow, ...]
    failures: int
    missing: tuple[tuple[int, int], ...]
    extra: tuple[tuple[int, int], ...]
    max_abs_error: mpmath.mpf
    max_rel_error: mpmath.mpf
    rtol: float
    atol: float
    dps: int

    @property
    def worst(self) -> tuple[ClassRow, ...]:
        """The rows out of tolerance first, then by decreasing relative and absolute error."""
        return tuple(sorted(self.rows, key=lambda r: (r.ok, -r.rel_error, -r.abs_error)))

    def table(self, limit: int = 10) -> str:
        """The first ``limit`` rows of :attr:`worst` (default 10) as an aligned text table."""
        rows = [[f"({r.h}, {r.t})", number_text(r.size, 1), number_text(r.claimed, 12), number_text(r.exact, 12),
                 number_text(r.abs_error, 3), number_text(r.rel_error, 3), "ok" if r.ok else "FAIL", r.note]
                for r in self.worst[:limit]]
        what = "P(one set)" if self.per == "set" else "P(class)"
        return table(["class (h, t)", "size", f"claimed {what}", f"exact {what}", "abs error", "rel error", "", "note"],
                     rows, left=(7,))

    def __str__(self) -> str:
        return (f"{self.verdict.upper()}: {len(self.rows)} classes compared (per {self.per}), {self.failures} out of "
                f"tolerance (rtol={self.rtol:g}, atol={self.atol:g}); {len(self.missing)} missing from the claim, "
                f"{len(self.extra)} claimed but not classes of the mechanism; max abs error "
                f"{number_text(self.max_abs_error, 3)}, max rel error {number_text(self.max_rel_error, 3)}\n"
                + self.table())


def _class_key(key: Any) -> tuple[int, int]:
    """A claimed class as ``(h, t)``: a pair of ints, or a ``UtilityClass`` (``h``, ``t``)."""
    pair = (key.h, key.t) if hasattr(key, "h") and hasattr(key, "t") else key
    if (isinstance(pair, tuple) and len(pair) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in pair)):
        return pair
    raise InvalidParameterError("claimed", key, "keys must be classes (h, t): pairs of ints or UtilityClass values")


def _exact_class(mechanism: Any, h: int, t: int, size: int, per: str) -> Optional[Fraction]:
    """The exact rational probability of one set of class ``(h, t)`` (``per="set"``) or
    of the whole class, from ``probability_exact`` of a member; ``None`` when it is not a
    known rational."""
    member = getattr(mechanism, "_member", None)
    if not callable(member):
        return None
    try:
        rep = member(h, t, 0)
        if rep is None or tuple(mechanism.class_of(rep)) != (h, t):
            return None
    except (ExactDPError, NotImplementedError, AttributeError, ValueError, IndexError, MemoryError):
        return None
    p = _rational_probability(mechanism, rep)
    if p is None:
        return None
    return p if per == "set" else p * size


def compare_class_probabilities(
    mechanism: MechanismLike,
    claimed: ClaimedTable,
    *,
    per: str = "set",
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    dps: Optional[int] = None,
) -> ClassComparison:
    """Compare claimed probabilities of the canonical mechanisms' classes ``(h, t)`` with
    the exact ones (Canonical and CanonicalGamma1, or any mechanism with ``classes()`` and
    ``class_probabilities(dps)``, as ``mechanism``; the classes are named as in their
    ``classes()``).

    ``claimed`` maps a class, ``(h, t)`` or a ``UtilityClass``, to a probability: a float,
    a Fraction, a sympy number or a string.  ``per="set"`` (default): the value is the
    probability of one set of the class; ``per="class"``: of the whole class.  The exact
    value is the mechanism's certified class probability (``dps`` digits, default 30),
    divided by the class's exact size for ``per="set"``.

    A class passes when ``|claimed - exact| <= atol + rtol * exact`` (defaults
    ``rtol = 1e-9``, ``atol = 0``); a claim too close to that bound for the certified
    digits to decide (an exact table with ``rtol = atol = 0``) is decided on the exact
    rational probability where there is one (``base=``), as in
    :func:`compare_probabilities`.  A class the claim leaves out is compared as claimed
    probability 0 and flagged as missing; a claimed class the mechanism does not have is
    flagged as extra and fails unless its value is 0.
    """
    digits = as_dps(dps)
    if per not in ("set", "class"):
        raise InvalidParameterError("per", per, "must be 'set' (one set of the class) or 'class' (the whole class)")
    if not (callable(getattr(mechanism, "classes", None)) and callable(getattr(mechanism, "class_probabilities", None))):
        raise InvalidParameterError("mechanism", mechanism, "has no classes() and class_probabilities() "
                                                            "(Canonical and CanonicalGamma1 have)")
    if not isinstance(claimed, Mapping):
        raise InvalidParameterError("claimed", claimed, "must be a mapping (h, t) -> probability")
    rtol = 1e-9 if rtol is None else float(rtol)
    atol = 0.0 if atol is None else float(atol)
    values: dict[tuple[int, int], Any] = {}
    for key, value in claimed.items():
        h_t = _class_key(key)
        if h_t in values:
            raise InvalidParameterError("claimed", h_t, "names the same class twice")
        values[h_t] = value
    sizes = {(c.h, c.t): int(c.size) for c in mechanism.classes()}
    rows: list[ClassRow] = []
    with mp_workdps(digits + 10):
        for h, t, p in mechanism.class_probabilities(digits):
            size = sizes[h, t]
            exact = p / size if per == "set" else p
            given = values.pop((h, t), None)
            c = mpmath.mpf(0) if given is None else to_mpf(given)
            ae, re = _errors(c, exact)
            ok = given is not None and _within(c, exact, ae, rtol, atol, digits, given,
                                               lambda h=h, t=t, size=size: _exact_class(mechanism, h, t, size, per))
            rows.append(ClassRow(h, t, size, None if given is None else c, exact, ae, re, ok,
                                 "missing from the claim" if given is None else ""))
        missing = tuple((r.h, r.t) for r in rows if r.claimed is None)
        for (h, t), given in values.items():  # what is left names no class of the mechanism
            c = to_mpf(given)
            rows.append(ClassRow(h, t, None, c, None, abs(c), mpmath.inf if c else mpmath.mpf(0), c == 0,
                                 "not a class of the mechanism"))
    failures = sum(1 for r in rows if not r.ok)
    verdict = "fail" if failures else "pass"
    return ClassComparison(
        passed=verdict == "pass", verdict=verdict, per=per, rows=tuple(rows), failures=failures, missing=missing,
        extra=tuple(values), max_abs_error=max((r.abs_error for r in rows), default=mpmath.mpf(0)),
        max_rel_error=max((r.rel_error for r in rows), default=mpmath.mpf(0)), rtol=rtol, atol=atol, dps=digits,
    )
