"""The GPU engine's host side: level-synchronous breadth-first search over a ``Device``.

The frontier of depth d is the id range [start, end) of the state store; each level is
expanded in batches of ``device.batch_states`` states, one thread per state. Before a batch
the store is grown so that the batch's new states fit (the table doubled and rehashed on the
device, state segments added); a batch that overflows anyway is run again after growing
(its stored successors are found again, its rules counted once). A store that cannot grow
(device memory or ``--memory-limit``) ends the search with a partial result, as do the
time limit, a signal, ``--max-states`` and ``--max-depth``, between batches.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence

import attrs

from coherence.engines.api import RawFailure, RawResult
from coherence.engines.gpu.device import Buffer, Device, DeviceMemoryError
from coherence.engines.gpu.source import CTX, SEG_LOG
from coherence.engines.stopping import (
    StopOnSignals,
    interrupted,
    memory_limit_reached,
    time_limit_reached,
)
from coherence.results import CheckOptions, FailureKey, Progress

DEADLOCK: FailureKey = ("deadlock",)
SEG_STATES = 1 << SEG_LOG
MAX_SEGS = 4096            # 2^32 ids
MAX_IDS = (1 << 32) - 3    # ids + 1 and the busy marker fit a slot's 32 bits
INITIAL_TABLE_LOG2 = 16
LOAD = 0.7                 # the table grows before this load
NO_FAILURE = (1 << 64) - 1


@attrs.define
class Store:
    """The device buffers of one search and what the host knows of them."""

    ctx: Buffer
    first: Buffer
    segs: Buffer
    table: Buffer
    log2: int
    segments: list[Buffer] = attrs.Factory(list)
    allocated: int = 0
    peak: int = 0


class OutOfMemory(Exception):
    pass


class GpuSearch:
    def __init__(self, device: Device, num_keys: int, state_bytes: int, initial_states: int,
                 options: CheckOptions, memory_limit: int) -> None:
        self.dev = device
        self.num_keys = num_keys
        self.state_bytes = state_bytes
        self.initial_states = initial_states
        self.options = options
        self.memory_limit = memory_limit
        self.slack = device.resident_threads + 2
        self.fan = 16.0  # new states per expanded state to make room for (grows as seen)
        self.resizes = 0

    # ------------------------------------------------------------ device memory

    def _alloc(self, nbytes: int) -> Buffer:
        store = getattr(self, "store", None)
        used = store.allocated if store is not None else self._early
        if used + nbytes > self.memory_limit:
            raise OutOfMemory
        try:
            buf = self.dev.alloc(nbytes)
        except DeviceMemoryError:
            raise OutOfMemory from None
        if store is not None:
            store.allocated += nbytes
            store.peak = max(store.peak, store.allocated)
        else:
            self._early += nbytes
        return buf

    def _free(self, buf: Buffer) -> None:
        self.store.allocated -= buf.nbytes
        self.dev.free(buf)

    def _set(self, field: str, value: int) -> None:
        self.dev.write(self.store.ctx, 8 * CTX[field], struct.pack("<Q", value))

    def _ctx(self) -> dict[str, int]:
        raw = self.dev.read(self.store.ctx, 0, 8 * len(CTX))
        values = struct.unpack(f"<{len(CTX)}Q", raw)
        return {name: values[i] for name, i in CTX.items()}

    def _open(self) -> None:
        self._early = 0
        ctx = self._alloc(8 * len(CTX))
        first = self._alloc(8 * (self.num_keys + 1))
        segs = self._alloc(8 * MAX_SEGS)
        table = self._alloc(4 << INITIAL_TABLE_LOG2)
        self.store = Store(ctx, first, segs, table, INITIAL_TABLE_LOG2, allocated=self._early,
                           peak=self._early)
        self.dev.write(first, 0, b"\xff" * first.nbytes)
        self._set("TABLE", table.ptr)
        self._set("LOG2", INITIAL_TABLE_LOG2)
        self._set("SEGS", segs.ptr)
        self._set("FIRST", first.ptr)
        self._set("SYMMETRY", int(self.options.symmetry))
        self._set("DEADLOCK", int(self.options.deadlock))
        self._ensure(self.initial_states)

    def _close(self) -> None:
        for buf in [*self.store.segments, self.store.table, self.store.segs, self.store.first,
                    self.store.ctx]:
            self.dev.free(buf)
        self.store.segments.clear()

    def _hard(self) -> int:
        st = self.store
        ids = min(len(st.segments) * SEG_STATES, int((1 << st.log2) * 0.9), MAX_IDS)
        return max(0, ids - self.slack)

    def _ensure(self, need: int) -> None:
        """Room for ``need`` stored states in all (raises OutOfMemory)."""
        st = self.store
        need = min(need, MAX_IDS - self.slack)
        log2 = st.log2
        while (1 << log2) * LOAD < need + self.slack and log2 < 32:
            log2 += 1
        while len(st.segments) * SEG_STATES < need + self.slack:
            if len(st.segments) >= MAX_SEGS:
                raise OutOfMemory
            seg = self._alloc(SEG_STATES * (self.state_bytes + 4))
            self.dev.write(st.segs, 8 * len(st.segments), struct.pack("<Q", seg.ptr))
            st.segments.append(seg)
        if log2 != st.log2:
            self._rehash(log2)
        self._set("HARD", self._hard())

    def _rehash(self, log2: int) -> None:
        st = self.store
        table = self._alloc(4 << log2)  # both tables at once for the rehash
        old = st.table
        st.table, st.log2 = table, log2
        self._set("TABLE", table.ptr)
        self._set("LOG2", log2)
        count = self._ctx()["COUNT"]
        for lo in range(0, count, 1 << 24):
            hi = min(count, lo + (1 << 24))
            self.dev.launch("co_k_rehash", hi - lo, st.ctx, lo, hi, 0)
        self._free(old)
        self.resizes += 1

    def store_bytes(self, count: int) -> int:
        """State storage in use: states, parents, the hash table (as the compiled engine)."""
        return count * (self.state_bytes + 4) + (4 << self.store.log2)

    # ------------------------------------------------------------ the search

    def run(self) -> tuple[str | None, int, int, int, list[tuple[int, int, int]]]:
        """Returns (stop code, states, rules, depth, [(depth, key, id) of each failure])."""
        self.started = time.perf_counter()
        self._rules = self._depth = 0
        stop: list[str] = []
        try:
            self._open()
            with StopOnSignals(lambda signum: stop.append(interrupted(signum)) if not stop
                               else None):
                code, rules, depth = self._levels(stop)
        except OutOfMemory:
            code, rules, depth = "memory", self._rules, self._depth
        count = self._ctx()["COUNT"]
        firsts = struct.unpack(f"<{self.num_keys + 1}Q",
                               self.dev.read(self.store.first, 0, 8 * (self.num_keys + 1)))
        found = [(v >> 32, k, v & 0xFFFFFFFF) for k, v in enumerate(firsts) if v != NO_FAILURE]
        self.stop_reason = stop[0] if stop else None
        return code, count, rules, depth, sorted(found)

    def _any_failure(self) -> bool:
        raw = self.dev.read(self.store.first, 0, 8 * (self.num_keys + 1))
        return any(v != NO_FAILURE for v in struct.unpack(f"<{self.num_keys + 1}Q", raw))

    def _levels(self, stop: list[str]) -> tuple[str | None, int, int]:
        opts = self.options
        self._rules = 0
        self._depth = 0
        self.dev.launch("co_k_initial", self.initial_states, self.store.ctx, 0,
                        self.initial_states, 0)
        start, end = 0, self._ctx()["COUNT"]
        last_progress = time.perf_counter()
        while True:
            if opts.stop_at_first and self._any_failure():
                return "first", self._rules, self._depth
            if opts.max_depth is not None and self._depth >= opts.max_depth:
                return "max_depth", self._rules, self._depth
            lo = start
            while lo < end:
                count = self._ctx()["COUNT"]
                batch = min(self.dev.batch_states, end - lo)
                if opts.max_states:
                    room = max(1, int((opts.max_states - count) / self.fan))
                    batch = min(batch, room)
                try:
                    self._ensure(count + int(batch * self.fan) + 1)
                except OutOfMemory:  # no room to grow: a smaller batch, in what is left
                    room = self._hard() - count
                    if room <= 0:
                        raise
                    batch = max(1, min(batch, int(room / self.fan)))
                self._set("RULES", 0)
                self._set("OVERFLOW", 0)
                self.dev.launch("co_k_expand", batch, self.store.ctx, lo, lo + batch,
                                self._depth)
                ctx = self._ctx()
                if ctx["OVERFLOW"]:
                    # more new states than made room for: grow, then run the batch again
                    hard = self._hard()
                    self.fan *= 2
                    self._ensure(ctx["COUNT"] + int(batch * self.fan) + 1)
                    if self._hard() == hard:
                        raise OutOfMemory
                    continue
                self.fan = max(self.fan, 2.0 * (ctx["COUNT"] - count) / batch)
                self._rules += ctx["RULES"]
                lo += batch
                now = time.perf_counter()
                if opts.max_states and ctx["COUNT"] >= opts.max_states:
                    return "max_states", self._rules, self._depth
                if opts.time_limit is not None and now - self.started > opts.time_limit:
                    stop.append(time_limit_reached(opts.time_limit))
                if stop:
                    return "interrupt", self._rules, self._depth
                if opts.progress is not None and now - last_progress >= opts.progress_every:
                    last_progress = now
                    opts.progress(Progress(ctx["COUNT"], end - lo, self._depth, self._rules,
                                           now - self.started, self.store_bytes(ctx["COUNT"])))
            count = self._ctx()["COUNT"]
            if count == end:
                return None, self._rules, self._depth
            self._depth += 1
            start, end = end, count

    # ------------------------------------------------------------ counterexamples

    def path(self, state_id: int) -> list[bytes]:
        """The stored states (``state_bytes`` each) from an initial state to ``state_id``."""
        out: list[bytes] = []
        at = state_id
        while at != 0xFFFFFFFF:
            seg = self.store.segments[at >> SEG_LOG]
            k = at & (SEG_STATES - 1)
            out.append(self.dev.read(seg, k * self.state_bytes, self.state_bytes))
            (at,) = struct.unpack("<I", self.dev.read(seg, SEG_STATES * self.state_bytes + 4 * k,
                                                      4))
            if len(out) > (1 << 32):  # pragma: no cover - a cycle would be a runtime bug
                raise RuntimeError("parent references form a cycle")
        out.reverse()
        return out


def stop_message(code: str | None, options: CheckOptions, memory_limit: int,
                 reason: str | None) -> str | None:
    """The other engines' wording for each way a search stops early."""
    if code is None:
        return None
    if code == "max_states":
        return f"--max-states {options.max_states} reached"
    if code == "max_depth":
        return f"--max-depth {options.max_depth} reached"
    if code == "first":
        return "stopped at the first failure"
    if code == "interrupt":
        return reason or "interrupted"
    if code == "memory":
        # NOTE(memory-limit): here the limit bounds the device's state storage (states,
        # parents, hash table), the smaller of --memory-limit and the GPU's free memory.
        return memory_limit_reached(memory_limit)
    raise RuntimeError(f"unknown stop {code}")


