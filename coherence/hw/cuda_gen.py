"""CUDA source for one litmus test variant: inline PTX per operation, run by a persistent kernel.

Pure text generation (no CuPy here), so it is tested on machines without a GPU. The design
follows the GPU litmus literature (Alglave et al., ASPLOS 2015; Sorensen & Donaldson, PLDI
2016; Kirkham et al.'s GPUHarbor and Levine et al.'s MC Mutants, ASPLOS 2023):

* the host places the roles (litmus threads) of many instances on the grid's threads by a
  random permutation, redrawn every launch; threads left over stress memory;
* each thread then plays its role for ``iters`` iterations of one launch (a persistent kernel):
  per iteration, role 0 resets the instance's locations, the roles meet at a barrier (a
  release add, relaxed polls of a per-instance counter, then ``fence.acq_rel.gpu``: the
  reset is visible and no stale L1 line of an earlier iteration is read), run the test,
  meet again, and role 0 reads every register and the final memory and adds 1 to the
  outcome's bucket of a per-block histogram in shared memory (``coherence.hw.outcomes``),
  flushed to a global 64-bit histogram at the end of the launch; no host round trip per
  instance or iteration;
* the locations move every iteration (``coherence.hw.slots``);
* every role records ``%smid``, so instances whose roles shared an SM are counted apart;
* a barrier that waits longer than the timeout (``%globaltimer``) ends the role's launch and
  is counted, so a partner that never comes cannot hang the GPU.

Each role's operations are emitted as ``asm volatile`` with a ``"memory"`` clobber, so the
CUDA front end keeps them in order; what ``ptxas`` made of them is checked on the SASS of a
probe kernel per role (``coherence.hw.sass``).
"""

from __future__ import annotations

from coherence.hw.outcomes import codec
from coherence.hw.slots import LOC_STRIDE, SLOT_C
from coherence.litmus.program import Litmus, Op

MAX_REGS = 4
MAX_LOCS = 3
STRESS_STRIDE = 32  # uints: one 128-byte line per stress slot
COMPONENTS = ("x", "y", "z", "w")
# counters[] of the persistent kernel
DONE, TIMEOUTS = 0, 1


def _ld(op: Op) -> str:
    order, scope = op.order or "weak", op.scope or "gpu"
    if order == "weak":
        return "ld.global.u32"
    if order == "volatile":
        return "ld.volatile.global.u32"
    return f"ld.{order}.{scope}.global.u32"


def _st(op: Op) -> str:
    order, scope = op.order or "weak", op.scope or "gpu"
    if order == "weak":
        return "st.global.u32"
    if order == "volatile":
        return "st.volatile.global.u32"
    return f"st.{order}.{scope}.global.u32"


def ptx_of(op: Op) -> str:
    """The PTX instruction an operation compiles to (for reports and tests)."""
    if op.kind == "fence":
        return f"fence.{op.order or 'sc'}.{op.scope or 'gpu'}"
    return _ld(op) if op.kind == "load" else _st(op)


def check_fits(test: Litmus) -> None:
    if len(test.locations) > MAX_LOCS or any(
            sum(op.kind == "load" for op in ops) > MAX_REGS for ops in test.threads):
        raise ValueError(f"{test.name}: the harness supports at most {MAX_LOCS} locations "
                         f"and {MAX_REGS} loads per thread")
    codec(test)  # the outcome histogram must fit


def role_body(test: Litmus, tid: int) -> str:
    regs = [op.reg for op in test.threads[tid] if op.kind == "load"]
    lines = [f"  unsigned int {', '.join(f'v{i} = 0u' for i in range(MAX_REGS))};"]
    for op in test.threads[tid]:
        if op.kind == "fence":
            lines.append(f'  asm volatile("{ptx_of(op)};" ::: "memory");')
            continue
        loc = f"l{test.locations.index(op.loc or '')}"
        if op.kind == "load":
            r = f"v{regs.index(op.reg)}"
            lines.append(f'  asm volatile("{_ld(op)} %0, [%1];" : "=r"({r}) : "l"({loc}) '
                         ': "memory");')
        else:
            val = (f"{op.value}u" if isinstance(op.value, int)
                   else f"v{regs.index(op.value)}")
            lines.append(f'  asm volatile("{_st(op)} [%0], %1;" :: "l"({loc}), "r"({val}) '
                         ': "memory");')
    lines.append(f"  return make_uint4({', '.join(f'v{i}' for i in range(MAX_REGS))});")
    return "\n".join(lines)


def roles_and_probes(test: Litmus) -> list[str]:
    """One inlined device function per role, and a probe kernel per role for the SASS check."""
    loc_params = ", ".join(f"unsigned int* l{i}" for i in range(MAX_LOCS))
    parts = []
    for t in range(len(test.threads)):
        parts.append(f"__device__ __forceinline__ uint4 role{t}({loc_params}) {{\n"
                     f"{role_body(test, t)}\n}}")
        parts.append(f"__global__ void probe_role{t}({loc_params}, uint4* out) {{\n"
                     f"  *out = role{t}(l0, l1, l2);\n}}")
    return parts


