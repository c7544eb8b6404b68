"""A local process pool that stops at once on Ctrl-C (or any error).

``ProcessPoolExecutor``'s own exit (``with`` or ``shutdown()``) waits for every submitted
call, queued ones included unless ``cancel_futures=True``, and even then for the calls
already running: a Ctrl-C during ``exactdp check --jobs 2`` took effect only after the
queued and running checks ended.  Worse, Ctrl-C reaches the whole foreground
process group, so each worker raised ``KeyboardInterrupt`` in its own call.

:func:`process_pool` gives a pool whose workers ignore SIGINT (only the parent decides)
and that, when its block ends with an exception (``KeyboardInterrupt`` included), cancels
the queued calls and terminates the workers instead of waiting for them; a block that ends
normally shuts the pool down and waits, as ``with ProcessPoolExecutor(...)`` does.

>>> with process_pool(2) as pool:
...     pool.submit(pow, 2, 10).result()
1024
"""

from __future__ import annotations

import contextlib
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Iterator

__all__ = ["process_pool", "stop_pool"]

#: Seconds a terminated worker is given to exit before it is killed.
_GRACE = 1.0


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the parent's to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel ``pool``'s queued calls and end its workers now: SIGTERM, then SIGKILL for a
    worker still alive after :data:`_GRACE` seconds.  Returns once every worker has exited,
    so no process is left behind."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(_GRACE)
        if p.is_alive():
            p.kill()
            p.join(_GRACE)
    # The executor's own thread may reap a worker first; until it records the exit code,
    # is_alive() of that worker still reads True here: wait for the records, briefly.
    deadline = time.monotonic() + _GRACE
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.01)


@contextlib.contextmanager
def process_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes that ignore SIGINT; on an exception
    in the block (``KeyboardInterrupt`` included) :func:`stop_pool`, otherwise a normal
    shutdown that waits for the submitted calls."""
    pool = ProcessPoolExecutor(workers, initializer=_ignore_sigint)
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
