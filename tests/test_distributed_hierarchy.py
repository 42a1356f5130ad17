"""The distributed engine (Ray actors) on hierarchical specs (issue 20; NOTE(compiled-hierarchy)).

Its workers run the C that ``cgen`` generates for a hierarchy (``chier.py``, the nested
symmetry of ``chsym.py``), so a search must equal the compiled engine's (states, rules fired,
depth, verdict, each failure's shortest counterexample length) with symmetry and without, and
the counts pinned in HIER_COUNTS; the small test specs of tests/specs/hierarchy/ also equal
the reference engine's. Every counterexample's actions replay through ``coherence.semantics``
to the same failure. A local Ray cluster of 3 CPUs, as in tests/test_distributed.py (one
pytest-xdist group: the two modules never start two clusters at once).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HIER_COUNTS, ROOT

from coherence import ir, load_spec
from coherence.cli import main
from coherence.engines import check
from coherence.engines.compiled import CompiledEngine
from coherence.results import CheckOptions, CheckResult, Failure
from coherence.semantics import Semantics
from coherence.spec.load import load_spec_text
from coherence.spec.select import drop_properties
from coherence.trace import action_from_json, replay_actions

if os.environ.get("COHERENCE_REQUIRE_TOOLS") != "1":
    pytest.importorskip("ray", reason="Ray is not installed (pip install '.[distributed]')")
import ray

pytestmark = [
    pytest.mark.skipif(CompiledEngine().available() is not None, reason="no C compiler"),
    pytest.mark.xdist_group("ray-cluster"),
]

HIERARCHY = ROOT / "tests" / "specs" / "hierarchy"
TWO_LEVEL = HIERARCHY / "two_level_wt.coh"
CONSTRUCTS = HIERARCHY / "compiled_constructs.coh"
BIG = 300_000  # rows with more states are left to the compiled engine's slow tests


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


def distributed(model: ir.Model, options: CheckOptions, **settings: Any) -> CheckResult:
    result = check(model, options, engine="distributed", settings=settings)
    assert result.engine == "distributed"
    return result


def bundled(spec: str, gpus: int, sms: int, monitor: bool) -> ir.Model:
    model = load_spec(ROOT / "specs" / f"{spec}.coh", {"gpus": gpus, "sms": sms})
    return model if monitor else drop_properties(model, ["coherent"])


def replays_through_the_semantics(model: ir.Model, failure: Failure) -> None:
    """The failure's actions, run by the reference semantics from the initial state, give the
    same steps and end in the same failure (the invariant false in the last state, or the
    last step's error)."""
    sem = Semantics(model)
    actions = [action_from_json(s.action) for s in failure.trace]
    assert [s.render() for s in replay_actions(sem, actions)] == [
        s.render() for s in failure.trace]
    state = sem.initial_states()[0]
    for act in actions:
        out = sem.execute(state, act)
        assert out is not None
        if out.state is None:  # the last step raised the failure's error
            assert out.error is not None and failure.kind in ("error", "coherence")
            return
        state = out.state
    assert failure.kind == "invariant"
    assert failure.name in {v.name for v in sem.invariant_violations(state)}


# ---------------------------------------------------------------- the bundled specs

# the default tier: (spec, gpus, sms, monitor, symmetry, workers); two of them fail
QUICK = {("hmg", 1, 2, False, True, 2), ("multigpu_broadcast", 2, 1, False, False, 2),
         ("gpu_two_level", 2, 1, False, True, 3)}


def bundled_cases() -> list[Any]:
    cases = []
    for key, counts in HIER_COUNTS.items():
        for symmetry, n in zip((True, False), counts, strict=True):
            if n is None or n > BIG:
                continue
            for workers in (2, 3):
                case = (*key, symmetry, workers)
                cases.append(pytest.param(
                    *case, n, marks=[] if case in QUICK else [pytest.mark.slow],
                    id=f"{key[0]}-{key[1]}x{key[2]}-{'mon' if key[3] else 'nomon'}-"
                       f"{'sym' if symmetry else 'nosym'}-w{workers}"))
    return cases


def test_the_quick_rows_are_pinned_rows() -> None:
    ids = {tuple(p.values[:6]) for p in bundled_cases()}
    assert ids >= QUICK  # a renamed row would leave the default tier without it


@pytest.mark.parametrize(("spec", "gpus", "sms", "monitor", "symmetry", "workers", "pinned"),
                         bundled_cases())
def test_bundled_spec_matches_the_compiled_engine(spec: str, gpus: int, sms: int,
                                                  monitor: bool, symmetry: bool, workers: int,
                                                  pinned: int) -> None:
    model = bundled(spec, gpus, sms, monitor)
    options = CheckOptions(symmetry=symmetry, threads=2)
    result = distributed(model, options, workers=workers)
    assert result.states == pinned
    assert summary(result) == summary(check(model, options, engine="compiled"))
    for f in result.failures:
        replays_through_the_semantics(model, f)


# ---------------------------------------------------------------- the test specs

# (spec, parameters, symmetry, default tier?): reference searches of a second or two
SEARCHES = [(TWO_LEVEL, {"gpus": 1, "sms": 2}, False, False),
            (TWO_LEVEL, {"gpus": 2, "sms": 1}, True, True),
            (CONSTRUCTS, {"gpus": 2, "sms": 1}, True, True),
            (CONSTRUCTS, {"gpus": 1, "sms": 2, "values": 1}, False, False)]


@pytest.mark.parametrize(("path", "params", "symmetry"), [
    pytest.param(p, v, s, marks=[] if quick else [pytest.mark.slow],
                 id=f"{p.stem}-{'x'.join(map(str, v.values()))}-{'sym' if s else 'nosym'}")
    for p, v, s, quick in SEARCHES])
def test_test_spec_matches_the_reference_engine(path: Path, params: dict[str, int],
                                                symmetry: bool) -> None:
    model = load_spec(path, params)
    options = CheckOptions(symmetry=symmetry, threads=1)
    result = distributed(model, options, workers=2)
    assert summary(result) == summary(check(model, options, engine="reference"))
    assert result.states > 100


# run-time errors of hierarchical constructs (each reachable): an sm index of the memory
# node, a store performed by a node that is no processor, a send to an undefined node
ERRORS = """
param gpus = 2;
param sms = 1;
index gpu: gpus;
index sm: sms within gpu;
network net: unordered, capacity = 2;
message Hi on net;
event Load;
var to: node = undefined;
machine L1[g: gpu, s: sm] {
  state I;
  init I;
  var d: value = 0;
  on Load in I { perform load(d); }
  on Hi in I { }
}
machine L2[g: gpu] {
  state R;
  init R;
  var pick: sm = undefined;
  var d: value = 0;
  on Hi in R { pick := msg.src.sm; }
  rule NotAProcessor in R { perform store(d) by self; }
  rule Nowhere in R { send Hi to to; }
}
machine Mem {
  state R;
  init R;
  rule Go(x: gpu) in R { send Hi to L2[x]; }
}
property coherent: coherence;
"""


def test_run_time_errors_match_and_replay() -> None:
    model = load_spec_text(ERRORS, "errors.coh")
    options = CheckOptions(threads=1)
    result = distributed(model, options, workers=2)
    assert summary(result) == summary(check(model, options, engine="reference"))
    assert sorted(f.key[1] for f in result.failures if f.key[0] == "error") == [
        "no-index", "not-agent", "undefined-dst"]
    for f in result.failures:
        replays_through_the_semantics(model, f)


@pytest.mark.slow  # 75,548 states with the coherence monitor
def test_a_coherence_failure_across_gpus_replays() -> None:
    """Two GPUs' racing stores reach memory in the other order (tests/test_hier_specs.py):
    the coherence monitor's failure, found by the workers, replays to the same error."""
    model = bundled("gpu_two_level", 2, 1, True)
    result = distributed(model, CheckOptions(), workers=2)
    assert result.states == HIER_COUNTS[("gpu_two_level", 2, 1, True)][0]
    lengths = {f.name: f.length for f in result.failures}
    assert lengths == {"l2_copy_current": 7, "coherent": 13}
    for f in result.failures:
        replays_through_the_semantics(model, f)


# ---------------------------------------------------------------- checkpoints, the CLI


def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    model = bundled("multigpu_broadcast", 2, 1, False)
    options = CheckOptions(symmetry=False)
    full = distributed(model, options, workers=2)
    assert full.verdict == "fails"
    first = distributed(model, CheckOptions(symmetry=False, max_depth=4), workers=2,
                        checkpoint=tmp_path)
    assert first.stopped == "--max-depth 4 reached" and 0 < first.states < full.states
    resumed = distributed(model, options, resume=tmp_path)
    assert summary(resumed) == summary(full)
    assert [f.trace for f in resumed.failures] == [f.trace for f in full.failures]


def test_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(TWO_LEVEL), "-p", "gpus=2", "-p", "sms=1", "--engine",
                 "distributed", "--workers", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["engine"] == "distributed" and doc["verdict"] == "holds"
    assert doc["symmetry"] == "exact"
    model = load_spec(TWO_LEVEL, {"gpus": 2, "sms": 1})
    assert doc["stats"]["states"] == check(model, CheckOptions(threads=1),
                                           engine="compiled").states


# ---------------------------------------------------------------- the benchmark's rows


def test_benchmark_rows_size_a_hierarchy_by_its_parameters() -> None:
    from coherence.engines.bench import parse_row
    row = parse_row("hmg:gpus=2/sms=1:sym")
    assert (Path(row.spec).name, row.agents, row.params, row.symmetry) == (
        "hmg.coh", None, (("gpus", 2), ("sms", 1)), True)
    assert row.name == "hmg:gpus=2/sms=1:sym" and row.overrides() == {"gpus": 2, "sms": 1}
    assert row.title.startswith("hmg, gpus=2 sms=1, symmetry exact")
    assert parse_row("german:3").overrides() == {"agents": 3}
    with pytest.raises(ValueError, match="no parameter 'agents'"):
        parse_row("hmg:2")  # a hierarchy has no agents
    with pytest.raises(ValueError, match="no parameter 'cores'"):
        parse_row("hmg:cores=2")
    with pytest.raises(ValueError, match="is not SPEC:AGENTS"):
        parse_row("hmg:gpus=two")


def test_benchmark_cells_of_a_hierarchical_row() -> None:
    """The cells of ``coherence bench engines --engine distributed --rows hmg:...`` (measured
    here in this process, on the module's cluster): the pinned count, monitor skipped."""
    from coherence.engines.bench import measure, parse_row
    row = parse_row("multigpu_broadcast_acked:gpus=1/sms=2:sym")
    spec = {"timeout": 120.0, "threads": 2}
    cells = {tool: measure(row, tool, spec) for tool in ("compiled-1", "distributed-2")}
    pinned = HIER_COUNTS[("multigpu_broadcast_acked", 1, 2, False)][0]
    assert [c["states"] for c in cells.values()] == [pinned, pinned]
    assert cells["distributed-2"]["threads"] == 2
    assert all(c["verdict"] == "holds" and c["symmetry"] == "exact" for c in cells.values())
