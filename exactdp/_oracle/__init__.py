"""The oracle's engine: distributions, cells, pair engines, notions, worst cases, verdicts, samplers and draws.

Private: users import it through the public facades ``exactdp.audit``, ``exactdp.certify``,
``exactdp.testing`` and ``exactdp.accounting``.
"""
