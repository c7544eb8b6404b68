"""The rows and the result of a ``log m̃`` comparison (:func:`exactdp.certify.compare_mtilde`),
and how one entry is judged: shared by the object loop and the arrays path
(:mod:`exactdp.certify.mtilde_arrays`)."""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np
from flint import arb, fmpz

from ..core.formatting import number_text, table
from ..core.precision import flint_workprec
from ..core.results import NoTruthValue

__all__ = ["MtildeRow", "MtildeComparison", "exact_ok", "mtilde_row", "ulp_slack", "sort_key"]


@dataclass(frozen=True)
class MtildeRow(NoTruthValue):
    """Entry ``position`` (0-based, in increasing refined difference = decreasing ``Ũ``):
    its ``(row, col)`` over ranks, exact ``m̃`` (``mtilde``), exact ``ln m̃`` (``exact_log``,
    certified; ``-inf`` for ``m̃ = 0``), the ``claimed`` log and ``abs_error``, the absolute
    error in the log; ``ok`` when within tolerance; ``ulp_error``: ``abs_error`` in ulps of
    the claim (``numpy.spacing(|claimed|)``, an exact power of two; ``inf`` when the error
    is)."""

    position: int
    row: int
    col: int
    mtilde: int
    exact_log: mpmath.mpf
    claimed: float
    abs_error: mpmath.mpf
    ok: bool
    ulp_error: mpmath.mpf = mpmath.inf

    _truth_hint = ".ok (within tolerance)"


@dataclass(frozen=True)
class MtildeComparison(NoTruthValue):
    """Result of :func:`compare_mtilde`: ``passed``, ``max_abs_error`` of the logs,
    ``failures``, ``zero_mismatches`` (entries where exactly one of exact ``m̃`` and the
    claim is 0, i.e. ``-inf``), ``order_mismatches`` (positions whose claimed
    ``(row, col)`` differs from the exact order, when positions were given) and ``worst``
    rows (failures first, then by decreasing error in ulps of the claim, then by
    position); ``entries``: how many entries were compared (``d*k``); ``atol``, ``rtol``:
    the tolerances used; ``verdict``: ``"pass"`` or ``"fail"``; ``max_ulp_error``: a
    certified interval ``(lower, upper)`` holding the largest error in ulps of the claim
    over all entries; ``path``: ``"arrays"`` (certified fixed-point arrays) or
    ``"objects"`` (the loop over :meth:`~exactdp.Joint.mtilde`); ``settled_exactly``:
    entries whose certified enclosure straddled the tolerance and were decided by exact
    arithmetic (arrays path).  A result has no truth value: ``bool(r)`` raises
    ``TypeError``; read :attr:`passed` or :attr:`verdict`."""

    _truth_hint = ".passed or .verdict ('pass' or 'fail')"

    passed: bool
    entries: int
    failures: int
    max_abs_error: mpmath.mpf
    zero_mismatches: int
    order_mismatches: tuple[tuple[int, tuple[int, int], tuple[int, int]], ...]
    worst: tuple[MtildeRow, ...]
    atol: float
    rtol: float
    max_ulp_error: tuple[mpmath.mpf, mpmath.mpf] = (mpmath.mpf(0), mpmath.mpf(0))
    path: str = "objects"
    settled_exactly: int = 0

    @property
    def verdict(self) -> str:
        """``"pass"`` when every entry is within tolerance and in the exact order, else ``"fail"``."""
        return "pass" if self.passed else "fail"

    def table(self, limit: int = 10) -> str:
        """The first ``limit`` rows of ``worst`` (default 10) as an aligned text table."""
        rows = [[str(r.position), str(r.row), str(r.col), str(r.mtilde), number_text(r.exact_log, 15),
                 number_text(r.claimed, 15), number_text(r.abs_error, 3), number_text(r.ulp_error, 3),
                 "ok" if r.ok else "FAIL"]
                for r in self.worst[:limit]]
        return table(["position", "row", "col", "exact m~", "exact log", "claimed log", "abs error", "ulps", ""],
                     rows)

    def __str__(self) -> str:
        lo, hi = self.max_ulp_error
        text = (
            f"{self.verdict.upper()}: {self.entries} log m~ entries, {self.failures} out of "
            f"tolerance (atol={self.atol:g}, rtol={self.rtol:g}), max abs error {number_text(self.max_abs_error, 3)}, "
            f"max ulp error in [{number_text(lo, 3)}, {number_text(hi, 3)}], "
            f"{self.zero_mismatches} zero mismatches, {len(self.order_mismatches)} order mismatches"
        )
        return text + "\n" + self.table()


