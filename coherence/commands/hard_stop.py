"""NOTE(hard-stop): ``--timeout`` as a promise about the process, not only about the tries.

A proof's tries each have a cap, and past ``--timeout`` no query starts; but a Z3 check can
ignore both its own timeout and the watchdog's interrupt. MSI's final proof sat more than 20
minutes inside one fresh solver's 2-second check (both processes, on this machine), and the
device runs of the same proof, given ``--timeout 430``, were still running when an outer
``timeout 570`` killed them, with nothing printed. So the command arms a timer for
``--timeout`` plus a grace (a check started just before the deadline may run its own cap):
when it fires, the forked workers are killed, the proof is reported unknown with the reason,
and the process leaves with the unknown verdict's exit code. What the proof settled before is
kept only in a ``--proof-cache``.

NOTE(hard-stop-stacks): before they are killed, this process and each worker write their
Python stacks to stderr, so that a stop says which check ignored its limits (a stack shows
the Python frames even while a thread is inside Z3).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import threading
from collections.abc import Callable, Iterator

from coherence.smt import forked

GRACE_SECONDS = 60.0  # the longest cap of one try (param.QUERY_SECONDS)


def reason(timeout: float) -> str:
    return (f"the proof did not stop within {GRACE_SECONDS:g} s of --timeout {timeout:g} s "
            "(a Z3 check ignored its limits); what it settled is kept only in a "
            "--proof-cache")


@contextlib.contextmanager
def hard_stop(timeout: float | None, report: Callable[[], int]) -> Iterator[None]:
    """Within the block, ``--timeout`` plus ``GRACE_SECONDS`` ends the process: workers
    killed, ``report()`` (which prints the unknown result and gives the exit code), then
    ``os._exit``. Leaving the block first disarms it."""
    if timeout is None:
        yield
        return
    lock = threading.Lock()
    done = [False]

    def fire() -> None:
        with lock:
            if done[0]:
                return
            with contextlib.suppress(Exception):  # no usable stderr: no stacks
                print(f"coherence: {reason(timeout)}; where each process was:",
                      file=sys.stderr, flush=True)
                faulthandler.dump_traceback(sys.stderr, all_threads=True)
            forked.kill_workers(stacks=sys.stderr)
            code = 3
            try:
                code = report()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
    timer = threading.Timer(timeout + GRACE_SECONDS, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            done[0] = True
        timer.cancel()
