"""The GPU engine without a GPU: its kernels compiled for the host and run one thread at a
time (``GpuEngine("host")``), against the compiled engine; the NVRTC source; the paths where
CuPy or a GPU is missing and where device memory runs out.

The GPU itself is tested by tests/test_gpu_device.py (skipped without CuPy and a GPU).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import quantifier_specs
from helpers import ROOT
from hypothesis import HealthCheck, assume, given, note, settings
from strategies import loaded_specs

from coherence import ir, load_spec
from coherence.cli import main
from coherence.engines import ENGINE_NAMES, EngineUnavailable, get_engine, resolve_engine
from coherence.engines.cgen.codegen import generate
from coherence.engines.compiled import CompiledEngine
from coherence.engines.driver import run
from coherence.engines.gpu import GpuEngine
from coherence.engines.gpu.device import find_cc
from coherence.engines.gpu.source import kernel_source
from coherence.layout import Layout
from coherence.mutants import find_mutants, parse_header
from coherence.results import CheckOptions, CheckResult
from coherence.spec.load import load_spec_text
from coherence.spec.select import drop_properties

needs_compilers = pytest.mark.skipif(
    find_cc() is None or CompiledEngine().available() is not None, reason="no C compiler")

MUTANTS = find_mutants(ROOT / "specs" / "mutants")
CAP = 1500  # states of a random spec's search (as tests/test_random_specs.py)


def summary(result: CheckResult) -> tuple:
    """Everything two engines must agree on."""
    return (result.states, result.rules_fired, result.depth, result.verdict, result.stopped,
            result.symmetry, sorted((f.key, f.length) for f in result.failures))


def load(spec: str | Path, agents: int, drop: tuple[str, ...] = ()) -> ir.Model:
    model = load_spec(ROOT / spec, {"agents": agents})
    return drop_properties(model, list(drop)) if drop else model


def both(model: ir.Model, options: CheckOptions) -> tuple[CheckResult, CheckResult]:
    return run(GpuEngine("host"), model, options), run(CompiledEngine(), model, options)


SPECS = ["specs/german.coh", "specs/msi_directory.coh", "specs/mesi_snooping.coh",
         "specs/broadcast_invalidate.coh", "specs/gpu_write_through.coh"]


@needs_compilers
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_host_kernels_match_the_compiled_engine(spec: str, symmetry: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")
    gpu, compiled = both(load(spec, 2), CheckOptions(symmetry=symmetry, threads=2))
    assert gpu.engine == "gpu" and gpu.states > 100
    assert summary(gpu) == summary(compiled)


@needs_compilers
@pytest.mark.parametrize("symmetry, states", [(False, 68), (True, 36)], ids=["nosym", "sym"])
def test_host_kernels_keep_the_language_additions(symmetry: bool, states: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``assume`` (states thrown away), the conditional expression, ``not in``, constants and
    procedures reach the GPU kernels through the generated code: counts as pinned in
    tests/test_language_engines.py."""
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")
    gpu, compiled = both(load("tests/specs/language/features.coh", 2),
                         CheckOptions(symmetry=symmetry, threads=2))
    assert gpu.states == states
    assert summary(gpu) == summary(compiled)


@needs_compilers
@pytest.mark.parametrize("path", MUTANTS[::5], ids=lambda p: p.stem)
def test_host_kernels_find_the_mutants_bugs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O0")
    model = load(path, 2, tuple(parse_header(path).skip))
    gpu, compiled = both(model, CheckOptions(stop_at_first=True, threads=2))
    assert gpu.states > 1  # liveness mutants hold here: a safety search cannot see them
    assert summary(gpu) == summary(compiled)


@needs_compilers
def test_bounded_searches_stop_where_the_compiled_engine_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")
    model = load("specs/german.coh", 2)
    gpu, compiled = both(model, CheckOptions(max_depth=7, threads=2))
    assert gpu.stopped == "--max-depth 7 reached" and gpu.verdict == "incomplete"
    assert summary(gpu) == summary(compiled)
    capped = run(GpuEngine("host"), model, CheckOptions(max_states=500, symmetry=False))
    assert capped.stopped == "--max-states 500 reached" and capped.exit_code == 3
    assert 500 <= capped.states < 96117


