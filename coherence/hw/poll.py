"""The poll experiment on a real GPU (issue 16): can a plain-load poll miss another SM's store?

A reader thread on one SM polls a flag with one kind of load until it reads 1 or a poll budget
runs out; a writer thread on another SM stores 1 once the reader has started. The three load
kinds are the PTX ones the litmus harness uses (``coherence.hw.cuda_gen``): ``plain``
(``ld.global``, weak: may hit the SM's non-coherent L1), ``volatile`` (``ld.volatile``) and
``relaxed`` (``ld.relaxed.gpu``, which must observe the store eventually). A poll that runs out
of budget while another SM's store is long done is the hardware's answer to the model's
"can the poll spin forever" (``coherence.litmus.poll``): an L1 that is never invalidated
behaves like write-through without invalidation, the literal broadcast scheme's stale copy.

The reader first loads the flag once with the same load kind (so a cached copy exists), then
raises a ready flag; the writer waits for it (bounded), stores with ``st.relaxed.gpu``, and
both record their ``%smid``, so pairs that shared an SM are counted apart. Pure text
generation lives here beside the runner; only ``run_poll`` needs CuPy and a GPU.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

LOADS = {
    "plain": "ld.global.u32",
    "volatile": "ld.volatile.global.u32",
    "relaxed": "ld.relaxed.gpu.global.u32",
}
STRIDE = 32  # uints: one 128-byte line per flag
READY_SPINS = 1 << 22


def kernel_source(kind: str) -> str:
    """One kernel: blocks [0, pairs) are readers, [pairs, 2 * pairs) writers, lane 0 each
    (``%%`` is a literal ``%`` in inline PTX)."""
    ld = LOADS[kind]
    return f"""
extern "C" __global__ void poll_test(unsigned int* flags, unsigned int* ready,
                                     unsigned int* iters, unsigned int* smids,
                                     unsigned int pairs, unsigned int budget,
                                     unsigned int delay) {{
  if (threadIdx.x != 0) return;
  unsigned int smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  unsigned int b = blockIdx.x;
  if (b < pairs) {{                       // reader
    unsigned int* flag = flags + (size_t)b * {STRIDE};
    unsigned int v;
    asm volatile("{ld} %0, [%1];" : "=r"(v) : "l"(flag) : "memory");   // warm the cache
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(ready + (size_t)b * {STRIDE}),
                 "r"(1u) : "memory");
    unsigned int n = 0;
    while (n < budget) {{
      asm volatile("{ld} %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
      if (v == 1u) break;
      n++;
    }}
    iters[b] = n;
    smids[b] = smid;
  }} else if (b < 2 * pairs) {{           // writer
    // reader i's writer is half the grid away, so that the two sit on different SMs
    unsigned int i = (b - pairs + pairs / 2) % pairs;
    unsigned int r = 0;
    for (unsigned int k = 0; k < {READY_SPINS}u && r == 0u; k++)
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(r)
                   : "l"(ready + (size_t)i * {STRIDE}) : "memory");
    for (volatile unsigned int k = 0; k < delay; k++) {{ }}
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(flags + (size_t)i * {STRIDE}),
                 "r"(1u) : "memory");
    smids[pairs + i] = smid;
  }}
}}
"""


@attrs.define
class PollResult:
    kind: str
    ptx: str
    pairs: int
    launches: int
    budget: int
    seen: int  # polls that read 1 within the budget
    spun_out: int  # polls that ran out of budget
    spun_out_distinct_sm: int  # ... of pairs whose reader and writer were on different SMs
    distinct_sm_pairs: int
    median_iterations: float | None  # of the polls that saw the store
    max_iterations: int | None
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def run_poll(kind: str, launches: int = 10, budget: int = 1 << 20, delay: int = 1000,
             pairs: int | None = None) -> PollResult:
    import cupy as cp
    import numpy as np

    kernel = cp.RawModule(code=kernel_source(kind), options=("-std=c++17",)).get_function(
        "poll_test")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    n = pairs or sms
    seen = spun = spun_distinct = distinct = 0
    hits: list[int] = []
    started = time.perf_counter()
    for _ in range(launches):
        flags = cp.zeros(n * STRIDE, dtype=cp.uint32)
        ready = cp.zeros(n * STRIDE, dtype=cp.uint32)
        iters = cp.zeros(n, dtype=cp.uint32)
        smids = cp.zeros(2 * n, dtype=cp.uint32)
        kernel((2 * n,), (32,), (flags, ready, iters, smids, np.uint32(n), np.uint32(budget),
                                 np.uint32(delay)))
        cp.cuda.Device().synchronize()
        it, sm = iters.get(), smids.get()
        for i in range(n):
            apart = bool(sm[i] != sm[n + i])
            distinct += apart
            if it[i] >= budget:
                spun += 1
                spun_distinct += apart
            else:
                seen += 1
                hits.append(int(it[i]))
    hits.sort()
    return PollResult(kind, LOADS[kind], n, launches, budget, seen, spun, spun_distinct,
                      distinct, float(hits[len(hits) // 2]) if hits else None,
                      hits[-1] if hits else None, time.perf_counter() - started)
