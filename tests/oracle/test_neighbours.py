"""The neighbour limit's error at user sizes: short, naming the limit and how to raise it."""

from __future__ import annotations

import pytest

from exactdp import audit


def test_the_neighbour_limit_error_stays_short_at_large_d():
    # d = 166,000 has 2**166000 - 1 add/remove neighbours: the message printed all 50,000
    # digits of that number
    counts = [1000] * 166_000
    with pytest.raises(audit.AuditLimitError) as info:
        audit.neighbours(counts, "add_remove")
    text = str(info.value)
    assert len(text) < 400, len(text)
    assert text.startswith("max_neighbours=") and "raise max_neighbours" in text
    assert "e+49971 (49972 digits)" in text  # the size of the count, still said
