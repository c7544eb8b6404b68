"""exactdp: the exact reference implementation of differentially private top-k selection.

Counts and multiplicities are exact integers, probabilities exact (sympy) or certified
``mpmath.mpf`` values (relative error at most ``10**-dps``); samplers use integer
randomness only.  See ``../shared/SPEC.md`` for the contract and ``docs/`` for the guide.

>>> import exactdp
>>> m = exactdp.Joint([10, 5, 1, 1], k=2, epsilon=1)
>>> m.levels()[0]
Level(utility=0, multiplicity=1)
"""

from . import accounting, audit, certify, errors, testing
from .bruteforce import brute_levels, brute_probabilities, brute_symbolic_probabilities
from .canonical import Canonical, CanonicalGamma1
from .joint import Joint
from .joint_set import JointSet
from .levels import Level
from .mechanism import Mechanism
from .peeling import Peeling
from .permute_and_flip import PermuteAndFlip
from .pnf_joint import PNFJoint
from .scale import Scale
from .selection import ExponentialMechanism, LevelTable, SelectionRule

__version__ = "0.1.0"

__all__ = [
    "Joint",
    "JointSet",
    "PNFJoint",
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
    "Canonical",
    "CanonicalGamma1",
    "Peeling",
    "accounting",
]
