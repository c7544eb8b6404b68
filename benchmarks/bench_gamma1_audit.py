"""The cost of an exact CanonicalGamma1 pair audit on tied counts, beside a float64 one.

Run:  python benchmarks/bench_gamma1_audit.py

CanonicalGamma1 with ``rho < 1`` depends on the tie rule (``ties_exchangeable`` is False), so
``audit.privacy_loss`` visits every k-subset instead of one per orbit of tied items.  For
counts with ties (``(1, 2, 2, 1)`` and its shifted repeats) and a neighbour, each row gives
the seconds and peak Python allocations (``tracemalloc``) of the exact audit, of the old
orbit shortcut (forced on by setting the attribute, for the record: its loss is wrong when
it differs), and of the float64 reference (the two-stage law in Python floats over every
subset, then numpy logs), with the three losses.  The three are run one after another in
each row, so load from other processes hits them alike; the ratio within a row is the
measurement.
"""

from __future__ import annotations

import itertools
import math
import time
import tracemalloc
from typing import Any, Callable

import numpy as np

import exactdp
from exactdp import audit

ROWS = [(4, 3), (8, 3), (12, 3), (16, 4), (20, 3)]


def float_gamma1(c: list[int], k: int, eps: float = 1.0, rho: float = 0.5) -> dict[tuple[int, ...], float]:
    """The two-stage law in float64 over every k-subset (ranks: count descending, ties by id)."""
    d = len(c)
    order = sorted(range(d), key=lambda i: (-c[i], i))
    x = [c[i] for i in order]
    rank = {item: r + 1 for r, item in enumerate(order)}
    tail = {t: math.comb(t - 1, k - 1) * math.exp(eps * rho * x[t - 1]) for t in range(k, d + 1)}
    z = sum(tail.values())
    out = {}
    for s in itertools.combinations(range(d), k):
        ranks = sorted(rank[i] for i in s)
        t = ranks[-1]
        if ranks == list(range(1, k + 1)):
            out[s] = tail[k] / z
            continue
        h = 0
        while ranks[h] == h + 1:
            h += 1
        head = {g: math.comb(t - g - 2, k - g - 1) * math.exp(-eps * (1 - rho) * x[g]) for g in range(k)}
        out[s] = tail[t] / z * head[h] / sum(head.values()) / math.comb(t - h - 2, k - h - 1)
    return out


def float_loss(c: list[int], c2: list[int], k: int) -> float:
    p, q = float_gamma1(c, k), float_gamma1(c2, k)
    a, b = np.array(list(p.values())), np.array([q[s] for s in p])
    return float(np.max(np.abs(np.log(a) - np.log(b))))


def measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    tracemalloc.start()
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return value, seconds, peak


def exact_loss(c: list[int], c2: list[int], k: int) -> Any:
    return audit.privacy_loss(exactdp.CanonicalGamma1(c, k), exactdp.CanonicalGamma1(c2, k), dps=20).value


def main() -> None:
    cls = exactdp.CanonicalGamma1
    print("| d | k | exact s | exact peak MiB | old shortcut s | float64 s | float64 peak MiB | exact/float "
          "| loss exact | loss float64 | loss shortcut |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d, k in ROWS:
        c = [(1, 2, 2, 1)[i % 4] + i // 4 for i in range(d)]
        c2 = [1] * d if d == 4 else [x - (i == 1) for i, x in enumerate(c)]
        exact, t_exact, m_exact = measure(lambda: exact_loss(c, c2, k))
        saved = cls.__dict__["ties_exchangeable"]
        cls.ties_exchangeable = True  # type: ignore[assignment,misc]  # the old shortcut, for comparison
        try:
            old, t_old, _ = measure(lambda: exact_loss(c, c2, k))
        finally:
            cls.ties_exchangeable = saved  # type: ignore[misc]
        ref, t_ref, m_ref = measure(lambda: float_loss(c, c2, k))
        print(f"| {d} | {k} | {t_exact:.3f} | {m_exact:.1f} | {t_old:.3f} | {t_ref:.3f} | {m_ref:.1f} "
              f"| {t_exact / t_ref:.1f} | {float(exact):.12f} | {ref:.12f} | {float(old):.12f} |")


if __name__ == "__main__":
    main()
