"""canonical-gamma1 on the command line: its (h, t) classes in ``dist`` and ``prob``, the
refusal of ``levels``, and ``sample``/``audit``/``certify`` equal to the Python API."""

from __future__ import annotations

from fractions import Fraction

import pytest

import exactdp
from exactdp import audit
from exactdp.core.validation import as_rng

from tests.cli.cli_helpers import assert_error, nstr, run, run_json

NAME = "canonical-gamma1"
ARGS = ["--counts", "10,5,1,1,0", "-k", "2", "--epsilon", "1", "--rho", "1/3"]


def mechanism(counts=(10, 5, 1, 1, 0), **kw):
    return exactdp.CanonicalGamma1(list(counts), 2, epsilon=1, rho=Fraction(1, 3), **kw)


def test_dist_classes_match_api(capsys):
    m = mechanism()
    data = run_json(capsys, "dist", NAME, *ARGS, "--outputs", "--dps", 25)
    assert data["class"] == "CanonicalGamma1" and data["output_kind"] == "set"
    assert data["parameters"] == {"d": 5, "k": 2, "epsilon": "1", "base": None, "rho": "1/3"}
    assert "levels" not in data
    classes = m.classes()
    assert [(r["h"], r["t"], r["utility"], r["multiplicity"]) for r in data["classes"]] == [
        (c.h, c.t, str(-c.loss), str(c.size)) for c in classes
    ]
    assert [r["class_probability"] for r in data["classes"]] == [nstr(p, 25) for _, _, p in m.class_probabilities(25)]
    assert [r["output_probability"] for r in data["classes"]] == [nstr(p, 25) for _, p in m.group_output_probabilities(25)]
    assert {frozenset(o["output"]): o["probability"] for o in data["outputs"]} == {
        o: nstr(p, 25) for o, p in m.distribution(25)
    }
    assert data["support_size"] == "10"


def test_dist_table(capsys):
    status, out, err = run(capsys, "dist", NAME, *ARGS)
    assert status == 0 and err == ""
    assert out.splitlines()[0].split() == ["class", "h", "t", "utility", "multiplicity", "P(class)", "P(each", "output)"]
    assert "support size: 10 outputs (sets) in 7 classes (h, t)" in out


def test_levels_refused_with_a_clear_message(capsys):
    status, out, err = run(capsys, "levels", NAME, *ARGS)
    assert_error(status, out, err, "canonical-gamma1 has no utility levels", "two-stage", "exactdp dist canonical-gamma1")
    status, out, err = run(capsys, "levels", NAME, *ARGS, "--json")
    assert_error(status, out, err, "has no utility levels")


@pytest.mark.parametrize("output", [(0, 1), (1, 0), (2, 3), (3, 4)])
def test_prob_matches_api(capsys, output):
    m = mechanism()
    ids = ",".join(map(str, output))
    data = run_json(capsys, "prob", NAME, *ARGS, "--output", ids, "--exact")
    g = m.group_index(output)
    assert (data["h"], data["t"]) == m.groups()[g].utility and data["group"] == g
    assert data["class_multiplicity"] == str(m.groups()[g].multiplicity)
    assert data["output"] == sorted(output)
    assert data["probability"] == nstr(m.probability(output), 30)
    assert data["log_probability"] == nstr(m.log_probability(output), 30)
    assert data["exact"] == str(m.probability_exact(output))
    status, out, _ = run(capsys, "prob", NAME, *ARGS, "--output", ids)
    assert status == 0 and f"class (h, t) = {m.groups()[g].utility}".replace(" ", "") in out.replace(" ", "")


def test_sample_matches_api(capsys):
    m = mechanism()
    data = run_json(capsys, "sample", NAME, *ARGS, "-n", 20, "--seed", 5)
    gen = as_rng(5)
    assert [frozenset(o) for o in data] == [m.sample(gen) for _ in range(20)]


def test_audit_matches_api(capsys):
    counts = (3, 2, 2, 0)
    data = run_json(capsys, "audit", NAME, "--counts", "3,2,2,0", "-k", 2, "--rho", "1/3")
    w = audit.worst_case(lambda c: exactdp.CanonicalGamma1(c, 2, rho=Fraction(1, 3)), counts)
    assert data["value"] == data["worst"]["value"] == nstr(w.loss, 30)
    assert data["verdict"] == w.verdict


def test_certify_runs_over_classes(capsys, tmp_path):
    m = mechanism()
    draws = m.samples(3000, rng=11)
    path = tmp_path / "draws.csv"
    path.write_text("".join(",".join(map(str, sorted(o))) + "\n" for o in draws))
    status, out, err = run(capsys, "certify", NAME, *ARGS, "--samples", path, "--delta", "0.2")
    assert err == "" and status in (0, 3), out  # exact draws: never FAIL at alpha 1e-6 (false alarm <= 1e-6)
    # draws of another mechanism (rho = 1) must be rejected
    other = exactdp.CanonicalGamma1([10, 5, 1, 1, 0], 2, epsilon=1, rho=1).samples(3000, rng=11)
    path.write_text("".join(",".join(map(str, sorted(o))) + "\n" for o in other))
    status, out, _ = run(capsys, "certify", NAME, *ARGS, "--samples", path)
    assert status == 1, out


def test_dist_refuses_past_the_classes_limit_before_listing_them(capsys, monkeypatch):
    """dist lists every class at once: at d = 166,000, k = 200 (33 million classes) it ended
    in a MemoryError traceback after minutes.  Past GAMMA1_GROUPS_LIMIT it is refused at
    once with the limit named; sample is unaffected."""
    from exactdp.mechanisms import canonical_gamma1

    argv = ("dist", "canonical-gamma1", "--counts", "5,4,3,2,1,0", "-k", "3", "--epsilon", "1")
    status, out, err = run(capsys, *argv)
    assert status == 0 and sum(line.startswith("    9 ") for line in out.splitlines()) == 1, err
    monkeypatch.setattr(canonical_gamma1, "GAMMA1_GROUPS_LIMIT", 9)
    assert_error(*run(capsys, *argv), "10 classes", "GAMMA1_GROUPS_LIMIT = 9")
    status, out, err = run(capsys, "sample", "canonical-gamma1", "--counts", "5,4,3,2,1,0", "-k", "3", "--seed", "1")
    assert status == 0, err
