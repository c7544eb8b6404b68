"""The mechanisms, one module per paper object; each imports only core, rules and errors.

``joint`` and ``joint_sweep`` (Joint), ``pnf_joint`` (PNFJoint), ``joint_set`` (JOINT for
sets), ``canonical`` (the canonical Lipschitz mechanism), ``canonical_gamma1`` (its two-stage
Gamma1 variant), ``peeling`` (the peeling
baselines).  See ``docs/architecture.md``.
"""
