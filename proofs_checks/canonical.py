"""Checks of the canonical Lipschitz paper: classes, sensitivity (Theorem 3.5), eps-DP, Lemmas A.24 and 5.1.

Paper: "Differentially Private Top-k Selection via Canonical Lipschitz Mechanism".

The formulas of the text at hand were lost in extraction; these checks use exactdp's
definitions (docs/canonical.md), which the prose describes (1-based ranks, sorted scores
``x_(1) >= ... >= x_(d)``):

- class ``(k-1, k)``: the exact top-k; otherwise ``h`` = number of leading top ranks in the
  subset (rank ``h+1`` missing), ``t`` = its lowest rank; size ``C(t-h-2, k-h-1)``;
- ``loss_rho(h, t) = (1-rho)(x_(h+1) - x_(k)) + rho(x_(k) - x_(t))``, 0 for the top-k;
- "gumbel": ``P(S) ∝ exp(-eps loss(S))``; "exponential": permute-and-flip with
  ``p_S = exp(-eps loss(S))``.

Where a statement is reconstructed from the surrounding prose (its formula is lost), the
check says so.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from fractions import Fraction

import mpmath

from exactdp.core.precision import mp_workdps

from ._common import (
    Search,
    add_remove,
    bfs_distances,
    comb,
    em_distribution,
    inst,
    instances,
    is_top_set,
    matches_twin,
    max_ratio,
    mpq,
    num,
    order_of,
    pnf_distribution,
    random_instances,
    random_space,
    set_utility,
    sorted_counts,
    subsets,
    swap_moves,
    swaps,
)
from .registry import check

PAPER = "Canonical Lipschitz"
RHOS = (Fraction(0), Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), Fraction(2, 3), Fraction(3, 4), Fraction(1))


def classify(x, S):
    """``(h, t)`` of the subset ``S`` (item ids) under the ranks of ``x``."""
    k = len(S)
    rank = {item: r + 1 for r, item in enumerate(order_of(x))}
    R = sorted(rank[i] for i in S)
    if R == list(range(1, k + 1)):
        return (k - 1, k)
    h = 0
    while h + 1 in R:
        h += 1
    return (h, R[-1])


def losses(x, k, rhos):
    """``{rho: {S: loss_rho(S)}}`` for every k-subset (one ranking for all)."""
    rank = {item: r + 1 for r, item in enumerate(order_of(x))}
    xs = sorted_counts(x)
    top = list(range(1, k + 1))
    out = {rho: {} for rho in rhos}
    for S in itertools.combinations(range(len(x)), k):
        R = sorted(rank[i] for i in S)
        if R == top:
            for rho in rhos:
                out[rho][S] = Fraction(0)
            continue
        h = 0
        while R[h] == h + 1:
            h += 1
        a, b = xs[h] - xs[k - 1], xs[k - 1] - xs[R[-1] - 1]
        for rho in rhos:
            out[rho][S] = (1 - rho) * a + rho * b
    return out


def paper_loss(x, S, rho):
    """The loss as Theorem 3.5's proof bounds it: ``(1 - rho) x_(h+1) - rho x_(t)`` (no shift;
    the top-k class ``(k-1, k)`` gives ``(1 - 2 rho) x_(k)``).  exactdp's :func:`loss` is this
    plus the per-dataset constant ``(2 rho - 1) x_(k)``, which changes no probability."""
    h, t = classify(x, S)
    xs = sorted_counts(x)
    return (1 - rho) * xs[h] - rho * xs[t - 1]


def loss(x, S, rho):
    """exactdp's canonical loss of the subset ``S`` (shifted so that the top-k set has loss 0)."""
    k = len(S)
    h, t = classify(x, S)
    if (h, t) == (k - 1, k):
        return Fraction(0)
    xs = sorted_counts(x)
    return (1 - rho) * (xs[h] - xs[k - 1]) + rho * (xs[k - 1] - xs[t - 1])


# =====================================================================================
# Definition 3.4 -- classes
# =====================================================================================
@check("canonical.classes", PAPER,
       "Definition 3.4 / Theorem A.1: every k-subset lies in exactly one utility class (h,t): the top-k "
       "(k-1,k) of size 1, or {1..h} ∪ B ∪ {t} with B a (k-h-1)-subset of ranks h+2..t-1 (size C(t-h-2,k-h-1)); "
       "there are k(d-k)+1 classes, all non-empty, and the sizes sum to C(d,k)",
       control='class sizes C(t-h-1, k-h-1) (off by one)')
