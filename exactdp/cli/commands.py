"""The sub-commands: one function per command, from parsed arguments to printed output.

``dist``, ``levels``, ``prob``, ``sample``, ``audit`` and ``certify`` take the registered
mechanism built from the arguments (:data:`exactdp.cli.registry.MECHANISMS`) and print
through :mod:`exactdp.cli.render`; ``check`` takes no mechanism and runs the papers'
executable checks (:mod:`proofs_checks`).  A command's exit status other than 0 is left
in ``args._status``; a bad request the library cannot see raises :class:`CommandError`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from fractions import Fraction
from types import ModuleType
from typing import Iterator

import mpmath

from ..core._typing import Output
from ..core.mechanism import Mechanism
from ..core.validation import as_rng
from ..mechanisms.canonical import NotSingleRuleError
from .registry import MechanismSpec
from ..core.formatting import (
    change_text,
    exact_text,
    format_int,
    int_text,
    number_text,
    output_ids,
    output_text,
    table_lines,
)
from .render import (
    PROG,
    _describe,
    _ellipsis,
    _emit_json,
    _larger_under,
    _mechanism_json,
    _out,
    _precision_line,
    _Progress,
    _summary_lines,
)

__all__ = ["CommandError", "CERTIFY_STATUS", "cmd_dist", "cmd_levels", "cmd_prob", "cmd_sample",
           "cmd_audit", "cmd_certify", "cmd_check"]


class CommandError(Exception):
    """A bad request detected by the CLI itself (exit status 2)."""


def _digits(args: argparse.Namespace) -> tuple[int, int]:
    """(dps to compute at, digits to show).  Human output never shows uncertified digits."""
    if args.json:
        return args.dps, args.dps
    return max(args.dps, args.digits), args.digits


def _per_output_probabilities(m: Mechanism, dps: int) -> list[mpmath.mpf]:
    """Certified probability of one output of each level."""
    return [p for _, p in m.level_output_probabilities(dps)]


def _single_rule(m: Mechanism) -> bool:
    """Whether ``m`` is one selection rule over utility levels (every mechanism but
    CanonicalGamma1, whose probability groups are its two-stage ``(h, t)`` classes)."""
    try:
        next(m.iter_levels(), None)
    except NotSingleRuleError:
        return False
    return True


def _check_outputs_guard(m: Mechanism, args: argparse.Namespace) -> None:
    if args.outputs and m.support_size() > args.max_outputs:
        raise CommandError(
            f"the mechanism has {format_int(m.support_size(), ellipsis='...')} outputs, more than "
            f"--max-outputs {args.max_outputs}; raise --max-outputs to list them"
        )


def _outputs_by_group(m: Mechanism, args: argparse.Namespace, output_probs: list) -> Iterator[tuple[Output, mpmath.mpf]]:
    """Every output with the certified probability of its group, group by group."""
    it = m.outputs(max_outputs=args.max_outputs)  # group by group, groups() order
    for a, group in enumerate(m.groups()):
        for _ in range(group.multiplicity):
            yield next(it), output_probs[a]


def _outputs_json(m: Mechanism, args: argparse.Namespace, output_probs: list, dps: int) -> list[dict]:
    return [{"output": output_ids(o), "probability": number_text(p, dps, strip_zeros=False)}
            for o, p in _outputs_by_group(m, args, output_probs)]


def _print_outputs(m: Mechanism, args: argparse.Namespace, output_probs: list, digits: int) -> None:
    ell = _ellipsis(sys.stdout)
    _out()
    width = max(len("output"), m.k * len(str(m.d - 1)) + m.k - 1)
    _out(f"{'output'.ljust(width)}  probability")
    for o, p in _outputs_by_group(m, args, output_probs):
        _out(f"{output_text(o, brackets=False).ljust(width)}  {number_text(p, digits, strip_zeros=False, ellipsis=ell)}")


def cmd_dist(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    if not _single_rule(m):
        _dist_classes(name, spec, m, args)
        return
    dps, digits = _digits(args)
    _check_outputs_guard(m, args)
    levels = m.levels()
    level_probs = [p for _, p in m.level_probabilities(dps)]
    output_probs = _per_output_probabilities(m, dps)
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "dps": dps,
            "support_size": int_text(m.support_size()),
            "levels": [
                {
                    "index": a,
                    "utility": exact_text(level.utility),
                    "multiplicity": int_text(level.multiplicity),
                    "level_probability": number_text(level_probs[a], dps, strip_zeros=False),
                    "output_probability": number_text(output_probs[a], dps, strip_zeros=False),
                }
                for a, level in enumerate(levels)
            ],
        })
        if args.outputs:
            obj["outputs"] = _outputs_json(m, args, output_probs, dps)
        _emit_json(obj)
        return

    ell = _ellipsis(sys.stdout)
    rows = [
        [
            str(a),
            exact_text(level.utility, ellipsis=ell),
            format_int(level.multiplicity, ellipsis=ell),
            number_text(level_probs[a], digits, strip_zeros=False, ellipsis=ell),
            number_text(output_probs[a], digits, strip_zeros=False, ellipsis=ell),
        ]
        for a, level in enumerate(levels)
    ]
    for line in table_lines(["level", "utility", "multiplicity", "P(level)", "P(each output)"], rows, left=(3, 4)):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, levels):
        _out(line)
    _out(_precision_line(dps, digits))
    if args.outputs:
        _print_outputs(m, args, output_probs, digits)


def _dist_classes(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    """``dist`` of a two-stage mechanism (CanonicalGamma1): one row per ``(h, t)`` class,
    the groups of equally likely outputs, with its exact utility and size."""
    dps, digits = _digits(args)
    _check_outputs_guard(m, args)
    classes = m.classes()
    class_probs = [p for _, _, p in m.class_probabilities(dps)]
    output_probs = [p for _, p in m.group_output_probabilities(dps)]
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "dps": dps,
            "support_size": int_text(m.support_size()),
            "classes": [
                {
                    "index": a, "h": c.h, "t": c.t, "utility": exact_text(-c.loss), "multiplicity": int_text(c.size),
                    "class_probability": number_text(class_probs[a], dps, strip_zeros=False),
                    "output_probability": number_text(output_probs[a], dps, strip_zeros=False),
                }
                for a, c in enumerate(classes)
            ],
        })
        if args.outputs:
            obj["outputs"] = _outputs_json(m, args, output_probs, dps)
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    rows = [
        [str(a), str(c.h), str(c.t), exact_text(-c.loss, ellipsis=ell), format_int(c.size, ellipsis=ell),
         number_text(class_probs[a], digits, strip_zeros=False, ellipsis=ell),
         number_text(output_probs[a], digits, strip_zeros=False, ellipsis=ell)]
        for a, c in enumerate(classes)
    ]
    headers = ["class", "h", "t", "utility", "multiplicity", "P(class)", "P(each output)"]
    for line in table_lines(headers, rows, left=(5, 6)):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, classes, "class", "classes (h, t)"):
        _out(line)
    _out(_precision_line(dps, digits))
    if args.outputs:
        _print_outputs(m, args, output_probs, digits)


def _no_levels(name: str) -> CommandError:
    return CommandError(
        f"levels: {name} has no utility levels: it is a two-stage mechanism (a tail t, then a class "
        f"(h, t), then a uniform member), so subsets of equal utility can have different "
        f"probabilities; 'exactdp dist {name}' prints its (h, t) classes"
    )


def cmd_levels(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    if not _single_rule(m):
        raise _no_levels(name)
    levels = m.levels()
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "support_size": int_text(m.support_size()),
            "levels": [
                {"index": a, "utility": exact_text(lv.utility), "multiplicity": int_text(lv.multiplicity)}
                for a, lv in enumerate(levels)
            ],
        })
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    rows = [[str(a), exact_text(lv.utility, ellipsis=ell), format_int(lv.multiplicity, ellipsis=ell)] for a, lv in enumerate(levels)]
    for line in table_lines(["level", "utility", "multiplicity"], rows):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, levels):
        _out(line)


def cmd_prob(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    dps, digits = _digits(args)
    output = args.output
    utility = m.utility(output)  # validates the output (length, repeats, unknown ids)
    if not _single_rule(m):
        _prob_class(name, spec, m, args, utility)
        return
    levels = m.levels()
    index = next(a for a, lv in enumerate(levels) if lv.utility == utility)
    p = m.probability(output, dps)
    logp = m.log_probability(output, dps)
    exact = str(m.probability_exact(output)) if args.exact else None
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "output": list(output),
            "utility": exact_text(utility),
            "level": index,
            "level_multiplicity": int_text(levels[index].multiplicity),
            "dps": dps,
            "probability": number_text(p, dps, strip_zeros=False),
            "log_probability": number_text(logp, dps, strip_zeros=False),
        })
        if exact is not None:
            obj["exact"] = exact
        _emit_json(obj)
        return
    mult = levels[index].multiplicity
    ell = _ellipsis(sys.stdout)
    _out(f"output:          {output_text(output, brackets=False)}")
    _out(
        f"utility:         {exact_text(utility, ellipsis=ell)}  (level {index} of {len(levels)}; "
        f"{format_int(mult, ellipsis=ell)} output{'s' if mult != 1 else ''} in the level)"
    )
    _out(f"probability:     {number_text(p, digits, strip_zeros=False, ellipsis=ell)}")
    _out(f"log-probability: {number_text(logp, digits, strip_zeros=False, ellipsis=ell)}")
    if exact is not None:
        _out(f"exact:           {exact}")
    _out(f"mechanism:       {_describe(m)}")
    _out(f"precision:       certified to relative error 1e-{dps}, shown to {digits} significant digits")


def _prob_class(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace, utility: object) -> None:
    """``prob`` of a two-stage mechanism: the output's ``(h, t)`` class instead of a level."""
    dps, digits = _digits(args)
    output = args.output
    groups = m.groups()
    index = m.group_index(output)
    (h, t), size = groups[index].utility, groups[index].multiplicity
    p, logp = m.probability(output, dps), m.log_probability(output, dps)
    exact = str(m.probability_exact(output)) if args.exact else None
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "output": sorted(output), "utility": exact_text(utility), "h": h, "t": t, "group": index,
            "class_multiplicity": int_text(size), "dps": dps,
            "probability": number_text(p, dps, strip_zeros=False),
            "log_probability": number_text(logp, dps, strip_zeros=False),
        })
        if exact is not None:
            obj["exact"] = exact
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    _out(f"output:          {output_text(sorted(output), brackets=False)}")
    _out(f"utility:         {exact_text(utility, ellipsis=ell)}  (class (h, t) = ({h}, {t}), {index} of "
         f"{len(groups)}; {format_int(size, ellipsis=ell)} output{'s' if size != 1 else ''} in the class)")
    _out(f"probability:     {number_text(p, digits, strip_zeros=False, ellipsis=ell)}")
    _out(f"log-probability: {number_text(logp, digits, strip_zeros=False, ellipsis=ell)}")
    if exact is not None:
        _out(f"exact:           {exact}")
    _out(f"mechanism:       {_describe(m)}")
    _out(f"precision:       certified to relative error 1e-{dps}, shown to {digits} significant digits")


