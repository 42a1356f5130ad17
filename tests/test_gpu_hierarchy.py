"""The GPU engine on hierarchical specs (issue 20; NOTE(gpu-hierarchy)) without a GPU: its
kernels compiled for the host and run one thread at a time (``GpuEngine("host")``), against
the reference and compiled engines: the same states, rules fired, depth, verdicts and
counterexample lengths, with the nested symmetry and without, the counts pinned in
HIER_COUNTS, and every counterexample path replayed through ``coherence.semantics``.

The GPU itself: tests/test_gpu_device.py's hierarchical rows (skipped without CuPy and a GPU;
the H200 run is under results/device/gpu-hier/).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HIER_COUNTS, ROOT

from coherence import ir
from coherence.engines import get_engine
from coherence.engines.cgen.codegen import generate
from coherence.engines.compiled import CompiledEngine
from coherence.engines.driver import NOT_SYMMETRIC, rebuild, run
from coherence.engines.gpu import GpuEngine
from coherence.engines.gpu.device import find_cc
from coherence.engines.gpu.source import kernel_source
from coherence.layout import Layout
from coherence.results import CheckOptions, CheckResult
from coherence.semantics import Semantics
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties
from coherence.symmetry import make_symmetry

pytestmark = pytest.mark.skipif(
    find_cc() is None or CompiledEngine().available() is not None, reason="no C compiler")

TWO_LEVEL = ROOT / "tests" / "specs" / "hierarchy" / "two_level_wt.coh"
CONSTRUCTS = ROOT / "tests" / "specs" / "hierarchy" / "compiled_constructs.coh"
BUNDLED = ("gpu_two_level", "multigpu_broadcast", "multigpu_broadcast_acked", "hmg")


@pytest.fixture(autouse=True)
def _quick_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")  # the compiled engine's build


def summary(result: CheckResult) -> tuple[object, ...]:
    """Everything two engines must agree on."""
    return (result.states, result.rules_fired, result.depth, result.verdict, result.stopped,
            result.symmetry, sorted((f.key, f.length) for f in result.failures))


def on(engine: str, model: ir.Model, sym: bool, **extra: object) -> CheckResult:
    options = CheckOptions(symmetry=sym, threads=1, **extra)  # type: ignore[arg-type]
    return run(GpuEngine("host") if engine == "gpu-host" else get_engine(engine), model,
               options)


def bundled(spec: str, gpus: int, sms: int, monitor: bool) -> ir.Model:
    model = load_spec(ROOT / "specs" / f"{spec}.coh", {"gpus": gpus, "sms": sms})
    return model if monitor else drop_properties(model, ["coherent"])


# (spec, parameters, symmetry): sizes whose reference search takes a second or two
SEARCHES = [(TWO_LEVEL, {"gpus": 1, "sms": 2}, False), (TWO_LEVEL, {"gpus": 2, "sms": 1}, True),
            (CONSTRUCTS, {"gpus": 2, "sms": 1}, False), (CONSTRUCTS, {"gpus": 2, "sms": 1}, True),
            (CONSTRUCTS, {"gpus": 1, "sms": 2, "values": 1}, True)]


@pytest.mark.parametrize(("path", "params", "sym"), SEARCHES,
                         ids=lambda x: x.stem if isinstance(x, Path) else
                         "x".join(str(v) for v in x.values()) if isinstance(x, dict) else
                         ("sym" if x else "nosym"))
def test_host_kernels_are_the_reference_and_compiled_engines(
        path: Path, params: dict[str, int], sym: bool) -> None:
    model = load_spec(path, params)
    gpu = on("gpu-host", model, sym)
    assert gpu.engine == "gpu" and gpu.states > 100
    assert summary(gpu) == summary(on("reference", model, sym))
    assert summary(gpu) == summary(on("compiled", model, sym))


# the rows of HIER_COUNTS that one host thread explores in a few seconds at most; the 2x2
# rows (up to 12.6 million states) run on the GPU (tests/test_gpu_device.py)
ROWS = sorted(k for k in HIER_COUNTS if (k[1], k[2]) != (2, 2))
QUICK = {("gpu_two_level", 1, 2, False), ("multigpu_broadcast", 2, 1, False),
         ("hmg", 1, 2, False)}


@pytest.mark.parametrize("key", [pytest.param(k, marks=() if k in QUICK else pytest.mark.slow)
                                 for k in ROWS],
                         ids=lambda k: f"{k[0]}-{k[1]}x{k[2]}-{'mon' if k[3] else 'nomon'}")
def test_bundled_specs_pinned_counts_and_the_compiled_engine(
        key: tuple[str, int, int, bool]) -> None:
    """The counts pinned in HIER_COUNTS (the reference engine's), with symmetry and without,
    and everything else as the compiled engine (verdicts, rules, depth, failures)."""
    model = bundled(*key)
    for n, sym in zip(HIER_COUNTS[key], (True, False), strict=True):
        if n is None:
            continue
        gpu = on("gpu-host", model, sym)
        assert gpu.states == n
        assert summary(gpu) == summary(on("compiled", model, sym))


# failing rows: an invariant at 2 GPUs (gpu_two_level, multigpu_broadcast), the coherence
# monitor's 13-step failure (gpu_two_level with the monitor)
FAILING = [("gpu_two_level", 2, 1, False), ("multigpu_broadcast", 2, 1, False),
           ("gpu_two_level", 2, 1, True)]


@pytest.mark.parametrize("key", FAILING,
                         ids=lambda k: f"{k[0]}-{k[1]}x{k[2]}-{'mon' if k[3] else 'nomon'}")
@pytest.mark.parametrize("sym", [True, False], ids=["sym", "nosym"])
def test_counterexample_paths_replay_through_the_semantics(
        key: tuple[str, int, int, bool], sym: bool) -> None:
    """Each raw failure path the kernels store (packed states, canonical under symmetry) is
    rebuilt step by step from a real initial state by the reference semantics (the driver's
    ``rebuild`` raises when a step is not a successor); the reduced search was kept (no
    fallback to the unreduced one) and its shortest counterexamples are the compiled
    engine's."""
    model = bundled(*key)
    layout = Layout(model)
    sem = Semantics(model)
    raw = GpuEngine("host").explore(model, layout, CheckOptions(symmetry=sym, threads=1))
    assert raw.failures
    group = make_symmetry(sem) if sym else None
    rebuilt = [rebuild(sem, layout, group, f) for f in raw.failures]
    for f, r in zip(raw.failures, rebuilt, strict=True):
        assert r.key == f.key and r.length == len(f.path) - 1 + (r.kind in (
            "error", "coherence"))
    gpu = on("gpu-host", model, sym)
    assert gpu.verdict == "fails" and NOT_SYMMETRIC not in gpu.notes
    assert gpu.symmetry == ("exact" if sym else "off")
    assert summary(gpu) == summary(on("compiled", model, sym))
    if key[3]:
        assert any(f.kind == "coherence" for f in gpu.failures)


def test_stop_at_first_stops_as_the_compiled_engine() -> None:
    model = bundled("multigpu_broadcast", 2, 1, False)
    for extra in ({"stop_at_first": True},):
        gpu = on("gpu-host", model, True, **extra)
        assert gpu.stopped is not None
        compiled = on("compiled", model, True, **extra)
        assert (gpu.verdict, gpu.stopped) == (compiled.verdict, compiled.stopped)


# ---------------------------------------------------------------- the NVRTC source


def _nvcc_check(source: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """``source`` (the NVRTC target's) compiled by nvcc to an sm_90 cubin. NVRTC has no
    system headers, so the prelude declares ``uint64_t`` and friends; nvcc's implicit
    ``cuda_runtime.h`` brings the system's, so the whole unit goes into a namespace."""
    cu = tmp / "co_gpu.cu"
    cu.write_text("namespace co_nvrtc_unit {\n" + source + "\n}\n")
    return subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-std=c++17",
                           "-diag-suppress=177", "-o", str(tmp / "co_gpu.cubin"), str(cu)],
                          capture_output=True, text=True, check=False, timeout=600)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
