"""The arrays path of :func:`~exactdp.certify.compare_mtilde`: every claimed ``log m̃``
judged on outward bounds from the certified fixed-point logs of
:mod:`~exactdp.certify.mtilde_logs`, chunk by chunk, with no object per entry.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Lemmas 3.7 and 3.8.

Contract (:func:`compare_arrays`): the same verdict, failures, worst rows and
``max_abs_error`` as the object path over :meth:`~exactdp.Joint.mtilde`, and a certified
interval holding the largest error in ulps of the claim.  For a claim ``x`` with ``2**-900
< |x| < 2**900`` the error ``|x - ln m̃| 2**F`` is enclosed in ``[|Dc| (1 - 2**-51) - E - 1,
|Dc| (1 + 2**-51) + E + 1]`` (``Dc``: ``x 2**F - V`` in two roundings), every bound rounded
outward; pass or fail is decided on those bounds, and an entry whose enclosure straddles
the tolerance by the exact path (:func:`~exactdp.certify.mtilde_rows.exact_ok`).  The
entries off the float path (``m̃ = 0`` or ``1``, NaN, infinite, zero or extreme claims)
are exact or taken one by one.  The worst rows are rebuilt by the object path from a pool
of candidates (:class:`_Pool`).  The derivation is in docs/oracle.md ("The fixed-point
arrays").

The fixed-point names (:data:`CHUNK`, :func:`fixed_point`, :func:`exact_order`,
:func:`iter_fixed_log_mtilde`, :func:`exact_mtilde`) are importable from here too.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

import mpmath
import numpy as np
from flint import arb, fmpz

from ..core.log_table import LIMB_BITS
from ..core.precision import certify as certify_ball, mp_workdps, mpf_fraction
from .mtilde_logs import (CHUNK, NotInOrder, exact_mtilde, exact_order, fixed_point,  # noqa: F401 (as before)
                          iter_fixed_log_mtilde)
from .mtilde_rows import MtildeComparison, MtildeRow, mtilde_row, sort_key, ulp_slack

__all__ = ["CHUNK", "fixed_point", "exact_order", "iter_fixed_log_mtilde", "exact_mtilde", "compare_arrays"]

_LB = LIMB_BITS  # V = hi 2**30 + lo: the limbs of mtilde_logs


_UP = 1 + 2.0**-50
_DOWN = 1 - 2.0**-50
#: ``A (1 + 2**-51)`` and ``A (1 - 2**-51)`` bounded outward with the roundings of the
#: product and of the sum that follows (``(1 + 2**-48)(1 - 2**-53)**2 > 1 + 2**-51``).
_C_UP, _C_DOWN = 1 + 2.0**-48, 1 - 2.0**-48
_EMPTY = np.zeros(0, dtype=np.int64)
#: The exponent field of a float64, and the bits of 1/2**e from those of 2**e (2046 - E).
_EXP_BITS = np.int64(0x7FF << 52)
_INV_BITS = np.int64(2046 << 52)
#: Claims outside ``[2**-900, 2**900]`` in size (0, NaN, infinities included) are not on
#: the float path: their ulps or ``x 2**F`` may leave the float range.
_SMALL, _LARGE = 2.0**-900, 2.0**900
#: Their exponent fields: 2**-900 < |x| < 2**900 iff SMALL_BITS < (bits & EXP) < LARGE_BITS.
_SMALL_BITS, _LARGE_BITS = (1023 - 900) << 52, (1023 + 900) << 52


_MAX = float(np.finfo(np.float64).max)


def _float_down(x: Fraction) -> float:
    """The largest float ``<= x``."""
    if x > _MAX:
        return _MAX
    f = float(x)
    return f if Fraction(f) <= x else float(np.nextafter(f, -np.inf))


def _float_up(x: Fraction) -> float:
    """The least float ``>= x`` (``inf`` past the largest float)."""
    if x > _MAX:
        return np.inf
    f = float(x)
    return f if Fraction(f) >= x else float(np.nextafter(f, np.inf))


class _Pool:
    """Entries that may be among the ``worst`` (failures first, then decreasing error, then
    position), each with an outward error interval ``[lo, hi]`` and a key ``(bits of the
    claim, row, M)``: entries of one key have the same claim and the same ``m̃`` (``m̃``
    depends on the row and ``M`` only), so the same error, and come by position.  Pruned to
    those that fewer than ``worst`` others certainly precede."""

    def __init__(self, worst: int, keys: Any):
        self.worst = max(worst, 1)
        self.keys = keys  # positions -> (n, 3) int64 keys
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.size = 0
        self.floor = {True: -1.0, False: -1.0}  # by ok: an entry with hi below is out

    def threshold(self) -> float:
        """Entries within tolerance whose ``hi`` is below this cannot enter."""
        return self.floor[True]

    def add(self, pos: np.ndarray, ok: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        if self.floor[True] != self.floor[False]:
            keep = hi >= np.where(ok, self.floor[True], self.floor[False])
            pos, ok, lo, hi = pos[keep], ok[keep], lo[keep], hi[keep]
        if pos.shape[0]:
            self.parts.append((pos, ok, lo, hi, self.keys(pos)))
            self.size += pos.shape[0]
            if self.size > 8 * self.worst + 4096:
                self.prune()

    def _select(self, pos: np.ndarray, lo: np.ndarray, hi: np.ndarray, key: np.ndarray, w: int
                ) -> tuple[np.ndarray, float]:
        """Indices of the entries of one class that may be among its top ``w``, and the
        ``w``-th largest ``lo`` (-1 when there are fewer): an entry whose ``hi`` is below
        it has ``w`` entries certainly before it; of the entries known exactly at that
        value, and of the entries of one key, the first ``w`` by position come first."""
        if pos.shape[0] <= w:
            return np.arange(pos.shape[0]), -1.0
        tau = float(np.partition(lo, pos.shape[0] - w)[pos.shape[0] - w])
        exact_tie = (lo == tau) & (hi == tau)
        keep = hi >= tau
        keep &= ~exact_tie
        ties = np.flatnonzero(exact_tie)
        if ties.shape[0] > w:
            ties = ties[np.argsort(pos[ties], kind="stable")[:w]]
        kept = np.flatnonzero(keep)
        if kept.shape[0] > w:  # at most w of one key
            kk = key[kept]
            order = np.lexsort((pos[kept], kk[:, 2], kk[:, 1], kk[:, 0]))
            kk = kk[order]
            new = np.ones(order.shape[0], dtype=bool)
            new[1:] = (kk[1:] != kk[:-1]).any(axis=1)
            starts = np.flatnonzero(new)
            rank = np.arange(order.shape[0]) - np.repeat(starts, np.diff(np.append(starts, order.shape[0])))
            kept = kept[order[rank < w]]
        return np.concatenate((kept, ties)), tau

    def prune(self) -> None:
        if not self.parts:
            return
        pos, ok, lo, hi, key = (np.concatenate(x) for x in zip(*self.parts))
        bad = np.flatnonzero(~ok)
        idx_bad, tau_bad = self._select(pos[bad], lo[bad], hi[bad], key[bad], self.worst)
        keep = [bad[idx_bad]]
        self.floor[False] = max(self.floor[False], tau_bad)
        if bad.shape[0] >= self.worst:
            self.floor[True] = np.inf  # the worst are failures: no entry within tolerance enters
        else:
            good = np.flatnonzero(ok)
            idx_good, tau_good = self._select(pos[good], lo[good], hi[good], key[good], self.worst - bad.shape[0])
            keep.append(good[idx_good])
            self.floor[True] = max(self.floor[True], tau_good)
        kept = np.concatenate(keep)
        self.parts = [(pos[kept], ok[kept], lo[kept], hi[kept], key[kept])]
        self.size = kept.shape[0]

    def candidates(self) -> np.ndarray:
        self.prune()
        return self.parts[0][0] if self.parts else np.zeros(0, dtype=np.int64)


def _sorted_counts(mechanism: Any) -> Optional[np.ndarray]:
    """The sorted counts as ``int64`` (every difference fits), or ``None``."""
    ranking = getattr(mechanism, "ranking", None)
    arrays = getattr(ranking, "arrays", None)
    return None if arrays is None else arrays.sorted_counts


def compare_arrays(claimed: np.ndarray, mechanism: Any, pos_rows: Optional[np.ndarray], pos_cols: Optional[np.ndarray],
                   atol: float, rtol: float, worst: int, digits: int) -> Optional[MtildeComparison]:
    """The arrays path of :func:`~exactdp.certify.compare_mtilde` (its arguments, validated:
    ``claimed`` its ``log_counts``, ``mechanism``, ``pos_rows``/``pos_cols`` its ``rows``/``cols``,
    ``atol``, ``rtol``, ``worst``, ``digits`` its ``dps``), or ``None`` when the counts do not fit ``int64``: the given positions are
    used when they are the exact order (checked chunk by chunk), else the exact order is
    sorted and the mismatches reported."""
    sc = _sorted_counts(mechanism)
    if sc is None:
        return None
    k, d = int(mechanism.k), int(sc.shape[0])
    n = d * k
    frac, E = fixed_point(k, d)
    given = pos_rows is not None and pos_cols is not None
    order_bad: list[tuple[int, tuple[int, int], tuple[int, int]]] = []
    misordered = False
    state = None
    with mp_workdps(digits + 5), np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if given and pos_rows.dtype.kind in "iu" and pos_cols.dtype.kind in "iu":
            state = _State(claimed, sc, k, pos_rows.astype(np.int64, copy=False),
                           pos_cols.astype(np.int64, copy=False), atol, rtol, digits, worst, frac, E)
            try:
                state.run(check=True)
            except NotInOrder:
                state = None
        if state is None:
            rows, cols = exact_order(sc, k)
            if given:
                wrong = np.flatnonzero((pos_rows != rows) | (pos_cols != cols))
                order_bad = [(int(p), (int(pos_rows[p]), int(pos_cols[p])), (int(rows[p]), int(cols[p])))
                             for p in wrong[:worst].tolist()]
                misordered = wrong.shape[0] > 0
            state = _State(claimed, sc, k, rows, cols, atol, rtol, digits, worst, frac, E)
            state.run()
        cands = np.unique(state.ulp_pool.candidates()).tolist()
        worst_rows = sorted((state.row_at(int(p))[0] for p in cands), key=sort_key)[:worst]
        max_err = mpmath.mpf(0)
        for p in state.abs_pool.candidates().tolist():
            e = state.row_at(int(p))[0].abs_error
            if e > max_err:
                max_err = e
    return MtildeComparison(
        passed=state.failures == 0 and not misordered, entries=n, failures=state.failures, max_abs_error=max_err,
        zero_mismatches=state.zero_bad, order_mismatches=tuple(order_bad), worst=tuple(worst_rows), atol=atol,
        rtol=rtol, max_ulp_error=(max(mpmath.mpf(state.ulp_lo), state.ulp_exact[0]),
                                  max(mpmath.mpf(state.ulp_hi), state.ulp_exact[1])), path="arrays",
        settled_exactly=state.settled,
    )


class _State:
    """What the comparison accumulates over the chunks."""

    def __init__(self, claimed: np.ndarray, sc: np.ndarray, k: int, rows: np.ndarray, cols: np.ndarray,
                 atol: float, rtol: float, digits: int, worst: int, frac: int, E: int):
        self.claimed, self.sc, self.k, self.rows, self.cols = claimed, sc, k, rows, cols
        self.atol, self.rtol, self.digits, self.frac, self.E = atol, rtol, digits, frac, E
        self.failures = self.zero_bad = self.settled = 0
        self.ulp_lo = self.ulp_hi = 0.0
        self.ulp_exact = (mpmath.mpf(0), mpmath.mpf(0))  # the entries compared one by one (may pass floats)
        self.ulp_pool, self.abs_pool = _Pool(worst, self._keys), _Pool(1, self._keys)
        self._logs: dict[int, Any] = {}
        self._rows: dict[int, tuple[MtildeRow, bool]] = {}
        # |V - vh 2**30| <= VL: the lo limb's bound (iter_fixed_log_mtilde)
        vl = 2**_LB * (CHUNK + 2)
        self.e_up = _float_up(Fraction(E + 1) * (1 + Fraction(1, 2**48)))
        self.b_lo = _float_down(Fraction(atol) * 2**frac - Fraction(rtol) * (E + vl))
        self.b_hi = _float_up(Fraction(atol) * 2**frac + Fraction(rtol) * (E + vl))
        self.ra = rtol

    def run(self, check: bool = False) -> None:
        for lo, vh, vl, nonzero, one in iter_fixed_log_mtilde(self.sc, self.k, self.rows, self.cols, self.frac, check):
            self.chunk(lo, vh, vl, nonzero, one)

    def _keys(self, pos: np.ndarray) -> np.ndarray:
        """``(bits of the claim, row, M)`` of the entries at ``pos``."""
        r, c = self.rows[pos], self.cols[pos]
        return np.stack((self.claimed[pos].view(np.int64), r, self.sc[r] - self.sc[c]), axis=1)

    def row_at(self, p: int) -> tuple[MtildeRow, bool]:
        """The object path's row of entry ``p`` (exact ``m̃``, certified log) and whether
        it is a zero mismatch (cached)."""
        out = self._rows.get(p)
        if out is None:
            i, j = int(self.rows[p]), int(self.cols[p])
            mt = exact_mtilde(self.sc, self.k, i, j)
            exact = self._logs.get(mt)
            if exact is None:
                if mt == 0:
                    exact = -mpmath.inf
                elif mt == 1:
                    exact = mpmath.mpf(0)
                else:
                    exact = certify_ball(lambda: arb(fmpz(mt)).log(), self.digits)
                if len(self._logs) < 100_000:
                    self._logs[mt] = exact
            out = mtilde_row(p, i, j, mt, float(self.claimed[p]), exact, self.atol, self.rtol, self.digits)
            if len(self._rows) < 100_000:
                self._rows[p] = out
        return out

    def chunk(self, lo: int, vh: np.ndarray, vl: np.ndarray, nonzero: Optional[np.ndarray],
              one: Optional[np.ndarray]) -> None:
        """Compare the claims of entries ``lo, lo + 1, ...`` with ``V = vh 2**30 + vl``.

        ``D = x 2**F - V`` is computed in floats: ``x 2**F`` and ``vh 2**30`` are exact
        (``|vh| < 2**52``), two roundings follow, so ``|Dc - D| <= 2**-51 |Dc| + 2**-52
        |vl| (1 + 2**-52) <= 2**-51 |Dc| + 1``; the error in units of ``2**-F`` is in
        ``[A (1 - 2**-51) - E - 1, A (1 + 2**-51) + E + 1]`` (``A = |Dc|``), and every
        bound below is rounded outward (a factor ``1 +- 2**-48`` or ``1 +- 2**-50`` covers
        the roundings of its own two or three operations)."""
        x = self.claimed[lo:lo + vh.shape[0]]
        m = x.shape[0]
        ebits = x.view(np.int64) & _EXP_BITS  # the exponent field: 0 for 0, all ones for NaN, inf
        every = (nonzero is None and one is None and int(ebits.min()) > _SMALL_BITS
                 and int(ebits.max()) < _LARGE_BITS)
        fine = None
        if not every:
            fine = (ebits > _SMALL_BITS) & (ebits < _LARGE_BITS)
            if nonzero is not None:
                fine &= nonzero
            if one is not None:
                fine &= ~one
        t = np.ldexp(x, self.frac - _LB)
        t -= vh  # one rounding (vh < 2**52 converts exactly); the product by 2**30 is exact
        t *= 2.0**_LB
        t -= vl
        A = np.abs(t, out=t)
        U = A * _C_UP
        U += self.e_up
        if fine is not None:
            U[~fine] = -np.inf
        top = float(U.max())
        undecided = _EMPTY
        ok = None  # every entry on the float path within tolerance
        if top > float(np.nextafter(float(vh.min()) * 2.0**_LB * self.ra * _DOWN + self.b_lo, -np.inf)):
            vf = np.ldexp(vh, _LB) * self.ra
            ok = U <= np.nextafter(vf * _DOWN + self.b_lo, -np.inf)
            L = np.maximum(A * _C_DOWN - self.e_up, 0.0) * _DOWN
            fail = L > np.nextafter(vf * _UP + self.b_hi, np.inf)
            if fine is not None:
                ok |= ~fine
            else:
                fine = np.ones(m, dtype=bool)
            undecided = np.flatnonzero(~ok & ~fail)
            self.failures += m - int(np.count_nonzero(ok)) - undecided.shape[0]
            U[undecided] = -np.inf  # pooled by _one with their exact verdict
        # errors in ulps of x: spacing(|x|) = 2**(e - 52) for 2**e <= |x| < 2**(e + 1), and
        # 2**-e is made from the exponent bits (|x| in [2**-900, 2**900]); the products by
        # powers of two are exact
        inv = (_INV_BITS - ebits).view(np.float64)
        uhi = U * inv  # ulps times 2**(F - 52)
        if fine is not None:
            uhi[~fine] = -np.inf
        scale = 2.0 ** (52 - self.frac)
        most = float(uhi.max())
        self.ulp_hi = max(self.ulp_hi, most * scale)
        floor = min(self.ulp_lo, self.ulp_pool.threshold()) / scale
        if ok is None:
            if most >= floor:
                floor = max(floor, self._own_floor(most, uhi, A, inv))
                sel = np.flatnonzero(uhi >= floor)
            else:
                sel = _EMPTY
        else:
            sel = np.flatnonzero((uhi >= floor) | ~ok)
        if sel.shape[0]:
            Ls = np.maximum(A[sel] * _C_DOWN - self.e_up, 0.0) * _DOWN
            ulo = Ls * inv[sel] * scale
            self.ulp_lo = max(self.ulp_lo, float(ulo.max()))
            oks = np.ones(sel.shape[0], dtype=bool) if ok is None else ok[sel]
            self.ulp_pool.add(sel + lo, oks, ulo, uhi[sel] * scale)
        if top >= self.abs_pool.threshold():
            best = int(U.argmax())  # its lo: no entry with hi below it holds the largest error
            own = max(float(A[best]) * _C_DOWN - self.e_up, 0.0) * _DOWN
            sel = np.flatnonzero(U >= max(self.abs_pool.threshold(), own))
            Ls = np.maximum(A[sel] * _C_DOWN - self.e_up, 0.0) * _DOWN
            self.abs_pool.add(sel + lo, np.ones(sel.shape[0], dtype=bool), Ls, U[sel])
        if fine is not None and not fine.all():
            self._off_path(x, ~fine, nonzero, one, lo)
        for t in undecided.tolist():
            self._one(lo + t)
        self.settled += undecided.shape[0]

    def _own_floor(self, most: float, uhi: np.ndarray, A: np.ndarray, inv: np.ndarray) -> float:
        """A value with ``worst`` entries of the chunk whose lower bound (same units as
        ``uhi``) is at least it, or -1: entries below it cannot be among the worst.  Errors
        grow along the order, so most chunks hold new worst entries: the entries near the
        chunk's largest upper bound are looked at, not all of them."""
        w = self.ulp_pool.worst
        for gap in (2.0**-20, 2.0**-12, 2.0**-6):
            near = np.flatnonzero(uhi >= most * (1 - gap))
            if near.shape[0] >= w:
                lo = np.maximum(A[near] * _C_DOWN - self.e_up, 0.0) * _DOWN * inv[near]
                return float(np.partition(lo, lo.shape[0] - w)[lo.shape[0] - w])
        return -1.0

    def _one(self, p: int) -> None:
        """Entry ``p`` by the object path: its row's verdict and errors (the row's own
        certified values, widened by their certification error)."""
        row, zb = self.row_at(p)
        self.zero_bad += zb
        self.failures += not row.ok
        u, a = row.ulp_error, row.abs_error
        if mpmath.isinf(u):
            ulo = uhi = alo = ahi = np.inf
            self.ulp_exact = (mpmath.inf, mpmath.inf)
        else:
            slack = ulp_slack(row, self.digits)
            lo_m, hi_m = self.ulp_exact
            self.ulp_exact = (max(lo_m, u - slack), max(hi_m, u + slack))
            ulo, uhi = _float_down(max(mpf_fraction(u - slack), Fraction(0))), _float_up(mpf_fraction(u + slack))
            alo, ahi = _float_down(mpf_fraction(a) * 2**self.frac), _float_up(mpf_fraction(a) * 2**self.frac)
        at = np.array([p])
        self.ulp_pool.add(at, np.array([row.ok]), np.array([ulo]), np.array([uhi]))
        self.abs_pool.add(at, np.array([True]), np.array([alo]), np.array([ahi]))

    def _off_path(self, x: np.ndarray, where: np.ndarray, nonzero: Optional[np.ndarray], one: Optional[np.ndarray],
                  lo: int) -> None:
        """Entries off the float path: ``m̃ = 0`` (error 0 for a claim ``-inf``, else
        infinite), ``m̃ = 1`` (error ``|x|``, exactly), NaN or infinite claims (infinite
        error) in arrays; claims of 0 or outside ``[2**-900, 2**900]`` in size with ``m̃ >=
        2`` one by one."""
        idx = np.flatnonzero(where)
        sx = x[idx]
        zero = ~nonzero[idx] if nonzero is not None else np.zeros(idx.shape[0], dtype=bool)
        mt1 = one[idx] if one is not None else np.zeros(idx.shape[0], dtype=bool)
        finite = np.isfinite(sx)
        nan = np.isnan(sx)
        right = zero & (sx == -np.inf)
        inf_err = ~right & ((zero & ~nan) | ~finite)  # zero mismatches and NaN claims
        self.zero_bad += int(np.count_nonzero(inf_err & ~nan))
        exact1 = mt1 & finite
        e = np.where(right, 0.0, np.inf)
        e1 = np.abs(sx[exact1])
        e[exact1] = e1
        u = np.where(right, 0.0, np.inf)
        u[exact1] = np.where(e1 == 0, 0.0, e1 / np.spacing(e1))
        good = right.copy()
        good[exact1] = e1 <= self.atol
        done = right | inf_err | exact1
        self.failures += int(np.count_nonzero(done & ~good))
        h = np.flatnonzero(done)
        if h.shape[0]:
            uh, ah = u[h], np.ldexp(e[h], self.frac)
            self.ulp_lo, self.ulp_hi = max(self.ulp_lo, float(uh.max())), max(self.ulp_hi, float(uh.max()))
            self.ulp_pool.add(idx[h] + lo, good[h], uh, uh)
            self.abs_pool.add(idx[h] + lo, np.ones(h.shape[0], dtype=bool), ah, ah)
        for t in idx[~done].tolist():
            self._one(lo + t)
