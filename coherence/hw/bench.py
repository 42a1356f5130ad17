"""``coherence hw bench``: the seed's figures, measured (CuPy; imported only here and in the
harness).

* copy bandwidth: device memory (device-to-device copy), host link (pinned host to device
  and back), peer-to-peer (every ordered pair of GPUs with peer access);
* flags: the one-way time for a flag between two GPUs (peer memory) and between a GPU and a
  host thread (mapped pinned memory), by ping-pong; on one GPU the peer figures say
  "not run: 1 GPU";
* latency: dependent pointer chasing (one thread, each load's address from the previous
  load, a random cycle of 128-byte lines) in an L1-sized, an L2-sized and a DRAM-sized
  array, and the one-way time for a flag written by one SM to be seen by another (ping-pong
  between two blocks, round trip / 2).

Times are CUDA events around whole launches long enough (tens of ms) for launch overhead
to vanish; each figure is the median of ``repeats`` launches.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable
from typing import Any

from coherence.hw.placement import peer_pairs

# The seed (seed/000_a90ad56f49733ada.txt, sections 1, 2.1 and 3.2) claims, for NVLink:
SEED_CLAIMS = {
    "peer_bandwidth_GBps": (900.0, "NVLink: 900 GB/s GPU-to-GPU"),
    "host_link_GBps": (256.0, "PCIe 5.0: 256 GB/s"),
    "peer_latency_ns": (50.0, "NVLink: 50 ns latency (the table says 50 us)"),
    "pcie_latency_ns": (250.0, "PCIe: 250 ns latency (the table says 250 us)"),
}

_CHASE = r"""
extern "C" __global__ void chase_ca(const unsigned int* next, int steps, unsigned int* out) {
  unsigned int j = 0;
  for (int i = 0; i < steps; ++i) asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(j)
                                               : "l"(next + j) : "memory");
  out[0] = j;
}
extern "C" __global__ void chase_cg(const unsigned int* next, int steps, unsigned int* out) {
  unsigned int j = 0;
  for (int i = 0; i < steps; ++i) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(j)
                                               : "l"(next + j) : "memory");
  out[0] = j;
}
extern "C" __global__ void pingpong(unsigned int* flags, int iters, unsigned int* smids) {
  // block 0 writes ping = i and waits for pong == i; block 1 answers
  unsigned int smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x != 0) return;
  smids[blockIdx.x] = smid;
  unsigned int* ping = flags;
  unsigned int* pong = flags + 32;
  for (unsigned int i = 1; i <= (unsigned int)iters; ++i) {
    unsigned int v;
    if (blockIdx.x == 0) {
      asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(ping), "r"(i) : "memory");
      do { asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(pong)
                        : "memory"); } while (v != i);
    } else {
      do { asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ping)
                        : "memory"); } while (v != i);
      asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(pong), "r"(i) : "memory");
    }
  }
}
"""


def _enable_peer(i: int, j: int) -> None:
    import cupy as cp

    with cp.cuda.Device(i), contextlib.suppress(cp.cuda.runtime.CUDARuntimeError):
        cp.cuda.runtime.deviceEnablePeerAccess(j)  # fails if already on


def _peer(pairs: list[tuple[int, int]], repeats: int, scale: int) -> dict[str, Any]:
    """cudaMemcpyPeer bandwidth and a one-way flag time (ping on GPU i, pong on GPU j, flags
    in j's memory) for every ordered pair of GPUs with peer access."""
    import cupy as cp
    import numpy as np

    from coherence.hw.harness import cuda_module
    from coherence.hw.link_gen import ping_cuda_source

    copies: dict[str, float] = {}
    flags: dict[str, float] = {}
    p = (256 << 20) // scale
    iters = 20_000 // scale
    src = ping_cuda_source()
    for i, j in pairs:
        _enable_peer(i, j)
        _enable_peer(j, i)
        with cp.cuda.Device(i):
            a = cp.ones(p, dtype=cp.uint8)
        with cp.cuda.Device(j):
            b = cp.empty(p, dtype=cp.uint8)
            box = cp.zeros(64, dtype=cp.uint32)  # ping at 0, pong at 32: two lines of j
            pong = cuda_module(src).get_function("link_pong")
            failed_j = cp.zeros(1, dtype=cp.uint32)
        with cp.cuda.Device(i):
            def peer_copy(a: Any = a, b: Any = b, i: int = i, j: int = j) -> None:
                cp.cuda.runtime.memcpyPeer(b.data.ptr, j, a.data.ptr, i, p)
            copies[f"{i}->{j}"] = round(p / _time(peer_copy, repeats) / 1e6, 1)
            ping = cuda_module(src).get_function("link_ping")
            failed_i = cp.zeros(1, dtype=cp.uint32)
            t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        ptr = box.data.ptr
        with cp.cuda.Device(j):
            pong((1,), (1,), (np.uint64(ptr), np.uint64(ptr + 128), np.int32(iters),
                              np.uint64(5 * 10**9), failed_j))
        with cp.cuda.Device(i):
            t0.record()
            ping((1,), (1,), (np.uint64(ptr), np.uint64(ptr + 128), np.int32(iters),
                              np.uint64(5 * 10**9), failed_i))
            t1.record()
            t1.synchronize()
        with cp.cuda.Device(j):
            cp.cuda.Device(j).synchronize()
        if int(failed_i.get()[0]) or int(failed_j.get()[0]):
            flags[f"{i}->{j}"] = float("nan")
        else:
            flags[f"{i}->{j}"] = round(cp.cuda.get_elapsed_time(t0, t1) * 1e6 / (2 * iters), 1)
        del a, b
    return {"peer_copy_GBps": {"value": copies, "unit": "GB/s",
                               "how": f"cudaMemcpyPeer of {p >> 20} MiB per ordered pair"},
            "peer_flag_one_way_ns": {"value": flags, "unit": "ns",
                                     "how": f"ping-pong of release/acquire.sys flags in the "
                                            f"second GPU's memory, {iters} round trips, "
                                            "round trip / 2"}}


def _host_flag(iters: int) -> dict[str, Any]:
    """One-way flag time across the host link: a GPU thread and a host thread (the C helper)
    ping-pong through two lines of mapped pinned host memory."""
    import ctypes

    import cupy as cp
    import numpy as np

    from coherence.hw.cbuild import build_shared
    from coherence.hw.harness import cuda_module
    from coherence.hw.link_gen import ping_c_source, ping_cuda_source

    lib = ctypes.CDLL(str(build_shared(ping_c_source())))
    lib.co_pingpong.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    lib.co_pingpong.restype = ctypes.c_int
    ptr = cp.cuda.runtime.hostAlloc(256, 3)  # portable | mapped
    try:
        ctypes.memset(ptr, 0, 256)
        ping = cuda_module(ping_cuda_source()).get_function("link_ping")
        failed = cp.zeros(1, dtype=cp.uint32)
        t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        t0.record()
        ping((1,), (1,), (np.uint64(ptr), np.uint64(ptr + 128), np.int32(iters),
                          np.uint64(5 * 10**9), failed))
        t1.record()
        rc = lib.co_pingpong(ptr, ptr + 128, iters, 5 * 10**9)
        t1.synchronize()
        if rc != 0 or int(failed.get()[0]):
            return {"value": None, "unit": "ns", "how": "timed out"}
        ms = cp.cuda.get_elapsed_time(t0, t1)
    finally:
        cp.cuda.runtime.freeHost(ptr)
    return {"value": round(ms * 1e6 / (2 * iters), 1), "unit": "ns",
            "how": f"ping-pong of release/acquire.sys flags between a GPU thread and a host "
                   f"thread in mapped pinned host memory, {iters} round trips, round trip / 2"}


def _time(fn: Any, repeats: int) -> float:
    """Median milliseconds of ``fn()`` between two CUDA events."""
    import cupy as cp

    fn()  # warm up
    times = []
    for _ in range(repeats):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(times)


def _cycle(n_lines: int, stride: int) -> Any:
    import cupy as cp

    perm = cp.random.permutation(n_lines).astype(cp.uint32) * stride
    nxt = cp.zeros(n_lines * stride, dtype=cp.uint32)
    nxt[perm] = cp.roll(perm, -1)
    return nxt


MEASUREMENTS = 8  # device copy, host link, peers, 3 latencies, flag latency, host-link flag


def bench(repeats: int = 5, quick: bool = False,
          progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """The figures; ``progress(done, MEASUREMENTS, what)`` as each measurement starts."""
    import cupy as cp

    def say(done: int, what: str) -> None:
        if progress is not None:
            progress(done, MEASUREMENTS, what)

    out: dict[str, Any] = {"figures": {}, "notes": []}
    fig = out["figures"]
    scale = 8 if quick else 1
    say(0, "device-to-device copy")
    # ---- device memory copy
    n = (1 << 30) // scale
    src = cp.ones(n // 4, dtype=cp.uint32)
    dst = cp.empty_like(src)
    ms = _time(lambda src=src, dst=dst: cp.copyto(dst, src), repeats)
    fig["device_copy_GBps"] = {"value": round(2 * n / ms / 1e6, 1), "unit": "GB/s",
                               "how": f"device-to-device copy of {n >> 20} MiB, bytes read + "
                                      "written / time"}
    del src, dst
    say(1, "host link copies")
    # ---- host link
    h = (256 << 20) // scale
    host = cp.cuda.alloc_pinned_memory(h)
    dev = cp.empty(h, dtype=cp.uint8)
    ms_h2d = _time(lambda dev=dev: cp.cuda.runtime.memcpy(dev.data.ptr, host.ptr, h, 1), repeats)
    ms_d2h = _time(lambda dev=dev: cp.cuda.runtime.memcpy(host.ptr, dev.data.ptr, h, 2), repeats)
    fig["host_to_device_GBps"] = {"value": round(h / ms_h2d / 1e6, 1), "unit": "GB/s",
                                  "how": f"pinned host to device, {h >> 20} MiB"}
    fig["device_to_host_GBps"] = {"value": round(h / ms_d2h / 1e6, 1), "unit": "GB/s",
                                  "how": f"device to pinned host, {h >> 20} MiB"}
    del dev
    say(2, "peer-to-peer copies and flags")
    # ---- peer to peer: copies and one-way flag latency between GPUs
    ngpu = cp.cuda.runtime.getDeviceCount()
    peer = [[i == j or bool(cp.cuda.runtime.deviceCanAccessPeer(i, j)) for j in range(ngpu)]
            for i in range(ngpu)]
    pairs, why = peer_pairs(peer)
    if why:
        for key, unit in (("peer_copy_GBps", "GB/s"), ("peer_flag_one_way_ns", "ns")):
            fig[key] = {"value": None, "unit": unit, "how": why}
    else:
        fig.update(_peer(pairs, repeats, scale))
    # ---- latency by pointer chasing
    mod = cp.RawModule(code=_CHASE)
    res = cp.zeros(64, dtype=cp.uint32)
    for k, (key, lines, kernel, steps) in enumerate((
            ("l1_hit_latency_ns", 64, "chase_ca", 1 << 20),
            ("l2_hit_latency_ns", (8 << 20) // 128, "chase_cg", 1 << 20),
            ("dram_latency_ns", (2 << 30) // 128 // scale, "chase_cg", 1 << 18))):
        say(3 + k, key.removesuffix("_ns").replace("_", " "))
        steps //= scale
        nxt = _cycle(lines, 32)
        f = mod.get_function(kernel)
        ms = _time(lambda f=f, nxt=nxt, steps=steps: f((1,), (1,), (nxt, cp.int32(steps), res)),
                   repeats)
        fig[key] = {"value": round(ms * 1e6 / steps, 1), "unit": "ns",
                    "how": f"{steps} dependent loads ({kernel[-2:]}) over {lines} lines of 128 B "
                           f"({lines * 128 >> 10} KiB)"}
        del nxt
    say(6, "flag latency between SMs")
    # ---- flag one-way latency between SMs
    flags = cp.zeros(64, dtype=cp.uint32)
    smids = cp.zeros(2, dtype=cp.uint32)
    iters = 100_000 // scale
    f = mod.get_function("pingpong")

    def ping() -> None:
        flags.fill(0)
        f((2,), (32,), (flags, cp.int32(iters), smids))

    ms = _time(ping, repeats)
    s = smids.get()
    fig["flag_one_way_ns"] = {"value": round(ms * 1e6 / (2 * iters), 1), "unit": "ns",
                              "how": f"ping-pong of relaxed.gpu flags between SM {s[0]} and SM "
                                     f"{s[1]}, {iters} round trips, round trip / 2"}
    if s[0] == s[1]:
        out["notes"].append("flag latency: both blocks ran on one SM")
    say(7, "flag latency across the host link")
    fig["host_flag_one_way_ns"] = _host_flag(iters)
    out["seed_claims"] = {k: {"claimed": v[0], "text": v[1]} for k, v in SEED_CLAIMS.items()}
    return out
