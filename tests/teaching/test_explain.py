"""exactdp.explain: every shown number checked against the mechanism and the twins.

Exhaustive small instances (ties, k = 1, k = d, d = 1) for every mechanism, random ones
(hypothesis), the three renderings, the JSON round trip, the size refusal, a negative
control of the checker, and the law of the walk-throughs that draw by another route
(PNFJoint's permute-and-flip race, Peeling's rounds).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp.errors import ArgumentTypeError, InputLimitError, InvalidParameterError
from exactdp.teaching import explain, from_dict
from exactdp.teaching.explanation import RecordingRandom, Step, Table
from tests.teaching.explain_checker import problems
from twins.chi2 import assert_fits
from twins.peeling import peel_exact

BASE = Fraction(1, 2)


def _vectors():
    for d in (1, 2, 3):
        for c in itertools.product(range(3), repeat=d):
            yield c
    yield from [(3, 1, 1, 0), (2, 2, 2, 2), (5, 3, 3, 1)]


INSTANCES = [(c, k) for c in _vectors() for k in range(1, len(c) + 1)]


def _build(name, counts, k, exact):
    scale = {"base": BASE} if exact else {"epsilon": 1}
    return {
        "joint": lambda: exactdp.Joint(counts, k, **scale),
        "pnf-joint": lambda: exactdp.PNFJoint(counts, k, **scale),
        "joint-set": lambda: exactdp.JointSet(counts, k, **scale),
        "canonical": lambda: exactdp.Canonical(counts, k, **scale, rho=1),
        "canonical-pnf": lambda: exactdp.Canonical(counts, k, **scale, rho=Fraction(1, 3), noise="exponential"),
        "gamma1": lambda: exactdp.CanonicalGamma1(counts, k, **scale),
        "peeling": lambda: exactdp.Peeling(counts, k, **scale),
        "peeling-pnf": lambda: exactdp.Peeling(counts, k, **scale, noise="exponential"),
    }[name]()


NAMES = ["joint", "pnf-joint", "joint-set", "canonical", "canonical-pnf", "gamma1", "peeling", "peeling-pnf"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_number_matches_on_exhaustive_small_instances(name):
    for n, (counts, k) in enumerate(INSTANCES):
        m = _build(name, counts, k, exact=n % 2 == 0)
        e = explain(m, rng=n)
        assert problems(e, m) == [], (name, counts, k)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(-3, 6), min_size=1, max_size=5), st.data())
def test_random_instances(counts, data):
    k = data.draw(st.integers(1, len(counts)))
    name = data.draw(st.sampled_from(NAMES))
    seed = data.draw(st.integers(-(2**70), 2**70))
    m = _build(name, counts, k, exact=data.draw(st.booleans()))
    assert problems(explain(m, rng=seed), m) == []


def _corrupt(e, key, name, change):
    step = e.step(key)
    data = tuple((n, change(v) if n == name else v) for n, v in step.data)
    steps = tuple(dataclasses.replace(s, data=data) if s.key == key else s for s in e.steps)
    return dataclasses.replace(e, steps=steps)


def _bump_last_cell(table, column):
    i = table.columns.index(column)
    rows = list(table.rows)
    rows[-1] = rows[-1][:i] + (rows[-1][i] + 1,) + rows[-1][i + 1:]
    return Table(table.columns, tuple(rows))


@pytest.mark.parametrize("name, key, field, column", [
    ("joint", "mtilde", "entries", "m̃(Ũ_ij)"),
    ("joint", "levels", "levels", "sum of m̃"),
    ("joint", "mtilde", "entries", "p = prod_r n_r"),
    ("joint-set", "paths", "path counts", "N(M): paths (Lemma 7)"),
    ("canonical", "classes", "classes", "size"),
    ("gamma1", "stage2", "heads", "x_(h+1)"),
    ("peeling", "round_1", "remaining", "count"),
])
def test_checker_detects_a_corrupted_step(name, key, field, column):
    m = _build(name, (3, 1, 1, 0), 2, exact=True)
    e = explain(m, rng=3)
    assert problems(e, m) == []
    assert problems(_corrupt(e, key, field, lambda t: _bump_last_cell(t, column)), m) != []


def test_checker_detects_a_wrong_sample():
    m = exactdp.Joint((3, 1, 1, 0), 2, base=BASE)
    e = explain(m, rng=3)
    wrong = _corrupt(e, "sample", "seed", lambda s: s + 1)
    assert problems(wrong, m) != [] or m.sample(3) == m.sample(4)


@pytest.mark.parametrize("name", NAMES)
def test_renderings_and_json_round_trip(name):
    m = _build(name, (3, 1, 1, 0), 2, exact=name.endswith("pnf"))
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


def test_seeded_walk_through_repeats_and_moves_a_generator_on():
    m = exactdp.Joint([4, 3, 3, 1], 2, epsilon=1)
    assert explain(m, rng=5) == explain(m, rng=5)
    gen = random.Random(9)
    twin = random.Random(9)
    e = explain(m, rng=gen)
    assert e.step("sample")["sample"] == m.sample(twin)
    assert gen.getstate() == twin.getstate()  # moved on past exactly the integers used
    fresh = explain(m)  # a fresh OS seed, shown
    assert isinstance(fresh.step("sample")["seed"], int)
    assert problems(fresh, m) == []


def test_size_refusal_names_the_limit_and_how_to_raise_it():
    m = exactdp.Joint(list(range(13)), 1, epsilon=1)
    with pytest.raises(InputLimitError, match=r"max_size=12.*d <= 12.*--max-size") as err:
        explain(m)
    assert err.value.argument == "max_size"
    assert problems(explain(m, max_size=13, rng=1), m) == []
    with pytest.raises(InvalidParameterError, match="max_size"):
        explain(m, max_size=0)
    with pytest.raises(ArgumentTypeError, match="mechanism"):
        explain("joint")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="rng"):
        explain(exactdp.Joint([1, 0], 1), rng="seed")  # type: ignore[arg-type]


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


# -- the law of the walk-through that draws by another route (Peeling) -----------------
# False-alarm rate of each goodness-of-fit test: alpha = 1e-6.
def test_pnf_race_is_algorithm5s_draw_and_the_checker_sees_a_wrong_winner():
    m = exactdp.PNFJoint([3, 2, 2, 0], 2, base=BASE)
    e = explain(m, rng=8)
    assert problems(e, m) == []
    rows = e.step("sample_race")["levels"].rows
    flipped = Table(e.step("sample_race")["levels"].columns, tuple(r[:6] + (not r[6],) for r in rows))
    assert problems(_corrupt(e, "sample_race", "levels", lambda t: flipped), m) != []


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_peeling_walk_through_has_the_law_of_peeling(noise):
    m = exactdp.Peeling([2, 1, 1], 2, base=BASE, noise=noise)
    draws = [explain(m, rng=s).step("sample")["sample"] for s in range(1200)]
    assert_fits(draws, peel_exact(m.counts, 2, BASE, noise))


@pytest.mark.slow
def test_peeling_law_negative_control():
    # the walk-through's draws against a wrong law (every sequence equally likely) must be rejected
    m = exactdp.Peeling([2, 1, 1], 2, base=Fraction(1, 4))
    draws = [explain(m, rng=s).step("sample")["sample"] for s in range(1200)]
    uniform = {s: Fraction(1, 6) for s in peel_exact(m.counts, 2, m.base, "gumbel")}
    with pytest.raises(AssertionError):
        assert_fits(draws, uniform)
