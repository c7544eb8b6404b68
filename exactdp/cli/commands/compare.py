"""The ``compare`` command: the exact utility metrics of every mechanism side by side at one budget.

``exactdp compare --counts ... -k K --epsilon E [--delta D]`` builds, at the same privacy
budget, the registry's rows (:func:`exactdp.cli.registry.compare_rows`): Joint, PNFJoint,
JointSet, Canonical, CanonicalGamma1, pure-epsilon peeling with ``E/k`` per round (Gumbel
noise, the exponential mechanism each round; and permute-and-flip, PNF-Peel, Lemma 4.1 of
the Joint paper) and CDP-Peel (Gumbel peeling with the per-round epsilon of
:func:`exactdp.accounting.cdp_peel_local_epsilon`, ``(E, D)``-DP by Lemma 4.2; Durfee &
Rogers, NeurIPS 2019, arXiv:1905.04273), and prints :func:`exactdp.utility.metrics` of each
(one row per mechanism).  A mechanism whose metrics cannot be computed exactly here (too
many outputs to enumerate, past ``--max-outputs``) is a row ``n/a (reason)``; the others are
shown all the same.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import Any, Callable, Optional

import mpmath

from ...core.formatting import exact_text, json_scalar, number_text, table_lines
from ...core.mechanism import Mechanism
from ...core.validation import as_counts, as_k
from ...errors import ExactDPError, TooManyOutputsError
from ...utility import DEFAULT_MAX_OUTPUTS, metrics
from ..options import FORMATTER, add_json, fill
from ..parse import counts_arg, counts_file_arg, digits_arg, dps_arg, int_arg, positive_int_arg, rational_arg
from ..registry import ROUND_DECIMALS, cdp_round_epsilon, compare_rows
from ..render import PROG, emit_json, write_line

__all__ = ["add_parser", "run", "DEFAULT_DELTA", "ROWS", "cdp_round_epsilon"]

#: CDP-Peel's delta unless ``--delta`` is given (the Joint paper's experiments use 1e-6).
DEFAULT_DELTA = Fraction(1, 10**6)
#: Default digits shown in the table (``--digits``).
COMPARE_DIGITS = 6
#: The command's default ``--max-outputs``: ten times below the library's ``DEFAULT_MAX_OUTPUTS``,
#: because a Peeling row stopped by the limit has already paid for every round below it
#: (measured: d = 100 distinct counts, k = 4, three Peeling rows refused after 225 s at 10**6
#: and after 20 s at 10**5).
COMPARE_MAX_OUTPUTS = 10**5

_EPSILON = rational_arg("--epsilon", 0, None)
_DELTA = rational_arg("--delta", 0, 1)

COLUMNS = ("E[l_inf]", "E[l_1]", "E[true in top-k]", "P(top-k set)", "P(top-k sequence)")
_KEYS = ("expected_linf", "expected_l1", "expected_true_in_topk", "p_exact_topk_set", "p_exact_topk_sequence")
#: The metrics of a ``--json`` row: the table's and the shortfall (top-k sum minus chosen sum).
_JSON_KEYS = ("expected_linf", "expected_l1", "expected_shortfall", "expected_true_in_topk", "p_exact_topk_set",
              "p_exact_topk_sequence")


#: ``(name, label, build(counts, k, epsilon, delta))`` of every row, in order: the
#: registry's at import (:func:`exactdp.cli.registry.compare_rows`, which `run` reads afresh).
ROWS = compare_rows()


def add_parser(subs: "argparse._SubParsersAction") -> None:  # type: ignore[type-arg]
    """The ``compare`` sub-parser (it takes no mechanism: it builds them all)."""
    p = subs.add_parser(
        "compare",
        help="exact utility metrics (expected l_inf and l_1 error, ...) of every mechanism at one budget",
        description=fill(
            "Print the exact utility metrics of Joint, PNFJoint, JointSet, Canonical, "
            "CanonicalGamma1, pure-epsilon peeling (Gumbel, and permute-and-flip: PNF-Peel; epsilon/k "
            "per round) and "
            "CDP-Peel ((epsilon, delta)-DP by the Joint paper's Lemma 4.2) on the same counts: "
            "the expected l_inf error max_i (c_(i) - c[s_i]), the expected l_1 error "
            "sum_i |c_(i) - c[s_i]| (the Joint paper's Definition 2.2), the expected "
            "number of chosen items among the true top-k (count >= c_(k)), and the probabilities "
            "that the output is a top-k set and a top-k sequence (up to ties).  Every value is "
            "certified to --dps digits; no sampling.  A mechanism whose outputs would have to be "
            "enumerated past --max-outputs is shown as n/a with the reason."
        ),
        epilog=f"example:\n  {PROG} compare --counts 10,5,5,1,1,0 -k 2 --epsilon 1",
        formatter_class=FORMATTER,
        allow_abbrev=False,
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--counts", type=counts_arg, metavar="COUNTS",
                        help="comma/space-separated integer counts (VALUExREPEAT repeats VALUE)")
    source.add_argument("--counts-file", type=counts_file_arg, dest="counts", metavar="PATH",
                        help="read the counts from a file ('-' is stdin)")
    p.add_argument("-k", "--k", type=int_arg, required=True, metavar="K", help="number of items to select")
    p.add_argument("--epsilon", type=_EPSILON, required=True, metavar="EPS",
                   help="the privacy budget of every mechanism, an exact positive number ('1', '0.5', '1/3')")
    p.add_argument("--delta", type=_DELTA, default=DEFAULT_DELTA, metavar="D",
                   help="CDP-Peel's delta, an exact number in (0, 1) (default 1e-6)")
    p.add_argument("--dps", type=dps_arg, default=30, metavar="N",
                   help="certified significant digits of every value (default %(default)s)")
    p.add_argument("--digits", type=digits_arg, default=COMPARE_DIGITS, metavar="N",
                   help="significant digits shown in the table (default %(default)s; --json shows --dps digits)")
    p.add_argument("--max-outputs", type=positive_int_arg, default=COMPARE_MAX_OUTPUTS, metavar="N",
                   help="enumerate at most N outputs (or Peeling's dynamic-programme states per round) per "
                   "mechanism (default %(default)s, so that a table takes seconds; the library's default is "
                   f"{DEFAULT_MAX_OUTPUTS}); Joint, PNFJoint and JointSet are counted, never enumerated")
    add_json(p, "one JSON object with every mechanism's metrics and l_inf distribution")
    p.set_defaults(mechanism=None)


def _row(name: str, label: str, build: Callable[..., Mechanism], args: argparse.Namespace,
         digits: int) -> dict[str, Any]:
    """One mechanism's metrics, or its reason for ``n/a``."""
    out: dict[str, Any] = {"name": name, "label": label}
    try:
        mech = build(args.counts, args.k, args.epsilon, args.delta)
        out["mechanism"] = repr(mech)
        out["metrics"] = metrics(mech, dps=digits, max_outputs=args.max_outputs)
    except TooManyOutputsError as err:
        out["reason"] = f"--max-outputs = {args.max_outputs} exceeded: {_first_clause(err)}"
    except ExactDPError as err:
        out["reason"] = _first_clause(err)
    return out


