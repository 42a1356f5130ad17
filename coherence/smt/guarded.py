"""NOTE(check-guard): a Z3 check that can hang, asked in a forked child that is killed at its
wall-clock cap.

Z3 5.4 ignores both its own timeout and ``Z3_interrupt`` (NOTE(check-overrun)) in some
quantified checks: the native stack sits in ``smt::qi_queue::instantiate`` under
``smt::checker::check`` while the process grows by gigabytes. In session 28 both processes of
a side-by-side run on MSI's `FwdGetS in MI_A` sat more than ten minutes in one restricted
query's 3 s check (NOTE(finite-core)); in session 26, a fresh try's 2 s check held both
processes of MSI's final proof for over 20 minutes. Only a process can be stopped for sure.
The child has the solver with its terms for free (``fork``, copy on write) and sends back
the answer and Z3's reason for an unknown; a child that is killed, dies or sends nothing is an
unknown, never a proof. A fork costs about 0.3 s for a 6 GB process (the page tables), so
only checks of fresh solvers that may run for seconds are guarded, and only where they have a
wall-clock cap (with ``--rlimit`` alone, the deterministic mode, nothing is killed).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import time
from collections.abc import Sequence
from typing import Any

import z3

from coherence.smt import interrupt
from coherence.smt.forked import LIVE, can_fork

GRACE_SECONDS = 2.0  # past the check's cap (and the watchdog's 1.5x + 1 s), for the fork
KILLED = "killed: the check overran its wall-clock cap (NOTE(check-guard))"
_PR_SET_PDEATHSIG = 1
_ANSWERS = {b"u": z3.unsat, b"s": z3.sat, b"?": z3.unknown}


def check(solver: Any) -> tuple[Any, str]:
    """(answer, why unknown) of ``solver.check()``, in a forked child killed once it overruns
    the solver's wall-clock cap (``interrupt.cap``) by half and ``GRACE_SECONDS``; asked here
    (``answer``) where the solver has no cap or fork is not used."""
    wall = getattr(solver, interrupt.WALL, None)
    if wall is None or not can_fork():
        return answer(solver)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's stack
        try:
            os.close(r)
            _die_with_parent()
            # not ``interrupt.check``: its watchdog's lock may have been held at the fork
            got, why = answer(solver, watched=False)
            code = b"u" if got == z3.unsat else b"s" if got == z3.sat else b"?"
            os.write(w, code + why.encode("utf-8", "replace")[:4000])
        finally:
            os._exit(0)
    os.close(w)
    LIVE.add(pid)
    return _wait(pid, r, 1.5 * wall + 1.0 + GRACE_SECONDS)


def answer(solver: Any, assumptions: Sequence[Any] = (), watched: bool = True
           ) -> tuple[Any, str]:
    """(answer, why unknown) of ``solver.check(*assumptions)`` in this process (``watched``:
    under ``interrupt.check``'s watchdog). An error inside Z3 is an unknown (Z3 5.4.1 raised
    "Overflow encountered when expanding vector" on a counting spec's incremental solver,
    once in three runs): the next try decides, never a pass."""
    try:
        got = interrupt.check(solver, *assumptions) if watched else solver.check(*assumptions)
    except z3.Z3Exception as e:
        return z3.unknown, f"Z3 error: {e}"
    return got, solver.reason_unknown() if got == z3.unknown else ""


def _wait(pid: int, fd: int, seconds: float) -> tuple[Any, str]:
    """The child's answer, or unknown once ``seconds`` have passed (the child killed)."""
    end = time.monotonic() + seconds
    chunks: list[bytes] = []
    done = False
    try:
        while not done:
            left = end - time.monotonic()
            if left <= 0 or interrupt.pending():
                break
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(fd, 1 << 16)
                chunks.append(chunk)
                done = not chunk
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            if not done:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        LIVE.discard(pid)
        os.close(fd)
    if interrupt.pending():
        raise interrupt.Interrupted(interrupt.REASON)
    data = b"".join(chunks)
    if not done or not data:
        return z3.unknown, KILLED if not done else "the guarded check's process died"
    return _ANSWERS.get(data[:1], z3.unknown), data[1:].decode("utf-8", "replace")


def _die_with_parent() -> None:
    """A child whose parent is killed (NOTE(hard-stop)) is killed too, not left running Z3.
    SIGINT is left to the parent, which kills the child."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