def reg_positions(test: Litmus) -> list[tuple[int, int]]:
    """(role, slot) of each register, in ``Litmus.registers()`` order."""
    out: list[tuple[int, int]] = []
    for t, ops in enumerate(test.threads):
        loads = [op.reg for op in ops if op.kind == "load"]
        out.extend((t, loads.index(op.reg)) for op in ops if op.kind == "load")
    return out


def outcome_index_code(test: Litmus, regs_of: str, mem_of: str, indent: str = "      ") -> str:
    """C statements that set ``unsigned int b`` to the outcome's bucket; ``regs_of`` formats
    register ``k`` of role ``t`` (``{t}``, ``{k}``, ``{c}``: its uint4 field), ``mem_of`` a
    location's final-value load (``{k}``)."""
    c = codec(test)
    values = [regs_of.format(t=t, k=k, c=COMPONENTS[k]) for t, k in reg_positions(test)]
    values += [mem_of.format(k=k) for k in range(len(test.locations))]
    lines = ["unsigned int b = 0u, over = 0u, v;"]
    weight = 1
    for v in values:
        lines.append(f"v = {v}; over |= (v >= {c.base}u); b += v * {weight}u;")
        weight *= c.base
    lines.append(f"if (over) b = {c.buckets}u;")
    return "\n".join(indent + ln for ln in lines)


def common_device_code() -> str:
    """Barriers, clock and the location hash, shared by the kernels of this package."""
    return ("#define CO_FN __device__ __forceinline__\n" + SLOT_C + r"""
CO_FN unsigned long long co_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// arrive (a release add) and wait for `target` arrivals: relaxed polls, then one
// fence.acq_rel.gpu (with the poll that saw the target, an acquire pattern in the PTX model:
// the reset before every partner's arrival is visible, and no stale L1 line of an earlier
// iteration is read after it)
CO_FN bool co_barrier(unsigned int* b, unsigned int target, unsigned long long timeout_ns) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(b) : "memory");
  unsigned long long t0 = co_now();
  for (unsigned int n = 1;; ++n) {
    unsigned int v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(b) : "memory");
    if (v >= target) break;
    if ((n & 255u) == 0u && co_now() - t0 > timeout_ns) return false;
  }
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
  return true;
}
// the same with relaxed accesses: keeps what a role just loaded into its L1 (MP+cached)
CO_FN bool co_barrier_relaxed(unsigned int* b, unsigned int target,
                              unsigned long long timeout_ns) {
  asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" :: "l"(b) : "memory");
  unsigned long long t0 = co_now();
  for (unsigned int n = 1;; ++n) {
    unsigned int v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(b) : "memory");
    if (v >= target) return true;
    if ((n & 255u) == 0u && co_now() - t0 > timeout_ns) return false;
  }
}
""")


def role_cases(test: Litmus, indent: str) -> str:
    """The ``switch (role)`` cases that run each thread's role on the instance's locations."""
    return "\n".join(f"{indent}case {t}: r = role{t}(l[0], l[1], l[2]); break;"
                     for t in range(len(test.threads)))


def reset_lines(test: Litmus, indent: str) -> str:
    """Role 0's reset of every location to its initial value."""
    return "\n".join(f"{indent}l[{k}][0] = {test.initial(loc)}u;"
                     for k, loc in enumerate(test.locations))


def warm_loads(test: Litmus, indent: str) -> str:
    """A ``cached`` test's loads through L1 (``ld.global.ca``) before the test proper."""
    return "\n".join(
        f"{indent}if (role == {t}) {{ unsigned int w; asm volatile(\"ld.global.ca.u32 %0, [%1];\" "
        f": \"=r\"(w) : \"l\"(l[{test.locations.index(loc)}]) : \"memory\"); sink += w; }}"
        for t, loc in test.cached)


