"""The mechanisms, one subpackage per paper family; each imports only core, rules and errors.

``joint`` (Joint and its permute-and-flip version PNFJoint), ``joint_set`` (JOINT for
sets), ``canonical`` (the canonical Lipschitz mechanism and its Gamma1 variant),
``peeling`` (the peeling baselines); ``set_marginal`` is the set view that Joint, PNFJoint
and Peeling return from ``as_sets()``.  See ``docs/architecture.md``.

The families were flat modules before (``exactdp.mechanisms.pnf_joint``,
``exactdp.mechanisms.joint_sweep``, ...): those paths still import, as the module that holds
their code now (``MOVED``), so code and pickles that name them keep working.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Optional, Sequence

#: A flat module path of before the families were packages -> the module that holds its code.
#: (``joint``, ``joint_set``, ``canonical`` and ``peeling`` are the packages themselves, which
#: re-export their old module's public names.)
MOVED: dict[str, str] = {
    "joint_sweep": "joint.sweep", "joint_blocks": "joint.blocks", "joint_arrays": "joint.arrays",
    "joint_pairs": "joint.pairs", "joint_unrank": "joint.unrank", "pnf_joint": "joint.pnf",
    "joint_set_sweep": "joint_set.sweep", "joint_set_paper": "joint_set.paper", "joint_set_unrank": "joint_set.unrank",
    "joint_set_pairs": "joint_set.pairs", "joint_set_arrays": "joint_set.arrays",
    "canonical_arrays": "canonical.arrays", "canonical_gamma1": "canonical.gamma1",
    "peeling_sampling": "peeling.sampling", "peeling_tree": "peeling.tree",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``exactdp.mechanisms.<old>`` as the module that holds its code now (the same
    module object, under both names in ``sys.modules``), loaded only when it is named."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        parent, _, name = fullname.rpartition(".")
        if parent != __name__ or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}")
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the old name's: put it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())
