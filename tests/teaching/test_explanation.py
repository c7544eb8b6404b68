"""Tests of exactdp.teaching.explanation: an Explanation's three renderings and its exact
JSON round trip, the step lookup, the size limit, the recording generator (the same stream
as random.Random), and the values shown as text."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

import exactdp
from exactdp.errors import ArgumentTypeError, InputLimitError, InvalidParameterError
from exactdp.teaching import explain, from_dict
from exactdp.teaching.explanation import RecordingRandom, Step, Table, check_size, render_value
from tests.teaching.explain_cases import BASE, NAMES, build


@pytest.mark.parametrize("name", NAMES)
def test_renderings_and_json_round_trip(name):
    m = build(name, (3, 1, 1, 0), 2, exact=name.endswith("pnf"))
    e = explain(m, rng=11)
    text, md = str(e), e.to_markdown()
    assert text.startswith(e.title) and e.citation.arxiv in text
    assert md.startswith(f"# {e.title}") and md.count("\n## ") == len(e.steps)
    for s in e.steps:
        assert s.notation in text and s.notation in md
    back = from_dict(json.loads(json.dumps(e.to_dict())))
    assert back == e and str(back) == text



def test_json_is_exact():
    e = explain(exactdp.Joint([10**30, 5, 1], 2, base=BASE), rng=1)
    d = json.loads(json.dumps(e.to_dict()))
    assert d["steps"][0]["data"][0][1]["rows"][0] == [1, 0, 10**30]  # a big int stays an int
    utilde = dict(d["steps"][2]["data"])["Ũ"]["rows"][0]
    assert all(isinstance(x, str) and "/" in x for x in utilde[1:])  # Fractions as "p/q"



def test_recording_random_is_the_same_stream():
    rec, plain = RecordingRandom(77), random.Random(77)
    assert [rec.getrandbits(64), rec.randrange(10**30), rec.randrange(3, 9)] == [
        plain.getrandbits(64), plain.randrange(10**30), plain.randrange(3, 9)]
    assert [c[0] for c in rec.calls] == ["getrandbits", "randrange", "randrange"]
    assert rec.calls[2][1] == 6  # randrange(3, 9): six values


def test_step_lookup():
    s = Step("k", "n", "t", (("a", 1),))
    assert s["a"] == 1 and s.names() == ("a",)
    with pytest.raises(KeyError):
        s["b"]


def test_check_size_names_the_limit_and_how_to_raise_it():
    check_size(12, 12)
    with pytest.raises(InputLimitError, match=r"max_size=12.*--max-size") as err:
        check_size(13, 12)
    assert err.value.argument == "max_size"
    with pytest.raises(InvalidParameterError, match="max_size"):
        check_size(3, 0)
    with pytest.raises(ArgumentTypeError, match="max_size"):
        check_size(3, "12")


def test_render_value_shows_exact_values_exactly():
    assert render_value(Fraction(1, 3)) == "1/3"
    assert render_value(10**40) == str(10**40)
    assert render_value(True) == "yes"
    assert render_value(None) == "-" and render_value(False) == "no"
    assert render_value((1, Fraction(-2, 3), (None, True))) == "(1, -2/3, (-, yes))"
