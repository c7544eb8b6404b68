"""Selection rules: how a mechanism's probability groups become a distribution.

``exponential`` (the exponential mechanism), ``permute_and_flip`` (permute-and-flip, the
same as report-noisy-max with exponential noise), ``noise`` (which rule each
report-noisy-max noise is).  Rules import only :mod:`exactdp.core` and
:mod:`exactdp.errors`.  See ``docs/architecture.md``.
"""
