"""Tests of exactdp.core.lazy: ``sympy`` is imported on first attribute access only, and
then every attribute is exactly the real module's."""

from __future__ import annotations

import subprocess
import sys

import sympy as real_sympy

from exactdp.core.lazy import sympy


def test_attributes_are_the_real_modules():
    assert sympy.Rational is real_sympy.Rational and sympy.exp is real_sympy.exp
    assert sympy.Rational(1, 3) + sympy.Rational(1, 6) == real_sympy.Rational(1, 2)
    assert "Rational" in dir(sympy)


def test_importing_the_proxy_does_not_import_sympy():
    code = ("import sys\nfrom exactdp.core.lazy import sympy\nassert 'sympy' not in sys.modules\n"
            "sympy.Integer\nassert 'sympy' in sys.modules\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_an_unknown_attribute_is_an_attribute_error():
    try:
        sympy.no_such_name_in_sympy
    except AttributeError as err:
        assert "no_such_name_in_sympy" in str(err)
    else:
        raise AssertionError("no AttributeError")
