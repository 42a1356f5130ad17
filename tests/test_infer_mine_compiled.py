"""The compiled engine as mining's state source (``coherence.commands.infer_states``): the
same candidates as the reference search, and the reference search wherever the compiled one
cannot run or could answer differently (a failure met, a state limit)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest
from helpers import MUTEX, ROOT, SPECS

from coherence.commands.infer_states import compiled_states
from coherence.engines.api import RawResult
from coherence.engines.compiled import CompiledEngine
from coherence.ir import Model
from coherence.results import CheckOptions
from coherence.semantics import Semantics, State
from coherence.smt.infer import InferOptions
from coherence.smt.infer_mine import Explored, StateSource, explore, mine, symmetry_of
from coherence.spec.load import load_spec, rebind
from coherence.spec.select import drop_properties

NOAUX = ROOT / "tests" / "specs" / "infer"
NO_COMPILER = CompiledEngine().available()
needs_cc = pytest.mark.skipif(NO_COMPILER is not None,
                              reason=f"the compiled engine cannot run here: {NO_COMPILER}")
LATER = float("inf")  # no deadline: the searches end by themselves (or at max_states)


def _model(path: Path) -> Model:
    m = load_spec(path)
    return drop_properties(m, [p.name for p in m.properties])


def _recording(source: StateSource, into: list[Explored]) -> StateSource:
    def run(model: Model, agents: int, max_states: int, deadline: float) -> Explored:
        ex = source(model, agents, max_states, deadline)
        into.append(ex)
        return ex
    return run


def _orbits(model: Model, agents: int, states: list[State]) -> set[object]:
    sym = symmetry_of(Semantics(rebind(model, {"agents": agents})))
    assert sym is not None
    return {sym.canonical(s)[0] for s in states}


@needs_cc
@pytest.mark.parametrize("name", ["german", "broadcast_invalidate_acked"])
def test_compiled_states_mine_the_same_candidates_as_the_reference(name: str) -> None:
    model = _model(NOAUX / f"{name}.coh")
    opts = InferOptions()
    mined = {}
    explored: dict[str, list[Explored]] = {"reference": [], "compiled": []}
    for label, source in (("reference", explore), ("compiled", compiled_states)):
        cands, stats, _tpl = mine(model, (2, 3), opts.max_states, 600.0, opts.literals,
                                  source=_recording(source, explored[label]))
        mined[label] = [c.text for c in cands]
        assert [n for n, _s, complete, _sec in stats.sizes if complete] == [2, 3]
        assert stats.broken is None
    assert [ex.engine for ex in explored["compiled"]] == ["compiled", "compiled"]
    assert [ex.note for ex in explored["compiled"]] == [None, None]
    # one state per orbit in both searches, maybe not the same one
    assert ([len(ex.states) for ex in explored["compiled"]]
            == [len(ex.states) for ex in explored["reference"]])
    assert len(mined["compiled"]) > 100
    assert mined["compiled"] == mined["reference"]


@needs_cc
@pytest.mark.parametrize(("name", "agents"), [("broadcast_invalidate_acked", 2),
                                              ("broadcast_invalidate_acked", 3),
                                              ("german", 2)])
def test_compiled_states_are_the_reference_orbits(name: str, agents: int) -> None:
    model = _model(NOAUX / f"{name}.coh")
    ref = explore(model, agents, 50_000, LATER)
    got = compiled_states(model, agents, 50_000, LATER)
    assert got.engine == "compiled" and got.complete and ref.complete
    assert len(got.states) == len(ref.states)
    assert _orbits(model, agents, got.states) == _orbits(model, agents, ref.states)


def test_without_the_compiled_engine_the_reference_search_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CompiledEngine, "available", lambda self: "no C compiler (test)")
    model = _model(NOAUX / "broadcast_invalidate_acked.coh")
    got = compiled_states(model, 2, 50_000, LATER)
    ref = explore(model, 2, 50_000, LATER)
    assert got.engine == "reference" and got.note == "reference search: no C compiler (test)"
    assert got.states == ref.states and got.complete


@needs_cc
def test_a_model_the_code_generator_refuses_goes_to_the_reference_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from coherence.engines.cgen import codegen

    def refuse(*_args: object, **_kw: object) -> object:
        raise codegen.CodegenError("construct X is not translated (test)")
    monkeypatch.setattr(codegen, "generate", refuse)
    model = _model(NOAUX / "broadcast_invalidate_acked.coh")
    got = compiled_states(model, 2, 50_000, LATER)
    assert got.engine == "reference"
    assert got.note is not None and "construct X is not translated (test)" in got.note
    assert got.states == explore(model, 2, 50_000, LATER).states


@needs_cc
@pytest.mark.parametrize("mutant", ["german_store_in_shared", "acked_inv_lost_in_is_d"])
def test_a_failure_met_is_the_reference_searchs_first_with_its_depth(mutant: str) -> None:
    model = _model(SPECS / "mutants" / f"{mutant}.coh")
    ref = explore(model, 2, 50_000, LATER)
    got = compiled_states(model, 2, 50_000, LATER)
    assert ref.broken is not None
    assert got.engine == "reference" and got.note is not None and "failure" in got.note
    assert (got.broken, got.states, got.complete) == (ref.broken, ref.states, False)


@needs_cc
def test_a_state_limit_gives_the_reference_searchs_prefix() -> None:
    model = _model(NOAUX / "broadcast_invalidate_acked.coh")
    ref = explore(model, 3, 100, LATER)
    got = compiled_states(model, 3, 100, LATER)
    assert not ref.complete and len(ref.states) == 100
    assert got.engine == "reference" and got.note == "reference search: --max-states 100 reached"
    assert got.states == ref.states and not got.complete


def _infer_json(spec: Path, *extra: str) -> dict[str, object]:
    r = subprocess.run([sys.executable, "-m", "coherence.cli", "prove", str(spec), "--agents",
                        "any", "--infer", "--json", *extra], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                            "PYTHONHASHSEED": "0"}, check=False)
    assert r.returncode == 0, r.stderr
    doc: dict[str, object] = json.loads(r.stdout)["inferred"]
    return doc


@needs_cc
def test_cli_mines_with_the_compiled_engine_unless_told_otherwise(tmp_path: Path) -> None:
    spec = tmp_path / "mutex.coh"
    spec.write_text(MUTEX)
    auto = _infer_json(spec)
    ref = _infer_json(spec, "--mine-engine", "reference")
    engines = {label: [e["engine"] for e in doc["stats"]["explored"]]  # type: ignore[index]
               for label, doc in (("auto", auto), ("reference", ref))}
    assert engines == {"auto": ["compiled", "compiled"], "reference": ["reference", "reference"]}
    assert auto["invariants"] and auto["invariants"] == ref["invariants"]


@needs_cc
def test_at_the_deadline_the_compiled_searchs_states_so_far_are_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from coherence.engines.stopping import time_limit_reached
    real = CompiledEngine.reachable

    def cut_short(self: CompiledEngine, model: Model, layout: object, options: CheckOptions,
                  *rest: object) -> tuple[RawResult, list[int]]:
        # as if the clean stop at options.time_limit came after 10 states
        raw, codes = real(self, model, layout, options, *rest)  # type: ignore[arg-type]
        assert options.time_limit == 1e-3  # the deadline had passed
        return attrs.evolve(raw, stopped=time_limit_reached(options.time_limit)), codes[:10]
    monkeypatch.setattr(CompiledEngine, "reachable", cut_short)
    model = _model(NOAUX / "broadcast_invalidate_acked.coh")
    got = compiled_states(model, 3, 50_000, time.perf_counter() - 1.0)
    assert got.engine == "compiled" and not got.complete and len(got.states) == 10
    assert _orbits(model, 3, got.states) <= _orbits(model, 3, explore(model, 3, 50_000,
                                                                      LATER).states)