def cmd_sample(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    # One generator for all draws: identical to m.samples(n, rng=seed) for a seed.
    gen = as_rng(args.seed)  # None: random.SystemRandom; a seed: exactly as in the library
    if args.json:
        _emit_json([output_ids(m.sample(gen)) for _ in range(args.n)], indent=None)
        return
    for _ in range(args.n):
        _out(output_text(m.sample(gen), brackets=False))



_VERDICTS = {
    "below": "below epsilon at every neighbour of these counts (the bound is not attained here)",
    "attained": "attained: the loss equals epsilon",
    "violated": "VIOLATED: the loss exceeds epsilon",
}


def cmd_audit(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    from .. import audit

    dps, digits = _digits(args)
    relation = args.relation.replace("-", "_")
    progress = _Progress(f"{PROG} audit: neighbours", enabled=not (args.json or args.no_progress))
    try:
        w = audit.worst_case(
            lambda c: spec.build(c, args.k, args), m.counts, relation, dps,
            epsilon=args.claimed_epsilon, contribution=args.contribution, max_neighbours=args.max_neighbours,
            max_outputs=args.max_outputs, progress=progress,
        )
    finally:
        progress.close()
    args._status = 1 if w.verdict == "violated" else 0
    detail = w.detail
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "relation": relation,
            "contribution": args.contribution,
            "dps": dps,
            "epsilon": exact_text(w.epsilon) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon),
            "epsilon_value": number_text(w.epsilon_value, dps, strip_zeros=False),
            "verdict": w.verdict,
            "attained_exactly": w.attained_exactly,
            "worst": {
                "privacy_loss": number_text(w.loss, dps, strip_zeros=False),
                "neighbour": [int_text(x) for x in w.neighbour],
                "change": list(w.change),
                "witness": output_ids(w.witness),
                "larger_under": _larger_under(w.direction),
                "log_probability_counts": number_text(detail.log_p_a, dps, strip_zeros=False),
                "log_probability_neighbour": number_text(detail.log_p_b, dps, strip_zeros=False),
                "outputs_with_this_loss": int_text(detail.witness_outputs),
            },
            "margin": number_text(w.margin, dps, strip_zeros=False),
            "neighbours_total": int_text(w.neighbours_total),
            "neighbours_audited": len(w.results),
            "results": [
                {
                    "neighbour": [int_text(x) for x in r.neighbour],
                    "change": list(r.change),
                    "privacy_loss": number_text(r.loss.value, dps, strip_zeros=False),
                    "witness": output_ids(r.loss.witness),
                    "larger_under": _larger_under(r.loss.direction),
                }
                for r in w.results
            ],
        })
        _emit_json(obj)
        return
    shown = w.results[: args.rows]
    rows = [
        [",".join(map(str, r.neighbour)), change_text(r.change), number_text(r.loss.value, digits, strip_zeros=False),
         output_text(r.loss.witness, brackets=False), _larger_under(r.loss.direction)]
        for r in shown
    ]
    for line in table_lines(["neighbour", "change", "privacy loss", "witness", "larger under"], rows, left=(0, 1, 3)):
        _out(line)
    classes = "neighbours" if len(w.results) == w.neighbours_total else "classes of neighbours (up to exchanging tied items)"
    _out(f"({len(shown)} of {len(w.results)} {classes} shown, worst first; {w.neighbours_total} {relation} neighbours in all)")
    _out()
    _out(f"worst case:   privacy loss {number_text(w.loss, digits, strip_zeros=False)} at neighbour {','.join(map(str, w.neighbour))}, output {output_text(w.witness, brackets=False)}")
    _out(f"              ln P(output | counts) = {number_text(detail.log_p_a, digits, strip_zeros=False)}, "
         f"ln P(output | neighbour) = {number_text(detail.log_p_b, digits, strip_zeros=False)}")
    eps_text = exact_text(w.epsilon, ellipsis=_ellipsis(sys.stdout)) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon)
    _out(f"epsilon:      {eps_text} (claimed) = {number_text(w.epsilon_value, digits, strip_zeros=False, ellipsis=_ellipsis(sys.stdout))}")
    verdict = _VERDICTS[w.verdict]
    if w.verdict == "attained" and w.attained_exactly:
        verdict += " (exactly)"
    elif w.verdict == "attained":
        verdict += f" (to {dps} digits)"
    _out(f"verdict:      {verdict}; margin epsilon - loss = {number_text(w.margin, digits, strip_zeros=False)}")
    _out(f"mechanism:    {_describe(m)}  [{name}: {spec.summary}]")
    _out(f"precision:    losses certified to relative error 1e-{dps}, shown to {digits} significant digits")




