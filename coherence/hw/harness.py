"""Running litmus tests on a real GPU (CuPy). The only module that imports cupy for litmus.

One launch runs ``instances`` copies of a test; roles are spread over the grid by a random
permutation and the locations over a large buffer, both redrawn every launch. Results are
histograms of outcomes (registers in ``Litmus.registers()`` order, then final memory),
split by whether the instance's roles ran on distinct SMs.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import attrs

from coherence.hw import cuda_gen, sass
from coherence.litmus.program import Litmus


@attrs.define
class HwOptions:
    launches: int = 20
    blocks_per_sm: int = 2
    threads_per_block: int = 256
    test_fraction: float = 0.5  # of grid threads that run instances; the rest stress
    stress_iters: int = 64
    stress_slots: int = 4096
    loc_spread: int = 8  # location slots per location needed (randomised placement)
    seed: int = 1
    arch: str = "sm_90"


@attrs.define
class VariantResult:
    test: str
    variant: str
    instances: int
    distinct_sm: dict[str, int]
    shared_sm: dict[str, int]
    timeouts: int
    seconds: float
    sass: dict[str, Any]
    ptx: list[list[str]]

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


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


def _load(cubin: Path | None, info: dict[str, Any]) -> Any:
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


def run_variant(test: Litmus, options: HwOptions, progress: Any = None,
                built: tuple[Path | None, dict[str, Any]] | None = None) -> VariantResult:
    import cupy as cp
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        cubin, info = built or compile_variant(test, options.arch, Path(tmp))
        kernel = _load(cubin, info).get_function("litmus_test")
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    nt, nl = len(test.threads), len(test.locations)
    blocks = sms * options.blocks_per_sm
    total = blocks * options.threads_per_block
    instances = int(total * options.test_fraction) // nt
    slots = instances * nl * options.loc_spread
    rng = np.random.default_rng(options.seed)
    mem = cp.zeros(slots * cuda_gen.LOC_STRIDE, dtype=cp.uint32)
    stress = cp.zeros(options.stress_slots * cuda_gen.STRESS_STRIDE, dtype=cp.uint32)
    barrier = cp.zeros(instances, dtype=cp.uint32)
    out_regs = cp.zeros((instances * nt, 4), dtype=cp.uint32)
    out_smid = cp.zeros(instances * nt, dtype=cp.uint32)
    reg_pos = [(t, [op.reg for op in ops if op.kind == "load"].index(op.reg))
               for t, ops in enumerate(test.threads) for op in ops if op.kind == "load"]
    init = [test.initial(loc) for loc in test.locations]
    distinct: Counter[tuple[int, ...]] = Counter()
    shared: Counter[tuple[int, ...]] = Counter()
    timeouts = 0
    started = time.perf_counter()
    for launch in range(options.launches):
        perm = rng.permutation(total)
        inst_of = np.full(total, -1, dtype=np.int32)
        role_of = np.zeros(total, dtype=np.int32)
        used = perm[: instances * nt]
        inst_of[used] = np.repeat(np.arange(instances, dtype=np.int32), nt)
        role_of[used] = np.tile(np.arange(nt, dtype=np.int32), instances)
        chosen = rng.choice(slots, size=instances * nl, replace=False).astype(np.uint32)
        locs = np.zeros((instances, cuda_gen.MAX_LOCS), dtype=np.uint32)
        locs[:, :nl] = chosen.reshape(instances, nl) * cuda_gen.LOC_STRIDE
        mem.fill(0)
        barrier.fill(0)
        locs_d = cp.asarray(locs)
        for k, v in enumerate(init):
            if v:
                mem[locs_d[:, k]] = v
        kernel((blocks,), (options.threads_per_block,),
               (mem, locs_d, cp.asarray(inst_of), cp.asarray(role_of), out_regs, out_smid,
                barrier, stress, np.int32(options.stress_iters),
                np.int32(options.stress_slots), np.uint32(options.seed * 7919 + launch)))
        regs = out_regs.reshape(instances, nt, 4).get()
        smid = out_smid.reshape(instances, nt).get()
        final = mem[locs_d[:, :nl]].get() if nl else np.zeros((instances, 0), np.uint32)
        cols = [regs[:, t, k] for t, k in reg_pos] + [final[:, k] for k in range(nl)]
        table = np.stack(cols, axis=1).astype(np.int64)
        bad = (smid & 0x80000000).any(axis=1)
        timeouts += int(bad.sum())
        ids = smid & 0xFFFF
        srt = np.sort(ids, axis=1)
        all_distinct = (np.diff(srt, axis=1) != 0).all(axis=1) if nt > 1 else np.ones(
            instances, bool)
        for mask, counter in ((all_distinct & ~bad, distinct), (~all_distinct & ~bad, shared)):
            if mask.any():
                rows, counts = np.unique(table[mask], axis=0, return_counts=True)
                for row, c in zip(rows, counts, strict=True):
                    counter[tuple(int(x) for x in row)] += int(c)
        if progress is not None:
            progress(launch + 1, options.launches)
    seconds = time.perf_counter() - started
    names = test.outcome_names()

    def enc(c: Counter[tuple[int, ...]]) -> dict[str, int]:
        return {" ".join(f"{n}={v}" for n, v in zip(names, k, strict=True)): n_
                for k, n_ in sorted(c.items())}

    return VariantResult(
        test=test.name, variant=test.variant,
        instances=sum(distinct.values()) + sum(shared.values()),
        distinct_sm=enc(distinct), shared_sm=enc(shared), timeouts=timeouts,
        seconds=round(seconds, 3), sass=sass_report(test, info),
        ptx=[[cuda_gen.ptx_of(op) for op in ops] for ops in test.threads])


def provenance(options: HwOptions) -> dict[str, Any]:
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
        "options": attrs.asdict(options),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
