"""A block of levels as certified fixed-point arrays, and the log-probability of one output
of each level in the same form: what the array paths of Joint, JointSet and Canonical share.

Every value is a fixed-point integer ``X`` at ``F`` fractional bits (the real ``X * 2**-F``)
held in ``int64`` limbs (:mod:`exactdp.core.log_table`), with a proven error in ulps
``2**-F`` (each mechanism's array module gives the bound of its log-multiplicities).  The
log-probability of one output of a level of utility ``-M`` is ``-lam M + c``: ``lam``
rounded to ``Lam`` at ``F + G`` fractional bits (:func:`fixed_lam`: the exact floor of the
rational ``epsilon/divisor``, or nearest from arb with a base, error ``< 1``; ``G`` a
multiple of the limb width with ``2**(G-1) > max M``), the exact product ``Lam * M`` in
limbs floored to ``F`` bits (error ``< M 2**-G + 1 < 2`` ulps), and ``c`` from the rule's
fixed-point form (:meth:`~exactdp.core.selection.SelectionRule.fixed_log_output`, within
its ``E_r`` ulps) (:func:`log_output`).  :func:`frac_bits_for` picks ``F`` with
``2 E 2**-F <= 10**-dps``: ``exp`` of a value within ``E`` ulps is then within relative
error ``10**-dps``.
"""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from .log_table import LIMB_BITS, fixed_log_ratio, limbs_for, normalize, to_limbs

__all__ = ["LevelArrayBlock", "frac_bits_for"]


class LevelArrayBlock:
    """Consecutive levels of a mechanism, best first, as arrays.

    - ``utility``: the exact utilities ``-M`` (``int64``; ``object`` only where they do
      not fit);
    - ``log_multiplicity``, ``log_output_probability``: ``int64`` limbs, shape
      ``(len(block), L)`` (the first axis runs over the block's levels): row ``i`` holds
      the integer ``X = sum_j x[i, j] * 2**(limb_bits*j)`` (every limb but the last in
      ``[0, 2**limb_bits)``, the last signed), which stands for ``X * 2**-frac_bits``;
    - ``log_multiplicity_error``, ``log_output_probability_error``: proven bounds, in
      ulps ``2**-frac_bits``, on ``|X - 2**frac_bits * ln(value)|`` for every column (the
      multiplicity of the level, the probability of one output of the level;
      each mechanism's array module gives the proof);
    - ``log_multiplicity_at(i)``, ``log_output_probability_at(i)``: ``X * 2**-frac_bits``
      as an exact ``mpmath.mpf``; its ``exp`` is within relative error ``10**-dps`` of the
      level's multiplicity, of one output's probability.
    """

    __slots__ = ("utility", "log_multiplicity", "log_output_probability", "frac_bits", "limb_bits",
                 "log_multiplicity_error", "log_output_probability_error", "dps")

    def __init__(self, utility: Any, log_multiplicity: np.ndarray, log_output_probability: np.ndarray,
                 frac_bits: int, log_multiplicity_error: int, log_output_probability_error: int, dps: int):
        self.utility = utility
        # built limb-major (one row per limb, for the carries); handed out level-major
        self.log_multiplicity = np.ascontiguousarray(log_multiplicity.T)
        self.log_output_probability = np.ascontiguousarray(log_output_probability.T)
        self.frac_bits = frac_bits
        self.limb_bits = LIMB_BITS
        self.log_multiplicity_error = log_multiplicity_error
        self.log_output_probability_error = log_output_probability_error
        self.dps = dps

    def __len__(self) -> int:
        return len(self.utility)

    def _at(self, x: np.ndarray, i: int) -> mpmath.mpf:
        i = range(len(self))[i]
        value = sum(v << (LIMB_BITS * j) for j, v in enumerate(x[i].tolist()))
        # from_man_exp without a precision is exact (mpf((man, exp)) would round)
        return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(value, -self.frac_bits))

    def log_multiplicity_at(self, i: int) -> mpmath.mpf:
        """``ln m`` of level ``i`` of the block (exact binary value of the limbs)."""
        return self._at(self.log_multiplicity, i)

    def log_output_probability_at(self, i: int) -> mpmath.mpf:
        """``ln P(S)`` of one output ``S`` of level ``i`` of the block."""
        return self._at(self.log_output_probability, i)

    def __repr__(self) -> str:
        return f"LevelArrayBlock(levels={len(self)}, frac_bits={self.frac_bits})"