def search(device: Device, keys: Sequence[FailureKey], state_bytes: int, initial_states: int,
           options: CheckOptions, memory_limit: int,
           decode: Callable[[bytes], int]) -> tuple[RawResult, dict[str, float]]:
    """One search on ``device``; ``decode`` turns a stored state's bytes into the layout's
    integer. Returns the raw result and the store's own figures (for benchmarks)."""
    gs = GpuSearch(device, len(keys), state_bytes, initial_states, options, memory_limit)
    try:
        code, states, rules, depth, found = gs.run()
        seconds = time.perf_counter() - gs.started
        failures = []
        for _depth, k, sid in found:
            key = keys[k] if k < len(keys) else DEADLOCK
            failures.append(RawFailure(key, [decode(b) for b in gs.path(sid)]))
        store = gs.store_bytes(states)
        stats: dict[str, float] = {
            "table_slots": float(1 << gs.store.log2), "resizes": float(gs.resizes),
            "segments": float(len(gs.store.segments)), "state_bytes": float(state_bytes),
            "storage_bytes": float(store), "device_peak_bytes": float(gs.store.peak)}
    finally:
        if hasattr(gs, "store"):
            gs._close()
    result = RawResult(
        states=states, rules_fired=rules, depth=depth, seconds=seconds,
        peak_memory_bytes=int(stats["device_peak_bytes"]),
        bytes_per_state=store / states if states else 0.0, failures=failures,
        stopped=stop_message(code, options, memory_limit, gs.stop_reason), threads=1)
    return result, stats
