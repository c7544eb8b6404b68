"""Walk-throughs of Canonical (the class table) and CanonicalGamma1 (its two stages).

Paper: Shekelyan, Loukides, "Differentially Private Top-k Selection via Canonical
Lipschitz Mechanism" (arXiv:2201.13376): Definition 2.1 (the Lipschitz mechanism),
Definition 3.4 (the utility classes (h, t)), Theorem 3.5 (the canonical loss), Appendix
A.1 (class sizes, sampling class by class); the two-stage variant of the introduction.

The numbers come from the mechanisms: ``classes()``, ``class_probabilities(dps)``,
``levels()`` with the certified and exact probabilities, ``tail_probabilities(dps)``, and
the draws of ``rule.sample_level`` (Canonical) or of the two stages (CanonicalGamma1).
"""

from __future__ import annotations

from typing import Any, Union

from ..core.precision import certify_many
from ..core.sampling import choose_index
from ..mechanisms.canonical import Canonical
from ..mechanisms.canonical import CanonicalGamma1
from .explanation import Citation, Explanation, RecordingRandom, Step, Table, check_size, recording_generator
from .steps import certified, level_draw_step, probability_step, ranking_step, sample_check, summary_step

__all__ = ["explain_canonical", "CANONICAL_PAPER"]

#: The canonical Lipschitz mechanism's paper.
CANONICAL_PAPER = ("Differentially Private Top-k Selection via Canonical Lipschitz Mechanism",
                   "Shekelyan, Loukides, 2022", "arXiv:2201.13376")


def _classes_step(m: Union[Canonical, CanonicalGamma1], digits: int) -> Step:
    probs = m.class_probabilities(digits)
    rows = tuple((c.h, c.t, c.size, c.loss, certified(p, digits))
                 for c, (h, t, p) in zip(m.classes(), probs))
    return Step(
        "classes", "class (h, t): {1..h} + B + {t}, |B| = k-h-1 from ranks h+2..t-1",
        "Definition 3.4: a k-subset has h leading top ranks (rank h+1 missing) and lowest rank t; "
        "the class (k-1, k) is the exact top-k. Class sizes are C(t-h-2, k-h-1); the loss "
        f"(Theorem 3.5, rho = {m.rho}) is (1-rho)(x_(h+1) - x_(k)) + rho(x_(k) - x_(t)). "
        "P(class) is certified by arb balls.",
        (("classes", Table(("h", "t", "size", "loss", "P(class)"), rows)), ("rho", m.rho)))


def _member_step(m: Any, rec: RecordingRandom, h: int, t: int) -> tuple[Step, frozenset]:
    mark = len(rec.calls)
    r = rec.randrange(m.class_size(h, t))
    drawn = m._member(h, t, r)
    return Step("sample_set", "S ~ Uniform(class (h, t))",
                "A uniform integer r below the class size is unranked into the r-th member of the "
                "class (the body B in colex order).",
                (("random integers", rec.since(mark)), ("class (h, t)", (h, t)), ("r", r),
                 ("items", tuple(sorted(drawn))))), drawn


def explain_canonical(m: Union[Canonical, CanonicalGamma1], rng: Any, max_size: int, digits: int = 20) -> Explanation:
    """The walk-through of a :class:`Canonical` or :class:`CanonicalGamma1`.

    ``m``: the mechanism; ``rng``: the draw's generator (an int seed, ``None`` or a
    :class:`random.Random`, see :func:`~exactdp.teaching.explanation.recording_generator`);
    ``max_size``: the most items allowed (:func:`~exactdp.teaching.explanation.check_size`);
    ``digits``: significant digits of the certified probabilities shown (default 20)."""
    check_size(m.d, max_size, rows=1 + m.k * (m.d - m.k))
    rec, seed, finish = recording_generator(rng)
    state = rec.getstate()
    steps = [ranking_step(m, "x_(1) >= ... >= x_(d)"), _classes_step(m, digits)]
    if m.groups_rule() is None:  # CanonicalGamma1: its classes have the two-stage law, not a rule's levels
        steps += _gamma1_steps(m, rec, digits)
        drawn = _gamma1_draw(m, rec, steps)
        where = "the two-stage variant of the introduction; Definition 3.4, Theorem 3.5"
    else:
        weight = ("w(u) = base^(-u)" if m.base is not None else "w(u) = exp(epsilon u)") + ", u = -loss"
        rule = "report-noisy-max with Gumbel noise" if m.noise == "gumbel" else "permute-and-flip (exponential noise)"
        steps.append(probability_step(m, digits, weight, f"Definition 2.1 with {rule}: classes of equal "
                                      "loss form one level (Section 2.1); certified by arb balls "
                                      "(exact rationals with a rational base)."))
        level_step, a = level_draw_step(m, rec, digits, "Appendix A.1 samples class by class; exactdp "
                                        "draws the loss level, then a uniform subset of it.")
        steps.append(level_step)
        mark = len(rec.calls)
        r = rec.randrange(m.table.multiplicities[a])
        drawn = m._unrank(a, r)
        steps.append(Step("sample_set", "S ~ Uniform(subsets of loss -u)",
                          "A uniform integer r below m(u) is unranked into the r-th subset of the "
                          "level, class by class.",
                          (("random integers", rec.since(mark)), ("r", r), ("class (h, t)", m.class_of(drawn)),
                           ("items", tuple(sorted(drawn))))))
        where = "Definitions 2.1 and 3.4, Theorem 3.5, Appendix A.1"
    steps.append(summary_step(m, tuple(sorted(drawn)), seed, sample_check(m, state, drawn)))
    finish()
    return Explanation(f"{type(m).__name__} walk-through: {m!r}", Citation(*CANONICAL_PAPER, where), tuple(steps))


