"""JointSet's levels as arrays: certified fixed-point log-multiplicities and log-probabilities.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (NeurIPS 2021 PriML workshop), Lemmas 6-7.  A level's
multiplicity ``m(-M) = N(M) - N(M_prev)`` is a difference of Lemma 7's path counts, each
a sum of many products of binomials: not a product of small factors, so no table of
``ln 1..d`` sums it.  The levels come from the sweep
(:func:`~exactdp.mechanisms.joint_set.mechanism.iter_joint_set_levels`, exact integers, one pass,
nothing kept), and what the arrays replace is everything after it: the level table's
blocks, one ball, one weight and one ``mpf`` per level.

Every value is a fixed-point integer ``X`` at ``F`` fractional bits (the real ``X *
2**-F``) held in limbs (:mod:`exactdp.core.log_table`):

- ``ln m`` from arb within one ulp (a ball of radius below a quarter ulp rounded to the
  nearest integer; a wider ball is recomputed at a higher precision): ``E_m = 1`` ulp;
- the log-probability of one output, ``-lam M + c``, by the limb product of Joint's arrays
  (:mod:`exactdp.mechanisms.joint.arrays`: ``lam`` at ``F + G`` bits with ``2**(G-1) >
  max M``, error below 2 ulps) and the rule's fixed-point form ``c``
  (:meth:`~exactdp.core.selection.SelectionRule.fixed_log_output`, the exponential
  mechanism's ``-ln Z`` from the level table's certified total, within ``E_r = 1`` ulp):
  ``E_p = 2 + E_r = 3`` ulps.

``F`` is chosen so that ``2 E 2**-F <= 10**-dps`` for both errors (``exp`` of a value
within ``E`` ulps is within relative error ``2 E 2**-F`` of the true value).
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

import numpy as np

from ...core.log_table import fixed_log_ratios, limbs_for, to_limbs
from ...core.level_arrays import LevelArrayBlock, fixed_lam, frac_bits_for, log_output
from .sweep import iter_sweep_levels

__all__ = ["iter_level_arrays", "ARRAY_BLOCK_LEVELS"]

#: Levels of one array block (tests lower it to put block boundaries everywhere).
ARRAY_BLOCK_LEVELS = 1 << 14

_E_M = 1

#: Utilities above ``-2**62`` go to the limb product as ``int64`` (its negation stays exact).
_INT64_UTILITIES = 1 << 62


def iter_level_arrays(mechanism: Any, dps: int) -> Iterator[LevelArrayBlock]:
    """The blocks of :meth:`~exactdp.mechanisms.joint_set.mechanism.JointSet.iter_level_arrays` of
    ``mechanism`` (a JointSet) at ``dps`` digits."""
    e_p = 2 + mechanism.rule.fixed_log_output_error
    F = frac_bits_for(dps, max(_E_M, e_p))
    sc = mechanism.ranking.sorted_counts
    lam_fixed, g_limbs = fixed_lam(mechanism.scale, F, int(sc[0]) - int(sc[-1]))
    form = mechanism.rule.fixed_log_output(mechanism.table, F, dps)
    first = 0
    levels = iter_sweep_levels(mechanism.ranking, mechanism.k)
    while True:
        chunk = list(itertools.islice(levels, ARRAY_BLOCK_LEVELS))
        if not chunk:
            return
        xs = fixed_log_ratios(((lv.multiplicity, 1) for lv in chunk), F)
        logm = to_limbs(xs, limbs_for(max(abs(x) for x in xs).bit_length() + 1))
        us = [lv.utility for lv in chunk]
        if us[-1] > -_INT64_UTILITIES:  # the least of the block (best first)
            utility = np.array(us, dtype=np.int64)
        else:  # the limb product negates them in int64: object beyond 2**62
            utility = np.empty(len(us), dtype=object)
            utility[:] = us
        logp = log_output(utility, lam_fixed, g_limbs, form, first)
        first += len(chunk)
        yield LevelArrayBlock(utility, logm, logp, F, _E_M, e_p, dps)
