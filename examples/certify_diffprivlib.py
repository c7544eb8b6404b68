"""Certify diffprivlib's ``Exponential`` and ``PermuteAndFlip`` against the exact mechanism
each samples.

``exactdp.interop.diffprivlib_mechanism`` maps the object to ``Joint`` / ``PNFJoint`` with
``k = 1`` (``sensitivity * (2 - monotonic) / 2``; non-integer utilities scaled to
integers exactly) and its ``candidates`` to an ``id_map``.  diffprivlib draws from
``secrets.SystemRandom`` unless built with an integer ``random_state``; the test draws from
a copy built with ``random_state=`` from the seed, so a failure can be rerun.  A wrong
mapping (the ``monotonic`` flag ignored) is shown failing.

Run ``python examples/certify_diffprivlib.py``; without diffprivlib installed it says so
and exits 0.
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from diffprivlib.mechanisms import Exponential, PermuteAndFlip
    except ImportError:
        print("skipped: diffprivlib is not installed (pip install diffprivlib)")
        return 0
    from exactdp import certify, interop, testing

    utility, labels = [2.5, 1.0, 1.0, 0.0], ["red", "green", "blue", "grey"]
    for cls in (Exponential, PermuteAndFlip):
        obj = cls(epsilon=1.0, sensitivity=1.0, utility=utility, monotonic=True, candidates=labels)
        exact = interop.diffprivlib_mechanism(obj)
        n = certify.samples_needed(exact)
        fit = testing.assert_sampler_matches(obj, exact, n=n, id_map=exact.id_map, seed=1)
        print(f"{cls.__name__}: {exact!r}, id_map {exact.id_map}")
        print(f"  {fit.verdict_line()}")
        wrong = interop.diffprivlib_mechanism(obj, monotonic=False)
        try:
            testing.assert_sampler_matches(obj, wrong, n=n, id_map=exact.id_map, seed=1)
        except AssertionError as err:
            print(f"  monotonic ignored, {wrong!r}:")
            print("  " + "\n  ".join(str(err).splitlines()[:2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
