"""Checks every number a walk-through shows against the mechanism and the brute-force twins.

``problems(e, m)`` returns a list of what does not match (empty: the walk-through is right).
Imported explicitly (``from tests.teaching.explain_checker import problems``) by the tests in this folder.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction
from itertools import combinations

import mpmath

from exactdp import CanonicalGamma1, Joint, JointSet, Peeling, PNFJoint
from exactdp.core.precision import mp_workdps
from exactdp.core.validation import seed_to_nonnegative
from twins.canonical import canon_class, canon_loss
from twins.joint import brute_levels, brute_mtilde_direct, ranks_of, refined_matrix, sorted_counts
from twins.joint_set import set_at_least, set_brute_levels, set_tally
from twins.peeling import peel_exact

DIGITS = 20


def _nstr(x):
    return mpmath.nstr(x, DIGITS, strip_zeros=False)


def _fraction(expr):
    return Fraction(int(expr.p), int(expr.q))


def _ranking(e, m, out):
    order, _ = ranks_of(m.counts)
    want = tuple((j + 1, order[j], c) for j, c in enumerate(sorted_counts(m.counts)))
    if e.step("ranking")["ranking"].rows != want:
        out.append("ranking")


def _probabilities(e, m, out):
    table = e.step("probabilities")["probabilities"]
    levels = m.levels()
    if table.column("u") != tuple(lv.utility for lv in levels):
        out.append("probabilities: utilities")
    if table.column("P(level)") != tuple(_nstr(p) for _, p in m.level_probabilities(DIGITS)):
        out.append("probabilities: P(level)")
    if table.column("P(one output)") != tuple(_nstr(p) for _, p in m.level_output_probabilities(DIGITS)):
        out.append("probabilities: P(one output)")
    if "P(one output) exact" in table.columns:
        exact = tuple(_fraction(m.probability_exact(m._unrank(a, 0))) for a in range(len(levels)))
        if table.column("P(one output) exact") != exact:
            out.append("probabilities: exact")
        if table.column("P(level) exact") != tuple(p * lv.multiplicity for p, lv in zip(exact, levels)):
            out.append("probabilities: exact level")


def _seeded_sample(e, m, out, label="mechanism.sample"):
    summary = e.step("sample")
    seed = summary["seed"]
    drawn = summary["sample"]
    again = m.sample(random.Random(seed_to_nonnegative(seed)))
    again = tuple(sorted(again)) if m.output_kind == "set" else again
    if again != drawn or summary[f"equals {label} with the same generator"] is not True:
        out.append("sample: not the mechanism's draw")


def _race(e, m, out):
    """Algorithm 5's table: exact acceptance probabilities, one winner, separated bounds."""
    race = e.step("sample_race")
    rows = race["levels"].rows
    levels = m.levels()
    if tuple((r[0], r[1]) for r in rows) != tuple(levels):
        out.append("race: levels")
    if m.base is not None and tuple(r[2] for r in rows) != tuple(m.base ** (levels[0][0] - u) for u, _ in levels):
        out.append("race: acceptance probabilities")
    winners = [r for r in rows if r[6] is True]
    if len(winners) != 1 or winners[0][0] != race["level drawn"]:
        out.append("race: winner")
    elif len(rows) > 1:
        low = Fraction(winners[0][4])
        if any(Fraction(r[5]) >= low for r in rows if r is not winners[0]):
            out.append("race: the winner's lower bound does not clear the others")
    twin = PNFJoint(m.counts, m.k, m.epsilon, base=m.base, sensitivity=m.sensitivity, sampler="algorithm5")
    _seeded_sample(e, twin, out, 'PNFJoint(..., sampler="algorithm5").sample')