@needs_compilers
def test_out_of_device_memory_gives_a_partial_result() -> None:
    # German at 4 caches without symmetry has 1,105,353 states: two segments of 2^20 state
    # ids and a table of 2^21 slots. A 24 MiB store holds one segment and 2^20 slots: the
    # search stops with what it found, not a crash.
    model = load("specs/german.coh", 4, ("coherent",))
    result = run(GpuEngine("host"), model, CheckOptions(symmetry=False, memory_limit=24 << 20))
    assert result.verdict == "incomplete" and result.exit_code == 3
    assert result.stopped == "--memory-limit 24 MiB reached"
    assert 900_000 < result.states < 1_105_353


def test_the_same_generated_code_for_both_targets() -> None:
    model = load("specs/german.coh", 2)
    generated = generate(model, Layout(model))
    nvrtc = kernel_source(generated, 1, "nvrtc")
    host = kernel_source(generated, 1, "host")
    assert generated.source in nvrtc and generated.source in host
    assert "#define CO_FN static __device__ inline" in nvrtc
    assert "#define CO_FN static inline" in host
    # after the prelude, the same model and kernels; the host adds its serial launcher
    runtime = nvrtc.split(generated.source)[1]
    assert host.split(generated.source)[1].startswith(runtime)
    assert "co_k_expand" in runtime and "co_host_launch" not in runtime
    with pytest.raises(ValueError):
        kernel_source(generated, 1, "opencl")


def test_gpu_is_a_registered_engine_that_auto_never_picks() -> None:
    assert "gpu" in ENGINE_NAMES
    assert get_engine("gpu").name == "gpu"
    engine, _ = resolve_engine("auto")
    assert engine.name != "gpu"


def test_without_cupy_the_engine_says_why(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    reason = GpuEngine().available()
    assert reason is not None and "CuPy is not installed" in reason
    with pytest.raises(EngineUnavailable, match="the gpu engine cannot run here: CuPy"):
        resolve_engine("gpu")
    rc = main(["check", str(ROOT / "specs/german.coh"), "-n", "2", "--engine", "gpu"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "CuPy is not installed" in err


@needs_compilers
def test_a_time_limit_stops_between_batches() -> None:
    # the limit is looked at after each launch: the first (the initial state's expansion)
    # already ran past a microsecond, so the search stops there with what it stored
    model = load("specs/german.coh", 3, ("coherent",))
    result = run(GpuEngine("host"), model, CheckOptions(symmetry=False, time_limit=1e-6))
    assert result.verdict == "incomplete" and result.exit_code == 3
    assert result.stopped == "--time-limit 1e-06 s reached"
    assert result.depth == 0 and 1 < result.states < 58_077


@needs_compilers
@settings(max_examples=5, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(spec=loaded_specs())
def test_random_specs_match_the_compiled_engine(spec: tuple[str, ir.Model],
                                                tmp_path_factory: pytest.TempPathFactory
                                                ) -> None:
    # every language feature the strategy reaches, through the GPU target's code and runtime
    note(spec[0])
    cache = tmp_path_factory.getbasetemp() / "xdg-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COHERENCE_CFLAGS", "-O0")
        mp.setenv("XDG_CACHE_HOME", str(cache))
        for symmetry in (True, False):
            options = CheckOptions(symmetry=symmetry, max_states=CAP)
            compiled = run(CompiledEngine(), spec[1], options)
            assume(compiled.stopped is None)
            assert summary(run(GpuEngine("host"), spec[1], options)) == summary(compiled)


@needs_compilers
@pytest.mark.parametrize("name", sorted(quantifier_specs.EXPECTED))
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_host_kernels_defer_quantifier_errors(name: str, symmetry: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """NOTE(quantifier-errors) in the CUDA kernels (host build): the failures written out in
    tests/quantifier_specs.py, with and without symmetry."""
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O0")
    text, expected = quantifier_specs.EXPECTED[name]
    gpu, compiled = both(load_spec_text(text), CheckOptions(symmetry=symmetry, threads=2))
    assert gpu.engine == "gpu"
    assert {f.key: f.length for f in gpu.failures} == expected
    assert summary(gpu) == summary(compiled)
