"""Walk-throughs of Joint (Algorithm 1) and PNFJoint (Algorithm 5), step by step.

Paper: Gillenwater, Joseph, Munoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333): Section 3, Algorithm 1 with
Lemmas 3.4-3.8 (Joint); Appendix D, Algorithm 5 (PNFJoint).

Every number comes from the mechanism (``refined_utility``, ``mtilde()``, ``levels()``,
the certified and exact probabilities, ``rule.sample_level`` and the unranking plan of a
level); what is derived here again (the t-vectors and the product of Lemma 3.7, the sum of
Lemma 3.5, the digits of the draw) is shown as a check and asserted equal.

Positions ``i`` and ranks ``j`` are 1-based in what is shown, as in the paper.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

from ..mechanisms.joint import Joint
from ..mechanisms.joint import PNFJoint
from ..rules.permute_and_flip import PermuteAndFlip
from .explanation import Citation, Explanation, RecordingRandom, Step, Table, check_size, recording_generator
from .steps import JOINT_PAPER, decimal_text, level_draw_step, probability_step, ranking_step, sample_check, summary_step

__all__ = ["explain_joint", "algorithm5_step"]


def _matrix(rows: list[list[Any]], k: int, d: int) -> Table:
    return Table(("i",) + tuple(f"j={j}" for j in range(1, d + 1)), tuple((i + 1,) + tuple(rows[i]) for i in range(k)))


def _matrix_steps(m: Joint) -> list[Step]:
    d, k, sc = m.d, m.k, m.ranking.sorted_counts
    U = [[-(sc[i] - sc[j]) for j in range(d)] for i in range(k)]
    Ut = [[m.refined_utility(i, j) for j in range(d)] for i in range(k)]
    ceil_ok = all(math.ceil(Ut[i][j]) == U[i][j] for i in range(k) for j in range(d))
    assert ceil_ok, "Lemma 3.5: every refined entry rounds up to its utility"
    return [
        Step("U", "U_ij = -(c_(i) - c_(j))",
             "The utility matrix: row i is output position i (1..k), column j is rank j (1..d). "
             "A sequence s has utility u(s) = min_i U_{i, rank(s_i)} = -max_i (c_(i) - c_(s_i)).",
             (("U", _matrix(U, k, d)),)),
        Step("Utilde", "Ũ_ij = U_ij - (d(k-i) + j) / (2dk)",
             "Algorithm 1, line 3: the refined matrix. Subtracting a different fraction below 1 "
             "from every entry makes all dk entries distinct (Lemma 3.4) without changing their "
             "ceilings, which are the utilities (Lemma 3.5).",
             (("Ũ", _matrix(Ut, k, d)), ("ceil(Ũ_ij) = U_ij for every entry", ceil_ok))),
    ]


def _mtilde_step(m: Joint) -> tuple[Step, dict[int, int]]:
    """Lemmas 3.7-3.8: every entry in decreasing Ũ order with its t-vector and m̃."""
    k = m.k
    t = [0] * k
    rows, by_level = [], {}
    for a, (i, j, value, mt) in enumerate(m.mtilde(), 1):
        n_before = max(t[i] - i, 0)
        t[i] += 1  # entries of row i that are >= this one (rows are decreasing in j)
        n = tuple(max(t[r] - r, 0) for r in range(k))
        product = math.prod(n[r] for r in range(k) if r != i)
        assert product == mt, f"Lemma 3.7 product {product} != Joint.mtilde() {mt} at ({i + 1}, {j + 1})"
        by_level[math.ceil(value)] = by_level.get(math.ceil(value), 0) + mt
        rows.append((a, (i + 1, j + 1), value, tuple(t), n, mt, f"n_{i + 1}: {n_before} -> {n[i]}", math.prod(n)))
    table = Table(("a", "(i, j)", "Ũ_ij", "t = (t_1..t_k)", "n = (n_1..n_k)", "m̃(Ũ_ij)", "update",
                   "p = prod_r n_r"), tuple(rows))
    step = Step(
        "mtilde", "m̃(Ũ_ij) = prod_{r != i} n_r,  n_r = max(t_r - (r - 1), 0)",
        "Lemmas 3.7-3.8 (Algorithm 1, lines 4-19): visit the entries in decreasing Ũ order; "
        "t_r counts the entries of row r that are >= the current one, n_r = t_r - (r-1) is the "
        "number of choices left for position r, and m̃ (the number of sequences whose score, the "
        "smallest Ũ entry they use, is exactly this entry) is the product of the other rows' n_r. "
        "The running product p of all n_r changes by one factor per entry (column 'update'), "
        "so once every row has a choice m̃ = p / n_i before the update (lines 14-19).",
        (("entries", table),))
    return step, by_level


def _levels_step(m: Joint, by_level: dict[int, int]) -> Step:
    rows = tuple((lv.utility, lv.multiplicity, by_level.get(lv.utility, 0)) for lv in m.levels())
    assert all(r[1] == r[2] for r in rows), "Lemma 3.5: m(u) is the sum of m̃ over its entries"
    return Step("levels", "m(u) = sum of m̃(Ũ_ij) over ceil(Ũ_ij) = u",
                "Lemma 3.5: the sequences of utility u are those whose score entry rounds up to u, "
                "so the level sizes m(u) are sums of m̃; exactdp counts them directly by its integer "
                "sweep (Joint.levels()), shown beside the sum of the table above.",
                (("levels", Table(("u", "m(u) = Joint.levels()", "sum of m̃"), rows)),))


def _rank_steps(m: Joint, rec: RecordingRandom, a: int) -> tuple[list[Step], tuple[int, ...]]:
    """Algorithm 1, lines 21-24 given the level: a uniform rank, its score entry, then the
    positions from its mixed-radix digits (Joint's own unranking, re-read step by step)."""
    k, order = m.k, m.ranking.order
    mark = len(rec.calls)
    size = m.table.multiplicities[a]
    r = rec.randrange(size)
    plan = m._plan(a)
    t_at = [plan.after[x] + x for x in range(k)]
    blocks, start, chosen = [], 0, None
    for i in range(k):
        width = t_at[i] - plan.t_gt[i]
        per_entry = (plan.ends[i] - start) // width if width else 0
        for q in range(width):
            lo = start + q * per_entry
            col = plan.t_gt[i] + q
            if not per_entry:  # m̃ = 0: no sequence of the level has this score entry
                continue
            blocks.append(((i + 1, col + 1), m.refined_utility(i, col), lo, lo + per_entry - 1, per_entry))
            if lo <= r < lo + per_entry:
                chosen = (i, col, r - lo)
        start = plan.ends[i]
    assert chosen is not None
    i, col, rest = chosen
    rank_step = Step(
        "sample_rank", "r ~ Uniform{0, ..., m(u) - 1}; score entry (i, j)",
        "Given the level, every sequence of it is equally likely, so exactdp draws one uniform "
        "integer r below m(u). The level's sequences are numbered entry by entry: the m̃(Ũ_ij) "
        "sequences whose score is entry (i, j) take consecutive numbers, so r names the entry "
        "(i, j) that Algorithm 1, line 20 draws (with probability m̃(Ũ_ij) w(u) / Z, Lemma 3.5: "
        "the same law; entries with m̃ = 0 are left out) and a remainder that fills the other positions.",
        (("random integers", rec.since(mark)), ("r", r),
         ("entries of the level", Table(("(i, j)", "Ũ_ij", "first r", "last r", "m̃(Ũ_ij)"), tuple(blocks))),
         ("score entry (i, j)", (i + 1, col + 1)), ("remainder", rest)))
    used, picks, rows = {col}, [None] * k, []
    picks[i] = col
    digits_left = rest
    for x in range(k):
        if x == i:
            rows.append((x + 1, "the score entry", "-", col + 1, order[col]))
            continue
        limit = plan.t_gt[x] if x < i else t_at[x]
        choices = [y for y in range(limit) if y not in used]
        digits_left, digit = divmod(digits_left, len(choices))
        picks[x] = choices[digit]
        used.add(choices[digit])
        rows.append((x + 1, tuple(y + 1 for y in choices), digit, choices[digit] + 1, order[choices[digit]]))
    drawn = tuple(order[y] for y in picks)
    assert drawn == m._unrank(a, r), "the digits re-read Joint's unranking"
    pos_step = Step(
        "sample_positions", "s_i' ~ Uniform([t_i'(Ũ_ij)] minus the ranks used)",
        "Algorithm 1, lines 21-24: position i takes rank j; every other position i' takes a rank "
        "j' with Ũ_i'j' >= Ũ_ij not used yet (Lemma 3.6: never an empty choice). exactdp reads "
        "the choices from the remainder's mixed-radix digits (least significant first, in "
        "position order): a bijection, so a uniform r gives uniform choices.",
        (("positions", Table(("position", "choice set (ranks)", "digit", "rank", "item"), tuple(rows))),
         ("sample", drawn)))
    return [rank_step, pos_step], drawn


def algorithm5_step(m: PNFJoint, rec: RecordingRandom) -> tuple[Step, int]:
    """Algorithm 5, level by level: ``v_a = u_a + MaxExpo(lam, m_a)`` from a lazily refined
    uniform ``U_a`` per level, decided on certified bounds; the largest wins.  Run by the
    rule's own sampler (``PermuteAndFlip(sampler="algorithm5")``), which reports each
    level's final bits and bounds.  ``m``: the PNFJoint; ``rec``: the recording generator
    the draw reads.  Returns the step and the level index drawn."""
    table = m.table
    mark = len(rec.calls)
    trace: list = []
    a = PermuteAndFlip(sampler="algorithm5").sample_level_algorithm5(table, rec, trace)
    u0 = table.utilities[0]
    rows = []
    for b, (lv, state) in enumerate(itertools.zip_longest(table.levels, trace)):
        gap = int(u0 - lv.utility)
        if m.base is not None:
            p: Any = m.base ** gap
        else:
            p = f"exp(-{m.epsilon / (2 * m.sensitivity) * gap})" if gap else Fraction(1)
        if state is None:  # one level: nothing is drawn
            rows.append((lv.utility, lv.multiplicity, p, "-", "-", "-", True))
            continue
        bits, n, lo, hi = state
        rows.append((lv.utility, lv.multiplicity, p, f"[{bits}, {bits + 1}) / 2^{n}",
                     _bound(lo, down=True), _bound(hi, down=False), b == a))
    table_ = Table(("u", "m(u)", "p = w(u) / w(u_max)", "U (its bits)", "noisy value >=", "noisy value <=",
                    "largest"), tuple(rows))
    step = Step(
        "sample_race", "v_u = u + MaxExpo(lam, m(u)); the level of the largest v_u",
        "Algorithm 5: permute-and-flip over all sequences is report-noisy-max with exponential "
        "noise (Algorithm 4), and the largest noise among the m(u) sequences of level u is "
        "MaxExpo(lam, m(u)), drawn by the inverse CDF -ln(1 - U^(1/m(u))) / lam of a uniform U "
        "(Equation 6). Each U is read 32 bits at a time from the generator; the noisy value "
        "lam (v_u - u_max) = ln p - ln(1 - U^(1/m(u))) is bounded on certified enclosures "
        "(shown rounded outward to 12 digits), and a level wins once its lower bound exceeds "
        "every other upper bound (levels that overlap draw more bits). p is the acceptance "
        "probability of a sequence of level u in permute-and-flip. This is the draw of "
        "PNFJoint(..., sampler=\"algorithm5\"); the default sampler draws the level from its "
        "certified level probabilities instead (the same law).",
        (("random integers", rec.since(mark)), ("levels", table_), ("level drawn", table.utilities[a])))
    return step, a


def _bound(x: Any, down: bool) -> str:
    """An exact arb bound (a point, or +inf) as a decimal rounded outward to 12 places."""
    if not x.is_finite():
        return "inf"
    man, exp = (int(v) for v in x.man_exp())
    value = Fraction(man) * Fraction(2) ** exp
    return decimal_text(value, 12, up=not down)


def explain_joint(m: Joint, rng: Any, max_size: int, digits: int = 20) -> Explanation:
    """The walk-through of a :class:`Joint` or :class:`PNFJoint`.

    ``m``: the mechanism; ``rng``: the draw's generator (an int seed, ``None`` or a
    :class:`random.Random`, see :func:`~exactdp.teaching.explanation.recording_generator`);
    ``max_size``: the most items allowed (:func:`~exactdp.teaching.explanation.check_size`);
    ``digits``: significant digits of the certified probabilities shown (default 20)."""
    check_size(m.d, max_size, rows=m.d * m.k)
    pnf = isinstance(m.rule, PermuteAndFlip)  # PNFJoint: Joint's levels under permute-and-flip
    rec, seed, finish = recording_generator(rng)
    state = rec.getstate()
    steps = [ranking_step(m)] + _matrix_steps(m)
    mt_step, by_level = _mtilde_step(m)
    steps += [mt_step, _levels_step(m, by_level)]
    if pnf:
        weight = ("permute-and-flip: an output of utility u is accepted with p = w(u) / w(u_max), "
                  + ("w(u) = base^(-u)" if m.base is not None else "w(u) = exp(epsilon u / (2 sensitivity))"))
        text = ("Appendix D: permute-and-flip over all sequences, the same as report-noisy-max with "
                "exponential noise (Algorithm 4); exactdp integrates its level law exactly "
                "(certified arb balls; exact rationals with a rational base).")
    else:
        weight = "w(u) = base^(-u)" if m.base is not None else "w(u) = exp(epsilon u / (2 sensitivity))"
        text = ("Equation 1 over levels: P(level u) = m(u) w(u) / sum_v m(v) w(v); certified by arb "
                "balls (exact rationals with a rational base).")
    steps.append(probability_step(m, digits, weight, text))
    if pnf:
        race_step, a = algorithm5_step(m, rec)
        steps.append(race_step)
    else:
        level_step, a = level_draw_step(
            m, rec, digits, "Algorithm 1, line 20 draws an entry with probability proportional to "
            "m̃(Ũ_ij) w(ceil Ũ_ij); summed over the entries of one level this is P(level u) "
            "(Lemma 3.5), so exactdp draws the level first.")
        steps.append(level_step)
    rank_steps, drawn = _rank_steps(m, rec, a)
    steps += rank_steps
    if pnf:
        twin = PNFJoint(m.counts, m.k, m.epsilon, base=m.base, sensitivity=m.sensitivity, sampler="algorithm5")
        steps.append(summary_step(m, drawn, seed, sample_check(twin, state, drawn),
                                  'PNFJoint(..., sampler="algorithm5").sample'))
    else:
        steps.append(summary_step(m, drawn, seed, sample_check(m, state, drawn)))
    finish()
    where = "Appendix D, Algorithm 5; Algorithm 1, Lemmas 3.4-3.8" if pnf else "Section 3, Algorithm 1, Lemmas 3.4-3.8"
    title = f"{type(m).__name__} walk-through: {m!r}"
    return Explanation(title, Citation(*JOINT_PAPER, where), tuple(steps))

