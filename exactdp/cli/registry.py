"""The mechanism registry: which mechanisms the command line offers, with which options.

Each entry of :data:`MECHANISMS` names a mechanism class and a one-line summary; nothing
else is restated here.  The options a mechanism takes are the keyword parameters of its
constructor that :data:`OPTIONS` describes (in the constructor's order), the defaults shown
in ``--help`` are read from that constructor's signature with :mod:`inspect`, and the
``--noise`` choices are :data:`exactdp.rules.noise.NOISES`.

>>> MECHANISMS["canonical"].options
('epsilon', 'base', 'rho', 'noise', 'memory_budget')
>>> MECHANISMS["canonical"].option_help("rho")
'canonical loss parameter, an exact rational in [0, 1] (default 1/2)'
"""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional, Sequence

import exactdp

from ..core.level_blocks import DEFAULT_MEMORY_BUDGET
from ..core.mechanism import Mechanism, make_scale
from ..rules.noise import NOISES

__all__ = ["Option", "OPTIONS", "MechanismSpec", "MechanismFactory", "MECHANISMS"]


@dataclass(frozen=True)
class Option:
    """A keyword argument of a mechanism constructor, exposed as a command-line option.

    The value is passed to the constructor *as the string the user typed* (exactdp parses
    ``"0.1"`` as exactly 1/10 and ``"1/2"`` as a Fraction), and only when given, so the
    library's own defaults apply otherwise.  ``choices`` restricts the accepted strings.
    ``help`` may name ``{default}``: the constructor's default, or ``library_default()``
    when the signature's default is ``None`` (the library then decides, as for epsilon).
    """

    flags: tuple[str, ...]
    dest: str
    help: str
    metavar: Optional[str] = None
    choices: Optional[tuple[str, ...]] = None
    library_default: Optional[Callable[[], object]] = None
    #: A resource setting (memory), not a parameter of the distribution: left out of the
    #: JSON "parameters".
    resource: bool = False


# What each report-noisy-max noise is, for --help; the accepted names are NOISES.
_NOISE_RULES = {"gumbel": "exponential mechanism", "exponential": "permute-and-flip"}


def _noise_help() -> str:
    described = [f"'{n}' ({_NOISE_RULES[n]})" if n in _NOISE_RULES else f"'{n}'" for n in NOISES]
    return "selection rule: " + " or ".join(described)


#: Every constructor option any mechanism takes, by name (the name is the keyword argument).
OPTIONS: dict[str, Option] = {
    "epsilon": Option(
        ("--epsilon",), "epsilon",
        "privacy parameter, a positive number parsed exactly: '0.1' is 1/10, '1/2' a "
        "fraction (the library's default, {default}, when neither --epsilon nor --base is given)",
        metavar="EPS",
        # The constructors say epsilon=None; the epsilon that then applies is make_scale's.
        library_default=lambda: make_scale(None, None, Fraction(1)).epsilon,
    ),
    "base": Option(
        ("--base",), "base",
        "exact rational 0 < BASE < 1 used as the weight of one unit of utility instead of "
        "the epsilon-derived one (exp(-epsilon/(2*sensitivity)) for the Joint family, "
        "exp(-epsilon) for canonical, exp(-epsilon/k) per round for peeling); every "
        "probability is then rational (exclusive with --epsilon)",
        metavar="BASE",
    ),
    "sensitivity": Option(
        ("--sensitivity",), "sensitivity",
        "utility sensitivity, a positive exact rational (default {default}: add/remove "
        "neighbours; 2 models swap neighbours)",
        metavar="DELTA",
    ),
    "rho": Option(
        ("--rho",), "rho",
        "canonical loss parameter, an exact rational in [0, 1] (default {default})",
        metavar="RHO",
    ),
    "noise": Option(("--noise",), "noise", _noise_help() + " (default '{default}')", metavar="NOISE",
                    choices=NOISES),
    "memory_budget": Option(
        ("--memory-budget",), "memory_budget",
        "bytes of exact levels the level table may keep at once (default {default}); past "
        "it, levels are streamed and recomputed, and whole lists are refused with an error "
        "(an audit checks its own values against the two datasets' budgets together)",
        metavar="BYTES",
        library_default=lambda: DEFAULT_MEMORY_BUDGET,
        resource=True,
    ),
}


