"""Checks of a mechanism's ``iter_level_arrays`` against its object path: the twin (the
exact levels and the certified level probabilities) and the proven ulp bounds themselves.
Shared by the Joint, PNFJoint, JointSet and Canonical array tests."""

from __future__ import annotations

from fractions import Fraction

import mpmath


def flatten(blocks, block_type=None):
    """``(utility, ln m, ln P(one output))`` of every level of ``blocks``, as exact values
    (each block checked to be a ``block_type`` when one is given)."""
    out = []
    for block in blocks:
        if block_type is not None:
            assert isinstance(block, block_type)
        for i in range(len(block)):
            u = block.utility[i]
            out.append((u if isinstance(u, Fraction) else int(u), block.log_multiplicity_at(i),
                        block.log_output_probability_at(i)))
    return out


def check_twin(m, dps, blocks=None, block_type=None):
    """Every level's utility equal, and ``exp`` of its two entries within ``10**-dps`` of the
    multiplicity and (times it) of the level probability ``iter_level_probabilities(dps)``
    gives (each within ``10**-dps``, so ``2.01 * 10**-dps`` apart at most)."""
    arrays = flatten(m.iter_level_arrays(dps=dps) if blocks is None else blocks, block_type)
    twin = list(m.iter_level_probabilities(dps))
    assert [u for u, _, _ in arrays] == [lv.utility for lv, _ in twin]
    with mpmath.workdps(dps + 20):
        tol = mpmath.mpf(10) ** -dps
        for (_, lm, lp), (lv, p) in zip(arrays, twin):
            assert abs(mpmath.exp(lm) - lv.multiplicity) <= tol * lv.multiplicity
            assert abs(mpmath.exp(lp) * lv.multiplicity - p) <= 2.01 * tol * p


def check_bounds(m, dps, prec=600):
    """The proven bounds themselves: ``|X - 2**F ln value| <= E`` ulps for every level's
    multiplicity and one output's probability (exponential rule: ``lam u - ln Z``), from
    the exact levels at ``prec`` bits."""
    levels = list(m.iter_levels())
    i = 0
    with mpmath.workprec(prec):
        lam = mpmath.mpf(m.scale.lam.numerator) / m.scale.lam.denominator
        us = [mpmath.mpf(Fraction(lv.utility).numerator) / Fraction(lv.utility).denominator for lv in levels]
        z = mpmath.fsum(lv.multiplicity * mpmath.exp(lam * u) for lv, u in zip(levels, us))
        for block in m.iter_level_arrays(dps=dps):
            scale = mpmath.mpf(2) ** block.frac_bits
            for j in range(len(block)):
                lv, u = levels[i], us[i]
                i += 1
                assert abs(block.log_multiplicity_at(j) - mpmath.log(lv.multiplicity)) * scale <= block.log_multiplicity_error
                exact_lp = lam * u - mpmath.log(z)
                assert abs(block.log_output_probability_at(j) - exact_lp) * scale <= block.log_output_probability_error
    assert i == len(levels)


def count_kernel(monkeypatch):
    """Counts the levels the kernel takes (its ``ok`` mask)."""
    from exactdp.core import log1mexp

    taken = [0]
    call = log1mexp.Log1mExpKernel.__call__

    def counting(self, D, out_limbs):
        ok, y = call(self, D, out_limbs)
        taken[0] += int(ok.sum())
        return ok, y

    monkeypatch.setattr(log1mexp.Log1mExpKernel, "__call__", counting)
    return taken
