"""The float64 Joint port (examples/float_joint.py) samples exactdp's distributions: the
single-sample path of FloatJoint against exactdp.Joint, FloatPNFJoint against
exactdp.PNFJoint (seeded chi-square tests, no timing)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import exactdp
from exactdp import certify

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import FloatJoint, FloatPNFJoint, PublishedLoopsFloatJoint  # noqa: E402

TINY = ([4, 3, 3, 1, 0], 2)


@pytest.mark.slow
def test_single_sample_path_matches_joint():
    counts, k = TINY
    impl = FloatJoint(counts, k)
    rng = np.random.default_rng(7)
    draws = [impl.sample(rng) for _ in range(12_000)]
    assert certify.goodness_of_fit(draws, exactdp.Joint(counts, k, epsilon=1)).passed_at(1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("counts, k", [TINY, ([5, 5, 2, 0], 3)])
def test_pnf_sampler_matches_pnf_joint(counts, k):
    impl = FloatPNFJoint(counts, k)
    fit = certify.goodness_of_fit(impl.samples(12_000, rng=3), exactdp.PNFJoint(counts, k, epsilon=1))
    assert fit.passed_at(1e-6), fit.summary()


def test_pnf_sampler_huge_multiplicities():
    # m~ far beyond float range: the log-space MaxExpo still returns a valid sequence
    counts = list(range(400, 0, -1))
    seq = FloatPNFJoint(counts, 150).sample(1)
    assert len(set(seq)) == 150 and all(0 <= s < 400 for s in seq)


@pytest.mark.parametrize("seed", range(6))
def test_published_loops_port_equals_the_vectorised_one(seed):
    """The reference's Python loops (log m~ running sum, list-scan choices) give the same
    log m~ as the vectorised port, right by exactdp's m~, and the same seeded samples."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 25))
    k = int(rng.integers(1, min(d, 6) + 1))
    counts = [int(x) for x in rng.integers(0, 12, size=d)]
    loops, vectorised = PublishedLoopsFloatJoint(counts, k), FloatJoint(counts, k)
    finite = np.isfinite(vectorised.log_mtilde)
    assert np.array_equal(finite, np.isfinite(loops.log_mtilde))
    assert np.allclose(loops.log_mtilde[finite], vectorised.log_mtilde[finite], rtol=1e-12, atol=1e-9)
    assert certify.compare_mtilde(loops.log_mtilde, exactdp.Joint(counts, k), rows=loops.rows, cols=loops.cols).passed
    assert [loops.sample(s) for s in range(20)] == [vectorised.sample(s) for s in range(20)]