def _joint(e, m, out):
    c, k, d = m.counts, m.k, m.d
    sc = sorted_counts(c)
    U = e.step("U")["U"]
    if U.rows != tuple((i + 1,) + tuple(-(sc[i] - sc[j]) for j in range(d)) for i in range(k)):
        out.append("U")
    Ut = refined_matrix(c, k)
    if e.step("Utilde")["Ũ"].rows != tuple((i + 1,) + tuple(Ut[i]) for i in range(k)):
        out.append("Utilde")
    brute = brute_mtilde_direct(c, k)
    entries = e.step("mtilde")["entries"]
    values = entries.column("Ũ_ij")
    if list(values) != sorted(values, reverse=True) or len(values) != d * k:
        out.append("mtilde: order")
    lib = {(i + 1, j + 1): mt for i, j, _, mt in m.mtilde()}
    seen = [0] * k
    for (i, j), t, n, p in zip(entries.column("(i, j)"), entries.column("t = (t_1..t_k)"),
                               entries.column("n = (n_1..n_k)"), entries.column("p = prod_r n_r")):
        seen[i - 1] += 1
        want_t = tuple(sum(1 for x in Ut[r] if x >= Ut[i - 1][j - 1]) for r in range(k))
        if t != want_t or tuple(seen) != t or n != tuple(max(t[r] - r, 0) for r in range(k)) or p != math.prod(n):
            out.append(f"mtilde: t, n or p at {(i, j)}")
    for (i, j), value, mt in zip(entries.column("(i, j)"), values, entries.column("m̃(Ũ_ij)")):
        if mt != brute.get((i - 1, j - 1), 0) or mt != lib[(i, j)] or value != Ut[i - 1][j - 1]:
            out.append(f"mtilde: entry {(i, j)}")
    levels = e.step("levels")["levels"]
    if tuple(r[:2] for r in levels.rows) != tuple(brute_levels(c, k)) or levels.rows != tuple(
            (u, n, n) for u, n in m.levels()):
        out.append("levels")
    _probabilities(e, m, out)
    drawn = e.step("sample")["sample"]
    positions = e.step("sample_positions")
    if positions["sample"] != drawn or positions["positions"].column("item") != drawn:
        out.append("positions: not the sample")
    rank = e.step("sample_rank")
    i, j = rank["score entry (i, j)"]
    block = [row for row in rank["entries of the level"].rows if row[0] == (i, j)]
    if not block or block[0][4] != brute.get((i - 1, j - 1), 0) or not block[0][2] <= rank["r"] <= block[0][3]:
        out.append("sample_rank: the entry's block is not its m̃")
    order, rank_of = ranks_of(c)
    score = min(Ut[r][rank_of[s]] for r, s in enumerate(drawn))
    if score != Ut[i - 1][j - 1]:
        out.append("sample_rank: the score entry is not the sample's score")
    key = "sample_race" if isinstance(m, PNFJoint) else "sample_level"
    if e.step(key)["level drawn"] != m.utility(drawn):
        out.append("sample: level")
    if isinstance(m, PNFJoint):
        _race(e, m, out)
    else:
        _seeded_sample(e, m, out)


def _joint_set(e, m, out):
    c, k, d = m.counts, m.k, m.d
    sc = sorted_counts(c)
    mhat = e.step("Mhat")["M̂"].rows
    want = tuple((l + 1,) + tuple(sc[l] - sc[l + s] for s in range(d - k + 1)) for l in range(k))
    if mhat[:k] != want or mhat[k][1:] != (1,) * (d - k + 1):
        out.append("Mhat")
    tally = set_tally(c, k)
    step = e.step("paths")
    previous = 0
    for M, N, dp, diff in step["path counts"].rows:
        A = step[f"A for M = {M}"].rows
        if any(A[l][1 + s] != int(sc[l] - sc[l + s] <= M) for l in range(k) for s in range(d - k + 1)):
            out.append(f"paths: A for M = {M}")
        if N != set_at_least(tally, M) or dp != N or diff != N - previous:
            out.append(f"paths: N({M})")
        previous = N
    if e.step("levels")["levels"].rows != tuple(set_brute_levels(c, k)):
        out.append("levels")
    _probabilities(e, m, out)
    _seeded_sample(e, m, out)


