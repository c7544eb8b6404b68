"""exactdp.explain (exactdp/teaching/__init__.py): every shown number checked against the
mechanism and the twins.

Exhaustive small instances (ties, k = 1, k = d, d = 1) for every mechanism, random ones
(hypothesis), the size refusal, seeded walk-throughs and a negative control of the checker.
The renderings and JSON are tested in test_explanation.py, each family's walk-through in
test_<family>.py (PNFJoint's permute-and-flip race in test_joint.py, Peeling's rounds in
test_peeling.py), the shared steps in test_steps.py.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp.errors import ArgumentTypeError, InputLimitError, InvalidParameterError
from exactdp.teaching import explain
from tests.teaching.explain_cases import BASE, INSTANCES, NAMES, build, bump_last_cell, corrupt
from tests.teaching.explain_checker import problems

@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_number_matches_on_exhaustive_small_instances(name):
    for n, (counts, k) in enumerate(INSTANCES):
        m = build(name, counts, k, exact=n % 2 == 0)
        e = explain(m, rng=n)
        assert problems(e, m) == [], (name, counts, k)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(-3, 6), min_size=1, max_size=5), st.data())
def test_random_instances(counts, data):
    k = data.draw(st.integers(1, len(counts)))
    name = data.draw(st.sampled_from(NAMES))
    seed = data.draw(st.integers(-(2**70), 2**70))
    m = build(name, counts, k, exact=data.draw(st.booleans()))
    assert problems(explain(m, rng=seed), m) == []


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
    m = build(name, (3, 1, 1, 0), 2, exact=True)
    e = explain(m, rng=3)
    assert problems(e, m) == []
    assert problems(corrupt(e, key, field, lambda t: bump_last_cell(t, column)), m) != []


def test_checker_detects_a_wrong_sample():
    m = exactdp.Joint((3, 1, 1, 0), 2, base=BASE)
    e = explain(m, rng=3)
    wrong = corrupt(e, "sample", "seed", lambda s: s + 1)
    assert problems(wrong, m) != [] or m.sample(3) == m.sample(4)


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
