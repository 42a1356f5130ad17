"""Code for litmus roles on agents across a link: CPU threads (a C helper) and GPU threads
(CUDA), sharing one protocol so that any role can run on any agent.

The agents of an instance meet through *flag lines* in memory every agent reaches (mapped
pinned host memory): one 128-byte line per role holding an epoch counter (word 0) and the
role's registers (words 1-4). No read-modify-write crosses the link (PCIe atomics to host
memory are not atomic with respect to the CPU on every machine): a barrier is each role
storing its epoch with release semantics and waiting, with acquire loads, until every
partner's epoch has caught up, or a timeout. Per iteration:

1. every agent computes the locations (the same hash as the GPU harness, ``slots.SLOT_C``);
   role 0 resets them to their initial values;
2. barrier; (for a ``cached`` test: the warm loads, then another barrier);
3. the role's operations;
4. the role publishes its registers and arrives at the next barrier;
5. role 0 (the collector) reads every register and the final memory and adds 1 to the
   outcome's bucket of its instance's histogram (``coherence.hw.outcomes``).

The CPU side maps each PTX annotation to C11 (``stdatomic.h``): weak and volatile accesses are
``volatile`` loads and stores, relaxed ones ``memory_order_relaxed`` atomics, acquire and
release ``memory_order_acquire``/``memory_order_release``; a gpu- or sys-scope fence is
``atomic_thread_fence`` (``sc``: ``memory_order_seq_cst``, ``acq_rel``: ``memory_order_acq_rel``)
and a cta-scope fence only a compiler fence (``atomic_signal_fence``): a CPU thread is in no
CTA. On x86-64 these compile to plain ``mov`` except the seq_cst fence (``mfence``).
"""

from __future__ import annotations

from coherence.hw.cuda_gen import (
    MAX_LOCS,
    check_fits,
    common_device_code,
    outcome_index_code,
    reg_positions,
    reset_lines,
    role_cases,
    roles_and_probes,
    warm_loads,
)
from coherence.hw.outcomes import codec
from coherence.hw.slots import LOC_STRIDE, SLOT_C
from coherence.litmus.program import Litmus, Op

LINE = 32  # words per flag line (128 bytes)


def _c_order(order: str | None) -> str | None:
    """The C11 memory order of an access; None for a volatile (plain) access."""
    if order in (None, "weak", "volatile"):
        return None
    return {"relaxed": "memory_order_relaxed", "acquire": "memory_order_acquire",
            "release": "memory_order_release"}[order]


def c_of(op: Op, loc: str = "p", val: str = "v", reg: str = "r") -> str:
    """The C statement of one operation on a CPU agent."""
    if op.kind == "fence":
        if (op.scope or "gpu") == "cta":
            return "atomic_signal_fence(memory_order_seq_cst);"
        fence = "memory_order_acq_rel" if op.order == "acq_rel" else "memory_order_seq_cst"
        return f"atomic_thread_fence({fence});"
    mo = _c_order(op.order)
    if op.kind == "load":
        if mo is None:
            return f"{reg} = *(volatile uint32_t*){loc};"
        return f"{reg} = atomic_load_explicit((_Atomic uint32_t*){loc}, {mo});"
    if mo is None:
        return f"*(volatile uint32_t*){loc} = {val};"
    return f"atomic_store_explicit((_Atomic uint32_t*){loc}, {val}, {mo});"


def c_role(test: Litmus, tid: int) -> str:
    regs = [op.reg for op in test.threads[tid] if op.kind == "load"]
    body = []
    for op in test.threads[tid]:
        if op.kind == "fence":
            body.append("  " + c_of(op))
            continue
        loc = f"l[{test.locations.index(op.loc or '')}]"
        if op.kind == "load":
            body.append("  " + c_of(op, loc=loc, reg=f"out[{regs.index(op.reg)}]"))
        else:
            val = (f"{op.value}u" if isinstance(op.value, int)
                   else f"out[{regs.index(op.value)}]")
            body.append("  " + c_of(op, loc=loc, val=val))
    return (f"static void role{tid}(uint32_t* l[{MAX_LOCS}], uint32_t out[4]) {{\n"
            + "\n".join(body) + "\n}")


def _cached_roles(test: Litmus) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for t, loc in test.cached:
        out.setdefault(t, []).append(test.locations.index(loc))
    return out


