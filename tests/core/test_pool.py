"""exactdp.core.pool: a process pool whose workers leave Ctrl-C to the parent and that
stops at once (queued calls cancelled, workers ended) when its block raises."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from exactdp.core.pool import process_pool


def _running(process) -> bool:
    """Whether the worker still exists as a process.  ``is_alive()`` alone can read True for
    a worker that another thread (the executor's own) reaped, so the OS is asked too."""
    if not process.is_alive():
        return False
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def _sigint_handler() -> bool:
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_workers_ignore_sigint_and_a_normal_exit_waits():
    with process_pool(2) as pool:
        futures = [pool.submit(_sigint_handler) for _ in range(4)]
    assert all(f.done() for f in futures)
    assert [f.result() for f in futures] == [True] * 4


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_exception_cancels_the_queue_and_ends_the_workers(error):
    with pytest.raises(error):
        with process_pool(2) as pool:
            futures = [pool.submit(time.sleep, 60) for _ in range(6)]
            while not futures[0].running():
                time.sleep(0.01)
            processes = list(pool._processes.values())
            raise error()
    assert processes and not any(map(_running, processes))  # none left behind
    # every call ended without a result: cancelled in the queue, or its worker ended
    assert all(f.cancelled() or isinstance(f.exception(timeout=5), BrokenProcessPool) for f in futures)
