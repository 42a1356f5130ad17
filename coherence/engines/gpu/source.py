"""The GPU engine's one translation unit: the target's macros, the generated model (the same
``coherence.engines.cgen`` code that the compiled engine runs on the CPU) and the fixed
kernel runtime (``runtime/co_gpu.cu``).

Two targets share every line after the prelude: ``nvrtc`` (CUDA C++ for ``cupy.RawModule``:
``__device__`` functions, CUDA atomics) and ``host`` (C for the system's C compiler, GCC
atomics, and a serial launcher that runs a kernel's threads one after another), so the
successor, hashing and insertion logic is compiled and tested on machines without a GPU.
"""

from __future__ import annotations

from importlib import resources

from coherence.engines.cgen.codegen import GeneratedModel

# The search's context: one array of uint64 in device memory, shared by host and kernels.
CTX_FIELDS = ("COUNT", "RULES", "OVERFLOW", "HARD", "TABLE", "LOG2", "SEGS", "FIRST",
              "SYMMETRY", "DEADLOCK")
CTX = {name: i for i, name in enumerate(CTX_FIELDS)}
SEG_LOG = 20  # states per segment of the state store: 2^20
KERNELS = ("co_k_expand", "co_k_initial", "co_k_rehash")  # indices: co_host_launch's

NVRTC_PRELUDE = r"""
typedef unsigned long long uint64_t;
typedef long long int64_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned short uint16_t;
typedef short int16_t;
typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned long long uintptr_t;
#define CO_FN static __device__ inline
#define CO_CONST static __device__ const
/* the successor sink (canonicalize, insert, check) is called from every action: one copy */
#define CO_SINK_FN static __device__ __noinline__
/* the generated actions, deliveries and invariants: compiled once each (inlining them all
 * into co_expand makes NVRTC take minutes on the larger models) */
#define CO_BIG static __device__ __noinline__
#define CO_POPCOUNT(x) __popc(x)
#define CO_KERNEL extern "C" __global__
#define CO_TID() ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x)
CO_FN uint32_t co_load32(uint32_t *p) { return *(volatile uint32_t *)p; }
CO_FN uint32_t co_load32cg(const uint32_t *p) { return __ldcg(p); }  /* L2, not L1 */
CO_FN uint64_t co_load64(uint64_t *p) { return *(volatile uint64_t *)p; }
CO_FN void co_store64(uint64_t *p, uint64_t v) { *(volatile uint64_t *)p = v; }
CO_FN uint32_t co_cas32(uint32_t *p, uint32_t e, uint32_t v) { return atomicCAS(p, e, v); }
CO_FN uint32_t co_xchg32(uint32_t *p, uint32_t v) { return atomicExch(p, v); }
CO_FN uint64_t co_add64(uint64_t *p, uint64_t v) { return atomicAdd(p, v); }
CO_FN void co_min64(uint64_t *p, uint64_t v) { atomicMin(p, v); }
CO_FN void co_fence(void) { __threadfence(); }
/* one atomic add per warp for the rules counter that every thread adds to */
CO_FN void co_add_rules(uint64_t *p, uint64_t v) {
    const unsigned m = __activemask();
    const unsigned total = __reduce_add_sync(m, (unsigned)v);
    if ((threadIdx.x & 31) == (unsigned)(__ffs(m) - 1)) atomicAdd(p, (uint64_t)total);
}
"""

HOST_PRELUDE = r"""
#include <stdint.h>
#define CO_FN static inline
#define CO_CONST static const
#define CO_SINK_FN static inline
#define CO_POPCOUNT(x) __builtin_popcount(x)
#define CO_KERNEL static
static uint64_t co_host_tid;
#define CO_TID() co_host_tid
CO_FN uint32_t co_load32(uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
CO_FN uint32_t co_load32cg(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
CO_FN uint64_t co_load64(uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
CO_FN void co_store64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
CO_FN uint32_t co_cas32(uint32_t *p, uint32_t e, uint32_t v) {
    __atomic_compare_exchange_n(p, &e, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return e;
}
CO_FN uint32_t co_xchg32(uint32_t *p, uint32_t v) {
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
CO_FN uint64_t co_add64(uint64_t *p, uint64_t v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
CO_FN void co_min64(uint64_t *p, uint64_t v) {
    uint64_t cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {
    }
}
CO_FN void co_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
CO_FN void co_add_rules(uint64_t *p, uint64_t v) { co_add64(p, v); }
"""

# The host target's entry point: a kernel's threads 0 .. n-1, one after another.
HOST_LAUNCHER = r"""
int co_host_launch(int kernel, uint64_t n, uint64_t *ctx, uint64_t a, uint64_t b, uint64_t c) {
    for (co_host_tid = 0; co_host_tid < n; co_host_tid++) {
        switch (kernel) {
        case 0: co_k_expand(ctx, a, b, c); break;
        case 1: co_k_initial(ctx, a, b, c); break;
        case 2: co_k_rehash(ctx, a, b, c); break;
        default: return -1;
        }
    }
    return 0;
}
int co_host_bytes(void) { return CO_BYTES; }
"""

SINK_DECLS = r"""
typedef struct co_sink co_sink;
CO_SINK_FN void co_emit_state(co_sink *sink, const void *succ);
CO_SINK_FN void co_emit_failure(co_sink *sink, int key);
"""


def runtime_source() -> str:
    return (resources.files("coherence.engines.gpu") / "runtime" / "co_gpu.cu").read_text()


def kernel_source(generated: GeneratedModel, initial_states: int, target: str) -> str:
    """The whole program for ``target`` (``nvrtc`` or ``host``); ``initial_states`` sizes the
    initial-state kernel's buffer."""
    if target not in ("nvrtc", "host"):
        raise ValueError(f"unknown target {target!r}")
    defines = [f"#define CTX_{name} {i}" for name, i in CTX.items()]
    defines += [f"#define CO_SEG_LOG {SEG_LOG}", f"#define CO_INIT_MAX {max(1, initial_states)}"]
    prelude = NVRTC_PRELUDE if target == "nvrtc" else HOST_PRELUDE
    parts = [prelude, *defines, SINK_DECLS, generated.source, runtime_source()]
    if target == "host":
        parts.append(HOST_LAUNCHER)
    return "\n".join(parts)
