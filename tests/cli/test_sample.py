"""``exactdp sample``: seeded draws equal to the library's on the same generator, negative
seeds distinct from positive ones, and unseeded draws."""

from __future__ import annotations

import exactdp

from tests.cli.cli_helpers import BIG, SMALL, one_at_a_time, run, run_json


def test_sample_seeded_reproducible(capsys):
    status, first, err = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    assert status == 0 and err == ""
    _, second, _ = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    assert first == second
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    expected = one_at_a_time(m, 50, 1)
    assert first.splitlines() == [",".join(map(str, o)) for o in expected]
    data = run_json(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    assert [tuple(o) for o in data] == expected
    _, other, _ = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 2)
    assert other != first


def test_sample_negative_seed_differs_from_positive(capsys):
    # random.Random(-1) is random.Random(1); the CLI and the library map seeds injectively
    _, plus, _ = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    status, minus, err = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", -1)
    assert status == 0 and err == "" and minus != plus
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert minus.splitlines() == [",".join(map(str, o)) for o in one_at_a_time(m, 50, -1)]


def test_sample_unseeded(capsys):
    data = run_json(capsys, "sample", "joint", *BIG, "-n", 20)
    assert len(data) == 20
    for o in data:
        assert len(o) == 2 and len(set(o)) == 2 and all(0 <= i < 1000 for i in o)
    status, out, _ = run(capsys, "sample", "joint", *SMALL)
    assert status == 0 and len(out.splitlines()) == 1
