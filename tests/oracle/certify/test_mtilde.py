"""exactdp.certify.mtilde: compare_mtilde on the float64 example's log m~ arrays, its errors
caught, its order checked."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import exactdp
from exactdp import certify
from exactdp.certify import mtilde
from exactdp.errors import InvalidParameterError


ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import FloatJoint  # noqa: E402


EXAMPLE = ([4, 3, 3, 1, 0], 2)  # the instance of the float example (20 sequences, 5 levels)


@pytest.mark.parametrize("counts, k", [EXAMPLE, ([5, 5, 5, 2, 1, 1, 0], 3), ([2, 2, 2, 2], 4), ([7], 1)])
def test_float_log_mtilde_certified(counts, k):
    impl = FloatJoint(counts, k)
    r = certify.compare_mtilde(impl.log_mtilde, exactdp.Joint(counts, k), rows=impl.rows, cols=impl.cols)
    assert r.passed and r.entries == len(counts) * k and r.max_abs_error < 1e-12
    assert not r.order_mismatches and r.zero_mismatches == 0


def test_compare_mtilde_catches_errors():
    counts, k = [5, 5, 5, 2, 1, 1, 0], 3
    m = exactdp.Joint(counts, k)
    impl = FloatJoint(counts, k)
    bad = impl.log_mtilde.copy()
    finite = np.flatnonzero(np.isfinite(bad))
    bad[finite[3]] += 1e-6
    r = certify.compare_mtilde(bad, m)
    assert not r.passed and r.failures == 1 and r.worst[0].position == finite[3]
    bad = impl.log_mtilde.copy()
    bad[finite[0]] = -np.inf  # claims m~ = 0 where it is not
    r = certify.compare_mtilde(bad, m)
    assert not r.passed and r.zero_mismatches == 1 and "FAIL" in str(r)
    with pytest.raises(InvalidParameterError, match="d\\*k = 21"):
        certify.compare_mtilde(bad[:-1], m)
    with pytest.raises(InvalidParameterError, match="mtilde"):
        certify.compare_mtilde(bad, object())


def test_compare_mtilde_needs_rows_and_cols_together():
    # rows without cols (or the reverse) silently skipped the order check
    huge = [10**16, 10**16, 3, 2, 1, 0]
    f = FloatJoint(huge, 2)
    m = exactdp.Joint(huge, 2)
    for kwargs, missing in ((dict(rows=f.rows), "cols"), (dict(cols=f.cols), "rows")):
        with pytest.raises(InvalidParameterError) as info:
            certify.compare_mtilde(f.log_mtilde, m, **kwargs)
        assert info.value.argument == missing
    assert certify.compare_mtilde(f.log_mtilde, m, rows=f.rows, cols=f.cols).order_mismatches


def test_float_order_breaks_near_2_to_53():
    # measured: the float diff matrix loses distinctness when |c_i - c_j| 2dk nears 2**53
    counts = [10**16, 10**16, 3, 2, 1, 0]
    impl = FloatJoint(counts, 2)
    r = certify.compare_mtilde(impl.log_mtilde, exactdp.Joint(counts, 2), rows=impl.rows, cols=impl.cols)
    assert not r.passed and r.order_mismatches


def test_both_paths_and_the_path_argument():
    # the module's own entry point: the arrays path by default, the object loop on request
    counts, k = [5, 5, 5, 2, 1, 1, 0], 3
    m = exactdp.Joint(counts, k)
    impl = FloatJoint(counts, k)
    a = mtilde.compare_mtilde(impl.log_mtilde, m)
    b = mtilde.compare_mtilde(impl.log_mtilde, m, path="objects")
    assert (a.path, b.path) == ("arrays", "objects")
    assert (a.verdict, a.failures, a.max_abs_error) == (b.verdict, b.failures, b.max_abs_error)
    for bad, name in (({"path": "loops"}, "path"), ({"atol": -1}, "atol"), ({"rtol": float("nan")}, "rtol"),
                      ({"worst": -1}, "worst")):
        with pytest.raises(InvalidParameterError) as info:
            certify.compare_mtilde(impl.log_mtilde, m, **bad)
        assert info.value.argument == name
