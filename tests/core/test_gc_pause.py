"""Tests of exactdp.core.gc_pause: the cyclic collector is off inside ``gc_paused()`` and on
again after the outermost block (nested, across threads, and when the block raises), and a
collector the caller had disabled stays disabled."""

from __future__ import annotations

import gc
import threading

import pytest

from exactdp.core.gc_pause import gc_paused


@pytest.fixture
def collector_enabled():
    was = gc.isenabled()
    gc.enable()
    yield
    gc.enable() if was else gc.disable()


def test_nested_blocks_enable_the_collector_after_the_outermost(collector_enabled):
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block does not turn it on under the outer one
    assert gc.isenabled()


def test_an_exception_inside_the_block_still_enables_the_collector(collector_enabled):
    with pytest.raises(KeyError):
        with gc_paused():
            raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_disabled_by_the_caller_stays_disabled(collector_enabled):
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_blocks_in_two_threads_overlap(collector_enabled):
    """Thread A enters, thread B enters and leaves, A is still paused; after A leaves the
    collector is on again."""
    entered, b_done, seen = threading.Event(), threading.Event(), []

    def a():
        with gc_paused():
            entered.set()
            b_done.wait(10)
            seen.append(gc.isenabled())

    def b():
        entered.wait(10)
        with gc_paused():
            pass
        b_done.set()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [False] and gc.isenabled()
