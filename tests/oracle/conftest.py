"""Fixtures shared by the oracle's tests."""

from __future__ import annotations

import pytest

from exactdp._oracle.notions import profile as _notions
from exactdp.errors import PrecisionError


@pytest.fixture
def every_direction_certified(monkeypatch):
    """The audit's maxima decided only when every direction is certified (as before a
    maximum was returned once one value was certified and the others proven below it):
    brings back the PrecisionError of an undecided direction, to check its text."""
    decided_max = _notions.decided_max

    def strict(outcomes):
        for value in outcomes.values():
            if isinstance(value, Exception):
                raise PrecisionError(value.argument, value.value, value.reason)
        return decided_max(outcomes)

    monkeypatch.setattr(_notions, "decided_max", strict)
