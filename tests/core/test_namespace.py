"""Tests of exactdp.core.namespace: a public module's ``dir()`` lists its ``__all__`` and its
dunders, read when called (names added later count), and none of its imported helpers."""

from __future__ import annotations

import importlib

import pytest

from exactdp.core.namespace import public_dir


def test_public_dir_lists_all_and_dunders_only():
    namespace = {"__all__": ["b", "a"], "__doc__": "", "__name__": "m", "a": 1, "b": 2, "mpmath": None, "_x": 0}
    assert public_dir(namespace)() == ["__all__", "__doc__", "__name__", "a", "b"]


def test_public_dir_reads_the_namespace_when_called():
    namespace = {"__all__": ["a"]}
    listing = public_dir(namespace)
    namespace["__all__"] = ["a", "later"]
    namespace["__version__"] = "1"
    assert listing() == ["__all__", "__version__", "a", "later"]


@pytest.mark.parametrize("name", ["exactdp.audit", "exactdp.certify", "exactdp.testing", "exactdp.accounting"])
def test_the_oracle_modules_use_it(name):
    module = importlib.import_module(name)
    listed = dir(module)
    assert set(module.__all__) <= set(listed)
    assert not [n for n in listed if not n.startswith("__") and n not in module.__all__]
