"""A small float64, log-space implementation of the Joint mechanism -- the kind of fast
code exactdp exists to certify -- and a deliberately broken variant.

Written from the paper (Gillenwater et al., "A Joint Exponential Mechanism for
Differentially Private Top-k", Algorithm 1 and Lemmas 3.5-3.8), in the style of the public
dp_topk code:

1. sort the counts in decreasing order (``np.argsort(-counts, kind="stable")``);
2. the ``k x d`` matrix of refined differences, 0-based,
   ``diff[i][j] = c_(i) - c_(j) + (d(k-i-1) + j + 1) / (2dk)``  (``= -Ũ``);
3. all ``dk`` entries sorted increasingly (``np.argsort`` of the flattened matrix: the
   row-major positions in that order);
4. ``log m̃`` of each entry by Lemma 3.7 as a running sum of logs: walking the sorted
   entries, entry ``(i, j)`` sets row ``i``'s factor to ``log(j + 1 - i)``, and the count of
   an entry is the product of the *other* rows' current factors (``-inf`` until every
   row has a positive factor);
5. sample an entry with weight ``m̃ * exp(-eps * floor(diff) / (2Δ))`` by the Gumbel-max
   trick (``argmax(log w + Gumbel)``, numpy), then the sequence uniformly among those whose
   largest refined difference is that entry (Algorithm 1, lines 21-24).

``BrokenFloatJoint`` forgets the floor in step 5: it weighs by ``exp(-eps*diff/(2Δ))``, the
*refined* difference instead of its integer part.  Its m̃ are right, but sequences of one
utility level get different weights depending on which entry is their score (up to a factor
``exp(-eps/(4Δ))``) and the level probabilities shift: exactdp's certification catches it
(``tests/oracle/test_certify.py``, ``docs/oracle.md``).

Run ``python examples/float_joint.py`` for a demonstration.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np

__all__ = ["FloatJoint", "BrokenFloatJoint"]


class FloatJoint:
    """Joint over top-k sequences in float64 (``epsilon``, ``sensitivity`` as floats)."""

    floor_weights = True

    def __init__(self, counts, k, epsilon=1.0, sensitivity=1.0):
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

    def _log_mtilde(self):
        k = self.k
        factors = np.zeros(k)  # log(t_r - r) per row, once positive
        filled = np.zeros(k, dtype=bool)  # rows whose factor t_r - r is positive yet
        running = 0.0  # sum of the filled rows' factors
        out = np.empty(self.rows.shape[0])
        for p, (i, j) in enumerate(zip(self.rows, self.cols)):
            # m~ of this entry: product over the OTHER rows r of (t_r - r), t_r counting
            # the entries of row r visited so far (differences below this one)
            others_filled = filled.sum() - filled[i] == k - 1
            out[p] = running - factors[i] if others_filled else -np.inf
            new = j + 1 - i  # row i's factor once this entry is counted
            if new > 0:
                running += np.log(new) - factors[i]
                factors[i] = np.log(new)
                filled[i] = True
        return out

    # -- probabilities ----------------------------------------------------------------
    def score_position(self, sequence):
        """Position (in sorted order) of the entry that is the sequence's largest
        refined difference."""
        rank = np.empty(self.d, dtype=np.int64)
        rank[self.order] = np.arange(self.d)
        where = {(int(i), int(j)): p for p, (i, j) in enumerate(zip(self.rows, self.cols))}
        return max(where[(r, int(rank[s]))] for r, s in enumerate(sequence))

    def probabilities(self):
        """``{sequence: probability}`` for every sequence (small ``d`` only)."""
        rank = np.empty(self.d, dtype=np.int64)
        rank[self.order] = np.arange(self.d)
        where = np.empty((self.k, self.d), dtype=np.int64)
        where[self.rows, self.cols] = np.arange(self.rows.shape[0])
        out = {}
        for seq in permutations(range(self.d), self.k):
            p = max(where[r, rank[s]] for r, s in enumerate(seq))
            out[seq] = float(np.exp(self._log_one[p] - self.log_z))
        return out

    # -- sampling ---------------------------------------------------------------------
    def sample(self, rng=None):
        """One sequence of item ids (numpy Generator ``rng``, or a seed)."""
        rng = np.random.default_rng(rng)
        return self._sequence(self._entry(rng), rng)

    def samples(self, n, rng=None):
        rng = np.random.default_rng(rng)
        gumbel = rng.gumbel(size=(n, self.log_weights.shape[0]))
        entries = np.argmax(self.log_weights[None, :] + gumbel, axis=1)
        return [self._sequence(int(p), rng) for p in entries]

    def _entry(self, rng):
        return int(np.argmax(self.log_weights + rng.gumbel(size=self.log_weights.shape[0])))

    def _sequence(self, p, rng):
        i, j = int(self.rows[p]), int(self.cols[p])
        value = self.sorted_diffs[p]
        ranks = [None] * self.k
        ranks[i] = j
        used = {j}
        for r in range(self.k):
            if r == i:
                continue
            t = int(np.searchsorted(self.diff[r], value, side="right"))  # entries <= value
            choices = [x for x in range(t) if x not in used]
            ranks[r] = int(rng.choice(choices))
            used.add(ranks[r])
        return tuple(int(self.order[x]) for x in ranks)


class BrokenFloatJoint(FloatJoint):
    """The same, but weighing entries by the refined difference instead of its floor."""

    floor_weights = False


if __name__ == "__main__":  # pragma: no cover - a demonstration
    import exactdp
    from exactdp import certify

    counts, k = [4, 3, 3, 1, 0], 2
    exact = exactdp.Joint(counts, k, epsilon=1)
    for impl in (FloatJoint(counts, k), BrokenFloatJoint(counts, k)):
        name = type(impl).__name__
        print(name, "m~:", "PASS" if certify.compare_mtilde(impl.log_mtilde, exact, rows=impl.rows, cols=impl.cols) else "FAIL")
        print(name, "probabilities:", certify.compare_probabilities(impl.probabilities(), exact).table(3))
        fit = certify.goodness_of_fit(impl.samples(20_000, rng=1), exact)
        print(name, "sampler:", fit.summary())