def c_source(test: Litmus) -> str:
    """The C helper: ``co_run`` runs the CPU agents' roles, one thread each; ``co_pingpong``
    answers a GPU's flags (the host link's one-way latency)."""
    check_fits(test)
    nt, nl = len(test.threads), len(test.locations)
    c = codec(test)
    roles = "\n".join(c_role(test, t) for t in range(nt))
    cases = "\n".join(f"      case {t}: role{t}(l, out); break;" for t in range(nt))
    reset = "\n".join(f"      atomic_store_explicit((_Atomic uint32_t*)l[{k}], "
                      f"{test.initial(loc)}u, memory_order_relaxed);"
                      for k, loc in enumerate(test.locations))
    warm = "\n".join(f"      if (role == {t}) {{ " + " ".join(
        f"sink += *(volatile uint32_t*)l[{k}];" for k in ks) + " }"
        for t, ks in _cached_roles(test).items())
    cached = (f"{warm}\n      if (!co_barrier(a, inst, ++epoch)) break;" if test.cached
              else "")
    index = outcome_index_code(test, regs_of="q{t}[{k}]", mem_of="co_final(l[{k}])",
                               indent="      ")
    with_regs = sorted({t for t, _ in reg_positions(test)})
    loads = "\n".join(
        "      uint32_t* q0 = out;" if t == 0 else
        f"      uint32_t q{t}[4] = {{co_reg(a, inst, {t}, 0), co_reg(a, inst, {t}, 1), "
        f"co_reg(a, inst, {t}, 2), co_reg(a, inst, {t}, 3)}};" for t in with_regs)
    return f"""// litmus {test.name}, variant {test.variant}: CPU agents, generated by coherence.hw
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#define CO_FN static inline
{SLOT_C}
#define NT {nt}
#define NL {nl}
#define HB {c.size}
#define LINE {LINE}

typedef struct {{
  uint32_t* mem;            // the locations (host view of pinned, managed or host memory)
  uint32_t* flags;          // one line per (instance, role): epoch, then 4 registers
  uint64_t* hist;           // HB buckets per instance (used when role 0 is a CPU agent)
  const int32_t* inst;      // per CPU agent: its instance
  const int32_t* role;      // per CPU agent: its role
  int32_t agents;
  int32_t iters;
  uint32_t seed;
  uint32_t it0;
  uint32_t spread;
  int32_t first_cpu;        // pin agent k to CPU first_cpu + k (negative: no pinning)
  uint64_t timeout_ns;
  uint32_t* timeouts;       // out: agents whose barrier timed out
}} co_args;

static uint64_t co_now(void) {{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}}

static inline void co_relax(uint32_t n) {{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
  if ((n & 4095u) == 0u) sched_yield();  // more agents than cores must still progress
}}

static inline uint32_t* co_line(const co_args* a, int inst, int role) {{
  return a->flags + ((uint64_t)inst * NT + (uint64_t)role) * LINE;
}}

static inline uint32_t co_reg(const co_args* a, int inst, int role, int k) {{
  return *(volatile uint32_t*)(co_line(a, inst, role) + 1 + k);
}}

static inline uint32_t co_final(uint32_t* p) {{
  return atomic_load_explicit((_Atomic uint32_t*)p, memory_order_relaxed);
}}

// publish `epoch` and wait until every role of the instance has
static int co_barrier_role(const co_args* a, int inst, int role, uint32_t epoch) {{
  atomic_store_explicit((_Atomic uint32_t*)co_line(a, inst, role), epoch, memory_order_release);
  uint64_t t0 = co_now();
  for (int t = 0; t < NT; ++t) {{
    _Atomic uint32_t* f = (_Atomic uint32_t*)co_line(a, inst, t);
    for (uint32_t n = 1; atomic_load_explicit(f, memory_order_acquire) < epoch; ++n) {{
      co_relax(n);
      if ((n & 1023u) == 0u && co_now() - t0 > a->timeout_ns) return 0;
    }}
  }}
  return 1;
}}
#define co_barrier(a, inst, epoch) co_barrier_role(a, inst, role, epoch)

{roles}

typedef struct {{ const co_args* a; int k; }} co_job;

static void* co_agent(void* p) {{
  const co_job* job = (const co_job*)p;
  const co_args* a = job->a;
  int inst = a->inst[job->k], role = a->role[job->k];
  if (a->first_cpu >= 0) {{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(a->first_cpu + job->k, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }}
  uint32_t epoch = 0, sink = 0;
  int ok = 1;
  for (int it = 0; it < a->iters && ok; ++it) {{
    uint32_t* l[3];
    for (uint32_t k = 0; k < 3; ++k)
      l[k] = a->mem + (uint64_t)co_slot(a->seed, (uint32_t)inst, a->it0 + (uint32_t)it,
                                        k < NL ? k : 0u, a->spread, NL) * {LOC_STRIDE}u;
    if (role == 0) {{
{reset}
    }}
    if (!co_barrier(a, inst, ++epoch)) {{ ok = 0; break; }}
{cached.replace("break;", "{ ok = 0; break; }")}
    uint32_t out[4] = {{0u, 0u, 0u, 0u}};
    switch (role) {{
{cases}
    }}
    uint32_t* mine = co_line(a, inst, role);
    for (int k = 0; k < 4; ++k) *(volatile uint32_t*)(mine + 1 + k) = out[k];
    if (!co_barrier(a, inst, ++epoch)) {{ ok = 0; break; }}
    if (role == 0) {{
{loads}
{index}
      a->hist[(uint64_t)inst * HB + b] += 1u;
    }}
  }}
  if (!ok) __atomic_add_fetch(a->timeouts, 1u, __ATOMIC_RELAXED);
  if (sink == 0xfeedf00du) a->timeouts[1] = sink;
  return 0;
}}

int co_run(const co_args* a) {{
  pthread_t th[256];
  co_job jobs[256];
  if (a->agents > 256) return -1;
  for (int k = 0; k < a->agents; ++k) {{
    jobs[k].a = a;
    jobs[k].k = k;
    if (pthread_create(&th[k], 0, co_agent, &jobs[k]) != 0) return -2;
  }}
  for (int k = 0; k < a->agents; ++k) pthread_join(th[k], 0);
  return 0;
}}

"""


