"""The distributed engine (Ray actors) against the compiled engine, through the one driver.

One local Ray cluster (3 CPUs) serves the whole module: starting Ray costs seconds. Counts,
rules fired, depth, verdict and each failure's shortest counterexample length must equal the
compiled engine's with 2 and 3 workers: a handful of specs and mutants here, every bundled
spec and mutant at 2 and 3 agents in the slow tier. Then: a resumed run equals an
uninterrupted one, a killed worker gives a clean partial result, and without Ray the engine
is refused in one line.

Ray is a Python package, not a tool, so conftest's COHERENCE_REQUIRE_TOOLS does not see its
skip: under that setting (CI) a missing Ray fails the import below instead of skipping.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import LIBRARY_COUNTS, LITERAL, ROOT, SEED_COUNTS

from coherence import ir, load_spec
from coherence.cli import main
from coherence.engines import check
from coherence.engines.compiled import CompiledEngine
from coherence.engines.distributed import DistributedEngine
from coherence.mutants import find_mutants, parse_header
from coherence.results import CheckOptions, CheckResult, Progress
from coherence.spec.select import drop_properties

if os.environ.get("COHERENCE_REQUIRE_TOOLS") != "1":
    pytest.importorskip("ray", reason="Ray is not installed (pip install '.[distributed]')")
import ray

pytestmark = [
    pytest.mark.skipif(CompiledEngine().available() is not None, reason="no C compiler"),
    # one pytest-xdist process runs the whole file: one local Ray cluster, not one per process
    pytest.mark.xdist_group("ray-cluster"),
]

MUTANTS = find_mutants(ROOT / "specs" / "mutants")
MSI_DIR = "specs/msi_directory.coh"
GERMAN = "specs/german.coh"
BIG = 300_000  # cases with more states (without symmetry) go to the slow tier


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture(autouse=True)
def quick_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")  # compile time is most of the time here


def summary(result: CheckResult) -> tuple[Any, ...]:
    return (result.states, result.rules_fired, result.depth, result.verdict, result.stopped,
            result.symmetry, sorted((f.key, f.length) for f in result.failures))


def load(spec: str | Path, agents: int, drop: Sequence[str] = ()) -> ir.Model:
    model = load_spec(ROOT / spec, {"agents": agents})
    return drop_properties(model, list(drop)) if drop else model


def distributed(model: ir.Model, options: CheckOptions, **settings: Any) -> CheckResult:
    result = check(model, options, engine="distributed", settings=settings)
    assert result.engine == "distributed"
    return result


def same_as_compiled(model: ir.Model, options: CheckOptions, workers: int) -> None:
    expected = summary(check(model, options, engine="compiled"))
    assert summary(distributed(model, options, workers=workers)) == expected


# the default tier: (spec, agents, symmetry, workers)
QUICK = {(GERMAN, 2, True, 2), (LITERAL, 2, False, 3)}


def spec_cases() -> list[Any]:
    counts = {**LIBRARY_COUNTS,
              **{(s, n, not skip): c for (s, n, skip), c in SEED_COUNTS.items()}}
    cases = []
    for (spec, agents, monitor), (sym_count, full_count) in counts.items():
        for symmetry in (True, False):
            if agents > 3 or (sym_count if symmetry else full_count) == 0:
                continue
            big = (sym_count if symmetry else full_count) > BIG
            for workers in (2, 3):
                quick = (spec, agents, symmetry, workers) in QUICK and monitor and not big
                cases.append(pytest.param(
                    spec, agents, monitor, symmetry, workers,
                    marks=[] if quick else [pytest.mark.slow],
                    id=f"{Path(spec).stem}-{agents}-{'mon' if monitor else 'nomon'}-"
                       f"{'sym' if symmetry else 'nosym'}-w{workers}"))
    return cases


@pytest.mark.parametrize(("spec", "agents", "monitor", "symmetry", "workers"), spec_cases())
def test_spec_matches_the_compiled_engine(spec: str, agents: int, monitor: bool,
                                          symmetry: bool, workers: int) -> None:
    model = load(spec, agents)
    if not monitor:
        model = drop_properties(model, [p.name for p in model.properties
                                        if p.kind == "coherence"])
    same_as_compiled(model, CheckOptions(symmetry=symmetry, threads=2), workers)


# the default tier: an action's error and an invariant, a deadlock
QUICK_MUTANTS = {("msi_dir_ack_count_one_short", 3), ("msi_dir_data_not_forwarded", 2)}
MUTANT_CASES = [
    pytest.param(path, agents, symmetry, workers,
                 id=f"{path.stem}-{agents}-{'sym' if symmetry else 'nosym'}-w{workers}",
                 marks=[] if (path.stem, workers) in QUICK_MUTANTS and agents == 2 and symmetry
                 else [pytest.mark.slow])
    for path in MUTANTS for agents in (2, 3) for symmetry in (True, False)
    for workers in (2, 3)]


@pytest.mark.parametrize(("path", "agents", "symmetry", "workers"), MUTANT_CASES)
def test_mutant_matches_the_compiled_engine(path: Path, agents: int, symmetry: bool,
                                            workers: int) -> None:
    # the mutants verb's setting: both engines stop after the level of the first failure
    # (mutants caught only by a liveness property hold here: safety is all that is searched)
    model = load(path, agents, parse_header(path).skip)
    options = CheckOptions(symmetry=symmetry, stop_at_first=True, threads=2)
    result = distributed(model, options, workers=workers)
    if (path.stem, workers) in QUICK_MUTANTS:
        assert result.verdict == "fails"
    assert summary(result) == summary(check(model, options, engine="compiled"))


def test_every_failure_is_found_at_its_shortest_depth() -> None:
    # without stop_at_first: every failing property, each with its shortest counterexample;
    # and the progress line is fed while the levels run
    seen: list[Progress] = []
    model = load(LITERAL, 3)
    expected = summary(check(model, CheckOptions(threads=2), engine="compiled"))
    result = distributed(model, CheckOptions(progress=seen.append, progress_every=0.0),
                         workers=3)
    assert summary(result) == expected
    assert seen and all(p.states <= result.states for p in seen)
    assert max(p.states for p in seen) > 0
    assert [p.depth for p in seen] == sorted(p.depth for p in seen)


@pytest.mark.slow  # the default tier resumes the failing run below
def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    model = load(GERMAN, 2)
    full = distributed(model, CheckOptions(), workers=2)
    first = distributed(model, CheckOptions(max_depth=9), workers=2, checkpoint=tmp_path)
    assert first.verdict == "incomplete" and first.stopped == "--max-depth 9 reached"
    assert 0 < first.states < full.states
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["depth"] == 9 and manifest["workers"] == 2
    # stopped again on the way, then to the end: the same search as one run
    second = distributed(model, CheckOptions(max_depth=20), resume=tmp_path)
    assert second.stopped == "--max-depth 20 reached" and second.states > first.states
    last = distributed(model, CheckOptions(), resume=tmp_path)
    assert summary(last) == summary(full)
    assert any("resumed from" in n for n in last.notes)


def test_a_resumed_failing_run_keeps_its_counterexamples(tmp_path: Path) -> None:
    model = load(LITERAL, 2)
    full = distributed(model, CheckOptions(symmetry=False), workers=3)
    assert full.verdict == "fails"
    first = distributed(model, CheckOptions(symmetry=False, max_depth=3), workers=3,
                        checkpoint=tmp_path)
    assert first.stopped == "--max-depth 3 reached" and 0 < first.states < full.states
    assert json.loads((tmp_path / "manifest.json").read_text())["depth"] == 3
    # stopped again on the way (its failures so far are in the checkpoint), then to the end
    again = distributed(model, CheckOptions(symmetry=False, max_depth=6), resume=tmp_path)
    assert again.stopped == "--max-depth 6 reached" and again.states > first.states
    resumed = distributed(model, CheckOptions(symmetry=False), resume=tmp_path)
    assert summary(resumed) == summary(full)
    assert [f.trace for f in resumed.failures] == [f.trace for f in full.failures]


def test_resume_refuses_another_model_or_worker_count(tmp_path: Path) -> None:
    from coherence.engines import EngineUnavailable
    distributed(load(GERMAN, 2), CheckOptions(max_depth=3), workers=2, checkpoint=tmp_path)
    with pytest.raises(EngineUnavailable, match="written by 2 workers"):
        distributed(load(GERMAN, 2), CheckOptions(), workers=3, resume=tmp_path)
    with pytest.raises(EngineUnavailable, match="another model"):
        distributed(load(MSI_DIR, 2), CheckOptions(), resume=tmp_path)
    with pytest.raises(EngineUnavailable, match="no checkpoint"):
        distributed(load(GERMAN, 2), CheckOptions(), resume=tmp_path / "nothing")


def test_a_killed_worker_gives_a_partial_result() -> None:
    model = load(GERMAN, 2)

    def kill(depth: int, actors: Sequence[Any]) -> None:
        if depth == 5:
            ray.kill(actors[1])  # asynchronous: wait until it is dead before the level
            for _ in range(600):
                try:
                    ray.get(actors[1].ready.remote(), timeout=60)
                except ray.exceptions.RayActorError:
                    return
                time.sleep(0.1)
            pytest.fail("ray.kill did not kill the worker within a minute")

    engine = DistributedEngine(workers=3, level_hook=kill)
    from coherence.engines.driver import run
    result = run(engine, model, CheckOptions())
    assert result.verdict == "incomplete" and result.exit_code == 3, result.stopped
    assert result.stopped is not None and "worker 1 of 3 died" in result.stopped, result.stopped
    assert "through depth 5" in result.stopped and result.depth == 5
    assert 0 < result.states < LIBRARY_COUNTS[(GERMAN, 2, True)][0]


def test_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(ROOT / MSI_DIR)
    assert main(["check", spec, "-p", "agents=2", "--engine", "distributed", "--workers",
                 "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["engine"] == "distributed" and doc["verdict"] == "holds"
    assert doc["stats"]["states"] == LIBRARY_COUNTS[(MSI_DIR, 2, True)][0]
    assert main(["check", spec, "--workers", "2"]) == 2
    assert "--workers only apply to --engine distributed" in capsys.readouterr().err


def test_without_ray_the_engine_is_refused_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec

    def no_ray(name: str, *args: Any) -> Any:
        return None if name == "ray" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", no_ray)
    assert main(["check", str(ROOT / MSI_DIR), "--engine", "distributed"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Ray is not installed" in err and len(err.splitlines()) == 1


def test_the_benchmark_reports_parallel_efficiency() -> None:
    from coherence.engines.bench import scaling
    cells = [{"tool": "compiled-1", "status": "ok", "states": 100, "seconds": 1.0},
             {"tool": "distributed-1", "status": "ok", "states": 100, "seconds": 4.0},
             {"tool": "distributed-2", "status": "ok", "states": 100, "seconds": 2.5},
             {"tool": "distributed-4", "status": "ok", "states": 50, "seconds": 1.0,
              "stopped": "--time-limit 1 s reached"}]
    scaling(cells)
    assert "parallel_efficiency" not in cells[0] and "parallel_efficiency" not in cells[3]
    assert cells[1]["parallel_efficiency"] == 1.0
    assert cells[2]["parallel_efficiency"] == pytest.approx(4.0 / (2 * 2.5))
    assert cells[2]["states_per_second_per_worker"] == pytest.approx(20.0)


def test_an_unreachable_cluster_address_is_refused_at_once() -> None:
    import socket

    from coherence.engines.distributed.engine import check_address
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reason = check_address(f"127.0.0.1:{port}", timeout=2)
    assert reason is not None and "no Ray cluster answers there" in reason
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert check_address(f"127.0.0.1:{listening.getsockname()[1]}") is None
    assert check_address("auto") is None
