"""exactdp._oracle.notions.names: the notion classes by short name, and an output as JSON."""

from __future__ import annotations

import pytest

from exactdp.audit import ApproximateDP, PureDP, RenyiDP, ZCDP
from exactdp._oracle.notions.names import NOTION_KINDS, notion_kind, output_json
from exactdp.errors import InvalidParameterError


def test_every_notion_is_registered_under_its_name():
    assert NOTION_KINDS == {"pure": PureDP, "approx": ApproximateDP, "renyi": RenyiDP, "zcdp": ZCDP}
    assert all(notion_kind(name).name == name for name in NOTION_KINDS)


@pytest.mark.parametrize("name", ["bogus", "Pure", None, 3])
def test_an_unknown_name_is_refused_naming_it(name):
    with pytest.raises(InvalidParameterError) as info:
        notion_kind(name)
    assert info.value.argument == "notion" and "must be one of 'pure', 'approx', 'renyi', 'zcdp'" in str(info.value)


def test_output_json():
    assert output_json(None) is None
    assert output_json((2, 0)) == [2, 0]  # a sequence keeps its order
    assert output_json(frozenset({3, 1})) == [1, 3]  # a set is sorted
    assert output_json("x") == "'x'"  # not item ids: its repr