def cuda_source(test: Litmus) -> str:
    """The GPU agents' kernel ``link_roles``: one thread per (instance, role) entry, each in
    its own block; same protocol as ``c_source``; role 0's histogram in ``hist``."""
    check_fits(test)
    nt, nl = len(test.threads), len(test.locations)
    c = codec(test)
    cases = role_cases(test, " " * 6)
    reset = reset_lines(test, " " * 6)
    warm = warm_loads(test, " " * 4)
    cached = (f"{warm}\n    if (!lk_barrier(flags, inst, role, ++epoch, timeout_ns)) "
              "{ ok = false; break; }") if test.cached else ""
    loads = "\n".join(
        f"      uint4 q{t} = {'r' if t == 0 else f'lk_regs(flags, inst, {t})'};"
        for t in sorted({t for t, _ in reg_positions(test)}))
    index = outcome_index_code(test, regs_of="q{t}.{c}", mem_of="lk_final(l[{k}])",
                               indent="      ")
    return "\n".join([
        f"// litmus {test.name}, variant {test.variant}: GPU agents across a link",
        'extern "C" {', common_device_code(), *roles_and_probes(test), f"""
#define NT {nt}
#define NL {nl}
#define HB {c.size}
#define LINE {LINE}
__device__ __forceinline__ unsigned int* lk_line(unsigned int* flags, int inst, int role) {{
  return flags + ((unsigned long long)inst * NT + role) * LINE;
}}
__device__ __forceinline__ unsigned int lk_final(unsigned int* p) {{
  unsigned int v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}}
__device__ __forceinline__ uint4 lk_regs(unsigned int* flags, int inst, int role) {{
  volatile unsigned int* p = lk_line(flags, inst, role) + 1;
  return make_uint4(p[0], p[1], p[2], p[3]);
}}
// publish `epoch` (release, system scope) and wait for every role of the instance (acquire)
__device__ __forceinline__ bool lk_barrier(unsigned int* flags, int inst, int role,
                                           unsigned int epoch, unsigned long long timeout_ns) {{
  asm volatile("st.release.sys.u32 [%0], %1;" :: "l"(lk_line(flags, inst, role)), "r"(epoch)
               : "memory");
  unsigned long long t0 = co_now();
  for (int t = 0; t < NT; ++t) {{
    unsigned int* f = lk_line(flags, inst, t);
    for (unsigned int n = 1;; ++n) {{
      unsigned int v;
      asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
      if (v >= epoch) break;
      if ((n & 255u) == 0u && co_now() - t0 > timeout_ns) return false;
    }}
  }}
  return true;
}}

__global__ void link_roles(unsigned int* mem, unsigned int* flags, unsigned long long* hist,
                           const int* inst_of, const int* role_of, int iters,
                           unsigned int seed, unsigned int it0, unsigned int spread,
                           unsigned long long timeout_ns, unsigned int* timeouts) {{
  if (threadIdx.x != 0) return;
  int inst = inst_of[blockIdx.x], role = role_of[blockIdx.x];
  unsigned int epoch = 0u, sink = 0u;
  bool ok = true;
  for (int it = 0; it < iters; ++it) {{
    unsigned int* l[{MAX_LOCS}];
    for (unsigned int k = 0; k < {MAX_LOCS}; ++k)
      l[k] = mem + co_slot(seed, (unsigned int)inst, it0 + (unsigned int)it,
                           k < NL ? k : 0u, spread, NL) * {LOC_STRIDE}u;
    if (role == 0) {{
{reset}
    }}
    if (!lk_barrier(flags, inst, role, ++epoch, timeout_ns)) {{ ok = false; break; }}
{cached}
    uint4 r = make_uint4(0u, 0u, 0u, 0u);
    switch (role) {{
{cases}
    }}
    volatile unsigned int* mine = lk_line(flags, inst, role) + 1;
    mine[0] = r.x; mine[1] = r.y; mine[2] = r.z; mine[3] = r.w;
    if (!lk_barrier(flags, inst, role, ++epoch, timeout_ns)) {{ ok = false; break; }}
    if (role == 0) {{
{loads}
{index}
      hist[(unsigned long long)inst * HB + b] += 1ull;
    }}
  }}
  if (!ok) atomicAdd(timeouts, 1u);
  if (sink == 0xfeedf00du) timeouts[1] = sink;
}}

}}  // extern "C"
"""])