def classes(ctx):
    D = ctx.pick(9, 12)
    s = Search(f"every d <= {D} and k <= d (ranks only: classes do not depend on the counts)")
    for d in range(1, D + 1):
        for k in range(1, d + 1):
            tally = Counter()
            bad = None
            for R in itertools.combinations(range(1, d + 1), k):
                x = tuple(range(d, 0, -1))  # distinct scores: item i has rank i+1
                h, t = classify(x, [r - 1 for r in R])
                tally[(h, t)] += 1
                if (h, t) != (k - 1, k):
                    rest = set(R) - set(range(1, h + 1)) - {t}
                    if not (set(range(1, h + 1)) <= set(R) and h + 1 not in R and max(R) == t
                            and len(rest) == k - h - 1 and all(h + 2 <= b <= t - 1 for b in rest)):
                        bad = f"ranks {R} do not have the form of class ({h},{t})"
            want = {(k - 1, k): 1}
            for h in range(0, k):
                for t in range(k + 1, d + 1):
                    want[(h, t)] = comb(t - h - ctx.ctl(2, 1), k - h - 1)
            if bad is None and dict(tally) != {key: v for key, v in want.items() if v}:
                bad = f"class sizes {dict(tally)} vs {want}"
            if bad is None and (len(tally) != k * (d - k) + 1 or sum(tally.values()) != comb(d, k)):
                bad = f"{len(tally)} classes, total {sum(tally.values())}"
            s.record(bad is None, lambda: f"d={d}, k={k}: {bad}")
    return s.outcome()


@check("canonical.classes_library", PAPER,
       "exactdp.Canonical has the same classes, sizes and losses as the definition, for every rho in "
       "a grid and counts with ties",
       control="the definition's loss evaluated at 1 - rho in place of rho")
def classes_library(ctx):
    from exactdp.mechanisms.canonical.mechanism import Canonical

    D, C = ctx.pick((5, 3), (6, 4))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, rho in {{0,1/3,1/2,1}}")
    for c, k in instances(D, C):
        for rho in (Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(1)):
            m = Canonical(c, k, rho=rho)
            mine = Counter()
            losses = {}
            for S in subsets(len(c), k):
                key = classify(c, S)
                mine[key] += 1
                losses[key] = loss(c, S, ctx.ctl(rho, 1 - rho))
            lib = {(u.h, u.t): (u.size, Fraction(u.loss)) for u in m.classes()}
            ok = lib == {key: (mine[key], losses[key]) for key in mine}
            ok = ok and all(Fraction(m.loss(S)) == loss(c, S, ctx.ctl(rho, 1 - rho)) for S in subsets(len(c), k))
            s.record(ok, lambda: inst(c, k, f"rho={rho}"))
    return s.outcome()


# =====================================================================================
# Lemma 3.1 and Theorem 3.5 -- sensitivity
# =====================================================================================
def canonical_distance(x, S):
    """``dist_∞(x, Z_S)``: the distance to the nearest vector whose top-k indices are ``S``
    (ties allowed), computed exactly as ``min_τ max(max_{i∈S}(τ - x_i)^+, max_{j∉S}(x_j - τ)^+)``
    over the breakpoints ``τ ∈ {x_i} ∪ {(x_i + x_j)/2}`` (independent of Lemma A.23's formula)."""
    cand = {Fraction(a + b, 2) for a in x for b in x}
    inside = [x[i] for i in S]
    outside = [x[j] for j in range(len(x)) if j not in S]

    def cost(tau):
        a = max((tau - v for v in inside), default=0)
        b = max((v - tau for v in outside), default=0)
        return max(a, b, 0)

    return min(cost(t) for t in cand)


@check("canonical.lemma_3_1", PAPER,
       "Lemma 3.1: the canonical loss dist_∞(x, Z_S) has sensitivity 1 when each score moves by at most 1 "
       "(Definition 1.1), and so does its ceiling; and the ceiling is the number of users (each moving every "
       "score by at most 1) needed to make S a top-k set",
       control='sensitivity 1/2 in place of 1 (a wrong constant)')
