"""Walk-through of Peeling: k rounds, each one exact selection among the remaining items.

Papers: Gillenwater, Joseph, Munoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Section 4.1: CDP-Peel
(Algorithm 3, Gumbel noise: the exponential mechanism per round) and PNF-Peel (Algorithm 2,
exponential noise: permute-and-flip per round, Lemma 4.1).

Each round reads the mechanism: the remaining items' certified probabilities
(``round_distribution``), the exact ones with a rational base (the round rule's
``output_probability_exact`` on the round's level table) and one exact draw of the round's
count by the round rule's ``sample_level``, then a uniform remaining item with that count.
Peeling's own sampler walks a weight tree instead: the same law, not the same integers.
"""

from __future__ import annotations

from typing import Any

from ..mechanisms.peeling import Peeling
from .explanation import Citation, Explanation, Step, Table, check_size, recording_generator
from .steps import JOINT_PAPER, certified, exact_fraction, ranking_step, summary_step, uniform_bits

__all__ = ["explain_peeling"]


def explain_peeling(m: Peeling, rng: Any, max_size: int, digits: int = 20) -> Explanation:
    """The walk-through of a :class:`Peeling`.

    ``m``: the mechanism; ``rng``: the draw's generator (an int seed, ``None`` or a
    :class:`random.Random`, see :func:`~exactdp.teaching.explanation.recording_generator`);
    ``max_size``: the most items allowed (:func:`~exactdp.teaching.explanation.check_size`);
    ``digits``: significant digits of the certified probabilities shown (default 20)."""
    check_size(m.d, max_size, rows=m.d * m.k)
    rec, seed, finish = recording_generator(rng)
    steps = [ranking_step(m)]
    lam = None if m.base is not None else m.epsilon / m.k
    chosen: list[int] = []
    exact_product = 1 if m.base is not None else None
    for rnd in range(1, m.k + 1):
        table = m._round_table([m.counts[i] for i in chosen])
        top = table.utilities[0]
        probs = dict(m.round_distribution(tuple(chosen), digits))
        rows = []
        for item, p in sorted(probs.items()):
            c = m.counts[item]
            w: Any = m.base ** (top - c) if m.base is not None else (f"exp(-{lam * (top - c)})" if top != c else 1)
            row: list[Any] = [item, c, w, certified(p, digits)]
            if m.base is not None:
                row.append(exact_fraction(m.round_rule.output_probability_exact(table, table.index_of(c))))
            rows.append(tuple(row))
        mark = len(rec.calls)
        a = m.round_rule.sample_level(table, rec)
        value = table.utilities[a]
        candidates = tuple(i for i in range(m.d) if i not in chosen and m.counts[i] == value)
        pick = candidates[rec.randrange(len(candidates))]
        u, n = uniform_bits(rec.calls[mark:])
        columns = ["item", "count", "relative weight", "P(picked)"] + (["P(picked) exact"] if m.base is not None else [])
        if exact_product is not None:
            exact_product *= dict((r[0], r[-1]) for r in rows)[pick]
        chosen.append(pick)
        rule = "the exponential mechanism" if m.noise == "gumbel" else "permute-and-flip"
        steps.append(Step(
            f"round_{rnd}", f"round {rnd}: s_{rnd} ~ P(j | the items picked before)",
            f"Round {rnd} runs {rule} over the remaining items with the per-round budget epsilon/k "
            "on the raw counts (relative weight base^(c_max - c) or exp(-(epsilon/k)(c_max - c))). "
            "The count is drawn exactly (inverse CDF of a lazily refined uniform over certified "
            "enclosures" + (f", {n} bits" if n else "") + "), then a uniform remaining item with "
            "that count.",
            (("remaining", Table(tuple(columns), tuple(rows))), ("random integers", rec.since(mark)),
             ("count drawn", value), ("items with that count", candidates), ("picked", pick))))
    drawn = tuple(chosen)
    total = certified(m.probability(drawn, digits), digits)
    data: list[tuple[str, Any]] = [("P(sample) = Peeling.probability", total)]
    if exact_product is not None:
        data.append(("product of the rounds' exact probabilities", exact_product))
    steps.append(Step("product", "P(s) = prod_r P(s_r | s_1..s_{r-1})",
                      "The probability of the whole sequence is the product of its rounds' probabilities.",
                      tuple(data)))
    steps.append(summary_step(m, drawn, seed, None))
    finish()
    where = ("Section 4.1, Algorithm 3 (CDP-Peel)" if m.noise == "gumbel"
             else "Section 4.1, Algorithm 2 (PNF-Peel), Lemma 4.1")
    return Explanation(f"Peeling walk-through: {m!r}", Citation(*JOINT_PAPER, where), tuple(steps))
