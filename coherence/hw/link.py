"""Running litmus roles across a link (``link_gen``): CPU threads through the C helper, GPU
threads through CuPy, on the memory a ``Placement`` names. Only a placement with a GPU agent
or GPU-reachable memory imports cupy; an all-CPU placement on ``host`` memory runs anywhere
(that is how the protocol is tested without a GPU).
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from coherence.hw import link_gen
from coherence.hw.cbuild import build_shared
from coherence.hw.outcomes import codec
from coherence.hw.placement import Placement, gpu_index
from coherence.hw.plan import next_iterations
from coherence.hw.slots import LOC_STRIDE
from coherence.litmus.program import Litmus

LINE_BYTES = link_gen.LINE * 4


class _Args(ctypes.Structure):
    _fields_ = [("mem", ctypes.c_void_p), ("flags", ctypes.c_void_p), ("hist", ctypes.c_void_p),
                ("inst", ctypes.c_void_p), ("role", ctypes.c_void_p),
                ("agents", ctypes.c_int32), ("iters", ctypes.c_int32),
                ("seed", ctypes.c_uint32), ("it0", ctypes.c_uint32),
                ("spread", ctypes.c_uint32), ("first_cpu", ctypes.c_int32),
                ("timeout_ns", ctypes.c_uint64), ("timeouts", ctypes.c_void_p)]


@attrs.define
class LinkOptions:
    seconds: float = 1.0
    instances: int = 4  # concurrent instances (each CPU role is one host thread)
    spread: int = 4
    seed: int = 1
    timeout_ms: float = 2000.0
    launch_seconds: float = 0.1
    first_iterations: int = 256
    pin_cpus: bool = True


@attrs.define
class LinkResult:
    test: str
    variant: str
    agents: list[str]
    memory: str
    instances: int
    distinct_sm: dict[str, int]  # every role on its own agent: the name the report reads
    shared_sm: dict[str, int]
    overflow: int
    timeouts: int
    launches: int
    iterations: int
    seconds: float

    @property
    def instances_per_s(self) -> float:
        return self.instances / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "instances_per_s": round(self.instances_per_s),
                "placement": f"{'+'.join(self.agents)}@{self.memory}"}


class _Buffer:
    """Bytes that the agents of a placement share, with a numpy view for the host side when
    the host can see them."""

    def __init__(self, nbytes: int, memory: str) -> None:
        self.memory = memory
        self._keep: Any = None
        nbytes = (nbytes + LINE_BYTES - 1) // LINE_BYTES * LINE_BYTES
        self.nbytes = nbytes
        if memory == "host":
            raw = np.zeros(nbytes + LINE_BYTES, dtype=np.uint8)
            off = (-raw.ctypes.data) % LINE_BYTES
            self._keep = raw
            self.ptr = raw.ctypes.data + off
        elif memory in ("pinned", "managed"):
            import cupy as cp

            if memory == "pinned":  # portable | mapped: every GPU reaches it (UVA pointer)
                self.ptr = cp.cuda.runtime.hostAlloc(nbytes, 3)
                self._free = cp.cuda.runtime.freeHost
            else:
                self.ptr = cp.cuda.runtime.mallocManaged(nbytes, 1)
                self._free = cp.cuda.runtime.free
        else:
            import cupy as cp

            with cp.cuda.Device(gpu_index(memory)):
                self._keep = cp.zeros(nbytes, dtype=cp.uint8)
            self.ptr = self._keep.data.ptr
        self.zero()

    def host_view(self, dtype: Any) -> np.ndarray:
        if self.memory.startswith("gpu"):
            raise ValueError("device memory has no host view")
        n = self.nbytes // np.dtype(dtype).itemsize
        c = np.ctypeslib.as_ctypes_type(np.dtype(dtype))
        return np.ctypeslib.as_array(ctypes.cast(self.ptr, ctypes.POINTER(c)), shape=(n,))

    def zero(self) -> None:
        if self.memory.startswith("gpu"):
            self._keep.fill(0)
        else:
            ctypes.memset(self.ptr, 0, self.nbytes)

    def free(self) -> None:
        if self.memory in ("pinned", "managed"):
            self._free(self.ptr)
        self._keep = None


# cudaDeviceAttr values (driver_types.h)
ATTR_HOST_NATIVE_ATOMICS = 86
ATTR_PAGEABLE_MEMORY_ACCESS = 88
ATTR_CONCURRENT_MANAGED_ACCESS = 89


def device_flag(attr: int, gpu: int = 0) -> bool:
    import cupy as cp

    return bool(cp.cuda.runtime.deviceGetAttribute(attr, gpu))


def unrunnable(p: Placement) -> str | None:
    """Why a placement cannot run on this machine's GPUs (a CPU touching managed memory
    while a kernel runs needs concurrent managed access), or None."""
    if p.memory == "managed" and p.cpu_roles:
        for g in p.gpus:
            if not device_flag(ATTR_CONCURRENT_MANAGED_ACCESS, g):
                return f"not run: GPU {g} has no concurrent managed access"
    return None


def _cpu_helper(test: Litmus) -> Any:
    lib = ctypes.CDLL(str(build_shared(link_gen.c_source(test))))
    lib.co_run.argtypes = [ctypes.POINTER(_Args)]
    lib.co_run.restype = ctypes.c_int
    return lib


def entries(p: Placement, instances: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per agent (``cpu``, ``gpuN``): the (instance, role) pairs it runs."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    for i in range(instances):
        for t, a in enumerate(p.agents):
            inst, role = out.setdefault(a, ([], []))
            inst.append(i)
            role.append(t)
    return {a: (np.array(i, dtype=np.int32), np.array(r, dtype=np.int32))
            for a, (i, r) in out.items()}


def run_link(test: Litmus, p: Placement, options: LinkOptions,
             progress: Callable[[float, float], None] | None = None) -> LinkResult:
    nt, nl = len(test.threads), len(test.locations)
    if len(p.agents) != nt:
        raise ValueError(f"{p.label()}: {len(p.agents)} agents for {nt} roles")
    c = codec(test)
    n = options.instances
    work = entries(p, n)
    gpus = p.gpus
    flags_mem = "pinned" if gpus else "host"
    mem = _Buffer(n * nl * options.spread * LOC_STRIDE * 4, p.memory)
    flags = _Buffer(n * nt * LINE_BYTES, flags_mem)
    collector = p.agents[0]
    hist = _Buffer(n * c.size * 8, collector if collector != "cpu" else flags_mem)
    timeouts = np.zeros(2, dtype=np.uint32)
    lib = _cpu_helper(test) if "cpu" in work else None
    kernels: dict[int, Any] = {}
    dev_work: dict[int, tuple[Any, Any, Any]] = {}
    if gpus:
        import cupy as cp

        from coherence.hw.harness import cuda_module

        src = link_gen.cuda_source(test)
        for g in gpus:
            with cp.cuda.Device(g):
                kernels[g] = cuda_module(src).get_function("link_roles")
                inst, role = work[f"gpu{g}"]
                dev_work[g] = (cp.asarray(inst), cp.asarray(role), cp.zeros(2, cp.uint32))
    first_cpu = -1
    if lib is not None and options.pin_cpus and (os.cpu_count() or 1) > len(work["cpu"][0]) + 1:
        first_cpu = 1  # leave CPU 0 to the launching thread
    iters = options.first_iterations
    it0 = launches = iterations = n_timeouts = 0
    timeout_ns = int(options.timeout_ms * 1e6)
    start = time.perf_counter()
    try:
        while True:
            flags.zero()
            seed = (options.seed * 2654435761 + launches) & 0xFFFFFFFF
            t0 = time.perf_counter()
            if gpus:
                import cupy as cp

                for g in gpus:
                    with cp.cuda.Device(g):
                        inst_d, role_d, tmo = dev_work[g]
                        tmo.fill(0)
                        kernels[g]((len(inst_d),), (32,),
                                   (np.uint64(mem.ptr), np.uint64(flags.ptr),
                                    np.uint64(hist.ptr), inst_d, role_d, np.int32(iters),
                                    np.uint32(seed), np.uint32(it0 & 0xFFFFFFFF),
                                    np.uint32(options.spread), np.uint64(timeout_ns), tmo))
            if lib is not None:
                inst_h, role_h = work["cpu"]
                timeouts[:] = 0
                args = _Args(mem.ptr, flags.ptr, hist.ptr, inst_h.ctypes.data,
                             role_h.ctypes.data, len(inst_h), iters, seed, it0 & 0xFFFFFFFF,
                             options.spread, first_cpu, timeout_ns, timeouts.ctypes.data)
                rc = lib.co_run(ctypes.byref(args))
                if rc != 0:
                    raise RuntimeError(f"the CPU helper failed to start its threads ({rc})")
                n_timeouts += int(timeouts[0])
            if gpus:
                import cupy as cp

                for g in gpus:
                    with cp.cuda.Device(g):
                        cp.cuda.Device(g).synchronize()
                        n_timeouts += int(dev_work[g][2].get()[0])
            ms = (time.perf_counter() - t0) * 1000
            launches += 1
            iterations += iters
            it0 += iters
            elapsed = time.perf_counter() - start
            if progress is not None:
                progress(min(elapsed, options.seconds), options.seconds)
            if elapsed >= options.seconds or n_timeouts:
                break
            iters = next_iterations(iters, ms, options.launch_seconds,
                                    options.seconds - elapsed)
        seconds = time.perf_counter() - start
        if hist.memory.startswith("gpu"):
            counts = hist._keep.view(np.uint64)[: n * c.size].reshape(n, c.size).sum(
                axis=0).get()
        else:
            counts = hist.host_view(np.uint64).reshape(-1)[: n * c.size].reshape(
                n, c.size).sum(axis=0)
        counts = [int(x) for x in counts]
    finally:
        for b in (mem, flags, hist):
            b.free()
    histo, overflow = c.histogram(counts)
    return LinkResult(test.name, test.variant, list(p.agents), p.memory, sum(counts), histo, {},
                      overflow, n_timeouts, launches, iterations, round(seconds, 3))
