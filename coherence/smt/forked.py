"""Shares of one piece of work done by forked copies of this process (NOTE(forked-shares)).

A proof for every N is hundreds of small, independent Z3 checks, built from Z3 terms that live
in this process. ``os.fork`` gives each worker those terms for free (copy on write), where a
spawned process would have to parse and encode the spec again. Share ``k`` runs in worker
``k``, share 0 here; each worker sends back its share's result pickled through a pipe and
leaves with ``os._exit`` (no ``atexit`` handler, no buffered output of ours flushed twice).
A worker that dies, raises, or cannot send its result costs time, never the answer: that
share is done again here (where an error raises as it would without workers). Z3 5.4's timers
work in a forked child, after the parent used them, which ``tests/test_forked.py`` checks.

Fork is used on Linux only (macOS's system frameworks are not fork-safe); elsewhere every
share runs here, one after another.
"""

from __future__ import annotations

import contextlib
import faulthandler
import mmap
import os
import pickle
import signal
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Generic, TypeVar

from coherence.memory import available_memory_bytes, rss_bytes

T = TypeVar("T")

SLOT = struct.Struct("<qq")  # (done, total) of one share


def can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def affordable(count: int) -> int:
    """At most ``count`` processes, as many as memory allows if each copied all of this one.
    A forked Python process copies the pages it touches (reference counts are writes), so a
    worker can come to hold as much as the parent: ``prove --jobs 64`` of a 10 GB proof must
    not take 640 GB. Unknown sizes (not Linux) leave ``count`` as it is."""
    available, rss = available_memory_bytes(), rss_bytes()
    if not available or not rss:
        return count
    return max(1, min(count, 1 + available // rss))


class Claims:
    """Indices ``0..end-1`` handed out once each, in increasing order, to whichever share
    asks next (a process that finishes its piece early takes the next one). Each share meets
    its own indices in increasing order, and which share took which is recorded: a share run
    again (its worker failed) gets the same indices back first."""

    def __init__(self, end: int) -> None:
        import multiprocessing
        self.end = end
        self._mem = mmap.mmap(-1, 8 * (1 + max(1, end)))  # next index, then owner + 1 each
        self._lock = multiprocessing.get_context("fork" if can_fork() else None).Lock()

    def of(self, share: int) -> Iterator[int]:
        mine = [i for i in range(self.end)
                if struct.unpack_from("<q", self._mem, 8 * (1 + i))[0] == share + 1]
        yield from mine
        while True:
            with self._lock:
                (k,) = struct.unpack_from("<q", self._mem, 0)
                if k < self.end:
                    struct.pack_into("<q", self._mem, 0, k + 1)
                    struct.pack_into("<q", self._mem, 8 * (1 + k), share + 1)
            if k >= self.end:
                return
            yield k


class Tally:
    """Each share's (done, total), in memory the workers share: progress across processes."""

    def __init__(self, shares: int) -> None:
        self._mem = mmap.mmap(-1, SLOT.size * max(1, shares))

    def set(self, share: int, done: int, total: int) -> None:
        SLOT.pack_into(self._mem, share * SLOT.size, done, total)

    def sums(self) -> tuple[int, int]:
        done = total = 0
        for off in range(0, len(self._mem), SLOT.size):
            d, t = SLOT.unpack_from(self._mem, off)
            done, total = done + d, total + t
        return done, total


# NOTE(hard-stop): the workers now running, so that a stop from another thread can kill them
LIVE: set[int] = set()


# NOTE(hard-stop-stacks): a worker asked for its stack (``kill_workers(stacks=...)``) writes
# it to the stderr it shares with this process; the pause lets one finish before the next
STACK_SIGNAL = getattr(signal, "SIGUSR1", None)
STACK_PAUSE_SECONDS = 0.3


def kill_workers(stacks: Any = None) -> None:
    """Kill every worker now running (NOTE(hard-stop): the process is about to leave). With
    ``stacks`` (a text file, this process's stderr), each worker first writes where it is
    there, under a line naming it."""
    if stacks is not None and STACK_SIGNAL is not None:
        for pid in sorted(LIVE):
            with contextlib.suppress(OSError, ValueError):
                print(f"worker {pid}:", file=stacks, flush=True)
                os.kill(pid, STACK_SIGNAL)
                time.sleep(STACK_PAUSE_SECONDS)
    for pid in list(LIVE):
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        LIVE.discard(pid)


class Shares(Generic[T]):
    """``run(share)`` for ``share`` in ``range(count)``: shares 1.. in forked workers, share 0
    here, then each worker's result (a share whose worker failed is run here again). Without
    ``fork`` (or where fork is not used), every share runs here, in order."""

    def __init__(self, count: int, run: Callable[[int], T], fork: bool = True) -> None:
        self.count = count
        self.fork = fork and can_fork() and count > 1
        self._run = run
        self.failures: list[str] = []  # why a worker's share was run here again

    def results(self, stop: Callable[[T], bool] | None = None) -> list[T]:
        """Every share's result, in share order. ``stop(result)`` true of share 0's: the
        workers are stopped instead, and only that result comes back (an interrupted run)."""
        if not self.fork:
            out = []
            for k in range(self.count):
                out.append(self._run(k))
                if stop is not None and stop(out[-1]):
                    break
            return out
        workers: list[tuple[int, int]] = []  # (pid, read end)
        try:
            for k in range(1, self.count):
                workers.append(self._fork(k))
            out: list[T] = [self._run(0)]
            if stop is not None and stop(out[0]):
                return out  # the workers are stopped below
            while workers:
                k = len(out)
                status, value = _receive(*workers[0])
                workers.pop(0)  # read, closed and reaped: nothing left to stop
                if status == "ok":
                    out.append(value)
                    continue
                self.failures.append(f"worker {k}: {value}")
                out.append(self._run(k))
            return out
        finally:
            for pid, fd in workers:  # an exception here: stop the others, leave no zombie
                _stop(pid, fd)

    def _fork(self, k: int) -> tuple[int, int]:
        def work(out: BinaryIO) -> None:
            if STACK_SIGNAL is not None:  # NOTE(hard-stop-stacks)
                with contextlib.suppress(Exception):  # no usable stderr: no stack
                    faulthandler.register(STACK_SIGNAL, all_threads=True)
            out.write(_outcome(lambda: self._run(k)))
        return _forked(work)


def _forked(work: Callable[[BinaryIO], None]) -> tuple[int, int]:
    """(pid, read end) of a forked child that runs ``work`` on the pipe's write end and
    leaves with ``os._exit`` (never returning into the caller's stack; code 1 when ``work``
    raised: nothing, or not all, was sent, and the parent runs the work again)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            with os.fdopen(w, "wb") as out:
                work(out)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    LIVE.add(pid)
    return pid, r


def _outcome(run: Callable[[], Any]) -> bytes:
    """("ok", what ``run`` returned) pickled, or ("error", its traceback): the parent runs
    the work again."""
    try:
        return pickle.dumps(("ok", run()), pickle.HIGHEST_PROTOCOL)
    except BaseException:
        return pickle.dumps(("error", traceback.format_exc()))


def _receive(pid: int, fd: int) -> tuple[str, Any]:
    """("ok", result) of a worker, or (what went wrong, why), once it has ended. The read end
    is closed and the worker reaped only when all is read: an exception meanwhile leaves both
    to ``_stop`` (closing them here too could close a descriptor number reused since)."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    os.waitpid(pid, 0)
    LIVE.discard(pid)
    try:
        status, value = pickle.loads(b"".join(chunks))
    except Exception as e:  # a worker that died: its share is run here
        return "died", f"{type(e).__name__}: {e}"
    if status != "ok":
        return status, value.strip().splitlines()[-1] if value else status
    return status, value


def _stop(pid: int, fd: int) -> None:
    _kill(pid)
    with contextlib.suppress(OSError):
        os.close(fd)


def _kill(pid: int) -> None:
    """Kill and reap a child (one that has ended already: reap it)."""
    with contextlib.suppress(ProcessLookupError, ChildProcessError):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    LIVE.discard(pid)


# ---------------------------------------------------------------- one piece of work, isolated

_FRAME = struct.Struct("<cI")  # (kind: b"m" a message, b"r" the result; payload length)


class Isolated(Generic[T]):
    """NOTE(bench-isolated): ``run(say)`` in a forked child, so that it starts from this
    process's state and leaves nothing in it: ``bench prove --infer`` runs each protocol so,
    because Z3's answers follow the ids of the terms a process made before (the acked scheme
    gave 27 lines after German in one process, 28 alone, as ``prove --infer`` gives).
    ``say(text)`` in the child reaches this process's ``say`` at once (progress). A child
    that dies or raises costs time, never the answer: ``run`` is run here (``failure`` says
    why). Without fork, it runs here.

    A SIGINT while the child runs reaches the child too (one process group), which reports
    what it has; here it is only noted, so that the child's partial answer comes back. A
    second one stops the child and raises ``KeyboardInterrupt`` here."""

    def __init__(self, run: Callable[[Callable[[str], None]], T],
                 say: Callable[[str], None]) -> None:
        self._run, self._say = run, say
        self.failure: str | None = None

    def result(self) -> T:
        if not can_fork():
            return self._run(self._say)

        def work(out: BinaryIO) -> None:
            def relay(text: str) -> None:
                _send(out, b"m", text.encode())
            _send(out, b"r", _outcome(lambda: self._run(relay)))
        pid, r = _forked(work)
        answer = self._wait(pid, r)
        if answer is not None and answer[0] == "ok":
            return answer[1]
        why = "it died" if answer is None else answer[1].strip().splitlines()[-1]
        self.failure = f"the isolated run failed ({why}); run again here"
        return self._run(self._say)

    def _wait(self, pid: int, fd: int) -> tuple[str, Any] | None:
        """The child's ("ok", result) or ("error", traceback); None if it died. Its messages
        are said as they come."""
        interrupts: list[int] = []

        def note(signum: int, _frame: Any) -> None:
            interrupts.append(signum)
            if len(interrupts) > 1:
                raise KeyboardInterrupt
        old = (signal.signal(signal.SIGINT, note)
               if threading.current_thread() is threading.main_thread() else None)
        done = False
        try:
            answer: tuple[str, Any] | None = None
            with os.fdopen(fd, "rb") as f:  # a buffered read returns less only at the end
                while len(head := f.read(_FRAME.size)) == _FRAME.size:
                    kind, size = _FRAME.unpack(head)
                    body = f.read(size)
                    if len(body) < size:
                        break  # cut short: the child died mid-write
                    if kind == b"m":
                        self._say(body.decode())
                    else:
                        try:
                            answer = pickle.loads(body)
                        except Exception:
                            answer = None
            os.waitpid(pid, 0)
            done = True
            return answer
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
            if not done:  # an exception here (a second Ctrl-C): stop the child
                _kill(pid)
            LIVE.discard(pid)


def _send(out: BinaryIO, kind: bytes, payload: bytes) -> None:
    out.write(_FRAME.pack(kind, len(payload)))
    out.write(payload)
    out.flush()
