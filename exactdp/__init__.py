"""exactdp: the exact reference implementation of differentially private top-k selection.

Counts and multiplicities are exact integers, probabilities exact (sympy) or certified
``mpmath.mpf`` values (relative error at most ``10**-dps``); samplers use integer
randomness only.  The definitions are in ``docs/definitions.md``, the guide in ``docs/``.

>>> import exactdp
>>> m = exactdp.Joint([10, 5, 1, 1], k=2, epsilon=1)
>>> m.levels()[0]
Level(utility=0, multiplicity=1)

``import exactdp`` is light: the public names below are loaded on first use (PEP 562
module ``__getattr__``), so sympy, numpy and python-flint are imported only when a
mechanism, the auditor or the oracle is actually used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._oracle import retired as _retired
from ._version import __version__

_retired.install()  # pickles made before the oracle's engine moved name retired module paths

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time these load lazily
    from . import accounting, audit, certify, errors, interop, probability_tables, testing, utility
    from .core.bruteforce import brute_levels, brute_probabilities, brute_symbolic_probabilities
    from .core.levels import Level, LevelTable
    from .core.mechanism import Mechanism
    from .core.scale import Scale
    from .core.selection import SelectionRule
    from .rules.exponential import ExponentialMechanism
    from .rules.permute_and_flip import PermuteAndFlip
    from .teaching import explain
    # the mechanisms of CATALOG below, one line each
    from .mechanisms.joint import Joint
    from .mechanisms.joint import PNFJoint
    from .mechanisms.joint_set import JointSet
    from .mechanisms.canonical import Canonical
    from .mechanisms.canonical import CanonicalGamma1
    from .mechanisms.peeling import Peeling

#: Every mechanism, in the order the command line lists them: its public name -> (the
#: package of ``exactdp.mechanisms`` that defines it, its name on the command line, its
#: one-line summary).  The one declaration the lazy names below, the command line's
#: registry (``exactdp/cli/registry.py``) and the API contract test read; type checkers
#: see each name through its import above.
CATALOG: dict[str, tuple[str, str, str]] = {
    "Joint": ("joint", "joint", "Joint exponential mechanism over top-k sequences"),
    "PNFJoint": ("joint", "pnf-joint", "Joint with permute-and-flip over top-k sequences"),
    "JointSet": ("joint_set", "joint-set", "original JOINT over top-k sets"),
    "Canonical": ("canonical", "canonical", "canonical loss over utility classes of k-subsets"),
    "CanonicalGamma1": ("canonical", "canonical-gamma1",
                        "two-stage canonical (gamma = 1): a tail, then an (h, t) class of k-subsets"),
    "Peeling": ("peeling", "peeling", "k rounds of peeling"),
}

#: Public name -> the submodule that defines it (loaded on first access).
_LAZY_NAMES: dict[str, str] = {
    "brute_levels": "core.bruteforce",
    "brute_probabilities": "core.bruteforce",
    "brute_symbolic_probabilities": "core.bruteforce",
    "Level": "core.levels",
    "LevelTable": "core.levels",
    "Mechanism": "core.mechanism",
    "Scale": "core.scale",
    "SelectionRule": "core.selection",
    "ExponentialMechanism": "rules.exponential",
    "PermuteAndFlip": "rules.permute_and_flip",
    "explain": "teaching",
    **{name: f"mechanisms.{family}" for name, (family, _, _) in CATALOG.items()},
}

#: Submodules offered as attributes of the package (``exactdp.audit.worst_case`` works
#: after a plain ``import exactdp``).
_LAZY_SUBMODULES: frozenset[str] = frozenset(
    {"accounting", "audit", "certify", "errors", "interop", "probability_tables", "testing", "utility"})

__all__ = [
    *CATALOG,
    "PermuteAndFlip",
    "Level",
    "Mechanism",
    "Scale",
    "SelectionRule",
    "ExponentialMechanism",
    "LevelTable",
    "brute_levels",
    "brute_probabilities",
    "brute_symbolic_probabilities",
    "errors",
    "accounting",
    "audit",
    "certify",
    "interop",
    "testing",
    "explain",
    "probability_tables",
    "utility",
]


def __getattr__(name: str) -> Any:
    """Load a public name (or one of the submodules above) on first access (PEP 562)."""
    if name in _LAZY_SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
    elif name in _LAZY_NAMES:
        module = importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}")
        value = getattr(module, name)
        globals()[name] = value  # later accesses skip this function
        return value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    # the public names and the loaded subpackages; not this module's own helpers
    # (importlib, typing's names), which tab completion would otherwise offer
    hidden = {"annotations", "importlib", "Any", "TYPE_CHECKING"}
    return sorted((set(globals()) - hidden) | set(_LAZY_NAMES) | _LAZY_SUBMODULES)