@dataclass(frozen=True)
class MechanismSpec:
    """How the CLI builds one mechanism: ``factory(counts, k, **options)``.

    :attr:`options` are the keyword parameters of ``factory`` that :data:`OPTIONS`
    describes; ``summary`` is the one-line description shown in ``--help``.
    """

    factory: Callable[..., Mechanism]
    summary: str

    @property
    def _parameters(self) -> dict[str, inspect.Parameter]:
        return dict(inspect.signature(self.factory).parameters)

    @property
    def options(self) -> tuple[str, ...]:
        """The names of :data:`OPTIONS` the constructor takes, in its signature's order."""
        return tuple(name for name in self._parameters if name in OPTIONS)

    def option_help(self, name: str) -> str:
        """The ``--help`` text of option ``name``, with this constructor's default."""
        option = OPTIONS[name]
        default = self._parameters[name].default
        if default is None and option.library_default is not None:
            default = option.library_default()
        return option.help.format(default=default)  # str(Fraction(1, 2)) is "1/2", as typed

    def kwargs(self, args: argparse.Namespace) -> dict[str, object]:
        """The constructor options given on the command line (as typed)."""
        kwargs = {}
        for name in self.options:
            dest = OPTIONS[name].dest
            value = getattr(args, dest, None)
            if value is not None:
                kwargs[dest] = value
        return kwargs

    def build(self, counts: Sequence[int], k: int, args: argparse.Namespace) -> Mechanism:
        return self.factory(counts, k, **self.kwargs(args))


@dataclass(frozen=True)
class MechanismFactory:
    """``factory(counts) -> MECHANISMS[name] built with k and the options``: the factory of
    ``exactdp audit``, a module-level class so that it pickles for worker processes."""

    name: str
    k: int
    options: tuple[tuple[str, object], ...]

    def __call__(self, counts: Sequence[int]) -> Mechanism:
        return MECHANISMS[self.name].factory(counts, self.k, **dict(self.options))


# The registry: CLI name -> MechanismSpec.  Every command (dist, levels, prob, sample,
# audit, certify) accepts every registered mechanism (``levels`` refuses, with a message,
# a mechanism that is not one rule over utility levels: canonical-gamma1), with --counts/--counts-file and
# -k/--k plus the constructor's options that OPTIONS describes.  To add a mechanism, add
# ONE entry, e.g.
#
#     MECHANISMS["peeling"] = MechanismSpec(exactdp.Peeling, "k rounds of peeling")
#
# (a constructor keyword no entry of OPTIONS describes yet is not offered until it gets
# an OPTIONS entry).  The class must follow exactdp.Mechanism (levels(),
# level_probabilities(dps), probability(o, dps), ...).  Nothing else in exactdp/cli/ needs
# to change; tests/cli/test_cli.py runs its generic checks over every registered mechanism.
MECHANISMS: dict[str, MechanismSpec] = {
    "joint": MechanismSpec(exactdp.Joint, "Joint exponential mechanism over top-k sequences"),
    "pnf-joint": MechanismSpec(exactdp.PNFJoint, "Joint with permute-and-flip over top-k sequences"),
    "joint-set": MechanismSpec(exactdp.JointSet, "original JOINT over top-k sets"),
    "canonical": MechanismSpec(exactdp.Canonical, "canonical loss over utility classes of k-subsets"),
    "canonical-gamma1": MechanismSpec(
        exactdp.CanonicalGamma1, "two-stage canonical (gamma = 1): a tail, then an (h, t) class of k-subsets"
    ),
    "peeling": MechanismSpec(exactdp.Peeling, "k rounds of peeling"),
}