def lemma_3_1(ctx):
    D, C = ctx.pick((3, 3), (4, 4))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every k-set, every "
               "perturbation in {-1,0,1}^d; users = swap neighbours, by BFS")
    worst = (Fraction(0), 0)
    for c, k in instances(D, C):
        outs = subsets(len(c), k)
        dist0 = {S: canonical_distance(c, S) for S in outs}
        bad = None
        for n, S in itertools.product(swaps(c), outs):
            dn = canonical_distance(n, S)
            dd = abs(dn - dist0[S])
            dc = abs(-(-dn // 1) - (-(-dist0[S] // 1)))
            worst = (max(worst[0], dd), max(worst[1], dc))
            if dd > ctx.ctl(1, Fraction(1, 2)) or dc > 1:
                bad = f"perturbed {list(n)}, set {S}: |Δ dist| = {dd}, |Δ ceil| = {dc}"
                break
        if bad is None and len(c) <= ctx.pick(3, 4):
            users = _swap_bfs(c, outs, max(c) + 1)
            for S in outs:
                if users.get(S) != -(-dist0[S] // 1):
                    bad = f"set {S}: {users.get(S)} users needed, ceil(dist) = {-(-dist0[S] // 1)}"
                    break
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome(f"max |Δ dist| = {worst[0]}, max |Δ ceil(dist)| = {worst[1]}")


def _swap_bfs(c, outs, depth):
    """BFS distances with swap moves (every score +-1 or 0 per user)."""
    return bfs_distances(c, outs, is_top_set, depth, swap_moves(len(c)), nonnegative=False)


def _loss_changes(ctx, relation):
    """For every (instance, rho): the raw max |Δloss| over subsets and neighbours, and the
    largest width ``max_S Δ - min_S Δ`` within one neighbour pair."""
    D, C = ctx.pick((4, 3), (5, 3))
    nb = swaps if relation == "symmetric" else add_remove
    rows = []  # (c, k, rho, raw, raw_witness, width, width_witness)
    for c, k in instances(D, C):
        outs = subsets(len(c), k)
        L0 = losses(c, k, RHOS)
        best = {rho: [Fraction(0), None, Fraction(0), None] for rho in RHOS}
        for n in nb(c):
            L1 = losses(n, k, RHOS)
            for rho in RHOS:
                ds = [L1[rho][S] - L0[rho][S] for S in outs]
                m = max(abs(v) for v in ds)
                w = max(ds) - min(ds)
                b = best[rho]
                if m > b[0]:
                    b[0], b[1] = m, list(n)
                if w > b[2]:
                    b[2], b[3] = w, list(n)
        for rho in RHOS:
            rows.append((c, k, rho) + tuple(best[rho]))
    space = (f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every k-set, "
             f"every {'perturbation in {-1,0,1}^d (Definition 1.1)' if relation == 'symmetric' else 'add/remove neighbour'}, "
             "rho in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1}; instance = (counts, k, rho)")
    return rows, space


def _loss_search(ctx, relation, bad_if, describe):
    rows, space = _loss_changes(ctx, relation)
    s = Search(space)
    raw = {rho: Fraction(0) for rho in RHOS}
    width = {rho: Fraction(0) for rho in RHOS}
    for c, k, rho, m, mw, w, ww in rows:
        raw[rho] = max(raw[rho], m)
        width[rho] = max(width[rho], w)
        s.record(not bad_if(rho, m, w), lambda: inst(c, k, describe(rho, m, mw, w, ww)))
    return s, raw, width


@check("canonical.theorem_3_5", PAPER,
       "Theorem 3.5 as its proof states it: the loss (1 - rho) x_(h+1) - rho x_(t) (unshifted) has sensitivity 1 for "
       "every rho when each score moves by at most 1 (Definition 1.1, Δ = 1): max |Δloss| <= 1 over every subset and "
       "perturbation, with equality attained for every rho",
       control="the bound max(rho, 1 - rho) in place of 1 (one of the proof's two terms dropped)")
def theorem_3_5(ctx):
    D, C = ctx.pick((4, 3), (5, 3))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every k-set, every "
               "perturbation in {-1,0,1}^d (Definition 1.1), rho in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1}; "
               "instance = (counts, k, rho)")
    worst = {rho: Fraction(0) for rho in RHOS}
    for c, k in instances(D, C):
        outs = subsets(len(c), k)
        for rho in RHOS:
            bound = ctx.ctl(Fraction(1), max(rho, 1 - rho))
            L0 = {S: paper_loss(c, S, rho) for S in outs}
            bad = None
            for n in swaps(c):
                for S in outs:
                    dl = abs(paper_loss(n, S, rho) - L0[S])
                    worst[rho] = max(worst[rho], dl)
                    if dl > bound and bad is None:
                        bad = f"rho={rho}, perturbed {list(n)}, set {set(S)}: |Δloss| = {dl} > {bound}"
            s.record(bad is None, lambda: inst(c, k, bad))
    out = s.outcome("max |Δloss| per rho: " + ", ".join(f"{rho}: {worst[rho]}" for rho in RHOS))
    if out.holds and any(worst[rho] != 1 for rho in RHOS):
        out.holds = False
        out.counterexample = "the bound 1 is not attained for some rho"
    return out


@check("canonical.theorem_3_5_add_remove", PAPER,
       "Theorem 3.5 for exactdp's shifted loss under add/remove counts: for every rho, within one neighbour pair "
       "the losses of all subsets move inside an interval of width <= 1, and each loss moves by at most "
       "max(rho, 1-rho) <= 1",
       control="each loss moving by at most min(rho, 1 - rho) (a wrong constant)")
def theorem_3_5_add_remove(ctx):
    s, raw, width = _loss_search(
        ctx, "add/remove",
        lambda rho, m, w: w > 1 or m > ctx.ctl(max(rho, 1 - rho), min(rho, 1 - rho)),
        lambda rho, m, mw, w, ww: f"rho={rho}: width {w} (neighbour {ww}), raw {m} (neighbour {mw})")
    return s.outcome("; ".join(f"rho={rho}: width {width[rho]}, raw max |Δ| {raw[rho]}" for rho in RHOS))


@check("canonical.theorem_3_5_shifted", PAPER,
       "Theorem 3.5 for exactdp's shifted loss, scores moving by at most 1 each (Definition 1.1): for every rho the "
       "subsets' losses move inside an interval of width <= 2 (the shift is common to all subsets, so the "
       "differences between subsets' losses change by at most 2, as for the unshifted loss)",
       control="width <= 1 (a wrong constant)")
def theorem_3_5_shifted(ctx):
    s, raw, width = _loss_search(
        ctx, "symmetric", lambda rho, m, w: w > ctx.ctl(2, 1),
        lambda rho, m, mw, w, ww: f"rho={rho}: width {w} (perturbed {ww})")
    return s.outcome("; ".join(f"rho={rho}: width {width[rho]}" for rho in RHOS))


@check("canonical.shifted_loss_change", PAPER,
       "exactdp's shifted loss (1 - rho)(x_(h+1) - x_(k)) + rho (x_(k) - x_(t)) (0 for the top-k set) = Theorem "
       "3.5's loss + (2 rho - 1) x_(k): with scores moving by at most 1 each (Definition 1.1), its largest change is "
       "exactly 1 + |2 rho - 1| for each rho -- the shift moves with x_(k); no probability changes",
       control="the unshifted bound, max change <= 1, for the shifted loss")
def shifted_loss_change(ctx):
    s, raw, width = _loss_search(
        ctx, "symmetric",
        lambda rho, m, w: m > ctx.ctl(1 + abs(2 * rho - 1), 1),
        lambda rho, m, mw, w, ww: f"rho={rho}: |Δloss| = {m} (perturbed to {mw})")
    out = s.outcome("max |Δloss| per rho: " + ", ".join(f"{rho}: {raw[rho]}" for rho in RHOS))
    if out.holds and any(raw[rho] != 1 + abs(2 * rho - 1) for rho in RHOS):
        out.holds = False
        out.counterexample = "max |Δloss| != 1 + |2 rho - 1| for some rho"
    return out


# =====================================================================================
# eps-DP of the Lipschitz mechanism with Gumbel / Exponential noise
# =====================================================================================
def canonical_distribution(c, k, rho, beta, q, noise):
    """Exact distribution with weight ``beta**(q*loss)`` per subset (``q*loss`` integral):
    ``base = beta**q = exp(-eps)``."""
    L = {S: v * q for S, v in losses(c, k, (rho,))[rho].items()}
    assert all(v.denominator == 1 for v in L.values())
    utils = {S: -int(v) for S, v in L.items()}  # utility = -loss: the twins rank by utility
    return em_distribution(utils, mpq(beta)) if noise == "gumbel" else pnf_distribution(utils, beta)


def _dp(ctx, noise):
    D, C = ctx.pick((4, 3), (5, 3))
    R = ctx.pick(2, 6)
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every add/remove "
               "neighbour, every k-set, rho in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1}; base exp(-eps) = beta^q "
               "(q = denominator of rho, beta in {1/2, 9/10}): exact ratios vs base^-1" + random_space(R, 6, 6, 12, 3))
    worst = {}
    for c, k in itertools.chain(instances(D, C), random_instances(91 if noise == "gumbel" else 92, R, 6, 6, 12, k_max=3)):
        bad = None
        for rho, beta in itertools.product(RHOS, (Fraction(1, 2), Fraction(9, 10))):
            q = rho.denominator
            base = beta ** q
            mb = beta * beta if ctx.control else beta
            P = canonical_distribution(c, k, rho, mb, q, noise)
            for n in add_remove(c):
                r, o = max_ratio(P, canonical_distribution(n, k, rho, mb, q, noise))
                frac = float(mpmath.log(mpmath.mpf(int(r.numerator)) / int(r.denominator)) /
                             -mpmath.log(mpmath.mpf(base.numerator) / base.denominator))
                if frac > worst.get(rho, (0,))[0]:
                    worst[rho] = (frac, inst(c, k, f"beta={beta}, neighbour={list(n)}"))
                if r > 1 / base and bad is None:
                    bad = f"rho={rho}, base={base}, neighbour={list(n)}, set={o}: loss {frac:.4f} eps"
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome("largest loss / eps per rho: " + ", ".join(f"{rho}: {worst[rho][0]:.4f}" for rho in RHOS if rho in worst))


DP_CONTROL = "the mechanism run with twice the privacy parameter (beta^2) against the same bound"
for _noise, _statement in (
    ("gumbel", "Theorem 4.1 with Gumbel noise: the canonical mechanism P(S) ∝ exp(-eps loss_rho(S)) is eps-DP over "
               "add/remove counts for every rho (exact ratios)"),
    ("exponential", "Theorem 4.1 with Exponential noise: permute-and-flip with p_S = exp(-eps loss_rho(S)) is eps-DP "
                    "over add/remove counts for every rho (exact permute-and-flip probabilities)"),
):
    # one check per noise, the same search
    check(f"canonical.dp_{_noise}", PAPER, _statement, control=DP_CONTROL)(functools.partial(_dp, noise=_noise))


@check("canonical.dp_library", PAPER,
       "exactdp.Canonical with base = beta^q gives exactly the twin's probabilities (gumbel and "
       "exponential noise)",
       control='the twin computed with the other noise (gumbel <-> exponential)')
def dp_library(ctx):
    from exactdp.mechanisms.canonical.mechanism import Canonical

    D, C = ctx.pick((4, 3), (5, 3))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, rho in "
               "{0, 1/3, 1/2, 1}, beta = 1/2, both noises")
    for c, k in instances(D, C):
        for rho in (Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(1)):
            q = rho.denominator
            for noise in ("gumbel", "exponential"):
                other = {"gumbel": "exponential", "exponential": "gumbel"}[noise]
                mine = canonical_distribution(c, k, rho, Fraction(1, 2), q, ctx.ctl(noise, other))
                ok = matches_twin(Canonical(c, k, base=Fraction(1, 2) ** q, rho=rho, noise=noise), mine, set)
                s.record(ok, lambda: inst(c, k, f"rho={rho}, noise={noise}"))
    return s.outcome()


