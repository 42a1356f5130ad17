"""SIGINT during a proof for every N (NOTE(prove-interrupt)).

Z3 catches a SIGINT that comes during a check itself: the check answers unknown, with a
reason ("canceled") that a timeout gives too, and Python never hears of it. The prover took
that for one more unknown and went on with the next obligation, so Ctrl-C did not stop a
proof. Inside ``noting_sigint()``:

- Z3's own handler is off (``ctrl_c``), so every SIGINT reaches Python's handler, which notes
  it (a KeyboardInterrupt raised in a Z3 object's finaliser would be swallowed);
- Python's wake-up descriptor carries the signal at once to a watcher thread, which calls
  ``Z3_interrupt``: the running check stops within about half a second instead of running
  to its cap (up to a minute);
- ``check`` raises ``Interrupted`` once a SIGINT is noted, and the prover reports a partial
  result: unknown, exit 3, nothing claimed proved.

BMC (``bmc.py``) stops the same way, with what it found. A forked worker
(NOTE(forked-shares)) starts its own watcher (``os.register_at_fork``).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import z3

from coherence.engines.stopping import interrupted
from coherence.smt.z3_owner import safe_point

REASON = interrupted(signal.SIGINT)  # the engines' wording (NOTE(partial-results))

_caught: list[int] = []
_depth = 0
_state: dict[str, Any] = {}  # the watcher's socket pair and thread, what to restore


class Interrupted(Exception):
    """A SIGINT reached a proof: stop, and report what is settled."""


def _watch(reader: socket.socket) -> None:
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data:
            z3.main_ctx().interrupt()


def _start_watcher() -> None:
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    _state["old_fd"] = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    thread = threading.Thread(target=_watch, args=(reader,), name="coherence-sigint",
                              daemon=True)
    thread.start()
    _state.update(reader=reader, writer=writer, thread=thread)


def _stop_watcher() -> None:
    signal.set_wakeup_fd(_state.pop("old_fd", -1))
    _state.pop("writer").close()  # the watcher reads end-of-file and returns
    _state.pop("thread").join(timeout=5)
    _state.pop("reader").close()


def _in_child() -> None:
    """After a fork inside ``noting_sigint()``: the parent's watcher thread is not here."""
    if _depth and "writer" in _state:
        for end in ("reader", "writer"):
            _state.pop(end).close()
        _state.pop("thread", None)
        _start_watcher()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_child)


@contextmanager
def noting_sigint() -> Iterator[None]:
    """SIGINT noted for ``check`` and the running check interrupted (main thread only;
    re-entrant)."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _depth == 0:
        _caught.clear()
        _state["handler"] = signal.signal(
            signal.SIGINT, lambda signum, _frame: _caught.append(signum))
        _state["ctrl_c"] = z3.get_param("ctrl_c")
        z3.set_param("ctrl_c", False)
        _start_watcher()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _stop_watcher()
            z3.set_param("ctrl_c", _state.pop("ctrl_c"))
            signal.signal(signal.SIGINT, _state.pop("handler"))


def pending() -> bool:
    """Whether a SIGINT has been noted (a loop between checks stops there)."""
    return bool(_caught)


def stopped(error: BaseException) -> bool:
    """Whether ``error`` is how a SIGINT stopped the work: ``Interrupted``, or the Z3 error
    ("canceled") that ``Z3_interrupt`` makes of whatever Z3 call was running then (a model's
    evaluation, a simplification), not a check."""
    return isinstance(error, Interrupted) or bool(_caught)


# NOTE(check-overrun): Z3 5.4 does not always honour a check's ``timeout``: a fresh solver on
# a counting spec's obligation (message_count_aux) ran for over 8 minutes past its 2 s, in
# both processes of a proof, and an MSI proof ran 100 s past ``--timeout``. ``Z3_interrupt``
# stops such a check, as it stops one on SIGINT: a check given a wall-clock cap (``cap``: Z3's
# timeout and ``WALL``) is interrupted once it overruns the cap by half and a second. An
# interrupt that comes just after the check ended reaches no check and does nothing.
WALL = "coherence_wall_seconds"  # the attribute of a solver that holds its cap
_overrun_guard = threading.Lock()
_watched = [0]  # the token of the check a timer may interrupt; 0 when none
_tokens = iter(range(1, 1 << 62))


def cap(solver: Any, seconds: float) -> None:
    """A wall-clock cap on ``solver``'s checks: Z3's timeout, and the watchdog's
    (NOTE(check-overrun))."""
    solver.set("timeout", max(1, int(seconds * 1000)))
    setattr(solver, WALL, seconds)


def _overrun(token: int) -> None:
    with _overrun_guard:
        if _watched[0] == token:
            z3.main_ctx().interrupt()


def check(solver: Any, *assumptions: Any) -> Any:
    """``solver.check(*assumptions)``, raising ``Interrupted`` for a SIGINT before or during it;
    interrupted once it overruns its wall-clock cap (NOTE(check-overrun))."""
    if _caught:
        raise Interrupted(REASON)
    safe_point()
    wall = getattr(solver, WALL, None)
    timer = None
    if wall is not None:
        token = next(_tokens)
        with _overrun_guard:
            _watched[0] = token
        timer = threading.Timer(1.5 * wall + 1.0, _overrun, (token,))
        timer.daemon = True
        timer.start()
    try:
        answer = solver.check(*assumptions)
    finally:
        if timer is not None:
            with _overrun_guard:
                _watched[0] = 0
            timer.cancel()
    if _caught:
        raise Interrupted(REASON)
    return answer
