"""The margin check of a pair count (exactdp.core.pair_cells): consistent cells pass, and a
wrong count, a missing cell or a plain level of unequal multiplicities is refused."""

from __future__ import annotations

import numpy as np
import pytest

import exactdp
from exactdp.core.levels import Level
from exactdp.core.pair_cells import check_margins

# levels here: multiplicities 1, 3, 2; under the other: 2, 2, 2.  Cells (here, there, n):
# (0, 0, 1), (1, 0, 1), (1, 1, 2); level 2 here is plain, level 2 there.
A = [Level(0, 1), Level(-1, 3), Level(-2, 2)]
B = [Level(0, 2), Level(-1, 2), Level(-2, 2)]
IA, IB, SIZES = np.array([0, 1, 1]), np.array([0, 0, 1]), [1, 1, 2]
PLAIN, PLAIN_B = np.array([2]), np.array([2])


def test_consistent_cells_pass():
    check_margins(A, B, IA, IB, SIZES, PLAIN, PLAIN_B)


@pytest.mark.parametrize("case", ["wrong count", "missing cell", "unequal plain level", "uncovered level"])
def test_inconsistent_cells_are_refused(case):
    ia, ib, sizes, plain, plain_b, b = IA, IB, list(SIZES), PLAIN, PLAIN_B, B
    if case == "wrong count":
        sizes[2] = 3
    elif case == "missing cell":
        ia, ib, sizes = ia[:2], ib[:2], sizes[:2]
    elif case == "unequal plain level":
        b = [*B[:2], Level(-2, 5)]
    else:
        plain, plain_b = plain[:0], plain_b[:0]
    with pytest.raises(AssertionError, match="do not add up"):
        check_margins(A, b, ia, ib, sizes, plain, plain_b)


@pytest.mark.parametrize("cls", ["Joint", "JointSet"])
def test_the_mechanisms_pair_cells_keep_the_margins(cls):
    a = getattr(exactdp, cls)([5, 3, 3, 1, 0], 2, epsilon=1)
    b = getattr(exactdp, cls)([5, 3, 2, 1, 0], 2, epsilon=1)
    cells = a.pair_cells(b)
    for mech, side in ((a, 0), (b, 1)):
        totals = [0] * len(mech.levels())
        for key, (_, n) in cells.items():
            totals[key[side]] += n
        assert totals == [level.multiplicity for level in mech.levels()]
