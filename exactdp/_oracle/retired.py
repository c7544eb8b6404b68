"""The module paths of result classes before the oracle's engine became ``exactdp._oracle``.

A pickle names a class by its module and name.  Pickles made before the move name four
public classes by private modules that no longer exist (``exactdp._notions.PrivacyProfile``,
...); :func:`install` puts a finder on ``sys.meta_path`` that answers those module names with
a small module holding exactly those classes, taken from the public module that exports them.
New pickles name the public modules (``exactdp.audit``, ``exactdp.testing``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Optional, Sequence

# retired module -> (public module, the names it held that a pickle may name)
RETIRED = {
    "exactdp._notions": ("exactdp.audit", ("PrivacyProfile", "EpsilonForDelta")),
    "exactdp._renyi": ("exactdp.audit", ("ZcdpBracket",)),
    "exactdp._samplers": ("exactdp.testing", ("Sampler",)),
}


class RetiredPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the retired module names of :data:`RETIRED`, and nothing else."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in RETIRED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        public, names = RETIRED[module.__name__]
        home = importlib.import_module(public)
        for name in names:
            setattr(module, name, getattr(home, name))


def install() -> None:
    """Put one :class:`RetiredPaths` on ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(f, RetiredPaths) for f in sys.meta_path):
        sys.meta_path.append(RetiredPaths())
