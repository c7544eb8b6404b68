"""exactdp._oracle.ids (public through exactdp.certify and exactdp.testing): a draw as an exactdp
output, a draw of labels through an ``id_map``, and the check of the map.

References: the definitions written out here (a tuple of Python ints in draw order, a frozenset
for sets, each label looked up in the map by hand); every refusal must name its argument.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactdp._oracle.ids import check_id_map, normalise_output, relabel
from exactdp.errors import InvalidOutputError, InvalidParameterError

IDS = st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=6, unique=True)
CONTAINERS = {
    "list": list,
    "tuple": tuple,
    "int64 array": lambda x: np.array(x, dtype=np.int64),
    "int32 array": lambda x: np.array(x, dtype=np.int32),
    "uint64 array": lambda x: np.array(x, dtype=np.uint64),
    "numpy scalars": lambda x: [np.int64(i) for i in x],
}


@settings(max_examples=40, deadline=None)
@given(IDS, st.sampled_from(sorted(CONTAINERS)))
def test_normalise_output_is_the_ids_as_python_ints(ids, container):
    raw = CONTAINERS[container](ids)
    seq = normalise_output(raw)
    assert seq == tuple(ids) and all(type(i) is int for i in seq)
    sets = normalise_output(raw, "set")
    assert sets == frozenset(ids) and all(type(i) is int for i in sets)


@pytest.mark.parametrize("one", [2, np.int64(2), np.uint8(2)])
def test_one_item_id_is_the_output_of_a_top_1_selection(one):
    assert normalise_output(one) == (2,) and type(normalise_output(one)[0]) is int
    assert normalise_output(one, "set") == frozenset({2})


def test_a_one_item_set_is_a_sequence_but_a_larger_one_is_not():
    assert normalise_output({4}) == (4,)
    with pytest.raises(InvalidOutputError, match=r"needs an ordered output .*\.as_sets\(\)") as info:
        normalise_output({1, 2})
    assert info.value.argument == "output"
    assert normalise_output({1, 2}, "set") == frozenset({1, 2})


@pytest.mark.parametrize("output, match", [
    ("ab", r"must be an iterable of item ids \(labels\? pass id_map="),
    (b"ab", r"must be an iterable of item ids \(labels\? pass id_map="),
    (None, r"must be an iterable of item ids$"),
    ([0, "b"], r"item id 'b' is not an integer \(labels\? pass id_map="),
    ([0, 1.0], r"item id 1\.0 is not an integer$"),
    ([True, 0], r"item id True is not an integer"),
    (True, r"item id True is not an integer"),
    (3.5, r"must be an iterable of item ids"),
])
def test_what_is_not_a_draw_of_item_ids_is_refused_by_name(output, match):
    with pytest.raises(InvalidOutputError, match=match) as info:
        normalise_output(output)
    assert info.value.argument == "output"


LABELS = st.lists(st.text(min_size=1, max_size=3), min_size=1, max_size=5, unique=True)


@settings(max_examples=40, deadline=None)
@given(LABELS, st.randoms(use_true_random=False))
def test_relabel_looks_each_label_up(labels, rnd):
    positions = list(range(len(labels)))
    rnd.shuffle(positions)
    id_map = dict(zip(labels, positions))
    draw = labels[:]
    rnd.shuffle(draw)
    expected = [id_map[x] for x in draw]
    assert relabel(draw, id_map) == expected
    assert relabel(tuple(draw), id_map) == expected
    assert relabel(np.array(draw, dtype=object), id_map) == expected
    assert relabel(draw[0], id_map) == [id_map[draw[0]]]  # one text label, never its characters


def test_one_hashable_label_of_a_top_1_draw():
    assert relabel(("a", "b"), {("a", "b"): 3, "a": 0, "b": 1}) == [0, 1]  # a tuple is a draw of labels
    assert relabel(7, {7: 2}) == [2]
    assert relabel(frozenset({"x"}), {frozenset({"x"}): 1}) == [1]


@pytest.mark.parametrize("output, id_map, match", [
    (["fig", "plum"], {"fig": 0}, "the label 'plum' is not in id_map"),
    ("plum", {"fig": 0}, "the label 'plum' is not in id_map"),
    ([["fig"]], {"fig": 0}, r"the label \['fig'\] is not in id_map"),
    (3.5, {"fig": 0}, "is not a label in id_map nor an iterable of labels"),
])
def test_relabel_names_the_label_it_cannot_map(output, id_map, match):
    with pytest.raises(InvalidOutputError, match=match) as info:
        relabel(output, id_map)
    assert info.value.argument == "output"


def test_check_id_map_returns_a_good_map_itself():
    good = {"a": 0, "b": np.int64(2), 5: 1}
    assert check_id_map(good) is good
    assert check_id_map(good, 3) is good


@pytest.mark.parametrize("id_map, d, match", [
    ([("a", 0)], None, "must be a mapping"),
    ({"a": True}, None, "maps 'a' to True: item positions are integers"),
    ({"a": 1.0}, None, "maps 'a' to 1.0: item positions are integers"),
    ({"a": -1}, None, "maps 'a' to -1: item positions are non-negative"),
    ({"a": 3}, 3, r"maps 'a' to 3: item positions are 0\.\.2"),
    ({"a": 0, "b": 1, "c": 0}, None, "maps 'a' and 'c' to the same item position 0"),
])
def test_check_id_map_refuses_by_name(id_map, d, match):
    with pytest.raises(InvalidParameterError, match=match) as info:
        check_id_map(id_map, d)
    assert info.value.argument == "id_map"
