"""A float64 port of the published Joint pipeline -- the fast code exactdp certifies --
with its permute-and-flip variant and a deliberately broken variant.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Algorithm 1 with Lemmas
3.5-3.8; the permute-and-flip variant is Appendix D, Algorithm 5.  The steps follow the
public reference implementation (google-research ``dp_topk/joint.py``), vectorised in numpy:

1. sort the counts in decreasing order;
2. the ``k x d`` matrix of refined differences by broadcasting, 0-based,
   ``diff[i][j] = c_(i) - c_(j) + (d(k-i-1) + j + 1) / (2dk)``  (``= -Ũ``);
3. all ``dk`` entries sorted increasingly (``np.argsort`` of the flattened matrix: the
   row-major positions in that order);
4. ``log m̃`` of each entry by Lemma 3.7 as a running sum of logs: walking the sorted
   entries, entry ``(i, j)`` sets row ``i``'s factor to ``log(j + 1 - i)``, and the count of
   an entry is the sum of the *other* rows' current log-factors (``-inf`` until every
   row has a positive factor);
5. sample an entry with weight ``m̃ * exp(-eps * floor(diff) / (2Δ))`` by the Gumbel-max
   trick (``argmax(log w + Gumbel)``), then the sequence: the chosen row gets the chosen
   column, every other row a column drawn uniformly among those whose difference is at
   most the chosen one and not used yet (Algorithm 1, lines 21-24).

How it differs from the public reference (the distribution is the same):

- randomness: a ``numpy.random.Generator`` passed in (or a seed), not numpy's global
  state; the entry is drawn by ``argmax(log w + Gumbel)`` where the reference races
  ``argmin(log(log(1/U)) - log w)`` -- the same draw, since ``-log(log(1/U))`` is Gumbel;
- ties in the counts: ``np.argsort(-counts, kind="stable")`` (smaller id first), where the
  reference reverses an ascending sort (larger id first); any fixed rule gives the same
  distribution over item ids;
- step 4 is the reference's loop as one ``np.cumsum`` over the per-entry changes of the
  running sum (the same float additions in the same order), so it runs at numpy speed;
  the reference raises if some row never gets a positive factor, this port cannot hit
  that case (``k <= d``) and has no such guard;
- step 5's "not used yet" is ``np.setdiff1d`` per row instead of a Python list scan over
  the whole row, so a sample costs ``O(k d log d)`` instead of ``O(d k^2)``;
- memory: the same ``k x d`` float64 matrix, plus the sorted positions, sorted
  differences, ``log m̃`` and log-weights (``dk`` each) kept on the object, and the
  per-sequence log-weights and the log normaliser computed up front for the
  certification helpers below (``probabilities``, ``score_position``): a little more
  work and memory per instance than the reference's one-shot ``joint()``.

``PublishedLoopsFloatJoint`` keeps the reference's two Python loops (step 4's running sum
over the ``dk`` entries and step 5's list scan), for a comparison with the published code
as it runs; ``FloatJoint`` is the faster of the two float references.

``FloatPNFJoint`` replaces the entry draw by Algorithm 5: one ``MaxExpo`` draw per entry
(the largest of ``m̃`` Exponential(eps/(2Δ)) noises, by inversion in log space) added to
the utility ``-floor(diff)``, then the argmax.

``BrokenFloatJoint`` forgets the floor in step 5: it weighs by ``exp(-eps*diff/(2Δ))``, the
*refined* difference instead of its integer part.  Its m̃ are right, but sequences of one
utility level get different weights depending on which entry is their score (up to a factor
``exp(-eps/(4Δ))``) and the level probabilities shift: exactdp's certification catches it
(``tests/oracle/certify/``, ``docs/oracle.md``).

Run ``python examples/float_joint.py`` for a demonstration.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations

import numpy as np

__all__ = ["FloatJoint", "PublishedLoopsFloatJoint", "FloatPNFJoint", "BrokenFloatJoint"]


class FloatJoint:
    """Joint over top-k sequences in float64 (``epsilon``, ``sensitivity`` as floats)."""

    floor_weights = True

    def __init__(self, counts: Sequence[int], k: int, epsilon: float = 1.0, sensitivity: float = 1.0) -> None:
        self.counts = np.asarray(counts, dtype=np.int64)
        self.k, self.d = int(k), len(self.counts)
        self.epsilon, self.sensitivity = float(epsilon), float(sensitivity)
        # 1. sort (ties: smaller id first, any rule gives the same distribution)
        self.order = np.argsort(-self.counts, kind="stable")
        sc = self.counts[self.order].astype(float)
        d, k = self.d, self.k
        # 2. refined differences
        z = (d * (k - 1 - np.arange(k))[:, None] + np.arange(1, d + 1)[None, :]) / (2 * d * k)
        self.diff = (sc[:k, None] - sc[None, :]) + z
        # 3. entries in increasing order of difference (row-major positions)
        self.rows, self.cols = np.unravel_index(np.argsort(self.diff, axis=None), self.diff.shape)
        self.sorted_diffs = self.diff[self.rows, self.cols]
        # 4. log m~ by a running sum of logs (Lemma 3.7)
        self.log_mtilde = self._log_mtilde()
        # 5. log-weights of the entries
        utility = np.floor(self.sorted_diffs) if self.floor_weights else self.sorted_diffs
        self.log_weights = self.log_mtilde - self.epsilon * utility / (2 * self.sensitivity)
        # the log-weight of ONE sequence of each entry (for probabilities)
        with np.errstate(invalid="ignore"):  # -inf - -inf for entries with m~ = 0
            self._log_one = np.where(np.isfinite(self.log_mtilde), self.log_weights - self.log_mtilde, -np.inf)
        finite = np.isfinite(self.log_weights)
        top = self.log_weights[finite].max()
        self.log_z = top + np.log(np.exp(self.log_weights[finite] - top).sum())

    def _log_mtilde(self) -> np.ndarray:
        # Row i's factor after its (j+1)-th entry is log(j + 1 - i), once positive; the
        # running sum changes by log(j + 1 - i) - log(j - i) at each entry (the first
        # positive factor, log 1, adds 0).  The exclusive cumsum is the running sum
        # *before* each entry, as in the reference's loop.
        k = self.k
        new = self.cols + 1 - self.rows  # row i's factor once this entry is counted
        with np.errstate(divide="ignore", invalid="ignore"):  # log of <= 0: masked below
            log_new = np.where(new > 0, np.log(new), 0.0)
            before = np.where(new > 1, np.log(new - 1), 0.0)  # row i's factor before it
        delta = np.where(new > 0, log_new - before, 0.0)
        running = np.empty_like(delta)
        running[0] = 0.0
        np.cumsum(delta[:-1], out=running[1:])
        del delta, log_new
        # rows with a positive factor before each entry: each row's first is new == 1
        first = (new == 1).astype(np.int64)
        filled = np.cumsum(first) - first
        del first
        others_filled = filled - (new > 1) == k - 1
        return np.where(others_filled, running - before, -np.inf)

    # -- probabilities ----------------------------------------------------------------
    def _rank(self) -> np.ndarray:
        """Position of each item id in the sorted order (the inverse of ``order``)."""
        rank = np.empty(self.d, dtype=np.int64)
        rank[self.order] = np.arange(self.d)
        return rank

    def score_position(self, sequence: Sequence[int]) -> int:
        """Position (in sorted order) of the entry that is the sequence's largest
        refined difference."""
        rank = self._rank()
        where = {(int(i), int(j)): p for p, (i, j) in enumerate(zip(self.rows, self.cols))}
        return max(where[(r, int(rank[s]))] for r, s in enumerate(sequence))

    def probabilities(self) -> dict[tuple[int, ...], float]:
        """``{sequence: probability}`` for every sequence (small ``d`` only)."""
        rank = self._rank()
        where = np.empty((self.k, self.d), dtype=np.int64)
        where[self.rows, self.cols] = np.arange(self.rows.shape[0])
        out = {}
        for seq in permutations(range(self.d), self.k):
            p = max(where[r, rank[s]] for r, s in enumerate(seq))
            out[seq] = float(np.exp(self._log_one[p] - self.log_z))
        return out

    # -- sampling ---------------------------------------------------------------------
    def sample(self, rng: np.random.Generator | int | None = None) -> tuple[int, ...]:
        """One sequence of item ids (numpy Generator ``rng``, or a seed)."""
        rng = np.random.default_rng(rng)
        return self._sequence(self._entry(rng), rng)

    def samples(self, n: int, rng: np.random.Generator | int | None = None) -> list[tuple[int, ...]]:
        """``n`` sequences from one generator (all entry draws first, then the sequences)."""
        rng = np.random.default_rng(rng)
        entries = self._entries(n, rng)
        return [self._sequence(int(p), rng) for p in entries]

    def _entries(self, n: int, rng: np.random.Generator) -> np.ndarray:
        gumbel = rng.gumbel(size=(n, self.log_weights.shape[0]))
        return np.argmax(self.log_weights[None, :] + gumbel, axis=1)

    def _entry(self, rng: np.random.Generator) -> int:
        return int(np.argmax(self.log_weights + rng.gumbel(size=self.log_weights.shape[0])))

    def _sequence(self, p: int, rng: np.random.Generator) -> tuple[int, ...]:
        i, j = int(self.rows[p]), int(self.cols[p])
        value = self.sorted_diffs[p]
        ranks = [None] * self.k
        ranks[i] = j
        used = {j}
        for r in range(self.k):
            if r == i:
                continue
            t = int(np.searchsorted(self.diff[r], value, side="right"))  # entries <= value
            # the allowed columns in increasing order, as the reference's list scan
            choices = np.setdiff1d(np.arange(t), np.fromiter(used, dtype=np.int64), assume_unique=True)
            ranks[r] = int(rng.choice(choices))
            used.add(ranks[r])
        return tuple(int(self.order[x]) for x in ranks)


class PublishedLoopsFloatJoint(FloatJoint):
    """:class:`FloatJoint` with steps 4 and 5 as the public reference runs them: ``log m̃``
    by a Python loop over the ``dk`` sorted entries (the running sum of the rows' current
    log-factors, as in its ``compute_log_diff_counts``) and each row's choices by a Python
    list scan ``[i for i in range(t) if i not in sequence]`` (its ``sequence_from_diff``).
    The same floats in the same order as the vectorised port; the benchmark times both."""

    def _log_mtilde(self) -> np.ndarray:
        k, n = self.k, self.rows.shape[0]
        out = np.empty(n)
        log_ns = np.empty(k)
        filled: set[int] = set()
        with np.errstate(divide="ignore", invalid="ignore"):  # log(<= 0): -inf / nan, skipped
            updates = np.log((self.cols + 1) - self.rows)
        last = -1
        for idx, i, u in zip(range(n), self.rows, updates):
            if np.isnan(u):
                continue
            log_ns[i] = u
            filled.add(int(i))
            if len(filled) == k:
                last = idx
                break
        out[:last] = -np.inf
        total = np.sum(log_ns)
        for idx, i, u in zip(range(last, n), self.rows[last:], updates[last:]):
            total -= log_ns[i]
            out[idx] = total
            log_ns[i] = u
            total += log_ns[i]
        return out

    def _sequence(self, p: int, rng: np.random.Generator) -> tuple[int, ...]:
        i, j = int(self.rows[p]), int(self.cols[p])
        value = self.sorted_diffs[p]
        sequence = np.full(self.k, j)
        ts = [np.searchsorted(self.diff[row, :], value, side="right") for row in range(self.k)]
        for row in range(self.k):
            if row != i:
                to_sample = [x for x in range(ts[row]) if x not in sequence]
                sequence[row] = rng.choice(to_sample)
        return tuple(int(self.order[x]) for x in sequence)


class BrokenFloatJoint(FloatJoint):
    """The same, but weighing entries by the refined difference instead of its floor."""

    floor_weights = False


class FloatPNFJoint(FloatJoint):
    """Permute-and-flip Joint (Algorithm 5): the entry maximising ``-floor(diff)`` plus the
    largest of its ``m̃`` Exponential(eps/(2Δ)) noises; the sequence as in Joint.

    ``probabilities`` and ``log_weights`` stay those of the exponential mechanism (Joint):
    only sampling is permute-and-flip here.
    """

    def _entries(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.array([self._entry(rng) for _ in range(n)], dtype=np.int64)

    def _entry(self, rng: np.random.Generator) -> int:
        rate = self.epsilon / (2 * self.sensitivity)
        u = rng.random(size=self.log_mtilde.shape[0])
        # MaxExpo by inversion: x = -log(1 - U**(1/m)) / rate, in logs because m~ may be
        # far beyond float range: log(1 - U**(1/m)) = log(-expm1(-y)), y = -log(U) / m,
        # which is log(y) to double precision once y < e**-30
        with np.errstate(divide="ignore"):
            log_y = np.log(-np.log(u)) - self.log_mtilde
            log_tail = np.where(log_y < -30, log_y, np.log(-np.expm1(-np.exp(log_y))))
        score = -np.floor(self.sorted_diffs) - log_tail / rate
        score[~np.isfinite(self.log_mtilde)] = -np.inf  # entries that score no sequence
        return int(np.argmax(score))


if __name__ == "__main__":  # pragma: no cover - a demonstration
    import exactdp
    from exactdp import certify

    counts, k = [4, 3, 3, 1, 0], 2
    exact = exactdp.Joint(counts, k, epsilon=1)
    for impl in (FloatJoint(counts, k), BrokenFloatJoint(counts, k)):
        name = type(impl).__name__
        print(name, "m~:", certify.compare_mtilde(impl.log_mtilde, exact, rows=impl.rows, cols=impl.cols).verdict.upper())
        print(name, "probabilities:", certify.compare_probabilities(impl.probabilities(), exact).table(3))
        fit = certify.goodness_of_fit(impl.samples(20_000, rng=1), exact)
        print(name, "sampler:", fit.summary())
