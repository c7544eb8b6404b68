"""Fixtures shared by the mechanism tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def break_pair_count(monkeypatch):
    """Negative controls of a pair count (Joint's sweep, JointSet's path count):
    ``break_pair_count(pair_class, fault)`` patches ``pair_class`` (the module's ``_Pair``)
    with an off-by-one threshold in the two-dimensional count (``"threshold"``) or a band
    one too narrow (``"band"``), for the rest of the test."""

    def apply(pair_class: type, fault: str) -> None:
        if fault == "threshold":
            original = pair_class.at_most
            monkeypatch.setattr(pair_class, "at_most", lambda self, m1, m2: original(self, m1 + 1, m2))
        elif fault == "band":
            original_init = pair_class.__init__

            def narrow(self, a, b):
                original_init(self, a, b)
                self.band = max(0, self.band - 1)

            monkeypatch.setattr(pair_class, "__init__", narrow)
        else:
            raise ValueError(f"unknown fault {fault!r}")

    return apply