# =====================================================================================
# Lemma A.23 / A.24
# =====================================================================================
@check("canonical.lemma_a_24", PAPER,
       "Lemmas A.23/A.24: (i) the canonical loss dist_∞(x, Z_S) equals (x_(h+1) - x_(t))/2 (loss with rho = 1/2) "
       "and (ii) it is >= the joint set loss max_i (x_(i) - x_{j_i})/2 (Lemma 5 of the set paper), strictly "
       "for some subsets",
       control='(i) with x_(h+1) - x_(t) (the /2 dropped)')
def lemma_a_24(ctx):
    D, C = ctx.pick((5, 4), (6, 5))
    R = ctx.pick(20, 200)
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every k-set; exact"
               + random_space(R, 7, 10, 40))
    strict = None
    for c, k in itertools.chain(instances(D, C), random_instances(24, R, 7, 10, 40)):
        bad = None
        for S in subsets(len(c), k):
            dist = canonical_distance(c, S)
            can = loss(c, S, Fraction(1, 2)) * ctx.ctl(1, 2)
            joint = Fraction(-set_utility(c, S), 2)
            if dist != can:
                bad = f"set {S}: dist {dist} vs (x_(h+1) - x_(t))/2 = {can}"
            elif can < joint:
                bad = f"set {S}: canonical {can} < joint {joint}"
            elif can > joint and strict is None:
                strict = inst(c, k, f"set {set(S)}: canonical {can} > joint {joint}")
            if bad:
                break
        s.record(bad is None, lambda: inst(c, k, bad))
    out = s.outcome(f"first strict inequality: {strict}")
    out.holds = out.holds and strict is not None
    return out


