"""The mechanism registry: which mechanisms the command line offers, with which options.

Each entry of :data:`MECHANISMS` is a mechanism of ``exactdp.CATALOG`` (its class, its
command-line name and its one-line summary are declared there) with, where it is not the class
at the budget's epsilon, its rows of ``exactdp compare`` (:data:`COMPARE`,
:func:`compare_rows`); nothing else is restated here.  The options a mechanism takes are the keyword parameters of its
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
from ..errors import NotSingleRuleError
from ..rules.noise import NOISES

__all__ = ["Option", "OPTIONS", "MechanismSpec", "MechanismFactory", "MECHANISMS", "COMPARE", "CompareRow", "CompareBuild",
           "compare_rows", "cdp_round_epsilon", "ROUND_DECIMALS", "single_rule"]


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


#: CDP-Peel's per-round epsilon is rounded *down* to this many decimals, so the mechanism
#: run is at most as private-costly as the accounting allows.
ROUND_DECIMALS = 12


def cdp_round_epsilon(epsilon: Fraction, delta: Fraction, k: int) -> Fraction:
    """CDP-Peel's per-round epsilon as an exact rational at most the accounted one,
    :func:`~exactdp.accounting.cdp_peel_local_epsilon` ``= max(epsilon/k, Lemma 4.2's value)``:
    ``epsilon/k`` exactly when basic composition gives the larger budget, otherwise Lemma 4.2's
    value just below, to ``ROUND_DECIMALS`` decimals
    (:func:`~exactdp.accounting.cdp_peel_round_epsilon_below`)."""
    from ..accounting import cdp_peel_round_epsilon_below

    return max(Fraction(epsilon) / k, cdp_peel_round_epsilon_below(epsilon, delta, k, decimals=ROUND_DECIMALS))


def _cdp_peel_epsilon(epsilon: Fraction, delta: Fraction, k: int) -> Fraction:
    """CDP-Peel's total epsilon: ``k`` rounds of :func:`cdp_round_epsilon`."""
    return k * cdp_round_epsilon(epsilon, delta, k)


@dataclass(frozen=True)
class CompareRow:
    """One row of ``exactdp compare``: the registered mechanism built at the command's budget
    ``(epsilon, delta)`` with ``options``; ``epsilon(epsilon, delta, k)``, when given, is the
    constructor's epsilon instead of the budget's."""

    name: str
    label: str
    options: tuple[tuple[str, object], ...] = ()
    epsilon: Optional[Callable[[Fraction, Fraction, int], Fraction]] = None


@dataclass(frozen=True)
class MechanismSpec:
    """How the CLI builds one mechanism: ``factory(counts, k, **options)``.

    :attr:`options` are the keyword parameters of ``factory`` that :data:`OPTIONS`
    describes; ``summary`` is the one-line description shown in ``--help``; ``compare`` its
    rows of ``exactdp compare`` (default: one, the class's name at the budget's epsilon).
    """

    factory: Callable[..., Mechanism]
    summary: str
    compare: Optional[tuple[CompareRow, ...]] = None

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


@dataclass(frozen=True)
class CompareBuild:
    """``build(counts, k, epsilon, delta)``: the mechanism of one :class:`CompareRow`."""

    factory: Callable[..., Mechanism]
    row: CompareRow

    def __call__(self, counts: Sequence[int], k: int, epsilon: Fraction, delta: Fraction) -> Mechanism:
        eps = epsilon if self.row.epsilon is None else self.row.epsilon(epsilon, delta, k)
        return self.factory(counts, k, epsilon=eps, **dict(self.row.options))


def compare_rows() -> tuple[tuple[str, str, CompareBuild], ...]:
    """``(name, label, build(counts, k, epsilon, delta))`` of every row of ``exactdp
    compare``, in the order of :data:`MECHANISMS`."""
    rows = []
    for name, spec in MECHANISMS.items():
        for row in spec.compare or (CompareRow(name, spec.factory.__name__),):
            rows.append((row.name, row.label, CompareBuild(spec.factory, row)))
    return tuple(rows)


def single_rule(m: Mechanism) -> bool:
    """Whether ``m`` is one selection rule over utility levels (every mechanism but
    CanonicalGamma1, whose probability groups are its two-stage ``(h, t)`` classes)."""
    try:
        next(m.iter_levels(), None)
    except NotSingleRuleError:
        return False
    return True


#: The rows of ``exactdp compare`` of a mechanism that are not its class at the budget's
#: epsilon, by its name on the command line.
COMPARE: dict[str, tuple[CompareRow, ...]] = {
    "peeling": (
        CompareRow("peeling", "peeling (pure ε, ε/k per round, Gumbel)", (("noise", "gumbel"),)),
        CompareRow("pnf-peel", "PNF-Peel (pure ε, ε/k per round)", (("noise", "exponential"),)),
        CompareRow("cdp-peel", "CDP-Peel (ε, δ)-DP", (("noise", "gumbel"),), _cdp_peel_epsilon),
    ),
}

# The registry: CLI name -> MechanismSpec, one per entry of exactdp.CATALOG (its command-line
# name and summary are there).  Every command (dist, levels, prob, sample, audit, certify,
# explain) accepts every registered mechanism (``levels`` refuses, with a message, a
# mechanism that is not one rule over utility levels: canonical-gamma1), with
# --counts/--counts-file and -k/--k plus the constructor's options that OPTIONS describes
# (a constructor keyword no entry of OPTIONS describes yet is not offered until it gets an
# OPTIONS entry); `exactdp compare` shows it as one row, the class at the budget's epsilon,
# unless COMPARE lists its rows.  The class must follow exactdp.Mechanism.  Nothing in
# exactdp/cli/ changes for a new mechanism; tests/cli/test_cli.py runs its generic checks
# over every registered mechanism.
MECHANISMS: dict[str, MechanismSpec] = {
    command: MechanismSpec(getattr(exactdp, name), summary, COMPARE.get(command))
    for name, (_, command, summary) in exactdp.CATALOG.items()
}