def ping_c_source() -> str:
    """The host side of the host-link flag latency: ``co_pingpong`` answers a GPU thread."""
    return """// host-link ping-pong: generated by coherence.hw
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
static uint64_t co_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
""" + """// the host side of a ping-pong with a GPU thread: wait for ping == i, answer pong = i
int co_pingpong(uint32_t* ping, uint32_t* pong, int iters, uint64_t timeout_ns) {
  uint64_t t0 = co_now();
  for (uint32_t i = 1; i <= (uint32_t)iters; ++i) {
    for (uint32_t n = 1; atomic_load_explicit((_Atomic uint32_t*)ping, memory_order_acquire) != i;
         ++n) {
      if ((n & 1023u) == 0u && co_now() - t0 > timeout_ns) return -1;
    }
    atomic_store_explicit((_Atomic uint32_t*)pong, i, memory_order_release);
  }
  return 0;
}
"""


def ping_cuda_source() -> str:
    """``link_ping`` and ``link_pong``: the GPU sides of the flag latencies (host link, peers)."""
    return "\n".join(['extern "C" {', common_device_code(), """
// one-way flag latency: this thread writes ping = i and waits for pong == i
// (the partner, a CPU thread or a thread of another GPU, answers)
__global__ void link_ping(unsigned int* ping, unsigned int* pong, int iters,
                          unsigned long long timeout_ns, unsigned int* failed) {
  unsigned long long t0 = co_now();
  for (unsigned int i = 1; i <= (unsigned int)iters; ++i) {
    asm volatile("st.release.sys.u32 [%0], %1;" :: "l"(ping), "r"(i) : "memory");
    for (unsigned int n = 1;; ++n) {
      unsigned int v;
      asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(pong) : "memory");
      if (v == i) break;
      if ((n & 255u) == 0u && co_now() - t0 > timeout_ns) { failed[0] = 1u; return; }
    }
  }
}
// the answering side on a GPU (for two GPUs)
__global__ void link_pong(unsigned int* ping, unsigned int* pong, int iters,
                          unsigned long long timeout_ns, unsigned int* failed) {
  unsigned long long t0 = co_now();
  for (unsigned int i = 1; i <= (unsigned int)iters; ++i) {
    for (unsigned int n = 1;; ++n) {
      unsigned int v;
      asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(ping) : "memory");
      if (v == i) break;
      if ((n & 255u) == 0u && co_now() - t0 > timeout_ns) { failed[0] = 1u; return; }
    }
    asm volatile("st.release.sys.u32 [%0], %1;" :: "l"(pong), "r"(i) : "memory");
  }
}
""" + "}  // extern \"C\"\n"])
