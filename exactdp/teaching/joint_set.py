"""Walk-through of JointSet: the matrices M̂ and A of Lemma 6, the path counts of Lemma 7.

Paper: Gillenwater, Joseph, Munoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (NeurIPS 2021 PriML workshop; no arXiv version of its
own, the related full paper is arXiv:2201.12333): Lemma 5 (the utility), Lemma 6 (sets as
paths through the 0/1 matrix A), Lemma 7 (counting the paths), Algorithm 1, Theorem 8.

The numbers come from :mod:`exactdp.mechanisms.joint_set` (``matrix_hat``, ``matrix_a``,
``count_at_least`` by matrix paths, with the dynamic programme shown as a check,
``levels()``, the certified and exact probabilities, ``rule.sample_level`` and the
unranking of a level).
"""

from __future__ import annotations

from typing import Any

from ..mechanisms.joint_set.mechanism import JointSet, candidate_thresholds, matrix_a, matrix_hat
from .explanation import Citation, Explanation, Step, Table, check_size, recording_generator
from .steps import level_draw_step, probability_step, ranking_step, sample_check, summary_step

__all__ = ["explain_joint_set", "JOINT_SET_PAPER"]

#: The JointSet paper as docs/definitions.md cites it.
JOINT_SET_PAPER = ("A Joint Exponential Mechanism for Differentially Private Top-k Set",
                   "Gillenwater, Joseph, Munoz Medina, Ribero, NeurIPS 2021 PriML workshop",
                   "no arXiv version of its own (related full paper: arXiv:2201.12333)")


def _grid(rows: list[list[int]], first: int = 1) -> Table:
    width = len(rows[0])
    return Table(("l",) + tuple(f"c={c}" for c in range(width)),
                 tuple((l + first,) + tuple(row) for l, row in enumerate(rows)))


def explain_joint_set(m: JointSet, rng: Any, max_size: int, digits: int = 20) -> Explanation:
    """The walk-through of a :class:`JointSet`.

    ``m``: the mechanism; ``rng``: the draw's generator (an int seed, ``None`` or a
    :class:`random.Random`, see :func:`~exactdp.teaching.explanation.recording_generator`);
    ``max_size``: the most items allowed (:func:`~exactdp.teaching.explanation.check_size`);
    ``digits``: significant digits of the certified probabilities shown (default 20)."""
    thresholds = candidate_thresholds(m.ranking, m.k)
    check_size(m.d, max_size, rows=len(thresholds) * (m.k + 1))
    rec, seed, finish = recording_generator(rng)
    state = rec.getstate()
    steps = [ranking_step(m)]
    steps.append(Step(
        "Mhat", "M̂_{l, c} = c_(l) - c_(l+c)",
        "Lemma 5: a k-set with ranks r_1 < ... < r_k has utility -max_l (c_(l) - c_(r_l)). The "
        "left-aligned matrix M̂ holds every difference c_(l) - c_(l+c) a set can meet (rows l = "
        "1..k, shift c = 0..d-k), with a bottom row of ones.",
        (("M̂", _grid(matrix_hat(m.counts, m.k))),)))
    data: list[tuple[str, Any]] = []
    rows, previous = [], 0
    for M in thresholds:
        N = m.count_at_least(M)
        check = m.count_at_least(M, method="dp")
        assert N == check, "Lemma 7's path count equals the dynamic programme"
        data.append((f"A for M = {M}", _grid(matrix_a(m.counts, m.k, M))))
        rows.append((M, N, check, N - previous))
        previous = N
    data.append(("path counts", Table(("M", "N(M): paths (Lemma 7)", "N(M): dynamic programme",
                                       "m(-M) = N(M) - N(previous M)"), tuple(rows))))
    steps.append(Step(
        "paths", "A^{M}_{l, c} = 1[M̂_{l, c} <= M];  N(M) = #paths",
        "Lemma 6: the sets of utility >= -M are the right/down paths from the top-left to the "
        "bottom-right corner of A through ones (with <=, as in the paper's example). Lemma 7 "
        "counts the paths block by block (binomial transfers); the dynamic programme over rank "
        "positions is shown as a check. Each candidate M is an entry of M̂.",
        tuple(data)))
    level_rows = tuple((lv.utility, lv.multiplicity) for lv in m.levels())
    steps.append(Step("levels", "m(u), u = -M", "The levels: every utility attained, with its number of "
                      "sets (thresholds no set attains exactly are dropped).",
                      (("levels", Table(("u", "m(u) = JointSet.levels()"), level_rows)),)))
    weight = "w(u) = base^(-u)" if m.base is not None else "w(u) = exp(epsilon u / (2 sensitivity))"
    steps.append(probability_step(m, digits, weight, "Theorem 8: the exponential mechanism over sets, "
                                  "P(level u) = m(u) w(u) / sum_v m(v) w(v); certified by arb balls "
                                  "(exact rationals with a rational base)."))
    level_step, a = level_draw_step(
        m, rec, digits, "Algorithm 1 is meant to sample this exponential mechanism (as printed it "
        "samples matrix entries, several of which share a value, and differs: docs/joint_set.md); "
        "exactdp draws the level first.")
    steps.append(level_step)
    mark = len(rec.calls)
    r = rec.randrange(m.table.multiplicities[a])
    drawn = m._unrank(a, r)
    ranks = tuple(sorted(m.ranking.rank_of[i] + 1 for i in drawn))
    steps.append(Step(
        "sample_set", "S ~ Uniform(sets of utility u)",
        "A uniform integer r below m(u) is unranked into the r-th set of the level through the "
        "level's path counts (a dynamic programme over the same column blocks, walked backwards).",
        (("random integers", rec.since(mark)), ("r", r), ("ranks", ranks),
         ("items", tuple(sorted(drawn))))))
    steps.append(summary_step(m, tuple(sorted(drawn)), seed, sample_check(m, state, drawn)))
    finish()
    return Explanation(f"JointSet walk-through: {m!r}",
                       Citation(*JOINT_SET_PAPER, "Lemmas 5-7, Algorithm 1, Theorem 8"), tuple(steps))