#: ``exactdp certify`` exit status per verdict.
CERTIFY_STATUS = {"pass": 0, "fail": 1, "inconclusive": 3}


def cmd_certify(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    from .. import certify

    progress = _Progress(f"{PROG} certify: listing outputs", enabled=not (args.json or args.no_progress))
    try:
        fit = certify.goodness_of_fit(args.samples, m, within=not args.levels_only, alpha=args.alpha,
                                      delta=args.delta, min_power=args.min_power,
                                      max_enumerate=args.max_enumerate, progress=progress)
    finally:
        progress.close()
    verdict = fit.verdict()
    passed = verdict == "pass"
    args._status = CERTIFY_STATUS[verdict]
    if args.json:
        plan = fit.plan
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "n": fit.n,
            "alpha": args.alpha,
            "verdict": verdict,
            "passed": passed,
            "verdict_line": fit.verdict_line(),
            "delta": fit.delta,
            "min_power": fit.min_power,
            "power": fit.power(),
            "detectable_delta": None if mpmath.isinf(fit.detectable_delta()) else fit.detectable_delta(),
            "n_needed": fit.samples_needed(),
            "plan": {"levels": plan.levels, "level_bins": plan.level_bins, "pooled_levels": plan.pooled_levels,
                     "within_outputs": plan.within_outputs, "within_bins": plan.within_bins,
                     "within_grouped": plan.within_grouped, "untested_outputs": plan.untested_outputs},
            "statistic": fit.statistic,
            "df": fit.df,
            "p_value": number_text(fit.p_value, 6, strip_zeros=False),
            "level_stage": {"statistic": fit.level_statistic, "df": fit.level_df, "p_value": number_text(fit.level_p_value, 6, strip_zeros=False)},
            "within_stage": {"statistic": fit.within_statistic, "df": fit.within_df, "p_value": number_text(fit.within_p_value, 6, strip_zeros=False)},
            "invalid": [{"draw": str(o), "reason": why} for o, why in fit.invalid],
            "impossible": [output_ids(o) for o in fit.impossible],
            "skipped_levels": {str(a): why for a, why in fit.skipped.items()},
            "bins": [
                {"stage": b.stage, "bin": b.label, "observed": b.observed, "expected": b.expected,
                 "contribution": b.contribution}
                for b in fit.bins
            ],
        })
        _emit_json(obj)
        return
    level_bins = [b for b in fit.bins if b.stage == "level"]
    rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in level_bins]
    _out("by level (consecutive levels pooled until each bin expects >= 5 draws):")
    for line in table_lines(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
        _out("  " + line)
    within = sorted((b for b in fit.bins if b.stage == "within"), key=lambda b: -b.contribution)[: args.rows]
    if within:
        _out(f"within levels (the {len(within)} largest contributions):")
        rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in within]
        for line in table_lines(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
            _out("  " + line)
    _out()
    for line in fit.summary(verdict=False).splitlines():
        _out(line)
    _out(f"verdict: {fit.verdict_line()}")
    _out(f"mechanism: {_describe(m)}  [{name}: {spec.summary}]")

def _import_proofs_checks() -> ModuleType:
    """The :mod:`proofs_checks` package, installed with exactdp (a clear error when not)."""
    try:
        return importlib.import_module("proofs_checks")
    except ImportError as err:
        raise CommandError(
            f"check: the proofs_checks package is not importable ({err}); it is installed "
            "with exactdp, so reinstall exactdp"
        ) from None


def cmd_check(args: argparse.Namespace) -> int:
    pc = _import_proofs_checks()
    try:
        checks = pc.select(args.only)
    except KeyError as err:
        raise CommandError(f"check: {err.args[0]}") from None
    jobs = args.jobs if args.jobs is not None else (2 if (os.cpu_count() or 1) >= 2 else 1)
    start = time.perf_counter()
    results = pc.run_checks(checks, full=args.full, jobs=jobs)
    seconds = time.perf_counter() - start
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                handle.write(pc.render_markdown(results, full=args.full, seconds=seconds))
        except OSError as err:
            raise CommandError(f"check: cannot write {args.report!r}: {err.strerror or err}") from None
    text = pc.results_json(results, full=args.full, seconds=seconds) if args.json else pc.render_table(results)
    for line in text.splitlines():
        _out(line)
    return 1 if any(r.status == "FAIL" for r in results) else 0


