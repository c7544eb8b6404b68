"""exactdp.certify.mtilde_arrays: the arrays path of compare_mtilde against its twin, the object
loop over Joint.mtilde(): the same verdicts, failures, worst rows and maximum abs error, and
max ulp error intervals that meet; negative controls at one entry."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import certify
from exactdp.certify import mtilde_arrays, mtilde_logs
from exactdp.errors import InvalidParameterError


ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import FloatJoint  # noqa: E402


def _key(rows):
    return [(r.position, r.row, r.col, r.mtilde, r.exact_log, r.ok, r.abs_error, r.ulp_error,
             np.float64(r.claimed).tobytes()) for r in rows]


def _twin(x, m, worst=3, **kw):
    a = certify.compare_mtilde(x, m, path="arrays", worst=worst, **kw)
    b = certify.compare_mtilde(x, m, path="objects", worst=worst, **kw)
    assert (a.path, b.path) == ("arrays", "objects")
    assert (a.passed, a.failures, a.zero_mismatches, a.entries) == (b.passed, b.failures, b.zero_mismatches, b.entries)
    assert a.order_mismatches == b.order_mismatches
    assert _key(a.worst) == _key(b.worst)
    assert a.max_abs_error == b.max_abs_error
    (lo, hi), (olo, ohi) = a.max_ulp_error, b.max_ulp_error
    assert lo <= hi and olo <= ohi and lo <= ohi and olo <= hi  # the certified intervals meet
    return a, b


def _variants(x, seed):
    """The claim, and one entry perturbed by one ulp, by 1e-6, to -inf, to NaN, to 0."""
    out = [x]
    finite = np.flatnonzero(np.isfinite(x))
    rng = np.random.default_rng(seed)
    for kind in ("ulp", "1e-6", "-inf", "nan", "zero"):
        y = x.copy()
        p = int(rng.choice(finite)) if finite.size and kind != "nan" else int(rng.integers(len(x)))
        if kind == "ulp":
            y[p] = np.nextafter(y[p], np.inf)
        elif kind == "1e-6":
            y[p] += 1e-6
        elif kind == "-inf":
            y[p] = -np.inf
        elif kind == "nan":
            y[p] = np.nan
        else:
            y[p] = 0.0
        out.append(y)
    return out


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunk boundaries everywhere (the carries between chunks are exercised): the chunks of
    mtilde_logs and the lo limb's bound of mtilde_arrays."""
    monkeypatch.setattr(mtilde_logs, "CHUNK", 3)
    monkeypatch.setattr(mtilde_arrays, "CHUNK", 3)


@pytest.mark.slow
def test_twin_exhaustive(small_chunks):
    # every vector in {0..3}^d, d <= 4, every k (ties, k = 1, k = d, d = 1)
    n = 0
    for d in range(1, 5):
        for counts in itertools.product(range(4), repeat=d):
            for k in range(1, d + 1):
                m = exactdp.Joint(list(counts), k)
                f = FloatJoint(list(counts), k)
                for y in _variants(f.log_mtilde, n):
                    _twin(y, m)
                    n += 1
                _twin(f.log_mtilde, m, rows=f.rows, cols=f.cols)
    assert n > 2000


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 6), st.integers(0, 10**15)), min_size=1, max_size=9),
       st.integers(1, 9), st.integers(0, 2**32 - 1), st.integers(1, 7))
def test_twin_random(counts, k, seed, chunk):
    k = min(k, len(counts))
    m = exactdp.Joint(counts, k)
    f = FloatJoint(counts, k)
    old = mtilde_logs.CHUNK
    mtilde_logs.CHUNK = mtilde_arrays.CHUNK = chunk
    try:
        for y in _variants(f.log_mtilde, seed):
            _twin(y, m, worst=2)
        _twin(f.log_mtilde, m, rows=f.rows, cols=f.cols)
    finally:
        mtilde_logs.CHUNK = mtilde_arrays.CHUNK = old


def _correctly_rounded(m):
    """The float nearest to ln m~ of every entry (-inf for m~ = 0), in the exact order."""
    out = []
    with mpmath.workprec(200):
        for _, _, _, mt in m.mtilde():
            out.append(-np.inf if mt == 0 else float(mpmath.log(mt)))
    return np.array(out)


def test_negative_controls_at_one_entry():
    counts = [int(c) for c in np.random.default_rng(5).integers(0, 400, size=300)]
    m = exactdp.Joint(counts, 12)
    x = _correctly_rounded(m)
    r = certify.compare_mtilde(x, m, rtol=0, atol=0)
    assert r.path == "arrays" and r.zero_mismatches == 0
    assert r.max_ulp_error[1] <= 0.5 + 1e-9  # every entry correctly rounded: at most half an ulp
    p = int(np.flatnonzero(np.isfinite(x))[1234])
    one_ulp = x.copy()
    one_ulp[p] = np.nextafter(x[p], np.inf)
    r = certify.compare_mtilde(one_ulp, m)
    assert r.passed and r.worst[0].position == p and 0.5 <= r.worst[0].ulp_error <= 1.5
    assert 0.5 <= r.max_ulp_error[0] <= r.max_ulp_error[1] <= 1.5
    off = x.copy()
    off[p] += 1e-6
    r = certify.compare_mtilde(off, m)
    assert not r.passed and r.failures == 1 and r.worst[0].position == p and not r.worst[0].ok
    gone = x.copy()
    gone[p] = -np.inf
    r = certify.compare_mtilde(gone, m)
    assert r.zero_mismatches == 1 and r.worst[0].position == p and r.worst[0].ulp_error == mpmath.inf
    _twin(off, m, worst=4)


