"""One thread owns Z3 while it works: no other thread may free a Z3 object meanwhile.

A Z3 context is not thread-safe, and every call through ctypes lets other Python threads run.
When another thread (rich's progress refresh, pytest-xdist's receiver, a user's) triggers a
cyclic garbage collection, the collector frees unreachable Z3 wrappers there: their
``__del__`` calls ``Z3_dec_ref`` while the owning thread is inside ``Z3_solver_check`` or
``Z3_simplify``, and Z3's heap is corrupted ("double free or corruption", a segfault: CI lost a
pytest-xdist worker this way inside ``test_a_counter_that_forgets_to_decrement_is_not_proved``).

Inside ``owning_z3()`` automatic collection is off for the whole process, and the owning thread
collects at its ``safe_point()``s, between Z3 calls, with the collector's own thresholds.
Reference counting still frees acyclic garbage at once, in the thread that drops it, which is
safe: no other thread holds Z3 objects. ``tests/test_z3_owner.py`` reproduces the crash without
the guard and shows it gone with it.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

_lock = threading.Lock()
_depth = 0  # nested owning_z3() scopes, process-wide (the collector is process-wide too)
_was_enabled = False  # automatic collection before the outermost scope

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def owning_z3() -> Iterator[None]:
    """Automatic garbage collection off while Z3 works (re-entrant); restored on exit."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def owns_z3(function: Callable[P, R]) -> Callable[P, R]:
    """Run ``function`` inside ``owning_z3()``: the entry points of the Z3 back end."""
    @functools.wraps(function)
    def owned(*args: P.args, **kwargs: P.kwargs) -> R:
        with owning_z3():
            return function(*args, **kwargs)
    return owned


def safe_point() -> int | None:
    """Collect what the collector would have by now (the generation its thresholds pick), here
    in the owning thread and between Z3 calls; the generation collected, None if none was due
    or no scope is open."""
    if _depth == 0 or not _was_enabled:
        return None
    counts = gc.get_count()
    thresholds = gc.get_threshold()
    due = [g for g in range(3) if thresholds[g] and counts[g] > thresholds[g]]
    if not due:
        return None
    gc.collect(due[-1])
    return due[-1]
