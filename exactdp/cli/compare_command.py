"""The ``compare`` command: the exact utility metrics of every mechanism side by side at one budget.

``exactdp compare --counts ... -k K --epsilon E [--delta D]`` builds, at the same privacy
budget, Joint, PNFJoint, JointSet, Canonical, CanonicalGamma1, pure-epsilon peeling with
``E/k`` per round (Gumbel noise, the exponential mechanism each round; and permute-and-flip,
PNF-Peel, Lemma 4.1 of the Joint paper) and CDP-Peel
(Gumbel peeling with the per-round epsilon of :func:`exactdp.accounting.cdp_peel_local_epsilon`,
``(E, D)``-DP by Lemma 4.2; Durfee & Rogers, NeurIPS 2019, arXiv:1905.04273), and prints
:func:`exactdp.utility.metrics` of each (one row per mechanism).  A mechanism whose metrics
cannot be computed exactly here (too many outputs to enumerate, past ``--max-outputs``) is
a row ``n/a (reason)``; the others are shown all the same.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import Any, Callable, Optional

import mpmath

import exactdp

from ..core.formatting import exact_text, json_scalar, number_text, table_lines
from ..core.mechanism import Mechanism
from ..core.validation import as_counts, as_k
from ..errors import ExactDPError, TooManyOutputsError
from ..utility import DEFAULT_MAX_OUTPUTS, metrics
from .options import _FORMATTER, _add_json, _fill
from .parse import _counts_arg, _counts_file_arg, _digits_arg, _dps_arg, _int_arg, _positive_int_arg, _rational_arg
from .render import PROG, _emit_json, _out

__all__ = ["add_compare_parser", "cmd_compare", "DEFAULT_DELTA", "ROWS"]

#: CDP-Peel's delta unless ``--delta`` is given (the Joint paper's experiments use 1e-6).
DEFAULT_DELTA = Fraction(1, 10**6)
#: Default digits shown in the table (``--digits``).
COMPARE_DIGITS = 6
#: CDP-Peel's per-round epsilon is rounded *down* to this many decimals, so the mechanism
#: run is at most as private-costly as the accounting allows.
ROUND_DECIMALS = 12
#: The command's default ``--max-outputs``: ten times below the library's ``DEFAULT_MAX_OUTPUTS``,
#: because a Peeling row stopped by the limit has already paid for every round below it
#: (measured: d = 100 distinct counts, k = 4, three Peeling rows refused after 225 s at 10**6
#: and after 20 s at 10**5).
COMPARE_MAX_OUTPUTS = 10**5

_EPSILON = _rational_arg("--epsilon", 0, None)
_DELTA = _rational_arg("--delta", 0, 1)

COLUMNS = ("E[l_inf]", "E[l_1]", "E[true in top-k]", "P(top-k set)", "P(top-k sequence)")
_KEYS = ("expected_linf", "expected_l1", "expected_true_in_topk", "p_exact_topk_set", "p_exact_topk_sequence")
#: The metrics of a ``--json`` row: the table's and the shortfall (top-k sum minus chosen sum).
_JSON_KEYS = ("expected_linf", "expected_l1", "expected_shortfall", "expected_true_in_topk", "p_exact_topk_set",
              "p_exact_topk_sequence")


def cdp_round_epsilon(epsilon: Fraction, delta: Fraction, k: int) -> Fraction:
    """CDP-Peel's per-round epsilon as an exact rational at most the accounted one,
    :func:`~exactdp.accounting.cdp_peel_local_epsilon` ``= max(epsilon/k, Lemma 4.2's value)``:
    ``epsilon/k`` exactly when basic composition gives the larger budget, otherwise Lemma 4.2's
    value just below, to ``ROUND_DECIMALS`` decimals
    (:func:`~exactdp.accounting.cdp_peel_round_epsilon_below`)."""
    from ..accounting import cdp_peel_round_epsilon_below

    return max(Fraction(epsilon) / k, cdp_peel_round_epsilon_below(epsilon, delta, k, decimals=ROUND_DECIMALS))


#: ``(name, label, build(counts, k, epsilon, delta))`` of every row, in order.
ROWS: tuple[tuple[str, str, Callable[..., Mechanism]], ...] = (
    ("joint", "Joint", lambda c, k, e, dl: exactdp.Joint(c, k, epsilon=e)),
    ("pnf-joint", "PNFJoint", lambda c, k, e, dl: exactdp.PNFJoint(c, k, epsilon=e)),
    ("joint-set", "JointSet", lambda c, k, e, dl: exactdp.JointSet(c, k, epsilon=e)),
    ("canonical", "Canonical", lambda c, k, e, dl: exactdp.Canonical(c, k, epsilon=e)),
    ("canonical-gamma1", "CanonicalGamma1", lambda c, k, e, dl: exactdp.CanonicalGamma1(c, k, epsilon=e)),
    ("peeling", "peeling (pure ε, ε/k per round, Gumbel)",
     lambda c, k, e, dl: exactdp.Peeling(c, k, epsilon=e, noise="gumbel")),
    ("pnf-peel", "PNF-Peel (pure ε, ε/k per round)",
     lambda c, k, e, dl: exactdp.Peeling(c, k, epsilon=e, noise="exponential")),
    ("cdp-peel", "CDP-Peel (ε, δ)-DP",
     lambda c, k, e, dl: exactdp.Peeling(c, k, epsilon=k * cdp_round_epsilon(e, dl, k), noise="gumbel")),
)


def add_compare_parser(subs: "argparse._SubParsersAction") -> None:  # type: ignore[type-arg]
    """The ``compare`` sub-parser (it takes no mechanism: it builds them all)."""
    p = subs.add_parser(
        "compare",
        help="exact utility metrics (expected l_inf and l_1 error, ...) of every mechanism at one budget",
        description=_fill(
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
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--counts", type=_counts_arg, metavar="COUNTS",
                        help="comma/space-separated integer counts (VALUExREPEAT repeats VALUE)")
    source.add_argument("--counts-file", type=_counts_file_arg, dest="counts", metavar="PATH",
                        help="read the counts from a file ('-' is stdin)")
    p.add_argument("-k", "--k", type=_int_arg, required=True, metavar="K", help="number of items to select")
    p.add_argument("--epsilon", type=_EPSILON, required=True, metavar="EPS",
                   help="the privacy budget of every mechanism, an exact positive number ('1', '0.5', '1/3')")
    p.add_argument("--delta", type=_DELTA, default=DEFAULT_DELTA, metavar="D",
                   help="CDP-Peel's delta, an exact number in (0, 1) (default 1e-6)")
    p.add_argument("--dps", type=_dps_arg, default=30, metavar="N",
                   help="certified significant digits of every value (default %(default)s)")
    p.add_argument("--digits", type=_digits_arg, default=COMPARE_DIGITS, metavar="N",
                   help="significant digits shown in the table (default %(default)s; --json shows --dps digits)")
    p.add_argument("--max-outputs", type=_positive_int_arg, default=COMPARE_MAX_OUTPUTS, metavar="N",
                   help="enumerate at most N outputs (or Peeling's dynamic-programme states per round) per "
                   "mechanism (default %(default)s, so that a table takes seconds; the library's default is "
                   f"{DEFAULT_MAX_OUTPUTS}); Joint, PNFJoint and JointSet are counted, never enumerated")
    _add_json(p, "one JSON object with every mechanism's metrics and l_inf distribution")
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


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``compare``: build every row, then print the table (or JSON)."""
    as_k(args.k, len(as_counts(args.counts)))  # bad -k: one error naming it, not seven n/a rows
    digits = args.dps if args.json else max(args.dps, args.digits)
    rows = [_row(name, label, build, args, digits) for name, label, build in ROWS]
    if args.json:
        _emit_json(_json(args, rows))
        return 0
    d = len(args.counts)
    _out(f"{PROG} compare: d = {d}, k = {args.k}, epsilon = {exact_text(args.epsilon)}; "
         f"every value certified to {args.dps} digits, shown to {args.digits}")
    table_rows = []
    for row in rows:
        if "metrics" not in row:
            table_rows.append([row["label"]] + ["n/a"] * len(COLUMNS))
            continue
        m = row["metrics"]
        table_rows.append([row["label"]] + [_cell(m[key], args.digits) for key in _KEYS])
    for line in table_lines(("mechanism",) + COLUMNS, table_rows, left=(0,)):
        _out(line)
    for row in rows:
        if "metrics" not in row:
            _out(f"{row['label']}: n/a ({row['reason']})")
    _out()
    cdp = cdp_round_epsilon(args.epsilon, args.delta, args.k)
    source = "epsilon/k, larger than Lemma 4.2's" if cdp == args.epsilon / args.k else "Lemma 4.2, rounded down"
    _out(f"CDP-Peel: delta = {number_text(_mp(args.delta), 6)}, per-round epsilon {number_text(_mp(cdp), ROUND_DECIMALS)} "
         f"({source}); pure-epsilon peeling: Gumbel noise (exponential mechanism) or permute-and-flip (PNF-Peel), "
         f"epsilon/k per round.")
    _out("P(top-k sequence) is '-' for set mechanisms.")
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

