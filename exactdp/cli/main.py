"""The ``exactdp`` entry point: the argument parser and ``main(argv) -> int``.

The parser has one sub-parser per command (:data:`COMMANDS`) and, under each, one per
registered mechanism (:data:`exactdp.cli.registry.MECHANISMS`); ``check`` takes no
mechanism.  :func:`main` turns every usage or library error into one ``exactdp: error:``
line on stderr and an exit status (see :mod:`exactdp.cli`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import exactdp

from ..core.mechanism import Mechanism
from ..errors import ExactDPError
from . import audit_command, commands, compare_command, explain_command
from .commands import CommandError
from .parse import (
    _alpha_arg,
    _counts_arg,
    _counts_file_arg,
    _delta_arg,
    _int_arg,
    _min_power_arg,
    _output_arg,
    _positive_int_arg,
    _samples_file_arg,
    _seed_arg,
    _short,
)
from .options import (DEFAULT_DIGITS, _FORMATTER, _add_json, _add_no_progress, _add_precision, _fill,  # noqa: F401
                      _Parser, _UsageError)
from .registry import MECHANISMS, OPTIONS, MechanismSpec
from .render import PROG

__all__ = ["main", "build_parser", "Command", "COMMANDS"]

#: Default guard for ``dist --outputs``.
DEFAULT_MAX_OUTPUTS = 10_000


@contextlib.contextmanager
def _no_int_str_limit() -> Iterator[None]:
    """Lift CPython's int/str digit limit for the duration of one CLI run: the library
    and sympy turn big integers into text with ``str``/``repr`` (``Mechanism.__repr__``,
    ``str(probability_exact(...))``).  Restored on exit, so ``main()`` leaves it unchanged."""
    getter = getattr(sys, "get_int_max_str_digits", None)
    if getter is None:  # Python without the limit
        yield
        return
    old = getter()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


@dataclass(frozen=True)
class Command:
    """One sub-command that takes a mechanism: how it runs, its help, and its own options."""

    run: Callable[[str, MechanismSpec, Mechanism, argparse.Namespace], None]
    help: str
    description: str
    example: str
    add_arguments: Callable[[argparse.ArgumentParser], None]


def _add_required(p: argparse.ArgumentParser, flag: str, parse: Callable[[str], object], metavar: str,
                  help: str) -> None:
    """The one option a command cannot run without (``prob --output``, ``certify --samples``)."""
    p.add_argument(flag, type=parse, required=True, metavar=metavar, help=help)


def _args_dist(p: argparse.ArgumentParser) -> None:
    _add_precision(p)
    p.add_argument("--outputs", action="store_true", help="also list every output with its probability")
    p.add_argument(
        "--max-outputs", type=_positive_int_arg, default=DEFAULT_MAX_OUTPUTS, metavar="N",
        help="refuse --outputs for more than N outputs (default %(default)s)",
    )
    _add_no_progress(p)
    _add_json(p, "a JSON object; exact integers and utilities as strings, probabilities as decimal "
              "strings of --dps digits (schema: docs/cli.md)")


def _args_levels(p: argparse.ArgumentParser) -> None:
    _add_json(p, "a JSON object; exact integers and utilities as strings (schema: docs/cli.md)")


def _args_prob(p: argparse.ArgumentParser) -> None:
    _add_required(
        p, "--output", _output_arg, "IDS",
        "the output: comma-separated item ids (0-based positions in the counts), in "
        "selection order for sequence mechanisms",
    )
    p.add_argument("--exact", action="store_true", help="also print the exact probability (sympy expression)")
    _add_precision(p)
    _add_json(p, "a JSON object, probabilities as decimal strings of --dps digits")


def _args_sample(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=_positive_int_arg, default=1, metavar="N", help="number of samples (default %(default)s)")
    p.add_argument(
        "--seed", type=_seed_arg, default=None, metavar="SEED",
        help="integer seed (reproducible on every platform): 0 <= SEED < 2**128 seeds "
        "random.Random(SEED), other seeds are mapped injectively so that SEED and -SEED "
        "differ (exactdp.core.validation.seed_to_nonnegative); default: the OS generator "
        "(random.SystemRandom)",
    )
    _add_json(p, "one JSON list of outputs (lists of item ids)")


def _args_certify(p: argparse.ArgumentParser) -> None:
    _add_required(
        p, "--samples", _samples_file_arg, "FILE",
        "the draws to test: one per line as comma-separated item ids (CSV), JSON lines, "
        "or one JSON list of lists (the output of 'exactdp sample --json'); '-' is stdin",
    )
    p.add_argument("--alpha", type=_alpha_arg, default=1e-6, metavar="ALPHA",
                   help="significance level: FAIL when the p-value is below ALPHA (default 1e-6)")
    p.add_argument("--delta", type=_delta_arg, default=0.05, metavar="TV",
                   help="smallest total variation deviation the test must detect (default 0.05): INCONCLUSIVE "
                   "(exit status 3) unless its power against the least favourable such deviation reaches --min-power")
    p.add_argument("--min-power", type=_min_power_arg, default=0.99, metavar="P",
                   help="power needed at --delta before the verdict may be PASS (default 0.99)")
    p.add_argument("--levels-only", action="store_true", help="test the level frequencies only, not uniformity within levels")
    p.add_argument(
        "--max-enumerate", type=_positive_int_arg, default=1_000_000, metavar="N",
        help="list at most N outputs for the within-level bins (default %(default)s)",
    )
    p.add_argument("--rows", type=_positive_int_arg, default=10, metavar="N", help="within-level bins shown (default %(default)s)")
    _add_no_progress(p)
    _add_json(p, "a JSON object with the statistic, p-values and every bin")


COMMANDS: dict[str, Command] = {
    "dist": Command(
        commands.cmd_dist,
        "the output distribution: one row per utility level",
        "Print the distribution level by level: exact utility, exact multiplicity (number of "
        "outputs with that utility), certified probability of the level and of each output "
        "in it; then the support size and the mechanism.",
        "--counts 10,5,1,1 -k 2 --epsilon 1",
        _args_dist,
    ),
    "levels": Command(
        commands.cmd_levels,
        "the exact utility levels and their multiplicities",
        "Print the exact levels: every distinct utility with the exact number of outputs "
        "having it, best first (no probabilities are computed).",
        "--counts 30,15,1x998 -k 2",
        _args_levels,
    ),
    "prob": Command(
        commands.cmd_prob,
        "probability and log-probability of one output",
        "Print the certified probability and natural log-probability of one output, its "
        "utility and level, and with --exact the exact probability as a sympy expression.",
        "--counts 10,5,1,1 -k 2 --epsilon 1 --output 0,1 --exact",
        _args_prob,
    ),
    "sample": Command(
        commands.cmd_sample,
        "exact samples, one output per line",
        "Draw outputs exactly (integer randomness only), one per line as comma-separated "
        "item ids in selection order.",
        "--counts 10,5,1,1 -k 2 --epsilon 1 -n 5 --seed 1",
        _args_sample,
    ),
    "audit": Command(
        audit_command.cmd_audit,
        "exact worst-case privacy loss over the neighbours of the counts",
        "Audit the privacy claim: for every neighbour of the counts (add/remove or swap "
        "one user), the exact privacy loss max_o |ln P(o | counts) - ln P(o | neighbour)|, "
        "certified, with the output attaining it; the worst case beside the claimed epsilon. "
        "--notion approx, renyi or zcdp audits delta(epsilon), the Renyi divergence or zCDP's rho "
        "instead; --workers N uses N processes. Exit status 1 when the claim is violated, 3 when "
        "the audit is inconclusive (a zCDP bracket too wide to decide: raise --dps, or audit that "
        "pair in Python with a larger max_steps of exactdp.audit.zcdp_rho).\n\n"
        "'exactdp audit --mechanism-file FILE ...' (no mechanism) audits another implementation's "
        "probability tables instead: see 'exactdp audit --mechanism-file FILE --help'. "
        "'--from-draws MODULE:FUNCTION --neighbour COUNTS' bounds a real sampler's epsilon from its "
        "draws instead, the mechanism being the law it claims.",
        "--counts 3,2,2,0 -k 2 --epsilon 1",
        audit_command.add_audit_options,
    ),
    "certify": Command(
        commands.cmd_certify,
        "chi-square test of a sampler's draws against the exact distribution",
        "Test draws from another implementation against the exact distribution: Pearson's "
        "chi-square by level (a level expecting >= 5 draws is a bin; rare levels pooled only with each "
        "other, those left over, the rare tail, tested by an exact binomial test that shares --alpha), "
        "then uniformity within each level; "
        "p-value from the regularised incomplete gamma function. Verdict PASS (exit status 0), "
        "FAIL when the test rejects at --alpha (exit status 1), or INCONCLUSIVE when it could not "
        "have failed (0 degrees of freedom and no rare tail) or was too weak (power below --min-power against the least "
        "favourable deviation of total variation --delta): exit status 3, the verdict line gives "
        "the number of draws needed.",
        "--counts 10,5,1,1 -k 2 --epsilon 1 --samples draws.csv",
        _args_certify,
    ),
    "explain": Command(explain_command.cmd_explain, explain_command.HELP, explain_command.DESCRIPTION,
                       explain_command.EXAMPLE, explain_command.add_explain_options),
}


def _add_mechanism_parser(subs: "argparse._SubParsersAction[argparse.ArgumentParser]", command: str, cmd: Command,
                          name: str, spec: MechanismSpec) -> None:
    epilog = f"example:\n  {PROG} {command} {name} {cmd.example}"
    if command == "levels" and not commands._single_rule(spec.factory((1, 0), 1)):
        # the generic example would fail: this mechanism has no utility levels (CanonicalGamma1)
        epilog = (f"example:\n  {PROG} dist {name} {COMMANDS['dist'].example}\n\n"
                  f"{name} has no utility levels, so '{PROG} levels {name}' refuses it;\n"
                  f"'dist' prints its (h, t) classes")
    p = subs.add_parser(
        name,
        help=spec.summary,
        description=_fill(f"{cmd.description}\n\nMechanism '{name}': {spec.summary}."),
        epilog=epilog,
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    counts = p.add_argument_group("input")
    source = counts.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--counts", type=_counts_arg, metavar="COUNTS",
        help="comma/space-separated integer counts; VALUExREPEAT means REPEAT copies of "
        "VALUE (e.g. 30,15,1x998); write --counts=-1,2 when the first count is negative",
    )
    source.add_argument(
        "--counts-file", type=_counts_file_arg, dest="counts", metavar="PATH",
        help="read the counts from a file (same syntax, any whitespace; '#' comments; '-' is stdin)",
    )
    counts.add_argument("-k", "--k", type=_int_arg, required=True, metavar="K", help="number of items to select")
    mech = p.add_argument_group(f"{name} options")
    for option_name in spec.options:
        opt = OPTIONS[option_name]
        mech.add_argument(*opt.flags, dest=opt.dest, default=None, metavar=opt.metavar, choices=opt.choices,
                          help=spec.option_help(option_name))
    cmd.add_arguments(p.add_argument_group(f"{command} options"))
    p.set_defaults(mechanism=name)


# `check` runs the executable checks of the papers (the package proofs_checks, installed
# with exactdp).  It takes no mechanism, so it is not in COMMANDS.
def _add_check_parser(subs: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    cp = subs.add_parser(
        "check",
        help="run the executable checks of the papers' lemmas and theorems (proofs_checks)",
        description=_fill(
            "Run proofs_checks: every lemma and theorem of the papers as a check over an "
            "exhaustive small instance space, each with its control (a deliberately wrong "
            "variant that must be rejected, or for an erratum the corrected statement, which "
            "must hold), and print one row per check (pass, erratum = the statement is false "
            "as printed and documented in docs/errata.md, illustration = a worked example, not "
            "a pass, or FAIL).  Exit status 1 when a check FAILs, 2 when proofs_checks "
            "is not importable (it is installed with exactdp: reinstall exactdp)."
        ),
        epilog=f"example:\n  {PROG} check --only joint.lemma_3_4\n  {PROG} check --full --report REPORT.md",
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    cp.add_argument("--full", action="store_true", help="the full instance spaces (minutes) instead of the fast subset")
    cp.add_argument("--only", action="append", metavar="NAME",
                    help="run only checks whose name is, starts with or contains NAME (repeatable)")
    cp.add_argument("--report", metavar="PATH", default=None, help="also write the Markdown report to PATH")
    cp.add_argument("--jobs", type=_positive_int_arg, default=None, metavar="N",
                    help="worker processes (default: 2 when 2+ CPUs, else 1)")
    cp.add_argument("--json", action="store_true", help="machine-readable output: a JSON object with every result")
    _add_no_progress(cp)
    cp.set_defaults(mechanism=None)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (commands, then one sub-parser per registered mechanism)."""
    mechanisms = ", ".join(MECHANISMS)
    parser = _Parser(
        prog=PROG,
        description=_fill(
            "exactdp: exact reference implementation of differentially private top-k "
            "selection.  Exact levels, certified probabilities and exact samples."
        ),
        epilog="examples:\n"
        + "".join(f"  {PROG} {c} joint {cmd.example}\n" for c, cmd in COMMANDS.items())
        + f"  {PROG} check --only joint.lemma_3_4\n"
        + f"  {PROG} compare --counts 10,5,5,1,1,0 -k 2 --epsilon 1\n"
        + f"\nmechanisms: {mechanisms}\n"
        f"run '{PROG} COMMAND --help' or '{PROG} COMMAND MECHANISM --help' for details.",
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {exactdp.__version__}")
    command_parsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, cmd in COMMANDS.items():
        cp = command_parsers.add_parser(
            command,
            help=cmd.help,
            description=_fill(cmd.description),
            epilog="mechanisms:\n"
            + "".join(f"  {n:<12} {s.summary}\n" for n, s in MECHANISMS.items())
            + f"\nexample:\n  {PROG} {command} joint {cmd.example}",
            formatter_class=_FORMATTER,
            allow_abbrev=False,
        )
        subs = cp.add_subparsers(dest="mechanism", metavar="MECHANISM", required=True)
        for name, spec in MECHANISMS.items():
            _add_mechanism_parser(subs, command, cmd, name, spec)
    _add_check_parser(command_parsers)
    compare_command.add_compare_parser(command_parsers)
    return parser


def _error(message: str) -> None:
    try:
        sys.stderr.write(f"{PROG}: error: {' '.join(message.splitlines())}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # e.g. captured stdout without a fileno
        pass


def _run(argv: Optional[Sequence[str]]) -> int:
    with _no_int_str_limit():
        return _run_unlimited(argv)


def _run_unlimited(argv: Optional[Sequence[str]]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if audit_command.wants_tables(argv):  # audit --mechanism-file: no registered mechanism
        status = audit_command.run_tables_audit(argv[1:])
        sys.stdout.flush()
        return status
    args, extras = build_parser().parse_known_args(argv)
    if args.command in ("check", "compare"):  # commands without a mechanism
        if extras:
            raise _UsageError(f"unrecognized arguments: {' '.join(extras)}", f"{PROG} {args.command}")
        status = (commands.cmd_check if args.command == "check" else compare_command.cmd_compare)(args)
        sys.stdout.flush()
        return status
    if extras:
        shown = " ".join(x if len(x) <= 40 else _short(x) for x in extras)
        raise _UsageError(f"unrecognized arguments: {shown}", f"{PROG} {args.command} {args.mechanism}")
    spec = MECHANISMS[args.mechanism]
    m = spec.build(args.counts, args.k, args)
    COMMANDS[args.command].run(args.mechanism, spec, m, args)
    sys.stdout.flush()
    return getattr(args, "_status", 0)  # audit/certify: 1 when the check fails


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    try:
        return _run(argv)
    except _UsageError as err:
        _error(f"{err.message} (see '{err.prog} --help')")
        return 2
    except (ExactDPError, CommandError) as err:
        _error(str(err))
        return 2
    except SystemExit as err:  # --help, --version
        code = err.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 141
