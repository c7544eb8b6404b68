"""JointSet's and Canonical's streamed levels and level probabilities against the lists.

``iter_levels()`` (a threshold sweep; a heap merge of the classes' losses) and the level
table (blocks over a restartable level stream) must give exactly the levels computed all at
once (the sweep's list; Canonical's table of every loss), and the certified values of the
rule over those levels in memory (within the two certified errors), with block boundaries
everywhere and with nothing kept (every block recomputed from its first utility); the
table's own values are the same whatever the budget and the order of operations.
"""

from __future__ import annotations

import itertools
import random

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.core import level_blocks, level_stream
from exactdp.core.level_blocks import BlockLevelTable
from exactdp.core.level_stream import StreamSource
from exactdp.core.levels import LevelTable
from exactdp.mechanisms.joint_set.mechanism import iter_joint_set_levels, joint_set_levels

from twins import run_operations

NOISES = ("gumbel", "exponential")


def _make(kind, counts, k, **kw):
    if kind == "joint-set":
        return exactdp.JointSet(counts, k, epsilon=1)
    return exactdp.Canonical(counts, k, epsilon=1, **kw)


def _in_memory(m):
    """The list twin: the levels computed all at once (the sweep's list; the table of every
    loss) in an in-memory LevelTable."""
    levels = joint_set_levels(m.ranking, m.k) if isinstance(m, exactdp.JointSet) else m._compute_levels()
    return LevelTable(levels, m.scale)


def _certified_close(p, q, dps):
    """Two values certified to relative error ``10**-dps`` each (the twin's and the
    table's): within ``2 * 10**-dps`` of each other, relatively."""
    with mpmath.workdps(dps + 30):
        return abs(p - q) <= 2 * mpmath.mpf(10) ** -dps * abs(q)


def _check(kind, counts, k, block, budget, **kw):
    level_stream.STREAM_BLOCK_LEVELS = block
    level_stream.STREAM_FIRST_BLOCK = 1  # blocks of 1, 2, 4, ... up to `block`
    m = _make(kind, counts, k, **kw)
    if m.rule.name != "exponential":
        budget = 1 << 30  # permute-and-flip holds every level's enclosure: refused past a budget
    m.memory_budget = budget
    twin = _in_memory(m)
    levels = twin.levels
    probs = m.rule.level_probabilities(twin, 12)
    assert list(m.iter_levels()) == list(levels)
    assert m._table is None  # streaming the levels built no level table
    # one output's probability first: the lazy table reads only the blocks it needs
    singles = [m.rule.output_probability(m.table, a, 12) for a in range(len(levels))]
    pairs = list(m.iter_level_probabilities(12))
    assert [lv for lv, _ in pairs] == list(levels)
    # the table sums weights until the rest cannot matter, with guard bits from a bound on
    # the number of levels: its balls are not the twin's, its certified values agree
    assert all(_certified_close(p, q, 12) for (_, p), q in zip(pairs, probs))
    assert list(m.iter_levels()) == list(levels)  # now from the level table's blocks
    if budget:  # the lists at once, within the budget: the same values as streamed
        assert m.levels() == levels
        assert m.level_probabilities(12) == pairs
    # one output's probability: the same whatever was computed before, and certified
    for a in range(len(levels)):
        p, q = m.rule.output_probability(m.table, a, 12), m.rule.output_probability(twin, a, 12)
        assert p == singles[a] and _certified_close(p, q, 12)
    # a fresh mechanism in another order of operations, and another budget: the same values
    fresh = _make(kind, counts, k, **kw)
    fresh.memory_budget = (1 << 30) - budget if m.rule.name == "exponential" else budget
    assert [fresh.rule.output_probability(fresh.table, a, 12) for a in range(len(levels))] == singles
    assert list(fresh.iter_level_probabilities(12)) == pairs


def _instances(d, top=3):
    for counts in itertools.product(range(top), repeat=d):
        for k in range(1, d + 1):
            yield list(counts), k


@pytest.fixture(autouse=True)
def _restore_block_size():
    size, first = level_stream.STREAM_BLOCK_LEVELS, level_stream.STREAM_FIRST_BLOCK
    yield
    level_stream.STREAM_BLOCK_LEVELS, level_stream.STREAM_FIRST_BLOCK = size, first


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_joint_set_stream_is_the_list_exhaustive(d):
    for counts, k in _instances(d):
        for block, budget in ((1, 0), (2, 1 << 30)):
            _check("joint-set", counts, k, block, budget)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("noise", NOISES)