def test_float_joint_at_scale_is_certified_in_its_own_order():
    counts = [int(c) for c in np.random.default_rng(7).permutation(20_000)[:800]]
    m = exactdp.Joint(counts, 12)
    f = FloatJoint(counts, 12)
    a, b = _twin(f.log_mtilde, m, rows=f.rows, cols=f.cols, worst=5)
    assert a.passed and a.settled_exactly == 0 and not a.order_mismatches
    assert a.max_ulp_error[1] - a.max_ulp_error[0] < 1e-3  # an interval of a few 2**-F


def test_misordered_positions_are_reported_and_the_exact_order_used():
    counts = [9, 7, 7, 4, 3, 3, 3, 1, 0]
    m = exactdp.Joint(counts, 3)
    f = FloatJoint(counts, 3)
    rows, cols = f.rows.copy(), f.cols.copy()
    rows[[5, 6]], cols[[5, 6]] = rows[[6, 5]], cols[[6, 5]]
    a, _ = _twin(f.log_mtilde, m, rows=rows, cols=cols)
    assert not a.passed and [p for p, _, _ in a.order_mismatches] == [5, 6]
    for bad in (-1, 3, 9):  # out of range: a mismatch, not an error or a wrapped index
        r2, c2 = f.rows.copy(), f.cols.copy()
        r2[4] = bad
        c2[7] = bad if bad != 3 else 0
        a, _ = _twin(f.log_mtilde, m, rows=r2, cols=c2)
        assert not a.passed and a.order_mismatches
    a, _ = _twin(f.log_mtilde, m, rows=f.rows.astype(float), cols=f.cols.astype(float))
    assert a.passed


def test_entries_at_the_tolerance_are_settled_exactly():
    counts = [6, 5, 5, 2, 1, 0]
    m = exactdp.Joint(counts, 2)
    x = _correctly_rounded(m)
    p = int(np.flatnonzero(x > 1)[0])
    with mpmath.workprec(300):
        mt = next(e[3] for i, e in enumerate(m.mtilde()) if i == p)
        y = x.copy()
        y[p] = x[p] + 2.0**-40
        err = mpmath.mpf(float(y[p])) - mpmath.log(mt)
        below, above = float(mpmath.mpf(err) * (1 - mpmath.mpf(2) ** -62)), float(err)
    for atol in (below, above, float(np.nextafter(above, np.inf))):
        a, _ = _twin(y, m, rtol=0, atol=atol)
        assert a.settled_exactly >= 1
        assert a.worst[0].ok == (atol >= err)


def test_arguments():
    m = exactdp.Joint([3, 1, 0], 2)
    x = np.zeros(6)
    for kwargs, name in ((dict(path="fast"), "path"), (dict(worst=-1), "worst"), (dict(atol=-1.0), "atol"),
                         (dict(rtol=float("nan")), "rtol")):
        with pytest.raises(InvalidParameterError) as info:
            certify.compare_mtilde(x, m, **kwargs)
        assert info.value.argument == name
    huge = exactdp.Joint([10**30, 5, 0], 2)
    with pytest.raises(InvalidParameterError, match="int64"):
        certify.compare_mtilde(np.zeros(6), huge, path="arrays")
    r = certify.compare_mtilde(np.zeros(6), huge)  # auto: the object loop
    assert r.path == "objects" and not r.passed
    assert "max ulp error in [" in str(certify.compare_mtilde(x, m))


def test_counts_whose_keys_pass_int64(small_chunks):
    # (c_(0) - c_(d-1)) * dk past 2**62: the exact order by lexsort, the check on (M, z) pairs
    big = 2**60
    counts = [big, big - 5, big - 5, 7, 3, 3, 0]
    m = exactdp.Joint(counts, 3)
    sc = m.ranking.arrays.sorted_counts
    rows, cols = mtilde_arrays.exact_order(sc, 3)
    assert [(i, j) for i, j, _, _ in m.mtilde()] == list(zip(rows.tolist(), cols.tolist()))
    x = _correctly_rounded(m)
    a, _ = _twin(x, m, rows=rows, cols=cols)
    assert a.passed and a.path == "arrays"
    r2, c2 = rows.copy(), cols.copy()
    r2[[3, 4]], c2[[3, 4]] = r2[[4, 3]], c2[[4, 3]]
    a, _ = _twin(x, m, rows=r2, cols=c2)
    assert not a.passed and [p for p, _, _ in a.order_mismatches] == [3, 4]