#: An upper bound of log2(10) = 3.3219280948...: integer arithmetic, no float rounding.
_LOG2_10_ABOVE = (33219281, 10**7)


def frac_bits_for(dps: int, error: int) -> int:
    """An ``F`` with ``2 * error * 2**-F <= 10**-dps`` (``2**F >= 10**dps * 2 * error``:
    ``dps * log2(10)`` is bounded above in integers)."""
    num, den = _LOG2_10_ABOVE
    return -(-dps * num // den) + (2 * error).bit_length()


def fixed_lam(scale: Any, F: int, max_m: int) -> tuple[int, int]:
    """``(Lam, G // LIMB_BITS)``: ``Lam`` within one unit of ``lam * 2**(F+G)`` (floor of
    the exact rational, or nearest from arb for a base), ``G`` the least multiple of the
    limb width with ``2**(G-1) > max_m``."""
    g_limbs = (max_m.bit_length() + 1 + LIMB_BITS - 1) // LIMB_BITS
    bits = F + g_limbs * LIMB_BITS
    lam = scale.lam
    if lam is not None:
        return (lam.numerator << bits) // lam.denominator, g_limbs
    base = scale.base
    return -fixed_log_ratio(base.numerator, base.denominator, bits), g_limbs


def log_output(utility: Any, lam_fixed: int, g_limbs: int, form: Any, first: int) -> np.ndarray:
    """Limbs of ``floor(-Lam * M / 2**G) + offset`` for ``M = -utility`` (``form``: the
    rule's :class:`~exactdp.core.selection.FixedLogOutput`), the levels of its head (this
    block's levels are ``first``, ``first + 1``, ...) replaced by their own entries."""
    out = _affine_log_output(utility, lam_fixed, g_limbs, -form.offset)
    n_head = min(form.head - first, len(utility))
    if n_head > 0:
        head = form.entries(first, first + n_head)
        top = max(abs(v).bit_length() for v in head)
        if limbs_for(top + 1) > out.shape[0]:  # wider than the affine entries: one more limb
            out = normalize(np.concatenate((out, np.zeros((limbs_for(top + 1) - out.shape[0], len(utility)),
                                                          dtype=np.int64))))
        out[:, : len(head)] = to_limbs(head, out.shape[0])
    return out


def _affine_log_output(utility: Any, lam_fixed: int, g_limbs: int, log_z: int) -> np.ndarray:
    """Limbs of ``floor(-Lam * M / 2**G) - lnZ`` for ``M = -utility``."""
    n = len(utility)
    # -utility overflows int64 at utility = -2**63: Python ints there
    if utility.dtype == object or (n and int(utility.min()) == -(1 << 63)):
        M = [-int(u) for u in utility]
        prod = [((-lam_fixed * m) >> (g_limbs * LIMB_BITS)) - log_z for m in M]
        top = max((abs(v).bit_length() for v in prod), default=1)
        return to_limbs(prod, limbs_for(top + 1))
    M = -utility.astype(np.int64)
    mask = (1 << LIMB_BITS) - 1
    top = int(M.max()) if n else 0
    mu = [(M >> (LIMB_BITS * i)) & mask for i in range(3) if top >> (LIMB_BITS * i)]
    lam_limbs = to_limbs([lam_fixed], limbs_for(abs(lam_fixed).bit_length() + 1))[:, 0].tolist()
    z_limbs = to_limbs([log_z], limbs_for(abs(log_z).bit_length() + 1))[:, 0].tolist()
    width = max(len(lam_limbs) + 3, g_limbs + len(z_limbs)) + 1
    # -Lam*M - lnZ * 2**G, then floored to 2**G: floor(-Lam M / 2**G) - lnZ
    prod = np.zeros((width, n), dtype=np.int64)
    low = width
    for j, lj in enumerate(lam_limbs):
        if lj and mu:
            low = min(low, j)
            for i, m in enumerate(mu):
                prod[i + j] -= lj * m  # each term below 2**60 in size, at most three a limb
    for j, zj in enumerate(z_limbs):
        if zj:
            low = min(low, g_limbs + j)
            prod[g_limbs + j] -= zj
    return normalize(prod, low)[g_limbs:]
