"""``exactdp audit MECHANISM``: a privacy claim checked over the neighbours of the counts.

The notion (``--notion``) is pure epsilon-DP (the privacy loss), approximate DP (delta at
``--claimed-epsilon``), Rényi DP of order ``--alpha`` or zCDP (a certified bracket of rho),
audited by :func:`exactdp.audit.worst_case` with a picklable
:class:`~exactdp.cli.registry.MechanismFactory` (``--workers``).  The same options serve the
other forms of the command: ``--from-draws`` (:mod:`.audit_draws`) and ``--mechanism-file``
(:mod:`.audit_tables`, :mod:`.audit_pair`).
"""

from __future__ import annotations

import argparse
import contextlib
from concurrent.futures import Executor
from typing import Any, Callable, Iterator, Optional, Sequence

from ...core.mechanism import Mechanism
from ...core.pool import process_pool
from ...core.validation import DEFAULT_DPS
from ..options import Command, UsageError, add_json, add_no_progress, add_precision
from ..parse import claimed_epsilon_arg, positive_int_arg, rational_arg, relation_arg
from ..registry import MechanismFactory, MechanismSpec
from ..render import PROG, Progress, describe, mechanism_json
from .audit_draws import add_draws_options, run_draws
from .audit_report import audit_digits, report

__all__ = ["COMMAND", "NOTIONS", "ZCDP_DPS", "add_audit_options", "claim_keywords", "worst_case", "resolve_dps", "run"]

#: The privacy notions ``--notion`` accepts.
NOTIONS = ("pure", "approx", "renyi", "zcdp")

#: ``--dps`` of a zCDP audit unless given: its bracket is refined until this many digits
#: (as :func:`exactdp.audit.zcdp_rho`).
ZCDP_DPS = 6


_NOTION_HELP = {
    "pure": "pure epsilon-DP: the privacy loss max_o |ln P(o | counts) - ln P(o | neighbour)| against epsilon",
    "approx": "(epsilon, delta)-DP: the privacy profile delta(epsilon) at --claimed-epsilon against --claimed-delta",
    "renyi": "Rényi DP of order --alpha: the larger direction of D_alpha against --claimed-epsilon",
    "zcdp": "zero-concentrated DP: a certified bracket of rho against --claimed-rho (default epsilon^2/2)",
}



def add_audit_options(p: Any, *, tables: bool = False) -> None:
    """The options of ``audit``, for a registered mechanism or (``tables``) a file."""
    p.add_argument(
        "--relation", type=relation_arg, default=None, metavar="REL",
        help="neighbours: 'add_remove' (one user added or removed: counts +1 together or -1 "
        "together; default) or 'swap' (one user's items replaced: any mix of +1 and -1)",
    )
    p.add_argument("--notion", choices=NOTIONS, default="pure", metavar="NOTION",
                   help="the privacy notion: " + "; ".join(f"'{n}': {h}" for n, h in _NOTION_HELP.items())
                   + " (default 'pure')")
    own = ("the epsilon the file declares" if tables else
           "the mechanism's own claim (its epsilon; for peeling, epsilon over all k rounds)")
    p.add_argument(
        "--claimed-epsilon", type=claimed_epsilon_arg, default=None, metavar="EPS",
        help="the epsilon to compare with (pure), to evaluate delta at (approx) or the Rényi "
        f"bound (renyi), parsed exactly like --epsilon ('1/2' is a fraction, '0.1' is 1/10); default: {own}",
    )
    p.add_argument("--claimed-delta", type=rational_arg("--claimed-delta", 0, 1, low_open=False), default=None,
                   metavar="DELTA", help="approx: the claimed delta, an exact number in [0, 1) such as '1e-6'")
    p.add_argument("--claimed-rho", type=rational_arg("--claimed-rho", 0, None), default=None, metavar="RHO",
                   help="zcdp: the claimed rho, a positive exact number (default epsilon^2/2)")
    p.add_argument("--alpha", type=rational_arg("--alpha", 1, None), default=None, metavar="ALPHA",
                   help="renyi: the order, an exact number > 1 such as '2' or '3/2'")
    p.add_argument(
        "--contribution", type=positive_int_arg, default=None, metavar="L",
        help="a user contributes to at most L items (default: any number)",
    )
    p.add_argument(
        "--max-neighbours", type=positive_int_arg, default=10_000, metavar="N",
        help="refuse to audit more than N neighbours (default %(default)s)",
    )
    p.add_argument(
        "--max-outputs", type=positive_int_arg, default=200_000, metavar="N",
        help="refuse to visit more than N output orbits per neighbour (default %(default)s)",
    )
    p.add_argument("--workers", type=positive_int_arg, default=1, metavar="N",
                   help="audit the neighbours in N worker processes (default 1: in this process)")
    p.add_argument("--rows", type=positive_int_arg, default=10, metavar="N", help="neighbours shown (default %(default)s)")
    add_precision(p, f"(default {DEFAULT_DPS}; {ZCDP_DPS} for --notion zcdp, whose value is a bracket)")
    p.set_defaults(dps=None)  # resolved per notion by resolve_dps
    add_no_progress(p)
    add_json(p, "a JSON object with every neighbour audited; values as decimal strings of --dps digits")
    if not tables:
        add_draws_options(p)