def exact_ok(c: float, mt: int, atol: float, rtol: float) -> bool:
    """``|c - ln mt| <= atol + rtol ln mt`` decided exactly (``c`` finite, ``mt >= 1``):
    rationally for ``mt = 1``, else on arb balls at doubling precision (a float is an exact
    dyadic ball).  Equality would need ``(1 +- rtol) ln mt`` rational, so the loop ends
    unless ``rtol = 1``; at ``2**16`` bits the values are taken as equal (within
    tolerance)."""
    if mt == 1:
        return abs(Fraction(c)) <= Fraction(atol)
    prec = 128
    num, den = c.as_integer_ratio()
    anum, aden = float(atol).as_integer_ratio()
    rnum, rden = float(rtol).as_integer_ratio()
    while prec <= 1 << 16:
        with flint_workprec(prec):
            log = arb(fmpz(mt)).log()
            gap = arb(anum) / aden + arb(rnum) / rden * log - abs(arb(num) / den - log)
            if gap > 0:
                return True
            if gap < 0:
                return False
        prec *= 2
    return True


def mtilde_row(p: int, i: int, j: int, mt: int, c: float, exact: mpmath.mpf, atol: float, rtol: float,
                digits: int) -> tuple[MtildeRow, bool]:
    """The row of entry ``p`` at matrix position ``(i, j)`` with the claim ``c``, judged
    against ``atol`` and ``rtol`` (under :func:`mp_workdps` ``digits + 5``), and whether it is a
    zero mismatch: ``exact`` is ``ln mt`` certified to ``digits`` (``-inf`` for 0); ``ok``
    decided on the certified values, and exactly (:func:`exact_ok`) when they are within
    the certification's error of the tolerance."""
    zero_bad = False
    if math.isnan(c):
        err = ulp = mpmath.inf
    elif mt == 0 or math.isinf(c):
        if mt == 0 and c == -math.inf:
            err = ulp = mpmath.mpf(0)
        else:
            err = ulp = mpmath.inf
            zero_bad = True
    else:
        err = abs(mpmath.mpf(c) - exact)
        ulp = err / mpmath.mpf(float(np.spacing(abs(c))))  # a power of two: exact
    if mpmath.isinf(err):
        ok = False
    else:
        tol = atol + rtol * (0 if mpmath.isinf(exact) else abs(exact))
        ok = bool(err <= tol)
        if mt >= 1 and abs(err - tol) <= (abs(exact) + abs(c) + 1) * mpmath.mpf(10) ** (2 - digits):
            ok = exact_ok(c, mt, atol, rtol)
    return MtildeRow(p, i, j, mt, exact, c, err, ok, ulp), zero_bad


def ulp_slack(row: MtildeRow, digits: int) -> mpmath.mpf:
    """A bound on ``|row.ulp_error - true ulp error|`` from the certification (``exact_log``
    within relative ``10**-digits``, the subtraction rounded at ``digits + 5``)."""
    if mpmath.isinf(row.ulp_error) or row.abs_error == 0 and (row.mtilde <= 1):
        return mpmath.mpf(0)
    return (abs(row.exact_log) + row.abs_error + 1) * mpmath.mpf(10) ** (1 - digits) / mpmath.mpf(
        float(np.spacing(abs(row.claimed))))



def sort_key(row: MtildeRow) -> tuple[bool, Any, int]:
    """A ``row``'s key among the worst: failures first, then decreasing error in ulps, then position."""
    return (row.ok, -row.ulp_error, row.position)
