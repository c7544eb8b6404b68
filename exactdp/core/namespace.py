"""One module ``__dir__`` for the public modules that list their names in ``__all__``.

``dir(exactdp.audit)`` (and tab completion) would otherwise offer every helper the module
imports (``mpmath``, ``sympy``, typing's names, ...).  Each such module sets
``__dir__ = public_dir(globals())`` instead of writing the same function again.

>>> namespace = {"__all__": ["worst_case"], "__doc__": "", "worst_case": None, "mpmath": None}
>>> public_dir(namespace)()
['__all__', '__doc__', 'worst_case']
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["public_dir"]


def public_dir(namespace: dict[str, Any]) -> Callable[[], list[str]]:
    """A module-level ``__dir__`` (PEP 562) listing the module's ``__all__`` and its
    dunders, read from ``namespace`` (the module's ``globals()``) when called."""

    def __dir__() -> list[str]:
        dunders = {name for name in namespace if name.startswith("__") and name.endswith("__")}
        return sorted(set(namespace["__all__"]) | dunders)

    return __dir__
