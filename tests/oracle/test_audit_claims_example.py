"""examples/audit_claims.py: OpenDP's zCDP map and CDP-Peel's Lemma 4.2 audited exactly."""

from __future__ import annotations

import functools
import importlib.util
import pathlib
from fractions import Fraction

import pytest

import exactdp
from exactdp import audit, interop

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("audit_claims", ROOT / "examples" / "audit_claims.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_example_finds_both_claims_hold_and_says_so(capsys):
    lines = _example().main()
    assert capsys.readouterr().out.splitlines() == lines
    assert len(lines) == 5
    assert all(line.endswith(": below") for line in lines[:4])
    assert lines[1].startswith("OpenDP zCDP, monotonic=True, add_remove: claimed rho 1/16")


@pytest.mark.slow
def test_the_same_mechanisms_violate_a_smaller_claim():
    """Negative control: the exact worst rho (about 0.05615) is above 1/18."""
    factory = functools.partial(interop.opendp_top_k, k=2, scale=2, output_measure="zero_concentrated_divergence",
                                monotonic=True)
    w = audit.worst_case(factory, (3, 2, 2, 0), "add_remove", notion="zcdp", rho=Fraction(1, 18))
    assert w.verdict == "violated" and not w.satisfied
    # the same law as CDP-Peel with eps' = 1/2 (Peeling, Gumbel noise, epsilon = k eps')
    assert factory((3, 2, 2, 0)).probability((0, 1)) == exactdp.Peeling((3, 2, 2, 0), 2, epsilon=1).probability((0, 1))