def _canonical(e, m, out):
    c, k = m.counts, m.k
    sizes = Counter(canon_class(c, k, s) for s in combinations(range(m.d), k))
    probs = {(h, t): p for h, t, p in m.class_probabilities(DIGITS)}
    for h, t, size, loss, p in e.step("classes")["classes"].rows:
        members = [s for s in combinations(range(m.d), k) if canon_class(c, k, s) == (h, t)]
        if size != sizes[(h, t)] or (members and loss != canon_loss(c, k, m.rho, members[0])) or p != _nstr(probs[(h, t)]):
            out.append(f"classes: {(h, t)}")
    if sum(e.step("classes")["classes"].column("size")) != math.comb(m.d, k):
        out.append("classes: sizes do not add up to C(d, k)")
    if isinstance(m, CanonicalGamma1):
        tails = e.step("stage1")["tails"]
        if tails.column("P(t)") != tuple(_nstr(p) for _, p in m.tail_probabilities(DIGITS)):
            out.append("stage1")
        if tails.column("C(t-1, k-1)") != tuple(math.comb(t - 1, k - 1) for t in range(k, m.d + 1)):
            out.append("stage1: binomials")
        p_t = dict(m.tail_probabilities(40))
        p_class = {(h, t): p for h, t, p in m.class_probabilities(40)}
        sc = sorted_counts(c)
        for t, h, size, x, shown in e.step("stage2")["heads"].rows:
            with mp_workdps(40):
                off = abs(mpmath.mpf(shown) / (p_class[(h, t)] / p_t[t]) - 1) > mpmath.mpf(10) ** -19
            if size != math.comb(t - h - 2, k - h - 1) or x != sc[h] or off:
                out.append(f"stage2: {(t, h)}")
    else:
        _probabilities(e, m, out)
    _seeded_sample(e, m, out)


def _round_exact(m, chosen):
    """The next round's exact probabilities, from the twin: P(prefix + j) / P(prefix)."""
    full = peel_exact(m.counts, len(chosen) + 1, m.base, m.noise)
    prefix = sum(p for s, p in full.items() if s[:-1] == tuple(chosen))
    return {s[-1]: p / prefix for s, p in full.items() if s[:-1] == tuple(chosen)}


def _peeling(e, m, out):
    chosen = []
    for r in range(1, m.k + 1):
        step = e.step(f"round_{r}")
        dist = dict(m.round_distribution(tuple(chosen), DIGITS))
        table = step["remaining"]
        if table.column("item") != tuple(sorted(dist)) or table.column("P(picked)") != tuple(
                _nstr(dist[i]) for i in sorted(dist)):
            out.append(f"round {r}")
        top = max(m.counts[i] for i in dist)
        if table.column("count") != tuple(m.counts[i] for i in sorted(dist)):
            out.append(f"round {r}: counts")
        if m.base is not None:
            if table.column("relative weight") != tuple(m.base ** (top - m.counts[i]) for i in sorted(dist)):
                out.append(f"round {r}: weights")
            exact = _round_exact(m, chosen)
            if table.column("P(picked) exact") != tuple(exact[i] for i in sorted(dist)):
                out.append(f"round {r}: exact")
        if step["picked"] in chosen or m.counts[step["picked"]] != step["count drawn"]:
            out.append(f"round {r}: pick")
        chosen.append(step["picked"])
    drawn = tuple(chosen)
    if e.step("sample")["sample"] != drawn:
        out.append("sample")
    product = e.step("product")
    if product["P(sample) = Peeling.probability"] != _nstr(m.probability(drawn, DIGITS)):
        out.append("product")
    if m.base is not None:
        exact = peel_exact(m.counts, m.k, m.base, m.noise)[drawn]
        if product["product of the rounds' exact probabilities"] != exact:
            out.append("product: exact")


def problems(e, m):
    """Everything in ``e`` that does not match ``m`` and the twins."""
    out: list[str] = []
    _ranking(e, m, out)
    if isinstance(m, Joint):
        _joint(e, m, out)
    elif isinstance(m, JointSet):
        _joint_set(e, m, out)
    elif isinstance(m, Peeling):
        _peeling(e, m, out)
    else:
        _canonical(e, m, out)
    return out