def kernel_source(test: Litmus) -> str:
    """The whole module: role functions, one SASS probe kernel per role, the persistent
    kernel ``litmus_persistent``."""
    check_fits(test)
    nt, nl = len(test.threads), len(test.locations)
    c = codec(test)
    hb = c.size
    cases = role_cases(test, " " * 8)
    reset = reset_lines(test, " " * 8)
    warm = warm_loads(test, " " * 6)
    cached_barrier = (f"{warm}\n      if (!co_barrier_relaxed(&bar[inst], ++epoch * {nt}u, "
                      "timeout_ns)) break;") if test.cached else "      // no cached lines"
    index = outcome_index_code(
        test, regs_of="q{t}.{c}",
        mem_of="co_ld_final(l[{k}])", indent="        ")
    with_regs = sorted({t for t, _ in reg_positions(test)})
    loads = "\n".join(f"        uint4 q{t} = {'r' if t == 0 else f'regs_buf[inst * {nt} + {t}]'};"
                      for t in with_regs)
    parts = [f"// litmus {test.name}, variant {test.variant}: generated by coherence.hw",
             'extern "C" {', common_device_code(), *roles_and_probes(test)]
    parts.append(f"""
__device__ __forceinline__ unsigned int co_ld_final(unsigned int* p) {{
  unsigned int v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}}

#define NT {nt}
#define NL {nl}
#define HB {hb}  // outcome buckets, the last one for values out of range

__global__ void litmus_persistent(
    unsigned int* mem, const int* inst_of, const int* role_of, uint4* regs_buf,
    unsigned int* bar, unsigned int* smids, unsigned long long* hist, unsigned int* counters,
    unsigned int* stress, int iters, unsigned int seed, unsigned int it0, unsigned int spread,
    int n_inst, int stress_lines, int stress_iters, int pre_stress, int jitter,
    unsigned long long timeout_ns, unsigned long long stress_stop_ns) {{
  __shared__ unsigned int shist[2 * HB];  // [0, HB): roles on distinct SMs; [HB, 2HB): shared
  for (int i = threadIdx.x; i < 2 * HB; i += blockDim.x) shist[i] = 0u;
  __syncthreads();
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  int inst = inst_of[gid];
  unsigned int x = co_mix(seed ^ co_mix((unsigned int)gid + 0x1234567u));
  unsigned int sink = 0u;
  if (inst < 0) {{
    // memory stress until every instance's role 0 is done (or a deadline, in case one
    // never runs)
    if (stress_lines > 0) {{
      unsigned long long t0 = co_now();
      for (;;) {{
        for (int i = 0; i < stress_iters; ++i) {{
          x = x * 1664525u + 1013904223u;
          unsigned int* p = stress + ((x >> 8) % (unsigned int)stress_lines) * {STRESS_STRIDE}u;
          if (x & 0x10000u) *(volatile unsigned int*)p = x; else sink += *(volatile unsigned int*)p;
        }}
        if (*(volatile unsigned int*)&counters[{DONE}] >= (unsigned int)n_inst) break;
        if (co_now() - t0 > stress_stop_ns) break;
      }}
    }}
  }} else {{
    int role = role_of[gid];
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    smids[inst * NT + role] = smid;
    unsigned int epoch = 0u, shared_sm = 0u;
    bool alive = true;
    for (int it = 0; it < iters; ++it) {{
      unsigned int* l[{MAX_LOCS}];
      for (unsigned int k = 0; k < {MAX_LOCS}; ++k)
        l[k] = mem + co_slot(seed, (unsigned int)inst, it0 + (unsigned int)it,
                             k < NL ? k : 0u, spread, NL) * {LOC_STRIDE}u;
      if (role == 0) {{
{reset}
      }}
      for (int i = 0; i < pre_stress; ++i) {{
        x = x * 1664525u + 1013904223u;
        unsigned int* p = stress + ((x >> 8) % (unsigned int)stress_lines) * {STRESS_STRIDE}u;
        if (x & 0x10000u) *(volatile unsigned int*)p = x; else sink += *(volatile unsigned int*)p;
      }}
      if (!co_barrier(&bar[inst], ++epoch * NT, timeout_ns)) {{ alive = false; break; }}
      if (it == 0 && role == 0) {{
        for (int t = 1; t < NT; ++t) shared_sm |= (smids[inst * NT + t] == smid);
        for (int t = 1; t < NT; ++t)
          for (int u = t + 1; u < NT; ++u)
            shared_sm |= (smids[inst * NT + t] == smids[inst * NT + u]);
      }}
{cached_barrier.replace("break;", "{ alive = false; break; }")}
      if (jitter > 0) {{
        x = x * 1664525u + 1013904223u;
        long long d = (long long)((x >> 8) % (unsigned int)jitter), t = clock64();
        while (clock64() - t < d) {{}}
      }}
      uint4 r = make_uint4(0u, 0u, 0u, 0u);
      switch (role) {{
{cases}
      }}
      if (role != 0) regs_buf[inst * NT + role] = r;
      if (!co_barrier(&bar[inst], ++epoch * NT, timeout_ns)) {{ alive = false; break; }}
      if (role == 0) {{
{loads}
{index}
        atomicAdd(&shist[(shared_sm ? HB : 0) + b], 1u);
      }}
    }}
    if (!alive) atomicAdd(&counters[{TIMEOUTS}], 1u);
    if (role == 0) atomicAdd(&counters[{DONE}], 1u);
  }}
  if (sink == 0xfeedf00du) stress[1] = sink;
  __syncthreads();
  for (int i = threadIdx.x; i < 2 * HB; i += blockDim.x)
    if (shist[i]) atomicAdd(&hist[i], (unsigned long long)shist[i]);
}}
}}  // extern "C"
""")
    return "\n".join(parts)


def expected_sequence(ops: tuple[Op, ...]) -> list[str]:
    """The memory-instruction classes a role must compile to, in order: L, S or F."""
    return [{"load": "L", "store": "S", "fence": "F"}[op.kind] for op in ops]
