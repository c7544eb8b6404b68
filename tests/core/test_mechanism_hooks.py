"""The hooks a mechanism may provide are declared on Mechanism, each with its default.

The oracle asks a mechanism for them without reflection: ``groups_rule()`` (the rule whose
levels are the groups, or None), ``counts_pairs`` with ``pair_cells``/``pair_count_declined``,
and ``pair_head``.  A subclass changes what the oracle does only through them.
"""

from __future__ import annotations

import pytest

import exactdp
from exactdp._oracle.cells import mechanism_pairs
from exactdp._oracle.groups import Groups
from exactdp.core.mechanism import Mechanism

HOOKS = {"groups_rule": (), "pair_cells": ("other",), "pair_count_declined": ("other",),
         "pair_head": ("other", "depth")}


def test_every_hook_is_declared_on_mechanism_with_its_default():
    import inspect

    for hook, params in HOOKS.items():
        assert hook in vars(Mechanism), hook
        assert tuple(inspect.signature(getattr(Mechanism, hook)).parameters)[1:] == params, hook
    assert Mechanism.counts_pairs is False
    m = exactdp.Canonical([3, 1, 0], 2, epsilon=1)  # overrides none of the pair hooks
    assert m.pair_cells(m) is None and m.pair_count_declined(m) == "" and m.pair_head(m) is None
    assert m.groups_rule() is m.rule


@pytest.mark.parametrize("cls, rule", [(exactdp.Joint, True), (exactdp.PNFJoint, True), (exactdp.JointSet, True),
                                        (exactdp.Canonical, True), (exactdp.CanonicalGamma1, False),
                                        (exactdp.Peeling, False)])
def test_groups_rule_is_the_rule_exactly_when_the_groups_are_levels(cls, rule):
    m = cls([3, 1, 1, 0], 2, epsilon=1)
    assert (m.groups_rule() is m.rule) if rule else m.groups_rule() is None
    assert (Groups(m, 20).batched_rule() is not None) == rule


class _NotLevels(exactdp.Joint):
    """Joint declaring that its groups are not one rule's levels (without overriding a
    group hook): the oracle must then take the per-group path."""

    def groups_rule(self):
        return None


def test_the_oracle_asks_the_declared_hook_not_the_class():
    m = _NotLevels([3, 1, 0], 2, epsilon=1)
    g = Groups(m, 20)
    assert g.batched_rule() is None and g.log_form_rule() is None and g.log_form() is None
    assert not g.same_weight_as(Groups(exactdp.Joint([3, 1, 0], 2, epsilon=1), 20))
    plain = Groups(exactdp.Joint([3, 1, 0], 2, epsilon=1), 20)
    assert [str(p) for p in g.output_probabilities()] == [str(p) for p in plain.output_probabilities()]


class _NoPairCount(exactdp.Joint):
    counts_pairs = False


def test_the_pair_count_is_asked_only_of_mechanisms_declaring_it():
    a, b = exactdp.Joint([3, 1, 0], 2, epsilon=1), exactdp.Joint([3, 2, 0], 2, epsilon=1)
    cells, visited = mechanism_pairs(a, b, 10**6)
    assert visited == 0  # counted without visiting outputs
    a2, b2 = _NoPairCount([3, 1, 0], 2, epsilon=1), _NoPairCount([3, 2, 0], 2, epsilon=1)
    listed, visited = mechanism_pairs(a2, b2, 10**6)
    assert visited > 0
    assert {key: n for key, (_, n) in listed.items()} == {key: n for key, (_, n) in cells.items()}


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_a_mechanism_with_its_own_group_law_declares_it():
    """A class of the package that overrides a group hook with a law of its own (not the
    rule over the level table) also overrides ``groups_rule()``: the oracle reads the
    declaration only (``_group_key`` and ``_group_probability_exact`` alone keep the rule's
    law over other keys, as Canonical's exact form does)."""
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(exactdp.__path__, "exactdp."):
        if ".cli" not in info.name and "__main__" not in info.name:
            importlib.import_module(info.name)
    law = ("groups", "_group_probability", "_group_output_probabilities")
    own = [c for c in _subclasses(Mechanism) if c.__module__.startswith("exactdp.")
           and any(h in vars(c) for h in law)]
    assert {c.__name__ for c in own} >= {"Peeling", "CanonicalGamma1", "SetMarginal"}
    undeclared = [c.__qualname__ for c in own if not any("groups_rule" in vars(b) for b in c.__mro__[:-1]
                                                         if b is not Mechanism and issubclass(b, Mechanism))]
    assert not undeclared, undeclared
    assert all(c.groups_rule(None) is None for c in own)  # the declaration needs no instance
