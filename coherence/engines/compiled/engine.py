"""The compiled engine: the model generated as C, explored by the fixed C runtime on every core.

``co_run`` runs in a Python thread (ctypes releases the GIL for the call), while the calling
thread polls the runtime's progress counters for the live progress line and turns SIGINT and
SIGTERM into ``co_request_stop()``, so an interrupted search ends cleanly with a partial
result. Failures come back as paths of packed states; the driver in ``coherence.engines``
replays them through the reference semantics.
"""

from __future__ import annotations

import ctypes
import os
import resource
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from coherence import ir
from coherence.engines.api import RawFailure, RawResult
from coherence.engines.compiled.build import CompilerNotFound, build, find_compiler
from coherence.engines.stopping import (
    StopOnSignals,
    interrupted,
    memory_limit_reached,
    time_limit_reached,
)
from coherence.layout import Layout
from coherence.liveness.built import GraphBuilder
from coherence.memory import usable_cpus
from coherence.results import CheckOptions, FailureKey, Progress

DEADLOCK: FailureKey = ("deadlock",)


class CoOptions(ctypes.Structure):
    _fields_ = [
        ("threads", ctypes.c_int32),
        ("symmetry", ctypes.c_int32),
        ("deadlock", ctypes.c_int32),
        ("stop_at_first", ctypes.c_int32),
        ("max_states", ctypes.c_uint64),
        ("max_depth", ctypes.c_int64),
        ("memory_limit", ctypes.c_uint64),
        ("table_log2", ctypes.c_int32),
        ("graph", ctypes.c_int32),
    ]


class CoProgress(ctypes.Structure):
    _fields_ = [
        ("states", ctypes.c_uint64),
        ("rules", ctypes.c_uint64),
        ("depth", ctypes.c_uint64),
        ("frontier", ctypes.c_uint64),
        ("expanded", ctypes.c_uint64),
        ("bytes_in_use", ctypes.c_uint64),
        ("peak_bytes", ctypes.c_uint64),
        ("table_slots", ctypes.c_uint64),
        ("resizes", ctypes.c_uint64),
        ("resize_ns", ctypes.c_uint64),
        ("state_bytes", ctypes.c_uint64),
        ("stop_reason", ctypes.c_int64),
        ("cycles_model", ctypes.c_uint64),
        ("cycles_store", ctypes.c_uint64),
    ]


# co_run's return values (co_runtime.h)
DONE, MAX_STATES, MAX_DEPTH, MEMORY, INTERRUPT, FIRST = range(6)


class Library:
    """One loaded model library. The runtime keeps its search in static storage, so one
    search at a time per library (``lock``)."""

    _loaded: ClassVar[dict[Path, Library]] = {}
    _loaded_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        lib = ctypes.CDLL(str(path))
        lib.co_run.argtypes = [ctypes.POINTER(CoOptions)]
        lib.co_run.restype = ctypes.c_int
        lib.co_request_stop.argtypes = []
        lib.co_request_stop.restype = None
        lib.co_get_progress.argtypes = [ctypes.POINTER(CoProgress)]
        lib.co_get_progress.restype = None
        for name in ("co_num_keys", "co_state_words", "co_state_bits"):
            getattr(lib, name).argtypes = []
            getattr(lib, name).restype = ctypes.c_int
        lib.co_failure.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
        lib.co_failure.restype = ctypes.c_int64
        lib.co_path.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64),
                                ctypes.c_int64]
        lib.co_path.restype = ctypes.c_int64
        lib.co_free.argtypes = []
        lib.co_free.restype = None
        u64p, i64p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int64)
        u8p, i32p = ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_int32)
        for name, args, res in (
                ("co_graph_sizes", [u64p, u64p, u64p], ctypes.c_int),
                ("co_graph_fill", [i64p, i32p, ctypes.c_void_p, ctypes.c_int], ctypes.c_int),
                ("co_graph_tasks", [u64p, u64p, u8p], None),
                ("co_parents", [i32p], None),
                ("co_parents_view", [], ctypes.c_void_p),
                ("co_state_at", [ctypes.c_uint64, u64p], ctypes.c_int),
                ("co_live_instances", [], ctypes.c_int),
                ("co_live_table", [i32p, u8p, u8p, i64p], ctypes.c_int),
                ("co_alg_backward", [ctypes.c_int64, i64p, i32p, u8p, u8p, u8p], ctypes.c_int),
                ("co_alg_forward", [ctypes.c_int64, i64p, i32p, u8p, u8p, u8p], ctypes.c_int),
                ("co_alg_fair_sets", [ctypes.c_int64, i64p, i32p, ctypes.c_void_p, ctypes.c_int,
                                      ctypes.c_int64, u8p, u8p, i32p, u8p], ctypes.c_int64)):
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = res
        self.lib = lib
        self.num_keys = int(lib.co_num_keys())
        self.words = int(lib.co_state_words())
        self.bits = int(lib.co_state_bits())

    @classmethod
    def load(cls, path: Path) -> Library:
        with cls._loaded_lock:
            if path not in cls._loaded:
                cls._loaded[path] = cls(path)
            return cls._loaded[path]

    def progress(self) -> CoProgress:
        p = CoProgress()
        self.lib.co_get_progress(ctypes.byref(p))
        return p

    def path_to(self, state_id: int) -> list[bytes]:
        """The packed states (``words * 8`` little-endian bytes each) from an initial state."""
        n = self.lib.co_path(state_id, None, 0)
        if n < 0:
            raise RuntimeError(f"co_path: no state {state_id}")
        buf = (ctypes.c_uint64 * (n * self.words))()
        got = self.lib.co_path(state_id, buf, n)
        assert got == n
        raw = bytes(buf)
        size = self.words * 8
        return [raw[i * size:(i + 1) * size] for i in range(n)]