# =====================================================================================
# Lemma 5.1 / Corollary 5.2 (reconstructed)
# =====================================================================================
@check("canonical.lemma_5_1", PAPER,
       "Lemma 5.1 (reconstructed from the prose; formula lost): for rho' <= rho and eps' = eps rho/rho', "
       "(a) eps' loss_rho'(S) >= eps loss_rho(S) for every S with the same weight on the tail x_(k) - x_(t), "
       "and (b) eps'-DP canonical_rho' is at least as good at the tail: P'[t <= tau] >= P[t <= tau] for every "
       "tau (Gumbel noise); the grid includes rho' = 1/2 (Corollary 5.2's kind of instance)",
       control="eps' = eps rho'/rho (the ratio inverted)")
def lemma_5_1(ctx):
    D, C = ctx.pick((5, 4), (6, 4))
    pairs = [(Fraction(1), Fraction(1, 2)), (Fraction(3, 4), Fraction(1, 2)), (Fraction(1, 2), Fraction(1, 4)),
             (Fraction(1), Fraction(1, 4)), (Fraction(2, 3), Fraction(1, 3))]
    eps_grid = (Fraction(1, 2), Fraction(1), Fraction(3))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k < d, (rho, rho') in "
               "{(1,1/2), (3/4,1/2), (1/2,1/4), (1,1/4), (2/3,1/3)}, eps in {1/2, 1, 3}; (a) exact, (b) 40-digit "
               "mpmath, ties within 1e-30")
    with mp_workdps(40):
        for c, k in instances(D, C, ks=lambda d: range(1, d)):
            outs = subsets(len(c), k)
            bad = next(filter(None, (_lemma_5_1_failure(c, outs, rho, rho2, eps, ctx.control)
                                     for (rho, rho2), eps in itertools.product(pairs, eps_grid))), None)
            s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome()


