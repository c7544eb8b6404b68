"""The level-table protocol (exactdp.core.levels.LevelTableLike): every table type provides it.

A selection rule and a mechanism read a table only through ``LevelTableLike``; ``LevelTable``
(every level in memory) and ``BlockLevelTable`` (levels in blocks within a memory budget) are
both checked against it here, member by member and signature by signature, and the block
tables' ``_make_table`` overrides need no ``type: ignore[override]``.
"""

from __future__ import annotations

import inspect
import pathlib
import re
from fractions import Fraction
from typing import Protocol, runtime_checkable

import pytest

import exactdp
from exactdp.core.level_blocks import BlockLevelTable
from exactdp.core.levels import Level, LevelTable, LevelTableLike
from exactdp.core.scale import Scale

ROOT = pathlib.Path(__file__).resolve().parents[2]


@runtime_checkable
class _Checked(LevelTableLike, Protocol):
    """The protocol made checkable at run time, in this test only."""


def _members() -> list[str]:
    return sorted(n for n in vars(LevelTableLike) if not n.startswith("__") or n == "__len__"
                  if n not in ("_is_protocol", "_is_runtime_protocol", "__protocol_attrs__",
                               "__non_callable_proto_members__", "__abstractmethods__", "_abc_impl",
                               "__subclasshook__", "__parameters__", "__orig_bases__"))


TABLES = {
    "LevelTable": lambda: LevelTable([Level(0, 1), Level(-1, 2)], Scale(epsilon=Fraction(1))),
    "Joint": lambda: exactdp.Joint([3, 1, 0], 2, epsilon=1).table,
    "JointSet": lambda: exactdp.JointSet([3, 1, 0], 2, epsilon=1).table,
    "Canonical": lambda: exactdp.Canonical([3, 1, 0], 2, epsilon=1).table,
    "Peeling": lambda: exactdp.Peeling([3, 1, 0], 2, epsilon=1).table,
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_type_provides_the_protocol(name):
    table = TABLES[name]()
    assert isinstance(table, _Checked), [m for m in _members() if not hasattr(table, m)]
    assert table.levels == tuple(table.iter_levels()) and len(table) == len(table.levels)
    assert list(table.utilities) == [lv.utility for lv in table.levels]


def test_the_block_table_is_a_table_of_the_protocol_by_signature():
    # same members, same parameter names: an override of _make_table returning either is sound
    for cls in (LevelTable, BlockLevelTable):
        for member in _members():
            theirs, ours = inspect.getattr_static(cls, member, None), inspect.getattr_static(LevelTableLike, member)
            if callable(ours) and not isinstance(ours, property):
                assert callable(theirs), (cls.__name__, member)
                assert list(inspect.signature(theirs).parameters) == list(inspect.signature(ours).parameters), \
                    (cls.__name__, member)


def test_the_protocol_check_can_fail():
    class Half:  # levels and a scale, no weights
        levels = ()
        scale = None

    assert not isinstance(Half(), _Checked)
    assert "relative_weights" in _members() and "index_of" in _members()


def test_no_table_override_needs_a_type_ignore():
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "exactdp").rglob("*.py")
             if re.search(r"def _make_table\(self\).*type: ignore", p.read_text(encoding="utf-8"))]
    assert not found, found
