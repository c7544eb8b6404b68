"""exactdp.certify.mtilde_logs: the certified fixed-point logs against arb, their limb tables
against the log table, the exact order and m~ against Joint.mtilde()."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
from flint import arb, fmpz

import exactdp
from exactdp.certify import mtilde_logs
from exactdp.core.log_table import log_table
from exactdp.core.precision import flint_workprec


def test_fixed_point_logs_within_their_bound():
    for counts, k in (([5, 5, 5, 2, 1, 1, 0], 3), ([3, 0, 3, 1, 2], 5), ([4], 1), (list(range(40)), 7)):
        m = exactdp.Joint(counts, k)
        sc = m.ranking.arrays.sorted_counts if m.ranking.arrays is not None else np.array(m.ranking.sorted_counts)
        rows, cols = mtilde_logs.exact_order(sc, k)
        entries = list(m.mtilde())
        assert [(i, j) for i, j, _, _ in entries] == list(zip(rows.tolist(), cols.tolist()))
        frac, E = mtilde_logs.fixed_point(k, len(counts))
        values = []
        for lo, vh, vl, nonzero, one in mtilde_logs.iter_fixed_log_mtilde(sc, k, rows, cols, frac, check=True):
            for t in range(len(vh)):
                values.append((int(vh[t]) * 2**30 + int(vl[t]), nonzero is None or bool(nonzero[t]),
                               one is not None and bool(one[t])))
        for (i, j, _, mt), (V, nonzero, one) in zip(entries, values):
            assert mtilde_logs.exact_mtilde(sc, k, i, j) == mt
            assert nonzero == (mt > 0) and one == (mt == 1)
            if mt:
                with flint_workprec(frac + 64):
                    gap = abs(arb(fmpz(mt)).log() * arb(2) ** frac - V)
                    assert gap <= E and (mt > 1 or V == 0)


def test_limb_tables_are_the_log_table():
    frac, d, k = 70, 50, 4
    dt, ct = mtilde_logs._tables(frac, d, k)
    _, _, xs = log_table(d + 1, frac)
    for q in range(-(k - 1), d):
        i = q % (d + k)
        want_d = xs[q + 1] - xs[q] if q >= 0 else 0
        want_c = xs[q + 1] if q >= 0 else 0
        assert int(dt[i, 0]) * 2**30 + int(dt[i, 1]) == want_d and 0 <= dt[i, 1] < 2**30
        assert int(ct[i, 0]) * 2**30 + int(ct[i, 1]) == want_c and 0 <= ct[i, 1] < 2**30


def test_exact_order_and_mtilde_against_the_refined_differences():
    # brute force: sort the d*k refined differences c_(i) - c_(j) + (d(k-1-i) + j + 1)/(2dk) as
    # Fractions; exact_mtilde of each entry is Joint.mtilde()'s m~ at that position
    for d in range(1, 5):
        for counts in itertools.product(range(4), repeat=d):
            sc = np.array(sorted(counts, reverse=True), dtype=np.int64)
            for k in range(1, d + 1):
                diffs = sorted((Fraction(int(sc[i] - sc[j])) + Fraction(d * (k - 1 - i) + j + 1, 2 * d * k), i, j)
                               for i in range(k) for j in range(d))
                rows, cols = mtilde_logs.exact_order(sc, k)
                assert [(int(i), int(j)) for i, j in zip(rows, cols)] == [(i, j) for _, i, j in diffs]
                want = [mt for _, _, _, mt in exactdp.Joint(list(counts), k).mtilde()]
                assert [mtilde_logs.exact_mtilde(sc, k, int(i), int(j)) for i, j in zip(rows, cols)] == want
