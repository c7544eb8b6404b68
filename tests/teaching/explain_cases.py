"""The mechanisms the walk-through tests explain (every family, exact and certified) and
the corruption of one step's data (a negative control of the checker), imported by the
tests of this folder as ``from tests.teaching.explain_cases import ...``."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import exactdp
from exactdp.teaching.explanation import Table

BASE = Fraction(1, 2)


def vectors():
    for d in (1, 2, 3):
        for c in itertools.product(range(3), repeat=d):
            yield c
    yield from [(3, 1, 1, 0), (2, 2, 2, 2), (5, 3, 3, 1)]


INSTANCES = [(c, k) for c in vectors() for k in range(1, len(c) + 1)]


def build(name, counts, k, exact):
    """The mechanism ``name`` of NAMES on ``counts``, ``k``: base 1/2 when ``exact``, else epsilon 1."""
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


def corrupt(e, key, name, change):
    step = e.step(key)
    data = tuple((n, change(v) if n == name else v) for n, v in step.data)
    steps = tuple(dataclasses.replace(s, data=data) if s.key == key else s for s in e.steps)
    return dataclasses.replace(e, steps=steps)


def bump_last_cell(table, column):
    i = table.columns.index(column)
    rows = list(table.rows)
    rows[-1] = rows[-1][:i] + (rows[-1][i] + 1,) + rows[-1][i + 1:]
    return Table(table.columns, tuple(rows))
