"""exactdp._oracle.report (exported by exactdp.audit): the records of a worst case and their
forms.  The JSON form's values against every neighbour's value from the brute-force twins
(tests/twins/worst.py: every neighbour of the change vectors, each pair's notion from exact
Fractions), its order and its counts; the text table's rows and columns per notion; the
verdict's reading (``passed``, no truth value); pickling under exactdp.audit.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pickle
import re
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import audit

from twins import brute_probabilities_base
from twins.worst import neighbours_brute, worst_case_brute

HALF = Fraction(1, 2)
COUNTS = (3, 2, 2, 0)
FACTORY = functools.partial(exactdp.Joint, k=2, base=HALF)


def law(counts):
    return brute_probabilities_base(counts, 2, HALF)


@functools.lru_cache(maxsize=None)
def every_neighbour(notion: str, relation: str = "add_remove"):
    kwargs = {"epsilon": Fraction(1, 2), "delta": Fraction(1, 10)} if notion == "approx" else {}
    kwargs.update({"alpha": 2, "epsilon": 1} if notion == "renyi" else {})
    return audit.worst_case(FACTORY, COUNTS, relation, dps=20, notion=notion, symmetric=False, **kwargs)


def close(text: str, value, digits: int = 18) -> bool:
    with mpmath.workdps(60):
        return abs(mpmath.mpf(text) - value) <= abs(value) * mpmath.mpf(10) ** -digits + mpmath.mpf(10) ** -50


@pytest.mark.parametrize("notion, twin", [("pure", {}), ("approx", {"epsilon": Fraction(1, 2)}),
                                          ("renyi", {"alpha": 2})])
def test_json_values_are_every_neighbours_value_worst_first(notion, twin):
    w = every_neighbour(notion)
    want, values = worst_case_brute(law, COUNTS, "add_remove", notion, **twin)
    d = json.loads(json.dumps(w.to_dict()))  # JSON-ready: plain strings, numbers, lists
    assert d["notion"] == notion and d["dps"] == 20 and d["counts"] == ["3", "2", "2", "0"]
    assert d["neighbours_total"] == str(len(neighbours_brute(COUNTS, "add_remove")))
    assert d["neighbours_audited"] == len(d["results"]) == len(values)
    assert close(d["value"], want) and d["worst"]["value"] == d["results"][0]["value"]
    got = {tuple(int(x) for x in r["neighbour"]): r["value"] for r in d["results"]}
    assert got.keys() == values.keys()
    assert all(close(got[n], values[n]) for n in values), notion
    shown = [mpmath.mpf(r["value"]) for r in d["results"]]
    assert shown == sorted(shown, reverse=True)
    for r in d["results"]:
        assert [int(a) - int(b) for a, b in zip(r["neighbour"], d["counts"])] == r["change"]


def test_json_of_the_pure_loss_names_the_worst_output_and_its_log_probabilities():
    w = every_neighbour("pure")
    worst = w.to_dict()["worst"]
    P, Q = law(COUNTS), law(w.neighbour)
    o = tuple(worst["witness"])
    with mpmath.workdps(60):
        assert close(worst["log_probability_counts"], mpmath.log(mpmath.mpf(P[o].numerator) / P[o].denominator))
        assert close(worst["log_probability_neighbour"], mpmath.log(mpmath.mpf(Q[o].numerator) / Q[o].denominator))
    assert int(worst["outputs_with_this_loss"]) >= 1
    assert worst["direction"] == ("a>b" if P[o] > Q[o] else "b>a")


def test_json_of_approx_lists_the_carriers():
    w = every_neighbour("approx")
    carriers = w.to_dict()["worst"]["carriers"]
    assert carriers and all(isinstance(o, list) and int(n) >= 1 for o, n in carriers)
    assert w.carriers and [list(o) for o, _ in w.carriers] == [o for o, _ in carriers]


@pytest.mark.parametrize("notion, columns", [
    ("pure", ["neighbour", "change", "privacy loss", "witness", "direction"]),
    ("approx", ["neighbour", "change", "delta(1/2)", "witness", "direction"]),
    ("renyi", ["neighbour", "change", "D_2", "direction"]),
])
def test_table_shows_the_worst_rows_with_the_notions_columns(notion, columns):
    w = every_neighbour(notion)
    lines = w.table(limit=3, digits=6).splitlines()
    assert re.split(r"\s{2,}", lines[0].strip()) == columns
    assert len(lines) == 4 and len(w.results) > 3
    for row, r in zip(lines[1:], w.results):
        cells = re.split(r"\s{2,}", row.strip())
        assert len(cells) == len(columns) and cells[0] == ",".join(map(str, r.neighbour))
        assert cells[columns.index("direction")] == r.direction
        assert close(cells[2], r.value, 5)


def test_text_names_the_value_the_claim_and_the_verdict():
    w = every_neighbour("pure")
    text = str(w)
    assert text.startswith("worst-case privacy loss ") and f": {w.verdict}; neighbour {w.neighbour}" in text
    assert "claimed epsilon" in text
    assert str(every_neighbour("renyi")).startswith("worst-case Renyi divergence D_2 ")
    assert str(every_neighbour("approx")).startswith("worst-case delta(1/2) ")


@pytest.mark.parametrize("verdict, passed", [("below", True), ("attained", True), ("violated", False),
                                             ("inconclusive", False)])
def test_passed_reads_the_verdict_and_there_is_no_truth_value(verdict, passed):
    w = dataclasses.replace(every_neighbour("pure"), verdict=verdict)
    assert w.passed is passed and w.satisfied is passed
    with pytest.raises(TypeError, match=r"\.passed .*\.verdict"):
        bool(w)
    with pytest.raises(TypeError, match=r"\.value"):
        bool(w.results[0])


def test_a_neighbour_record_from_its_privacy_loss_alone():
    w = every_neighbour("pure")
    r = audit.NeighbourLoss(w.neighbour, w.change, w.detail)
    assert (r.value, r.witness, r.direction) == (w.detail.value, w.detail.witness, w.detail.direction)


def test_records_pickle_under_exactdp_audit():
    w = every_neighbour("pure")
    assert type(w).__module__ == type(w.results[0]).__module__ == "exactdp.audit"
    back = pickle.loads(pickle.dumps(w))
    assert back.to_dict() == w.to_dict() and back.table() == w.table()


def coin(counts):
    """A third-party law over two labels: "x" with odds ``2**(c_0 - c_1)``."""
    odds = Fraction(2) ** (counts[0] - counts[1])
    return {"x": odds / (1 + odds), "y": 1 / (1 + odds)}


def test_a_mappings_outputs_that_are_not_item_ids_are_shown_by_repr():
    w = audit.worst_case(coin, (1, 0), epsilon=2, dps=20)
    d = w.to_dict()
    assert d["worst"]["witness"] in ("'x'", "'y'") and d["mechanism"].startswith("<mapping with 2 outputs")
    assert all(r["witness"] in ("'x'", "'y'") for r in d["results"])