@pytest.mark.parametrize("spec", [pytest.param(s, marks=() if s == "hmg" else pytest.mark.slow)
                                  for s in BUNDLED])
def test_nvrtc_source_compiles_for_the_gpu(spec: str, tmp_path: Path) -> None:
    """The kernels of each bundled hierarchical spec at 2 GPUs of 2 SMs, nested symmetry
    included, are valid CUDA for the H200 (the hosts that run the tests have no GPU)."""
    model = load_spec(ROOT / "specs" / f"{spec}.coh", {"gpus": 2, "sms": 2})
    source = kernel_source(generate(model, Layout(model)), 1, "nvrtc")
    done = _nvcc_check(source, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "co_gpu.cubin").stat().st_size > 10_000


# ---------------------------------------------------------------- the command line


def _check_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coherence.cli", "check", str(TWO_LEVEL),
                           "-p", "gpus=1", "-p", "sms=2", "--engine", "gpu", *args],
                          capture_output=True, text=True, cwd=ROOT, check=False, timeout=600)


@pytest.mark.skipif(GpuEngine().available() is None, reason="a GPU engine is available here")
def test_command_line_without_a_gpu_says_why_not_hierarchical() -> None:
    """No located refusal any more: the same one-line reason as for a flat spec."""
    out = _check_cli()
    assert out.returncode == 2
    assert out.stderr.startswith("<command line>: error: the gpu engine cannot run here: ")
    assert "hierarchical" not in out.stderr and "Traceback" not in out.stderr