@contextlib.contextmanager
def _resources(args: argparse.Namespace) -> Iterator[tuple[Progress, Optional[Executor]]]:
    """The progress bar and, with ``--workers N > 1``, a local process pool."""
    progress = Progress(f"{PROG} audit: neighbours", enabled=not (args.json or args.no_progress))
    try:
        with contextlib.ExitStack() as stack:  # Ctrl-C or an error: the pool stops at once
            executor = stack.enter_context(process_pool(args.workers)) if args.workers > 1 else None
            yield progress, executor
    finally:
        progress.close()


def claim_keywords(args: argparse.Namespace, default_epsilon: Any) -> dict[str, Any]:
    """The claim keywords of :func:`exactdp.audit.worst_case` for ``--notion``; a notion's
    missing claim is a usage error naming the option."""
    eps = args.claimed_epsilon if args.claimed_epsilon is not None else default_epsilon
    if args.claimed_epsilon == 0 and args.notion != "approx":
        raise UsageError(f"--claimed-epsilon 0 is for --notion approx (delta(0), the total variation), not "
                          f"{args.notion}: a claim must be positive", f"{PROG} audit")
    if args.notion == "approx" and args.claimed_delta is None:
        raise UsageError("--notion approx needs --claimed-delta", f"{PROG} audit")
    if args.notion == "renyi" and args.alpha is None:
        raise UsageError("--notion renyi needs --alpha", f"{PROG} audit")
    for flag, value, notion in (("--claimed-delta", args.claimed_delta, "approx"), ("--alpha", args.alpha, "renyi"),
                                ("--claimed-rho", args.claimed_rho, "zcdp")):
        if value is not None and args.notion != notion:
            raise UsageError(f"{flag} is for --notion {notion}, not {args.notion}", f"{PROG} audit")
    return {"notion": args.notion, "epsilon": eps, "delta": args.claimed_delta, "rho": args.claimed_rho,
            "alpha": args.alpha}


def worst_case(factory: Callable[[Sequence[int]], Any], counts: Sequence[int], args: argparse.Namespace,
                claims: dict[str, Any], *, symmetric: bool) -> Any:
    from ... import audit

    notion = audit.as_notion(**claims)  # the typed notion, built once from the options
    with _resources(args) as (progress, executor):
        return audit.worst_case(
            factory, counts, args.relation or "add_remove", audit_digits(args)[0], notion=notion,
            contribution=args.contribution, max_neighbours=args.max_neighbours, max_outputs=args.max_outputs,
            progress=progress, symmetric=symmetric, executor=executor,
        )


def resolve_dps(args: argparse.Namespace) -> None:
    if args.dps is None:
        args.dps = ZCDP_DPS if args.notion == "zcdp" else DEFAULT_DPS


def run(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> int:
    """``exactdp audit MECHANISM``: the worst case over the neighbours of the counts."""
    resolve_dps(args)
    if args.from_draws is not None:
        return run_draws(name, spec, m, args)
    for flag, value in (("--neighbour", args.neighbour), ("--seed", args.seed), ("--excess", args.excess)):
        if value is not None:
            raise UsageError(f"{flag} is for --from-draws", f"{PROG} audit {name}")
    factory = MechanismFactory(name, args.k, tuple(spec.kwargs(args).items()))
    w = worst_case(factory, m.counts, args, claim_keywords(args, None), symmetric=True)
    return report(w, args, mechanism_json(name, m, spec), f"{describe(m)}  [{name}: {spec.summary}]", "mechanism")


#: ``exactdp audit MECHANISM``.
COMMAND = Command(
    "audit",
    run,
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
    add_audit_options,
)
