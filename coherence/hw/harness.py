"""Running litmus tests on a real GPU (CuPy): the persistent-kernel harness. With ``link``,
the only modules that import cupy for litmus.

Per test variant one module is compiled (``cuda_gen``); per environment
(``coherence.hw.environments``) it is launched again and again for a time budget. Each launch
runs ``iters`` iterations of every instance on the whole GPU and adds to one histogram on the
GPU; the host only redraws the role placement (while the kernel runs), times the launch and
sizes the next. Results are histograms of outcomes (registers in ``Litmus.registers()`` order,
then final memory), split by whether the instance's roles ran on distinct SMs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from coherence.hw import cuda_gen, sass
from coherence.hw.environments import Environment
from coherence.hw.outcomes import codec
from coherence.hw.plan import Grid, assign_roles, blocks_per_sm, grid, next_iterations
from coherence.litmus.program import Litmus


@attrs.define
class RunOptions:
    seconds: float = 1.0  # per variant and environment
    threads_per_block: int = 256
    spread: int = 4  # slots per location in an instance's region
    seed: int = 1
    arch: str = "sm_90"
    launch_seconds: float = 0.1  # aimed length of one launch
    timeout_ms: float = 500.0  # a barrier wait longer than this ends the role's launch
    first_iterations: int = 16  # the first launch's, to time one iteration


@attrs.define
class EnvResult:
    test: str
    variant: str
    environment: str
    instances: int
    distinct_sm: dict[str, int]
    shared_sm: dict[str, int]
    overflow: int
    timeouts: int
    launches: int
    iterations: int
    grid_instances: int
    seconds: float
    kernel_seconds: float
    sass: dict[str, Any]
    ptx: list[list[str]]

    @property
    def instances_per_s(self) -> float:
        return self.instances / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "instances_per_s": round(self.instances_per_s)}


def compile_variant(test: Litmus, arch: str, workdir: Path) -> tuple[Path | None, dict[str, Any]]:
    """Compile with nvcc to a cubin, so that the SASS we check is the code we run. Without
    nvcc the kernel is compiled by NVRTC at load time and its SASS is left unchecked.
    Thread-safe (one subprocess per call): variants are compiled in parallel."""
    src = cuda_gen.kernel_source(test)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None, {"checked": False, "why": "nvcc not found: compiled with NVRTC",
                      "source": src}
    workdir.mkdir(parents=True, exist_ok=True)
    cu = workdir / "k.cu"
    cubin = workdir / "k.cubin"
    cu.write_text(src)
    done = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", "-o", str(cubin), str(cu)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nvcc failed on {test.name} {test.variant}:\n{done.stderr}")
    dump = shutil.which("cuobjdump")
    if dump is None:
        return cubin, {"checked": False, "why": "cuobjdump not found"}
    text = subprocess.run([dump, "-sass", str(cubin)], check=True, capture_output=True,
                          text=True).stdout
    (workdir / "k.sass").write_text(text)
    return cubin, {"checked": True, "functions": sass.functions(text)}


def cuda_module(source: str, arch: str = "sm_90") -> Any:
    """A CuPy module of ``source``: compiled by nvcc to a cubin (cached by the source's hash)
    where nvcc is installed, as the litmus kernels are, else by NVRTC. Load it with the
    device it is for current."""
    import hashlib

    import cupy as cp

    from coherence.hw.cbuild import cache_dir

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return cp.RawModule(code=source, options=("-std=c++17",))
    key = hashlib.sha256(f"{arch}\0{source}".encode()).hexdigest()
    cubin = cache_dir() / f"{key}.cubin"
    if not cubin.exists():
        cubin.parent.mkdir(parents=True, exist_ok=True)
        cu = cubin.with_suffix(f".{os.getpid()}.cu")
        tmp = cubin.with_suffix(f".{os.getpid()}.tmp")
        cu.write_text(source)
        done = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", "-o", str(tmp),
                               str(cu)], capture_output=True, text=True)
        cu.unlink()
        if done.returncode != 0:
            raise RuntimeError(f"nvcc failed:\n{done.stderr}")
        os.replace(tmp, cubin)
    return cp.RawModule(path=str(cubin))


def load_module(cubin: Path | None, info: dict[str, Any]) -> Any:
    import cupy as cp

    if cubin is None:
        return cp.RawModule(code=info["source"], options=("-std=c++17",))
    return cp.RawModule(path=str(cubin))


def sass_report(test: Litmus, info: dict[str, Any]) -> dict[str, Any]:
    if not info.get("checked"):
        return {"checked": False, "why": info.get("why", "unknown"), "roles": []}
    roles = []
    for t, ops in enumerate(test.threads):
        opcodes = info["functions"].get(f"probe_role{t}")
        if opcodes is None:
            roles.append({"role": t, "ok": False, "memory_ops": [],
                          "notes": ["probe kernel not found in the SASS"]})
            continue
        chk = sass.check_role(t, opcodes, cuda_gen.expected_sequence(ops),
                              [op.scope for op in ops if op.kind == "fence"])
        roles.append(attrs.asdict(chk))
    return {"checked": True, "ok": all(r["ok"] for r in roles), "roles": roles}


def resident_blocks(kernel: Any, threads_per_block: int) -> int:
    """Blocks per SM that stay resident together: the smaller of our own count from the
    kernel's registers and shared memory and, where CuPy offers it, the driver's."""
    try:
        ours = blocks_per_sm(threads_per_block, int(kernel.num_regs),
                             int(kernel.shared_size_bytes))
    except AttributeError:  # an older CuPy: two blocks of 256 threads fit any kernel of ours
        ours = 2
    try:
        import cupy as cp

        theirs = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            kernel.kernel.ptr, threads_per_block, 0))
        return max(1, min(ours, theirs))
    except Exception:  # an older CuPy: our count alone
        return max(1, ours)


def run_environment(test: Litmus, kernel: Any, env: Environment, options: RunOptions,
                    sass_info: dict[str, Any],
                    progress: Callable[[float, float], None] | None = None) -> EnvResult:
    """Launch the variant's kernel for ``options.seconds`` in one environment."""
    import cupy as cp
    import numpy as np

    nt, nl = len(test.threads), len(test.locations)
    c = codec(test)
    dev = cp.cuda.Device()
    sms = int(dev.attributes["MultiProcessorCount"])
    g: Grid = grid(sms, resident_blocks(kernel, options.threads_per_block),
                   options.threads_per_block, nt, env.test_fraction, env.placement)
    rng = np.random.default_rng(options.seed)
    mem = cp.zeros(g.instances * nl * options.spread * cuda_gen.LOC_STRIDE, dtype=cp.uint32)
    regs = cp.zeros(g.instances * nt * 4, dtype=cp.uint32)
    bar = cp.zeros(g.instances, dtype=cp.uint32)
    smids = cp.zeros(g.instances * nt, dtype=cp.uint32)
    hist = cp.zeros(2 * c.size, dtype=cp.uint64)
    counters = cp.zeros(4, dtype=cp.uint32)
    stress = cp.zeros((max(env.stress_lines, 1) + 1) * cuda_gen.STRESS_STRIDE, dtype=cp.uint32)
    timeout_ns = np.uint64(options.timeout_ms * 1e6)
    iters = options.first_iterations
    it0 = 0
    launches = timeouts = iterations = 0
    kernel_ms = 0.0
    start = time.perf_counter()
    placement = assign_roles(rng, g)
    while True:
        inst_of, role_of = (cp.asarray(a) for a in placement)
        bar.fill(0)
        counters.fill(0)
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        kernel((g.blocks,), (g.threads_per_block,),
               (mem, inst_of, role_of, regs, bar, smids, hist, counters, stress,
                np.int32(iters), np.uint32((options.seed * 2654435761 + launches) & 0xFFFFFFFF),
                np.uint32(it0 & 0xFFFFFFFF), np.uint32(options.spread), np.int32(g.instances),
                np.int32(env.stress_lines), np.int32(env.stress_iters),
                np.int32(env.pre_stress if env.stress_lines else 0),
                np.int32(env.jitter_cycles), timeout_ns,
                np.uint64(max(10.0, 20 * options.launch_seconds) * 1e9)))
        b.record()
        placement = assign_roles(rng, g)  # the next launch's, while this one runs
        b.synchronize()
        ms = cp.cuda.get_elapsed_time(a, b)
        kernel_ms += ms
        launches += 1
        iterations += iters
        it0 += iters
        timeouts += int(counters.get()[1])
        elapsed = time.perf_counter() - start
        if progress is not None:
            progress(min(elapsed, options.seconds), options.seconds)
        if elapsed >= options.seconds:
            break
        iters = next_iterations(iters, ms, options.launch_seconds, options.seconds - elapsed)
    seconds = time.perf_counter() - start
    counts = hist.get().tolist()
    distinct, over_d = c.histogram(counts[: c.size])
    shared, over_s = c.histogram(counts[c.size:])
    return EnvResult(
        test=test.name, variant=test.variant, environment=env.name,
        instances=int(sum(counts)), distinct_sm=distinct, shared_sm=shared,
        overflow=over_d + over_s, timeouts=timeouts, launches=launches, iterations=iterations,
        grid_instances=g.instances, seconds=round(seconds, 3),
        kernel_seconds=round(kernel_ms / 1000, 3), sass=sass_report(test, sass_info),
        ptx=[[cuda_gen.ptx_of(op) for op in ops] for ops in test.threads])


def get_kernel(built: tuple[Path | None, dict[str, Any]]) -> Any:
    return load_module(*built).get_function("litmus_persistent")


def provenance(options: dict[str, Any]) -> dict[str, Any]:
    import cupy as cp

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"]
    nvcc = shutil.which("nvcc")
    nvcc_version = None
    if nvcc:
        nvcc_version = subprocess.run([nvcc, "--version"], capture_output=True,
                                      text=True).stdout.strip().splitlines()[-1]
    return {
        "gpu": name.decode() if isinstance(name, bytes) else str(name),
        "gpus": cp.cuda.runtime.getDeviceCount(),
        "sms": dev.attributes["MultiProcessorCount"],
        "compute_capability": dev.compute_capability,
        "driver_version": cp.cuda.runtime.driverGetVersion(),
        "cuda_runtime_version": cp.cuda.runtime.runtimeGetVersion(),
        "nvcc": nvcc_version,
        "cupy": cp.__version__,
        # what the link harness depends on (cudaDeviceAttr 86, 88, 89)
        "host_native_atomics": bool(cp.cuda.runtime.deviceGetAttribute(86, dev.id)),
        "pageable_memory_access": bool(cp.cuda.runtime.deviceGetAttribute(88, dev.id)),
        "concurrent_managed_access": bool(cp.cuda.runtime.deviceGetAttribute(89, dev.id)),
        "options": options,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
