"""The GPU engine on a GPU (skipped without CuPy and a CUDA GPU): counts, verdicts and
counterexample lengths equal to the compiled engine's on every bundled spec and mutant at
2 to 4 agents, and on the hierarchical specs (issue 20) up to 2 GPUs of 2 SMs. Run on the H200
through the device tool; the logs are committed under results/device/gpu-*/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import quantifier_specs

from coherence import ir, load_spec
from coherence.engines.compiled import CompiledEngine
from coherence.engines.driver import run
from coherence.engines.gpu import GpuEngine
from coherence.mutants import find_mutants, parse_header
from coherence.results import CheckOptions, CheckResult
from coherence.spec.load import load_spec_text
from coherence.spec.select import drop_properties

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(GpuEngine().available() is not None,
                       reason=f"no GPU engine here: {GpuEngine().available()}"),
]

ROOT = Path(__file__).resolve().parent.parent  # not helpers.ROOT: helpers needs Z3
# hierarchical specs (issue 20: `index` types) are sized by gpus and sms, not agents
HIER = sorted(p.stem for p in (ROOT / "specs").glob("*.coh")
              if re.search(r"^\s*index\s+\w+\s*:", p.read_text(), re.MULTILINE))
SPECS = sorted(p for p in (ROOT / "specs").glob("*.coh") if p.stem not in HIER)
MUTANTS = find_mutants(ROOT / "specs" / "mutants")


def summary(result: CheckResult) -> tuple:
    return (result.states, result.rules_fired, result.depth, result.verdict, result.stopped,
            result.symmetry, sorted((f.key, f.length) for f in result.failures))


def load(path: Path, agents: int, drop: tuple[str, ...] = ()) -> ir.Model:
    model = load_spec(path, {"agents": agents})
    return drop_properties(model, list(drop)) if drop else model


SPEC_CASES = [pytest.param(p, n, sym, id=f"{p.stem}-{n}-{'sym' if sym else 'nosym'}")
              for p in SPECS for n in (2, 3, 4) for sym in (True, False)
              if sym or n < 4]


@pytest.mark.parametrize(("path", "agents", "symmetry"), SPEC_CASES)
def test_spec_matches_the_compiled_engine(path: Path, agents: int, symmetry: bool) -> None:
    model = load(path, agents)
    options = CheckOptions(symmetry=symmetry, threads=2)
    gpu = run(GpuEngine(), model, options)
    assert gpu.engine == "gpu"
    assert summary(gpu) == summary(run(CompiledEngine(), model, options))


MUTANT_CASES = [pytest.param(p, n, id=f"{p.stem}-{n}") for p in MUTANTS for n in (2, 3, 4)]


@pytest.mark.parametrize(("path", "agents"), MUTANT_CASES)
def test_mutant_matches_the_compiled_engine(path: Path, agents: int) -> None:
    model = load(path, agents, tuple(parse_header(path).skip))
    options = CheckOptions(stop_at_first=True, threads=2)  # the mutants verb's setting
    gpu = run(GpuEngine(), model, options)
    assert gpu.states > 1  # liveness mutants hold here: a safety search cannot see them
    assert summary(gpu) == summary(run(CompiledEngine(), model, options))


# hierarchical specs (NOTE(gpu-hierarchy)): (gpus, sms, coherence monitor?) up to a few
# million states; tests/test_gpu_hierarchy.py runs the smaller ones on the host emulation
HIER_SIZES = [(1, 2, True), (2, 1, True), (2, 2, False)]
HIER_CASES = [pytest.param(s, size, sym, id=f"{s}-{size[0]}x{size[1]}-"
                           f"{'mon' if size[2] else 'nomon'}-{'sym' if sym else 'nosym'}")
              for s in HIER for size in HIER_SIZES for sym in (True, False)]


@pytest.mark.parametrize(("spec", "size", "symmetry"), HIER_CASES)
def test_hierarchical_spec_matches_the_compiled_engine(spec: str, size: tuple[int, int, bool],
                                                       symmetry: bool) -> None:
    model = load_spec(ROOT / "specs" / f"{spec}.coh", {"gpus": size[0], "sms": size[1]})
    if not size[2]:
        model = drop_properties(model, ["coherent"])
    options = CheckOptions(symmetry=symmetry, threads=4)
    gpu = run(GpuEngine(), model, options)
    assert gpu.engine == "gpu" and gpu.states > 1000
    assert summary(gpu) == summary(run(CompiledEngine(), model, options))


def test_hierarchical_spec_on_the_command_line() -> None:
    """`coherence check --engine gpu` takes a hierarchical spec (no located refusal)."""
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "coherence.cli", "check",
                          str(ROOT / "tests" / "specs" / "hierarchy" / "two_level_wt.coh"),
                          "-p", "gpus=1", "-p", "sms=2", "--engine", "gpu", "--json"],
                         capture_output=True, text=True, cwd=ROOT, check=False, timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["engine"], report["verdict"], report["stats"]["states"]) == (
        "gpu", "holds", 542)


@pytest.mark.parametrize("name", sorted(quantifier_specs.EXPECTED))
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_quantifier_errors_do_not_depend_on_agent_order(name: str, symmetry: bool) -> None:
    """NOTE(quantifier-errors) on the GPU: the CUDA kernels defer a quantifier's errors as the
    reference does (the expected failures are written out in tests/quantifier_specs.py)."""
    text, expected = quantifier_specs.EXPECTED[name]
    gpu = run(GpuEngine(), load_spec_text(text), CheckOptions(symmetry=symmetry))
    assert gpu.engine == "gpu" and gpu.stopped is None
    assert {f.key: f.length for f in gpu.failures} == expected
