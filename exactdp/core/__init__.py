"""The shared ideas every mechanism is built from, one module each; imports nothing above it.

``validation`` (arguments), ``ranking`` (the tie rule), ``levels`` (utility levels and the
level table), ``scale`` (epsilon or base), ``precision`` (certified conversions),
``sampling`` (exact sampling from integer randomness), ``combinatorics`` (ranking and
unranking of sequences and sets), ``selection`` (the selection-rule interface),
``mechanism`` (the public API, written once), ``bruteforce`` (the enumeration twins).
See ``docs/architecture.md``.
"""