def _gamma1_steps(m: CanonicalGamma1, rec: RecordingRandom, digits: int) -> list[Step]:
    k = m.k
    sc = m.ranking.sorted_counts
    tails = m.tail_probabilities(digits)
    rows = tuple((t, m._tail_binoms[t - k], sc[t - 1], certified(p, digits)) for t, p in tails)
    weight = "base^(-rho x_(t))" if m.base is not None else "exp(epsilon rho x_(t))"
    stage2 = []
    for t in range(k + 1, m.d + 1):
        def given_t(t: int = t) -> list:
            terms = m._stage2_terms(t)
            total = sum(terms[1:], terms[0])
            return [w / total for w in terms]

        probs = certify_many(given_t, digits, extra_bits=2 * k.bit_length() + 8)
        stage2 += [(t, h, m.class_size(h, t), sc[h], certified(p, digits)) for h, p in enumerate(probs)]
    head = "base^((1-rho) x_(h+1))" if m.base is not None else "exp(-epsilon (1-rho) x_(h+1))"
    return [Step(
        "stage1", f"P(t) proportional to C(t-1, k-1) {weight}",
        "Stage 1: the tail t in k..d, weighted by the number C(t-1, k-1) of subsets whose lowest "
        "rank is t and by the tail's count (t = k is the exact top-k). Certified by arb balls.",
        (("tails", Table(("t", "C(t-1, k-1)", "x_(t)", "P(t)"), rows)),)),
        Step("stage2", f"P(h | t) proportional to C(t-h-2, k-h-1) {head}",
             "Stage 2, for a tail t > k: the head h in 0..k-1, weighted by the class size and by the "
             "count of the first missing rank h+1. Certified by arb balls; P(class) above is "
             "P(t) P(h | t).",
             (("heads", Table(("t", "h", "C(t-h-2, k-h-1)", "x_(h+1)", "P(h | t)"), tuple(stage2))),))]


def _gamma1_draw(m: CanonicalGamma1, rec: RecordingRandom, steps: list[Step]) -> frozenset:
    """The two stages drawn with the mechanism's own cumulative weights (its sampler's route)."""
    k = m.k
    mark = len(rec.calls)
    i = choose_index(lambda prec: m._cumulative(("c1",), lambda: m._weights()["W1"]), m.d - k + 1, rec)
    t = k + i
    data: list[tuple[str, Any]] = [("random integers", rec.since(mark)), ("t", t)]
    steps.append(Step("sample_tail", "t ~ P(t)", "Stage 1 drawn exactly: inverse CDF of a lazily refined "
                      "uniform over certified cumulative weights.", tuple(data)))
    mark = len(rec.calls)
    if t == k:
        h = k - 1
        text = "t = k: the class is the exact top-k (k-1, k); nothing is drawn."
    else:
        h = choose_index(lambda prec: m._cumulative(("c2", t), lambda: m._stage2_terms(t)), k, rec)
        text = "Stage 2 drawn exactly as stage 1, over the weights of the heads given t."
    steps.append(Step("sample_head", "h ~ P(h | t)", text, (("random integers", rec.since(mark)), ("h", h))))
    step, drawn = _member_step(m, rec, h, t)
    steps.append(step)
    return drawn