def stop_message(code: int, options: CheckOptions, memory_limit: int,
                 reason: str | None) -> str | None:
    """The reference engine's wording for each way a search stops early (``reason``: why
    Python asked the runtime to stop, if it did)."""
    if code == DONE:
        return None
    if code == MAX_STATES:
        return f"--max-states {options.max_states} reached"
    if code == MAX_DEPTH:
        return f"--max-depth {options.max_depth} reached"
    if code == FIRST:
        return "stopped at the first failure"
    if code == INTERRUPT:
        return reason or "interrupted"
    if code == MEMORY:
        # NOTE(memory-limit): here the limit bounds the state storage (states, parents, hash
        # table), which is nearly all of this engine's memory; the reference bounds its RSS.
        return memory_limit_reached(memory_limit or physical_memory() * 3 // 4)
    raise RuntimeError(f"co_run failed with code {code}")


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # pragma: no cover - not POSIX
        return 8 << 30


def run_search(lib: Library, options: CheckOptions, table_log2: int = 0,
               graph: bool = False) -> tuple[str | None, float, int]:
    """``co_run`` in a thread while this one polls progress, limits and signals: why it
    stopped (None: done), its seconds and threads. The caller holds ``lib.lock`` and calls
    ``co_free`` when done with the search's storage."""
    threads = options.threads or usable_cpus()
    memory_limit = options.memory_limit or 0
    opts = CoOptions(
        threads=threads, symmetry=int(options.symmetry), deadlock=int(options.deadlock),
        stop_at_first=int(options.stop_at_first), max_states=options.max_states or 0,
        max_depth=-1 if options.max_depth is None else options.max_depth,
        memory_limit=memory_limit, table_log2=table_log2, graph=int(graph))
    outcome: list[int] = []
    reason: list[str] = []  # why Python asked the runtime to stop

    def search() -> None:
        outcome.append(int(lib.lib.co_run(ctypes.byref(opts))))

    def stop(why: str) -> None:
        if not reason:
            reason.append(why)
        lib.lib.co_request_stop()

    start = time.perf_counter()
    last = start
    worker = threading.Thread(target=search, name="co_run", daemon=True)
    with StopOnSignals(lambda signum: stop(interrupted(signum))):
        worker.start()
        try:
            while worker.is_alive():
                worker.join(timeout=0.05)
                now = time.perf_counter()
                if options.time_limit is not None and now - start > options.time_limit:
                    stop(time_limit_reached(options.time_limit))
                if options.progress is not None and now - last >= options.progress_every:
                    last = now
                    p = lib.progress()
                    options.progress(Progress(p.states, p.frontier, p.depth, p.rules,
                                              now - start, p.bytes_in_use))
        finally:  # an exception here (e.g. from the progress callback) stops the search
            if worker.is_alive():
                lib.lib.co_request_stop()
                worker.join()
    seconds = time.perf_counter() - start
    stopped = stop_message(outcome[0], options, memory_limit, reason[0] if reason else None)
    return stopped, seconds, threads


def run_library(lib: Library, keys: Sequence[FailureKey], options: CheckOptions,
                decode: Callable[[bytes], int], table_log2: int = 0,
                keep: list[int] | None = None) -> RawResult:
    """One search with a loaded library; ``decode`` turns a packed state's bytes into the
    layout's integer (``Layout.from_bytes``). With ``keep``, every state the search stored
    is appended to it, packed (before the runtime frees them)."""
    if len(keys) != lib.num_keys:
        raise RuntimeError(f"the library has {lib.num_keys} failure keys, the model "
                           f"{len(keys)}")
    with lib.lock:
        stopped, seconds, threads = run_search(lib, options, table_log2)
        p = lib.progress()
        found: list[tuple[int, int, RawFailure]] = []
        depth = ctypes.c_uint64()
        for k in range(lib.num_keys + 1):
            sid = lib.lib.co_failure(k, ctypes.byref(depth))
            if sid >= 0:
                key = keys[k] if k < lib.num_keys else DEADLOCK
                found.append((depth.value, k,
                              RawFailure(key, [decode(b) for b in lib.path_to(sid)])))
        failures = [f for _, _, f in sorted(found, key=lambda x: x[:2])]
        if keep is not None:
            keep += stored_states(lib, int(p.states), decode)
        lib.lib.co_free()
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    states = int(p.states)
    lib_stats = {"table_slots": int(p.table_slots), "resizes": int(p.resizes),
                 "resize_seconds": p.resize_ns / 1e9, "state_bytes": int(p.state_bytes),
                 "storage_bytes": int(p.bytes_in_use), "peak_storage_bytes": int(p.peak_bytes),
                 "cycles_model": int(p.cycles_model), "cycles_store": int(p.cycles_store)}
    result = RawResult(
        states=states, rules_fired=int(p.rules), depth=int(p.depth), seconds=seconds,
        peak_memory_bytes=max(peak_rss, int(p.peak_bytes)),
        bytes_per_state=p.bytes_in_use / states if states else 0.0,
        failures=failures, stopped=stopped, threads=threads)
    LAST_STATS.clear()
    LAST_STATS.update(lib_stats)
    return result


def stored_states(lib: Library, count: int, decode: Callable[[bytes], int]) -> list[int]:
    """The states ``0 .. count - 1`` of the library's last search, packed (until ``co_free``)."""
    buf = (ctypes.c_uint64 * lib.words)()
    out = []
    for i in range(count):
        if lib.lib.co_state_at(i, buf) != 0:
            raise RuntimeError(f"co_state_at: no state {i}")
        out.append(decode(bytes(buf)))
    return out


# The runtime's own figures for the last search (table size, resizes and their time, storage
# bytes): for benchmarks and the report, not part of RawResult.
LAST_STATS: dict[str, float] = {}


class CompiledEngine:
    """``--engine compiled``: generated C plus the fixed runtime (issue 13)."""

    name = "compiled"

    def available(self) -> str | None:
        try:
            find_compiler()
        except CompilerNotFound as err:
            return err.message
        return None

    def explore(self, model: ir.Model, layout: Layout, options: CheckOptions) -> RawResult:
        lib, keys = self._library(model, layout)
        return run_library(lib, keys, options, layout.from_bytes)

    def reachable(self, model: ir.Model, layout: Layout, options: CheckOptions,
                  extra_flags: Sequence[str] = ()) -> tuple[RawResult, list[int]]:
        """``explore``, and every state it stored, packed (symmetry-reduced under
        ``options.symmetry``: one representative of each orbit the search met): for the
        mining of candidate invariants (``coherence.smt.infer_mine``). ``extra_flags`` go to
        the compiler after the default ones (``build``)."""
        lib, keys = self._library(model, layout, extra_flags)
        kept: list[int] = []
        return run_library(lib, keys, options, layout.from_bytes, keep=kept), kept

    def _library(self, model: ir.Model, layout: Layout,
                 extra_flags: Sequence[str] = ()) -> tuple[Library, list[FailureKey]]:
        """The model's library, built or from the cache, and its failure keys."""
        from coherence.engines import EngineUnavailable
        from coherence.engines.cgen.codegen import CodegenError, generate

        try:
            generated = generate(model, layout)
        except CodegenError as err:
            raise EngineUnavailable(f"the compiled engine cannot translate this model: "
                                    f"{err}") from err
        path, _cached = build(generated.source, extra_flags)
        lib = Library.load(path)
        if lib.words != layout.words or lib.bits != layout.bits:
            raise RuntimeError(f"generated code packs {lib.bits} bits in {lib.words} words, "
                               f"the layout {layout.bits} in {layout.words}")
        return lib, list(generated.keys)

    @property
    def liveness_graph(self) -> GraphBuilder:
        """The liveness graph built by this engine's generated C (``graph.build``)."""
        from coherence.engines.compiled.graph import build as build_graph
        return build_graph
