"""exactdp.certify.mtilde_rows: one row of an m~ comparison, judged exactly near its tolerance."""

from __future__ import annotations

import mpmath

from exactdp.certify.mtilde_rows import exact_ok, mtilde_row


def test_exact_ok_at_one_is_rational():
    # ln 1 = 0: the claim is judged against atol by exact rationals
    assert exact_ok(1e-9, 1, 1e-9, 0.0)
    assert not exact_ok(2e-9, 1, 1e-9, 0.0)
    assert exact_ok(-1e-9, 1, 1e-9, 0.0)


def test_row_on_the_tolerance_at_one():
    # a claim exactly at atol for m~ = 1 goes to the exact decision (it raised NameError once)
    row, zero_bad = mtilde_row(0, 0, 0, 1, 1e-9, mpmath.mpf(0), 1e-9, 0.0, 30)
    assert row.ok and not zero_bad
    row, _ = mtilde_row(0, 0, 0, 1, 1.0000000000000002e-9, mpmath.mpf(0), 1e-9, 0.0, 30)
    assert not row.ok