def _tail_distribution(c, outs, rho, eps):
    """``tau -> P[t = tau]`` under Gumbel noise, ``P(S) ∝ exp(-eps loss_rho(S))`` (working precision)."""
    ev = mpmath.mpf(eps.numerator) / eps.denominator
    w = {S: mpmath.exp(-ev * (lambda q: mpmath.mpf(q.numerator) / q.denominator)(loss(c, S, rho))) for S in outs}
    z = mpmath.fsum(w.values())
    P = Counter()
    for S in outs:
        P[classify(c, S)[1]] += w[S] / z
    return P


def _lemma_5_1_failure(c, outs, rho, rho2, eps, inverted):
    """Lemma 5.1 at one ``(rho, rho', eps)``: the first set where (a) fails, or the first
    ``tau`` where (b) fails, else ``None``; ``inverted``: the control's ``eps' = eps rho'/rho``."""
    eps2 = eps * rho / rho2 if not inverted else eps * rho2 / rho
    for S in outs:
        if eps2 * loss(c, S, rho2) < eps * loss(c, S, rho):
            return f"(a) rho={rho}, rho'={rho2}, eps={eps}, set {S}"
    P1, P2 = _tail_distribution(c, outs, rho, eps), _tail_distribution(c, outs, rho2, eps2)
    a = b = mpmath.mpf(0)
    for tau in sorted(set(P1) | set(P2)):
        a += P1.get(tau, 0)
        b += P2.get(tau, 0)
        if b < a - mpmath.mpf(10) ** -30:
            return f"(b) rho={rho}, rho'={rho2}, eps={eps}, tau={tau}: {num(b, 8)} < {num(a, 8)}"
    return None
