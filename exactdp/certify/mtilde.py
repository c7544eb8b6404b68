"""Joint's ``log m~`` array against the exact ``m~``: :func:`compare_mtilde`.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Lemmas 3.7 and 3.8.

The arrays path (:mod:`~exactdp.certify.mtilde_arrays`) whenever the counts fit ``int64``,
else the loop over :meth:`~exactdp.Joint.mtilde` (the object path, its twin); both judge
each entry as :mod:`~exactdp.certify.mtilde_rows` does.  Exact logs are certified to
``dps`` digits before any comparison.

>>> import math, exactdp
>>> m = exactdp.Joint([3, 1, 0], 2)
>>> claimed = [math.log(mt) if mt else -math.inf for _, _, _, mt in m.mtilde()]
>>> r = compare_mtilde(claimed, m)
>>> r.verdict, r.entries, r.path
('pass', 6, 'arrays')
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional

import mpmath
import numpy as np
import numpy.typing as npt
from flint import arb, fmpz

from ..core.precision import certify as certify_ball, mp_workdps
from ..core.validation import as_dps
from ..errors import InvalidParameterError
from .mtilde_arrays import compare_arrays
from .mtilde_rows import MtildeComparison, MtildeRow, mtilde_row, sort_key, ulp_slack

if TYPE_CHECKING:
    from ..mechanisms.joint import Joint

__all__ = ["compare_mtilde"]


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
    path: str = "auto",
) -> MtildeComparison:
    """Compare a float array of ``log m̃`` with the exact ``m̃`` of ``mechanism``, a
    Joint-family mechanism (with ``mtilde()``); exact logs are certified to ``dps`` digits
    (default 30), and the result keeps the ``worst`` rows (default 10).

    ``log_counts[p]`` is the log of the number of sequences whose largest refined
    difference is the ``p``-th smallest entry of the ``k x d`` matrix
    ``diff[i][j] = c_(i) - c_(j) + (d(k-i-1) + j + 1)/(2dk)`` (0-based ranks, counts sorted
    descending), as the public dp_topk code computes it (``compute_log_diff_counts``):
    row-major positions sorted by the differences, i.e. decreasing ``Ũ = -diff``, the
    order of :meth:`exactdp.Joint.mtilde`.  Entries with ``m̃ = 0`` must be ``-inf``.
    Optional ``rows``/``cols`` (the implementation's positions, e.g. dp_topk's
    ``diffs_to_positions``) are checked against the exact order: a float sort can
    misorder entries once ``|c_i - c_j| * 2dk`` nears ``2**53``.

    An entry passes when ``|claimed - ln m̃| <= atol + rtol * |ln m̃|`` (``atol``, ``rtol``
    finite, ``>= 0``).  Each row's ``ulp_error`` is its error in ulps of the claim;
    ``max_ulp_error`` a certified interval holding the largest.

    ``path``: ``"auto"`` (default) takes the arrays path
    (:mod:`exactdp.certify.mtilde_arrays`: the order checked in one pass or sorted, ``ln
    m̃`` of every entry certified in fixed point, every decision on outward bounds or
    exact) whenever the counts fit ``int64``, else the loop over :meth:`~exactdp.Joint.mtilde`
    (``"objects"``, its twin); ``"arrays"`` raises when it does not apply.  Both give the
    same verdict, failures, worst rows and ``max_abs_error``.
    """
    digits = as_dps(dps)
    if not hasattr(mechanism, "mtilde"):
        raise InvalidParameterError("mechanism", mechanism, "has no mtilde() (Joint family only)")
    if path not in ("auto", "arrays", "objects"):
        raise InvalidParameterError("path", path, "must be 'auto', 'arrays' or 'objects'")
    atol, rtol = _tolerance("atol", atol), _tolerance("rtol", rtol)
    if isinstance(worst, bool) or not isinstance(worst, int) or worst < 0:
        raise InvalidParameterError("worst", worst, "must be an integer >= 0")
    claimed = np.asarray(log_counts, dtype=float).reshape(-1)
    dk = mechanism.d * mechanism.k
    if claimed.shape[0] != dk:
        raise InvalidParameterError("log_counts", f"<{claimed.shape[0]} values>", f"must have d*k = {dk} entries")
    if (rows is None) != (cols is None):  # one without the other would check no order at all
        missing = "cols" if cols is None else "rows"
        raise InvalidParameterError(missing, None, "must be given with " + ("rows" if missing == "cols" else "cols")
                                    + " (the positions are checked as (row, col) pairs)")
    # reshape, not ravel: a strided 1-d view (numpy.unravel_index's) is not copied
    pos_rows = None if rows is None else np.asarray(rows).reshape(-1)
    pos_cols = None if cols is None else np.asarray(cols).reshape(-1)
    for name, arr in (("rows", pos_rows), ("cols", pos_cols)):
        if arr is not None and arr.shape[0] != dk:
            raise InvalidParameterError(name, f"<{arr.shape[0]} values>", f"must have d*k = {dk} entries")
    if path != "objects":
        result = compare_arrays(claimed, mechanism, pos_rows, pos_cols, atol, rtol, worst, digits)
        if result is not None:
            return result
        if path == "arrays":
            raise InvalidParameterError("path", path, "needs counts whose differences fit int64 "
                                                      "(below 2**61 in size); use path='auto' or 'objects'")
    return _compare_mtilde_objects(claimed, mechanism, pos_rows, pos_cols, atol, rtol, worst, digits)


def _tolerance(name: str, value: Any) -> float:
    """``value`` as a finite float ``>= 0``."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(name, value, "must be a number >= 0") from None
    if not (math.isfinite(out) and out >= 0):
        raise InvalidParameterError(name, value, "must be a finite number >= 0")
    return out


