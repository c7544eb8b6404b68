"""Heavy optional-at-first-use modules, imported on first attribute access.

sympy is needed only for exact closed forms (``probability_exact``) and a few oracle
paths, yet importing it is slow (docs/benchmarks.md); modules name it through :data:`sympy` here so
that building a mechanism and computing certified probabilities never pays for it.
The proxy does not touch ``sys.modules``: code elsewhere that imports sympy gets the real
module, and ``exactdp.core.lazy.sympy.X`` is exactly ``sympy.X``.

>>> from exactdp.core.lazy import sympy
>>> sympy.Rational(1, 3) + sympy.Rational(1, 6)
1/2
"""

from __future__ import annotations

import importlib
import types
from typing import Any

__all__ = ["sympy"]


class _LazyModule(types.ModuleType):
    """A stand-in for the module ``name`` that imports it on first attribute access."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_module"] = None

    def _load(self) -> types.ModuleType:
        module = self.__dict__["_module"]
        if module is None:
            module = importlib.import_module(self.__name__)
            self.__dict__["_module"] = module
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __dir__(self) -> list[str]:
        return dir(self._load())


sympy: Any = _LazyModule("sympy")