def _first_clause(err: ExactDPError) -> str:
    text = getattr(err, "reason", None) or str(err)
    return text.split(";")[0].strip()


def run(args: argparse.Namespace) -> int:
    """Run ``compare``: build every row, then print the table (or JSON)."""
    as_k(args.k, len(as_counts(args.counts)))  # bad -k: one error naming it, not seven n/a rows
    digits = args.dps if args.json else max(args.dps, args.digits)
    rows = [_row(name, label, build, args, digits) for name, label, build in compare_rows()]
    if args.json:
        emit_json(_json(args, rows))
        return 0
    d = len(args.counts)
    write_line(f"{PROG} compare: d = {d}, k = {args.k}, epsilon = {exact_text(args.epsilon)}; "
         f"every value certified to {args.dps} digits, shown to {args.digits}")
    table_rows = []
    for row in rows:
        if "metrics" not in row:
            table_rows.append([row["label"]] + ["n/a"] * len(COLUMNS))
            continue
        m = row["metrics"]
        table_rows.append([row["label"]] + [_cell(m[key], args.digits) for key in _KEYS])
    for line in table_lines(("mechanism",) + COLUMNS, table_rows, left=(0,)):
        write_line(line)
    for row in rows:
        if "metrics" not in row:
            write_line(f"{row['label']}: n/a ({row['reason']})")
    write_line()
    cdp = cdp_round_epsilon(args.epsilon, args.delta, args.k)
    source = "epsilon/k, larger than Lemma 4.2's" if cdp == args.epsilon / args.k else "Lemma 4.2, rounded down"
    write_line(f"CDP-Peel: delta = {number_text(_mp(args.delta), 6)}, per-round epsilon {number_text(_mp(cdp), ROUND_DECIMALS)} "
         f"({source}); pure-epsilon peeling: Gumbel noise (exponential mechanism) or permute-and-flip (PNF-Peel), "
         f"epsilon/k per round.")
    write_line("P(top-k sequence) is '-' for set mechanisms.")
    return 0


def _cell(value: Optional[mpmath.mpf], digits: int) -> str:
    return "-" if value is None else number_text(value, digits)


def _mp(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


def _json(args: argparse.Namespace, rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "d": len(args.counts), "k": args.k, "epsilon": exact_text(args.epsilon), "delta": exact_text(args.delta),
        "cdp_peel_round_epsilon": exact_text(cdp_round_epsilon(args.epsilon, args.delta, args.k)),
        "dps": args.dps, "mechanisms": [],
    }
    for row in rows:
        item: dict[str, Any] = {"name": row["name"], "label": row["label"]}
        if "metrics" not in row:
            item["reason"] = row["reason"]
        else:
            m = row["metrics"]
            item["mechanism"] = row["mechanism"]
            item.update({key: json_scalar(m[key], args.dps) for key in _JSON_KEYS})
            item["linf_distribution"] = {str(e): json_scalar(p, args.dps) for e, p in m["linf_distribution"].items()}
        out["mechanisms"].append(item)
    return out