def test_canonical_stream_is_the_list_exhaustive(d, noise):
    for counts, k in _instances(d):
        for rho in ("1/2", "0", "1", "1/3"):
            _check("canonical", counts, k, 2, 0, noise=noise, rho=rho)


@st.composite
def instance(draw, max_d=14):
    d = draw(st.integers(1, max_d))
    top = draw(st.sampled_from([2, 4, 10, 1000]))
    counts = draw(st.lists(st.integers(0, top), min_size=d, max_size=d))
    return counts, draw(st.integers(1, d)), draw(st.sampled_from([1, 3, 4096])), draw(st.sampled_from([0, 1 << 30]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance(), st.sampled_from(["joint-set", "gumbel", "exponential"]), st.sampled_from(["1/2", "2/7"]))
def test_streams_are_the_lists_random(inst, kind, rho):
    counts, k, block, budget = inst
    if kind == "joint-set":
        _check(kind, counts, k, block, budget)
    else:
        _check("canonical", counts, k, block, budget, noise=kind, rho=rho)


def test_streams_start_at_every_level():
    """The restart a block is recomputed from: the levels of utility <= u, for every u."""
    rng = random.Random(5)
    for _ in range(20):
        d = rng.randint(2, 12)
        counts, k = [rng.randint(0, 20) for _ in range(d)], rng.randint(1, d)
        js = exactdp.JointSet(counts, k, epsilon=1)
        can = exactdp.Canonical(counts, k, epsilon=1, rho="1/3")
        for m, start in ((js, lambda u: iter_joint_set_levels(js.ranking, js.k, u)), (can, can._levels_from)):
            levels = _in_memory(m).levels
            for a, lv in enumerate(levels):
                assert list(start(lv.utility)) == list(levels[a:])
        keys = can.classes_.level_sizes()[0]
        for key in range(max(keys) + 2):  # loss keys that are no level start at the next one
            assert [kk for kk, _ in can.classes_.iter_level_sizes(key)] == [kk for kk in keys if kk >= key]


def test_stream_source_keeps_two_integers_per_block():
    level_stream.STREAM_BLOCK_LEVELS = 5
    m = exactdp.JointSet(random.Random(3).sample(range(400), 40), 4, epsilon=1)
    levels = joint_set_levels(m.ranking, m.k)
    source = StreamSource(lambda u: iter_joint_set_levels(m.ranking, m.k, u))
    table = BlockLevelTable(source, m.scale, memory_budget=0)
    assert source.block_sizes() == [5] * (len(levels) // 5) + ([len(levels) % 5] if len(levels) % 5 else [])
    assert source.block_first_utilities() == [lv.utility for lv in levels[::5]]
    assert table._cache == {}  # nothing kept within a zero budget
    assert list(table.iter_levels()) == list(levels)


def _forbid_key_table(monkeypatch):
    """Make the table of every loss key unavailable: what uses it now fails."""
    def refuse(self):
        raise AssertionError("the table of every loss key was built")
    monkeypatch.setattr(exactdp.mechanisms.canonical.mechanism.CanonicalClasses, "level_sizes", refuse)


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_canonical_unranks_from_the_block_table(d, monkeypatch):
    """Every output of every level, unranked through the block table (blocks of 1 and 2
    levels, nothing kept) without the table of every loss key: each level's outputs are
    exactly the subsets of that utility (plain enumeration), and class probabilities are
    found by level index as before."""
    for counts, k in _instances(d):
        for rho in ("1/2", "1/3"):
            twin = exactdp.Canonical(counts, k, epsilon=1, rho=rho)
            expected = {}
            for s in itertools.combinations(range(d), k):
                expected.setdefault(twin.utility(s), set()).add(frozenset(s))
            with monkeypatch.context() as patch:
                _forbid_key_table(patch)
                for block in (1, 2):
                    level_stream.STREAM_BLOCK_LEVELS = block
                    m = exactdp.Canonical(counts, k, epsilon=1, rho=rho)
                    m.memory_budget = 0
                    for a, lv in enumerate(m.iter_levels()):
                        got = {m._unrank(a, r) for r in range(lv.multiplicity)}
                        assert got == expected[lv.utility], (counts, k, rho, a)
                    for h, t in m.classes_.iter_classes():
                        assert m.utility(next(m.class_members(h, t))) == m.table.utilities[m._level_index(h, t)]


def test_canonical_sample_needs_no_key_table(monkeypatch):
    counts = random.Random(3).sample(range(100), 40)
    before = exactdp.Canonical(counts, 5, epsilon=1).samples(20, rng=7)
    _forbid_key_table(monkeypatch)
    m = exactdp.Canonical(counts, 5, epsilon=1)
    m.memory_budget = 0
    assert m.samples(20, rng=7) == before
    # the control: the key table is really refused
    with pytest.raises(AssertionError, match="loss key"):
        m.classes_.level_sizes()


# --- levels() of a streamed mechanism: refused as soon as past the budget -------------------

@pytest.mark.parametrize("make", [lambda c, **kw: exactdp.JointSet(c, 4, epsilon=1, **kw),
                                  lambda c, **kw: exactdp.Canonical(c, 4, epsilon=1, **kw)])
def test_levels_refused_before_the_whole_pass(make, monkeypatch):
    """With a budget for a few levels, levels() and level_probabilities() stop reading the
    stream just past it (a spy counts the levels read) and build no level table; with
    room, levels() is the table's levels and level_probabilities() unchanged."""
    counts = random.Random(5).sample(range(4000), 60)
    full = make(counts)
    all_levels = full.levels()
    assert all_levels == tuple(full.table.levels) and len(all_levels) > 40
    per = level_blocks.level_list_bytes(1, level_stream.stream_level_bytes(4, 60))
    small = make(counts, memory_budget=20 * per)
    read = []
    original = type(small).iter_levels

    def spy(self):
        for level in original(self):
            read.append(level)
            yield level

    monkeypatch.setattr(type(small), "iter_levels", spy)
    for method in (small.levels, small.level_probabilities):
        read.clear()
        with pytest.raises(exactdp.errors.MemoryBudgetError, match="more than 20 levels"):
            method()
        assert len(read) == 21 and small._table is None
    monkeypatch.undo()
    roomy = make(counts, memory_budget=10 * len(all_levels) * per)
    assert roomy.levels() == all_levels
    assert roomy.level_probabilities(20) == full.level_probabilities(20)


def test_levels_read_serve_the_tables_first_pass(monkeypatch):
    """levels() then level_probabilities(): the sweep runs once (the table's first pass reads
    the levels already read), the values are the table's, and levels() makes no second tuple."""
    from exactdp.mechanisms.joint_set import mechanism as joint_set_module

    calls = []
    original = joint_set_module.iter_joint_set_levels

    def counted(*args):
        calls.append(args[2:] or (None,))
        return original(*args)

    monkeypatch.setattr(joint_set_module, "iter_joint_set_levels", counted)
    counts = random.Random(5).sample(range(4000), 60)
    m = exactdp.JointSet(counts, 4, epsilon=1)
    levels = m.levels()
    probabilities = m.level_probabilities(20)
    assert len(calls) == 1 and m.levels() is levels
    monkeypatch.undo()
    fresh = exactdp.JointSet(counts, 4, epsilon=1)
    assert probabilities == fresh.level_probabilities(20) and tuple(fresh.table.levels) == levels


# --- the lazy level table: an operation reads only the blocks it needs ----------------------

def _heavy(d):
    """Heavy-tailed counts: the exponential weights fall off fast from level to level."""
    return [10**12 // r**2 for r in range(1, d + 1)]


def _count_levels_read(monkeypatch, m):
    """Count the levels the mechanism's level stream yields (every restart included)."""
    read = []
    if isinstance(m, exactdp.JointSet):
        from exactdp.mechanisms.joint_set import mechanism as module

        original = module.iter_joint_set_levels

        def counted(*args):
            for level in original(*args):
                read.append(level)
                yield level

        monkeypatch.setattr(module, "iter_joint_set_levels", counted)
    else:
        original = m._levels_from

        def counted_from(utility):
            for level in original(utility):
                read.append(level)
                yield level

        m._levels_from = counted_from
    return read


@pytest.mark.parametrize("kind", ["joint-set", "canonical"])
def test_a_sample_reads_a_few_blocks(kind, monkeypatch):
    """On fast-decaying weights a sample, many samples and one output's probability read
    the first blocks only (the running sum stops once the outputs left cannot matter), and
    give exactly what they give once every block was found first."""
    level_stream.STREAM_BLOCK_LEVELS = 8
    counts, k = _heavy(40), 3
    full = _make(kind, counts, k)
    law = full.level_probabilities(25)
    assert len(law) > 10 * 8  # many blocks
    assert full.table._complete  # the control: this table found every block first
    reference = (full.samples(30, rng=3), full.sample(rng=4), full.probability(full.sample(rng=5), dps=25))
    m = _make(kind, counts, k)
    read = _count_levels_read(monkeypatch, m)
    got = (m.samples(30, rng=3), m.sample(rng=4), m.probability(m.sample(rng=5), dps=25))
    assert got == reference
    assert not m.table._complete and len(read) <= 4 * 8, len(read)
    # the table's answers do not depend on what it found: the whole law, certified
    probabilities = m.level_probabilities(25)
    assert m.table._complete and probabilities == law


@pytest.mark.parametrize("kind", ["joint-set", "canonical"])
def test_lazy_index_of_finds_every_level(kind):
    """index_of on a fresh lazy table (blocks of 2, found one lookup at a time) gives every
    level's index, from the deepest first, and KeyError for a utility no output has."""
    level_stream.STREAM_BLOCK_LEVELS = 2
    counts, k = random.Random(9).sample(range(300), 12), 3
    levels = _make(kind, counts, k).levels()
    for order in (range(len(levels)), reversed(range(len(levels)))):
        m = _make(kind, counts, k)
        for a in order:
            assert m.table.index_of(levels[a].utility) == a
    m = _make(kind, counts, k)
    gaps = [lv.utility for lv in levels]
    missing = next(u for u in range(0, -10**4, -1) if u not in gaps)
    with pytest.raises(KeyError):
        m.table.index_of(missing)
    with pytest.raises(KeyError):
        m.table.index_of(levels[-1].utility - 1)  # below the last level: every block found
    assert m.table._complete


@pytest.mark.parametrize("kind", ["joint-set", "canonical"])
def test_levels_after_a_sample_refused_before_the_whole_pass(kind, monkeypatch):
    """levels() on a lazy table that found a few blocks (for a sample) is refused past the
    budget as soon as the levels read pass it, and is every level within a larger one."""
    level_stream.STREAM_BLOCK_LEVELS = 4
    counts, k = _heavy(40), 3
    levels = _make(kind, counts, k).levels()
    per = level_blocks.level_list_bytes(1, level_stream.stream_level_bytes(k, 40))
    small = _make(kind, counts, k)
    small.memory_budget = small.table.memory_budget = 20 * per
    small.sample(rng=1)
    assert not small.table._complete
    read = _count_levels_read(monkeypatch, small)
    with pytest.raises(exactdp.errors.MemoryBudgetError, match="more than 20 levels"):
        small.table.levels
    assert len(read) <= 24 and not small.table._complete
    roomy = _make(kind, counts, k)
    roomy.sample(rng=1)
    assert roomy.table.levels == levels and roomy.levels() == levels


@pytest.mark.parametrize("kind", ["joint-set", "canonical"])
def test_a_deep_outputs_probability_finds_no_block_of_its_own(kind):
    """probability(output) needs w(u)/Z only: on heavy-tailed counts the worst output's
    probability reads the first blocks (not its level's, the last), and is the value
    given by level index on a table that found every block, and by the in-memory twin."""
    level_stream.STREAM_BLOCK_LEVELS = 4
    counts, k = _heavy(40), 3
    worst = sorted(range(40), key=lambda i: counts[i])[:k]
    full = _make(kind, counts, k)
    law = full.level_probabilities(20)
    a = full.table.index_of(full.utility(worst))
    assert full.table._complete and a == len(law) - 1  # the control: the last level
    expected = full.rule.output_probability(full.table, a, 25)
    m = _make(kind, counts, k)
    assert m.probability(worst, dps=25) == expected and not m.table._complete
    assert _certified_close(expected, m.rule.output_probability(_in_memory(m), a, 25), 25)
    # every level: by utility on a fresh lazy table, by index on the complete one
    for lv_index, (lv, _) in enumerate(law):
        fresh = _make(kind, counts, k)
        assert (fresh.rule.utility_probability(fresh.table, lv.utility, 15)
                == full.rule.output_probability(full.table, lv_index, 15))


@pytest.mark.parametrize("kind", ["joint-set", "canonical"])
def test_log_probability_by_utility(kind):
    """log_probability(output) on a lazy table: from ``Z / e_u`` when ``P <= 1/2`` is
    certain (the worst output: no block of its own found), from the level's ``-log1p(R)``
    otherwise; certified like the in-memory twin's for every level."""
    level_stream.STREAM_BLOCK_LEVELS = 4
    counts, k = _heavy(40), 3
    worst = sorted(range(40), key=lambda i: counts[i])[:k]
    m = _make(kind, counts, k)
    value = m.log_probability(worst, dps=25)
    assert not m.table._complete and value < -10**9
    full = _make(kind, counts, k)
    levels = full.levels()
    twin = _in_memory(full)
    for a, lv in enumerate(levels):
        fresh = _make(kind, counts, k)
        got = fresh.rule.utility_log_probability(fresh.table, lv.utility, 20)
        assert _certified_close(got, full.rule.output_log_probability(twin, a, 20), 20), a
    # near 1 (the top output of heavy-tailed counts) the log keeps its relative accuracy
    top = _make(kind, counts, k)
    tiny = top.log_probability(sorted(range(40), key=lambda i: -counts[i])[:k], dps=20)
    assert -1 < tiny < 0 and _certified_close(tiny, full.rule.output_log_probability(twin, 0, 20), 20)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance(max_d=9), st.sampled_from(["joint-set", "canonical"]), st.permutations(range(4)),
       st.integers(0, 2**32))
def test_no_value_depends_on_the_order_of_operations(inst, kind, order, seed):
    """Samples, one output's probability and log-probability, and every level
    probability, asked in any order on a lazy table (blocks of 1-4 levels, nothing kept or
    everything kept): exactly (bit for bit) what a table that found every block first gives."""
    counts, k, _, budget = inst
    level_stream.STREAM_BLOCK_LEVELS = 1 + seed % 4
    level_stream.STREAM_FIRST_BLOCK = 1 + seed % 3
    rng = random.Random(seed)
    probe = tuple(rng.sample(range(len(counts)), k))

    def run(m, steps):
        return run_operations(m, steps, seed, probe, lists=bool(budget))

    full = _make(kind, counts, k)
    list(full.iter_level_probabilities(15))
    assert full.table._complete  # the control: every block found first
    expected = run(full, range(4))
    m = _make(kind, counts, k)
    m.memory_budget = budget
    assert run(m, order) == expected


@pytest.mark.parametrize("kind", ["joint-set", "canonical"])
def test_a_budget_below_one_level_is_refused_before_any_level(kind, monkeypatch):
    m = _make(kind, [10, 5, 3, 1, 1, 0, 4, 4], 3)
    m.memory_budget = 1
    read = _count_levels_read(monkeypatch, m)
    with pytest.raises(exactdp.errors.MemoryBudgetError, match=r"cannot hold a single level \(one takes about"):
        m.levels()
    assert read == []


def test_stream_blocks_double_from_the_first():
    """Blocks of STREAM_FIRST_BLOCK levels, doubling up to STREAM_BLOCK_LEVELS (a running
    sum that can stop early is checked at short block ends), the levels unchanged."""
    level_stream.STREAM_BLOCK_LEVELS, level_stream.STREAM_FIRST_BLOCK = 16, 2
    m = exactdp.JointSet(random.Random(3).sample(range(4000), 60), 4, epsilon=1)
    levels = joint_set_levels(m.ranking, m.k)
    source = StreamSource(lambda u: iter_joint_set_levels(m.ranking, m.k, u))
    table = BlockLevelTable(source, m.scale, memory_budget=0)
    sizes = source.block_sizes()
    assert sizes[:4] == [2, 4, 8, 16] and set(sizes[4:-1]) == {16} and sum(sizes) == len(levels)
    assert list(table.iter_levels()) == list(levels)


@pytest.mark.parametrize("kind", ["joint-set", "canonical"])
def test_sampling_size_does_not_depend_on_the_blocks_found(kind):
    """The sampler's size (its precision guard when a draw is undecided) is the bound on
    the number of levels before and after every block is found, and 1 for one level."""
    level_stream.STREAM_BLOCK_LEVELS = 4
    m = _make(kind, _heavy(40), 3)
    before = m.table.sampling_size()
    list(m.iter_level_probabilities(10))
    assert m.table._complete and m.table.sampling_size() == before == m.table.source.level_bound() >= len(m.table) > 1
    one = _make(kind, [5, 5, 5], 3)
    assert one.table.sampling_size() == 1 == len(one.table)
