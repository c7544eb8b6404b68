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


def test_the_neighbour_limit_error_suggests_symmetry_only_when_it_is_off():
    """Listing up to symmetry already, the error must not suggest up_to_symmetry=True."""
    with pytest.raises(audit.AuditLimitError) as info:
        audit.neighbours([3, 2, 2, 0], "add_remove", up_to_symmetry=True, max_neighbours=3)
    assert "up to symmetry" in str(info.value) and "up_to_symmetry=True" not in str(info.value)
    with pytest.raises(audit.AuditLimitError, match="or use up_to_symmetry=True"):
        audit.neighbours([3, 2, 2, 0], "add_remove", max_neighbours=3)
