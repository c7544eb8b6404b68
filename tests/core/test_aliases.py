"""Tests of exactdp.core.aliases: the aliases import only the standard library, and each
kind of value an alias names is accepted by the validation of that argument."""

from __future__ import annotations

import random
import subprocess
import sys
import typing
from decimal import Decimal
from fractions import Fraction

import gmpy2
import numpy as np
import sympy

from exactdp.core import aliases, validation


def test_every_listed_alias_exists():
    assert all(hasattr(aliases, name) for name in aliases.__all__)


def test_importing_the_aliases_loads_no_heavy_module():
    code = ("import sys\nimport exactdp.core.aliases\n"
            "print(sorted(m for m in ('numpy', 'sympy', 'mpmath', 'flint', 'gmpy2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", (out.stdout, out.stderr)


def test_the_values_each_alias_names_are_accepted():
    for value in (3, np.int64(3), gmpy2.mpz(3), 3.0, Decimal("3")):  # IntLike
        assert validation.as_int(value, "n") == 3
    for value in (Fraction(1, 10), "0.1", "1/10", sympy.Rational(1, 10), Decimal("0.1")):  # RationalLike
        assert validation.as_rational(value, "epsilon") == Fraction(1, 10)
    assert validation.as_counts(iter([np.int64(2), 1.0, Decimal(0)])) == (2, 1, 0)  # CountsLike
    assert validation.as_sequence_output(np.array([1, 0]), 3, 2) == (1, 0)  # OutputLike
    for rng in (None, 5, np.int64(5), random.Random(5)):  # RngLike
        assert isinstance(validation.as_rng(rng), random.Random)


def test_the_rng_alias_is_what_as_rng_accepts():
    assert set(typing.get_args(aliases.RngLike)) == {typing.SupportsIndex, random.Random, type(None)}