def _compare_mtilde_objects(claimed: np.ndarray, mechanism: Joint, pos_rows: Optional[np.ndarray],
                            pos_cols: Optional[np.ndarray], atol: float, rtol: float, worst: int,
                            digits: int) -> MtildeComparison:
    """The loop over :meth:`~exactdp.Joint.mtilde`, one certified log per distinct ``m̃``
    (the twin of the arrays path)."""
    dk = claimed.shape[0]
    out: list[MtildeRow] = []
    order_bad = []
    zero_bad = 0
    failures = 0
    max_err = mpmath.mpf(0)
    ulp_lo = ulp_hi = mpmath.mpf(0)
    log_cache: dict[int, mpmath.mpf] = {}
    with mp_workdps(digits + 5):
        for p, (i, j, _, mt) in enumerate(mechanism.mtilde()):
            if pos_rows is not None and pos_cols is not None:
                if (pos_rows[p], pos_cols[p]) != (i, j):
                    order_bad.append((p, (int(pos_rows[p]), int(pos_cols[p])), (i, j)))
            c = float(claimed[p])
            if mt == 0:
                exact = -mpmath.inf
            else:
                exact = log_cache.get(mt)
                if exact is None:
                    exact = certify_ball(lambda: arb(fmpz(mt)).log(), digits) if mt > 1 else mpmath.mpf(0)
                    if len(log_cache) < 100_000:
                        log_cache[mt] = exact
            row, zb = mtilde_row(p, i, j, mt, c, exact, atol, rtol, digits)
            zero_bad += zb
            if not row.ok:
                failures += 1
            if row.abs_error > max_err:
                max_err = row.abs_error
            slack = ulp_slack(row, digits)
            if row.ulp_error + slack > ulp_hi:
                ulp_hi = row.ulp_error + slack
            if row.ulp_error - slack > ulp_lo:
                ulp_lo = row.ulp_error - slack
            out.append(row)
            if len(out) > 4 * worst + 64:  # keep only the worst rows
                out.sort(key=sort_key)
                del out[2 * worst:]
    out.sort(key=sort_key)
    return MtildeComparison(
        passed=failures == 0 and not order_bad, entries=dk, failures=failures, max_abs_error=max_err,
        zero_mismatches=zero_bad, order_mismatches=tuple(order_bad[:worst]), worst=tuple(out[:worst]),
        atol=atol, rtol=rtol, max_ulp_error=(ulp_lo, ulp_hi), path="objects",
    )
