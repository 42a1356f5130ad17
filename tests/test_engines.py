"""The engine interface and its driver: neutral results, replayed traces, one failure per
key, the engine named in every report, compact packed storage in the reference engine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

from coherence import ir
from coherence.cli import main
from coherence.engines import ENGINE_NAMES, EngineUnavailable, check, get_engine, resolve_engine
from coherence.engines.api import RawFailure, RawResult
from coherence.engines.driver import run
from coherence.engines.reference import ReferenceEngine
from coherence.engines.reference.store import PackedStore
from coherence.layout import Layout
from coherence.results import CheckOptions
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties
from coherence.trace import TraceReplayError

ROOT = Path(__file__).resolve().parent.parent
GERMAN = ROOT / "specs" / "german.coh"
IS_D_NO_FWD = ROOT / "specs" / "mutants" / "mesi_dir_is_d_takes_no_fwd.coh"
SEED = ROOT / "specs" / "broadcast_invalidate.coh"


def test_engine_names_and_registry() -> None:
    assert ENGINE_NAMES[:2] == ("auto", "reference")
    assert get_engine("reference").name == "reference"
    with pytest.raises(EngineUnavailable, match="unknown engine 'warp'"):
        get_engine("warp")
    engine, notes = resolve_engine("reference")
    assert isinstance(engine, ReferenceEngine) and notes == []


def test_packed_store_finds_what_it_stored_across_growth() -> None:
    store = PackedStore(3, capacity=4)
    keys = [i.to_bytes(3, "little") for i in range(0, 30_000, 7)]
    ids = [store.add(k, i - 1) for i, k in enumerate(keys)]
    assert ids == list(range(len(keys)))
    assert all(store.add(k, 0) is None for k in keys)
    assert all(store[i] == k for i, k in enumerate(keys))
    assert (5).to_bytes(3, "little") not in store
    assert store.path_to(3) == [0, 1, 2, 3]


def test_reference_engine_stores_states_packed() -> None:
    """Packed width + a 4-byte parent + table slack, not a Python object per state."""
    model = drop_properties(load_spec(GERMAN, {"agents": 2}), ["coherent"])
    result = check(model, CheckOptions(symmetry=False))
    assert result.states == 3381
    width = (Layout(model).bits + 7) // 8
    assert width + 4 < result.bytes_per_state <= width + 4 + 4 / 0.3 + 1
    assert result.bytes_per_state <= 40


def test_one_failure_per_key_and_the_property_it_breaks(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(IS_D_NO_FWD), "--skip", "coherent", "--agents", "2",
                 "--engine", "reference", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["engine"] == "reference" and doc["threads"] == 1
    kinds = [(f["kind"], f["property"]) for f in doc["failures"]]
    assert len(kinds) == len(set(kinds))
    assert ("no-transition", "FwdGetS") in kinds
    assert doc["properties"]["no-transition"] == "fails"
    assert doc["properties"]["errors"] == "holds"


def test_headline_names_the_agents_of_the_trace() -> None:
    model = drop_properties(load_spec(IS_D_NO_FWD, {"agents": 2}), ["coherent"])
    result = check(model)
    (fail,) = [f for f in result.failures if f.name == "FwdGetS"]
    receiver = fail.message.rsplit(" of ", 1)[1]
    assert any(receiver in step.actor for step in fail.trace), (fail.message, fail.trace)


def test_the_summary_names_the_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SEED), "--agents", "2", "--skip", "coherent",
                 "--engine", "reference"]) == 1
    assert "engine reference" in capsys.readouterr().out


@attrs.define
class _LyingEngine:
    """An engine whose counterexample path skips a step: the driver must refuse it."""

    name: str = "lying"

    def available(self) -> str | None:
        return None

    def explore(self, model: ir.Model, layout: Layout, options: CheckOptions) -> RawResult:
        real = ReferenceEngine().explore(model, layout, options)
        failures = [RawFailure(f.key, [f.path[0], f.path[-1]]) for f in real.failures]
        return attrs.evolve(real, failures=failures)


def test_paths_from_any_engine_are_replayed_before_they_are_shown() -> None:
    model = load_spec(SEED, {"agents": 2})
    with pytest.raises(TraceReplayError):
        run(_LyingEngine(), model, CheckOptions(symmetry=False))


def test_an_honest_foreign_engine_gets_the_reference_report() -> None:
    @attrs.define
    class Honest(_LyingEngine):
        name: str = "honest"

        def explore(self, model: ir.Model, layout: Layout,
                    options: CheckOptions) -> RawResult:
            return ReferenceEngine().explore(model, layout, options)

    model = load_spec(SEED, {"agents": 2})
    ours = run(Honest(), model, CheckOptions())
    ref = check(model, CheckOptions())
    assert ours.engine == "honest"
    assert [(f.key, f.length, f.message) for f in ours.failures] == [
        (f.key, f.length, f.message) for f in ref.failures]
    assert ref.failures and ref.verdict == "fails"


def test_the_default_engine_is_compiled_where_a_compiler_exists(
        capsys: pytest.CaptureFixture[str]) -> None:
    compiled_reason = get_engine("compiled").available()
    assert main(["check", str(SEED), "--agents", "2", "--skip", "coherent", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    if compiled_reason is None:
        assert doc["engine"] == "compiled" and doc["notes"] == []
    else:
        assert doc["engine"] == "reference"
        assert doc["notes"][0] == f"reference engine used: {compiled_reason}"
    assert doc["stats"]["states"] == 322


def test_auto_falls_back_to_the_reference_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    from coherence.engines.compiled import CompiledEngine

    def refuse(self: object, model: ir.Model, layout: Layout,
               options: CheckOptions) -> RawResult:
        raise EngineUnavailable("the compiled engine cannot translate this model: test")

    monkeypatch.setattr(CompiledEngine, "available", lambda self: None)
    monkeypatch.setattr(CompiledEngine, "explore", refuse)
    model = load_spec(SEED, {"agents": 2})
    result = check(model, CheckOptions(), engine="auto")
    assert result.engine == "reference" and result.verdict == "fails"
    assert result.notes == ["reference engine used: the compiled engine cannot translate "
                            "this model: test"]
    with pytest.raises(EngineUnavailable):
        check(model, CheckOptions(), engine="compiled")


def test_a_deadlock_report_shows_the_stuck_state(capsys: pytest.CaptureFixture[str]) -> None:
    mutant = ROOT / "specs" / "mutants" / "msi_dir_mi_a_stalls_fwd.coh"
    assert main(["check", str(mutant), "--agents", "2", "--skip", "coherent",
                 "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (dead,) = [f for f in doc["failures"] if f["kind"] == "deadlock"]
    assert dead["details"][0] == "stuck state:"
    # which of the two symmetric deadlocks is reported depends on the worker threads' timing
    assert any(re.fullmatch(r"Cache\[[01]\]: MI_A, data=0, acks=0", d) for d in dead["details"])
    assert any(d.startswith("in flight: FwdGetS") and d.endswith(", stalled")
               for d in dead["details"])
    assert any(d.endswith("queued behind another message") for d in dead["details"])
