"""``exactdp compare``: every mechanism's utility metrics at one budget, as a table and as JSON,
the same values as :func:`exactdp.utility.metrics`, CDP-Peel's accounting, n/a rows and errors."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

import exactdp
from tests.cli.cli_helpers import assert_error, run, run_json
from exactdp.accounting import cdp_peel_epsilon, cdp_peel_local_epsilon
from exactdp.cli.commands.compare import DEFAULT_DELTA, ROWS, cdp_round_epsilon
from exactdp.core.formatting import number_text
from exactdp.utility import metrics

ARGS = ["compare", "--counts", "10,5,5,1,1,0", "-k", "2", "--epsilon", "1"]
LABELS = [label for _, label, _ in ROWS]


def test_table_has_every_mechanism_with_the_library_values(capsys):
    status, out, err = run(capsys, *ARGS)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("exactdp compare: d = 6, k = 2, epsilon = 1;")
    assert lines[1].split()[:2] == ["mechanism", "E[l_inf]"]
    for label in LABELS:
        assert any(line.startswith(label) for line in lines), label
    joint = metrics(exactdp.Joint([10, 5, 5, 1, 1, 0], 2, epsilon=1), dps=30)
    row = next(line for line in lines if line.startswith("Joint "))
    assert row.split()[1:] == [number_text(joint[key], 6) for key in
                               ("expected_linf", "expected_l1", "expected_true_in_topk", "p_exact_topk_set",
                                "p_exact_topk_sequence")]
    set_row = next(line for line in lines if line.startswith("JointSet "))
    assert set_row.split()[-1] == "-"  # no sequence metric for a set mechanism
    peel = metrics(exactdp.Peeling([10, 5, 5, 1, 1, 0], 2, epsilon=1), dps=30)
    peel_row = next(line for line in lines if line.startswith("peeling "))
    assert number_text(peel["expected_l1"], 6) in peel_row  # the paper's l_1, not the shortfall
    assert number_text(peel["expected_shortfall"], 6) not in peel_row
    assert "n/a" not in out
    assert "CDP-Peel: delta = 1.0e-6" in out


def test_json_values_are_the_library_values_at_dps(capsys):
    data = run_json(capsys, *ARGS, "--dps", "25")
    assert data["delta"] == "1/1000000" and data["dps"] == 25
    names = [m["name"] for m in data["mechanisms"]]
    assert names == [name for name, _, _ in ROWS]
    counts, k = [10, 5, 5, 1, 1, 0], 2
    for item, (_, _, build) in zip(data["mechanisms"], ROWS):
        mech = build(counts, k, Fraction(1), DEFAULT_DELTA)
        want = metrics(mech, dps=25)
        assert item["mechanism"] == repr(mech)
        for key in ("expected_linf", "expected_l1", "expected_shortfall"):
            assert item[key] == number_text(want[key], 25, strip_zeros=False), key
        total = mpmath.fsum(mpmath.mpf(p) for p in item["linf_distribution"].values())
        assert abs(total - 1) < mpmath.mpf(10) ** -20
    pnf = data["mechanisms"][1]
    assert pnf["label"] == "PNFJoint" and pnf["p_exact_topk_sequence"] is not None
    assert data["mechanisms"][2]["p_exact_topk_sequence"] is None  # JointSet


@pytest.mark.parametrize("eps,delta,k", [(Fraction(1), Fraction(1, 10**6), 2), (Fraction(8), Fraction(1, 10**9), 50),
                                         (Fraction(1, 10), Fraction(1, 10), 3)])
def test_cdp_peel_round_epsilon_is_within_the_accounting(eps, delta, k):
    """The per-round epsilon run is at most the accounted one (so (eps, delta)-DP holds by
    Lemma 4.2 or basic composition) and within 2e-12 of it."""
    got = cdp_round_epsilon(eps, delta, k)
    accounted = cdp_peel_local_epsilon(eps, delta, k, dps=40)
    with mpmath.workdps(60):
        as_mp = mpmath.mpf(got.numerator) / got.denominator
        if got == eps / k:  # basic composition's budget, exactly, when it is the larger
            assert as_mp == accounted
        else:
            assert as_mp < accounted and accounted - as_mp < mpmath.mpf("2e-12")
        if got > eps / k:  # the CDP branch: Lemma 4.2's epsilon of the rounded value is below eps
            assert cdp_peel_epsilon(got, delta, k, dps=30) < mpmath.mpf(eps.numerator) / eps.denominator


def test_large_k_uses_the_cdp_accounting(capsys):
    data = run_json(capsys, "compare", "--counts", "3x10,1x10", "-k", "10", "--epsilon", "4", "--delta", "1e-3",
                    "--dps", "10", "--max-outputs", "100000")
    cdp = Fraction(data["cdp_peel_round_epsilon"])
    assert cdp > Fraction(4, 10)  # the concentrated bound beats basic composition here
    row = data["mechanisms"][-1]
    assert row["mechanism"] == repr(exactdp.Peeling([3] * 10 + [1] * 10, 10, epsilon=10 * cdp, noise="gumbel"))


def test_rows_too_large_for_exact_metrics_are_na_not_a_failure(capsys):
    status, out, err = run(capsys, "compare", "--counts", "9,7,7,5,3,3,2,1,1,0,0,0", "-k", "4", "--epsilon", "1/2",
                           "--max-outputs", "400")
    assert status == 0 and err == ""
    assert "Canonical: n/a (--max-outputs = 400 exceeded: the mechanism has 495 outputs)" in out
    assert "CanonicalGamma1: n/a (" in out and "PNF-Peel (pure ε, ε/k per round): n/a" not in out
    status, out, err = run(capsys, "compare", "--counts", "9,7,7,5,3,3,2,1,1,0,0,0", "-k", "4", "--epsilon", "1/2",
                           "--max-outputs", "30")
    assert status == 0 and err == ""
    for label in ("peeling (pure ε, ε/k per round, Gumbel)", "PNF-Peel (pure ε, ε/k per round)"):
        assert f"{label}: n/a (--max-outputs = 30 exceeded: Peeling's dynamic programme" in out
    assert "CDP-Peel (ε, δ)-DP: n/a (" in out
    joint = next(line for line in out.splitlines() if line.startswith("Joint "))
    assert "n/a" not in joint
    data = run_json(capsys, "compare", "--counts", "9,7,7,5,3,3,2,1,1,0,0,0", "-k", "4", "--epsilon", "1/2",
                    "--max-outputs", "30")
    assert "reason" in data["mechanisms"][-1] and "expected_linf" not in data["mechanisms"][-1]
    assert "reason" not in data["mechanisms"][0]


@pytest.mark.parametrize("argv,fragments", [
    (["compare", "--counts", "1,2", "-k", "3", "--epsilon", "1"], ["k=3"]),
    (["compare", "--counts", "1,2", "-k", "1", "--epsilon", "0"], ["--epsilon", "0"]),
    (["compare", "--counts", "1,2", "-k", "1", "--epsilon", "1", "--delta", "1"], ["--delta", "1"]),
    (["compare", "--counts", "1,2", "-k", "1"], ["--epsilon"]),
    (["compare", "--counts", "1,2", "-k", "1", "--epsilon", "1", "--bogus"], ["--bogus"]),
])
def test_errors_name_the_argument(capsys, argv, fragments):
    status, out, err = run(capsys, *argv)
    assert_error(status, out, err, *fragments)


def test_help(capsys):
    status, out, _ = run(capsys, "compare", "--help")
    assert status == 0 and "--max-outputs" in out and "CDP-Peel" in out
