"""The shared block of levels as certified arrays (exactdp.core.level_arrays): the fraction
bits are enough and not wasteful, a block reads its limbs back exactly, and the affine
log-output is the exact floor it promises (against Python integers)."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactdp.core.level_arrays import LevelArrayBlock, fixed_lam, frac_bits_for, log_output
from exactdp.core.log_table import LIMB_BITS, to_limbs
from exactdp.core.scale import Scale


@given(st.integers(1, 400), st.integers(1, 10**6))
def test_frac_bits_are_enough_and_at_most_a_few_more(dps, error):
    F = frac_bits_for(dps, error)
    assert Fraction(2 * error, 2**F) <= Fraction(1, 10**dps)
    assert Fraction(2 * error, 2**(F - 3)) > Fraction(1, 10**dps)  # not more than 2 bits spare


def _limbs_value(column):
    return sum(int(v) << (LIMB_BITS * j) for j, v in enumerate(column))


def test_a_block_reads_its_limbs_exactly():
    values = [3 << 200, -(5 << 90) + 1, 0]
    limbs = to_limbs(values, 6)
    block = LevelArrayBlock(np.array([0, -1, -2]), limbs, limbs, 150, 2, 3, 30)
    assert len(block) == 3 and block.limb_bits == LIMB_BITS
    for i, v in enumerate(values):
        exact = mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(v, -150))
        assert block.log_multiplicity_at(i) == exact == block.log_output_probability_at(i)
        assert _limbs_value(block.log_multiplicity[i]) == v
    with pytest.raises(IndexError):
        block.log_multiplicity_at(3)


class _Form:  # a rule's fixed-point log-output form with no head
    def __init__(self, offset):
        self.offset, self.head = offset, 0


@settings(max_examples=60, deadline=None)
@given(st.fractions(Fraction(1, 1000), Fraction(50)), st.lists(st.integers(0, 2**40), min_size=1, max_size=20),
       st.integers(-2**100, 2**100), st.integers(20, 200))
def test_the_log_output_is_the_exact_floor(lam, Ms, offset, F):
    scale = Scale(epsilon=lam, base=None, divisor=Fraction(1))
    Lam, g_limbs = fixed_lam(scale, F, max(Ms))
    G = g_limbs * LIMB_BITS
    assert Lam == (lam.numerator << (F + G)) // lam.denominator and 2**(G - 1) > max(Ms)
    out = log_output(-np.array(Ms, dtype=np.int64), Lam, g_limbs, _Form(offset), 0)
    for i, M in enumerate(Ms):
        assert _limbs_value(out[:, i]) == (-Lam * M) // 2**G + offset
