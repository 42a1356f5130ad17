"""Litmus programs on the bundled protocol models: pinned allowed-outcome verdicts, and
differential properties against the sequential-consistency baseline."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coherence.cli import main
from coherence.errors import SpecError
from coherence.litmus.catalogue import find_test
from coherence.litmus.model import model_overrides, program_key, run_on_model
from coherence.litmus.program import Atom, Litmus, Op, holds, outcome_dict, outcome_text
from coherence.litmus.sc import sc_outcomes
from coherence.litmus.variants import VARIANTS, apply_variant
from coherence.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent
SPECS = {name: str(ROOT / "specs" / f"{stem}.coh") for name, stem in [
    ("bi", "broadcast_invalidate"), ("acked", "broadcast_invalidate_acked"),
    ("wt", "gpu_write_through")]}
WEAK = ["weak", "volatile", "relaxed.gpu", "relaxed.sys", "fence.cta"]

# (test, spec) -> the variants whose condition the model allows. Each entry is argued in
# docs/hardware.md; the broadcast-invalidate specs have no ordering events, so their answer is
# the same for every variant.
PINNED: dict[tuple[str, str], list[str]] = {
    **{(t, s): [] for t in ["2+2W", "CoRR", "CoRW", "CoWR", "CoWW", "LB", "LB+data", "MP", "R",
                            "S", "SB", "WRC"] for s in ("bi", "acked")},
    ("MP+cached", "bi"): list(VARIANTS),  # the stale copy outlives the flag
    ("MP+cached", "acked"): [],
    **{(t, "wt"): [] for t in ["CoRR", "CoRW", "CoWR", "CoWW", "LB", "LB+data", "WRC"]},
    ("MP", "wt"): WEAK, ("MP+cached", "wt"): WEAK, ("S", "wt"): WEAK, ("2+2W", "wt"): WEAK,
    ("SB", "wt"): [*WEAK[:4], "acqrel.gpu", "acqrel.sys", "fence.cta"],  # needs an sc fence
    ("R", "wt"): [*WEAK[:4], "acqrel.gpu", "acqrel.sys", "fence.cta"],
}


def _allowed_variants(test_name: str, spec: str) -> list[str]:
    test = find_test(test_name)
    model = load_spec(SPECS[spec], model_overrides(test))
    cache: dict[tuple, set] = {}
    out = []
    for v in VARIANTS:
        vt = apply_variant(test, v)
        key = program_key(model, vt)
        if key not in cache:
            res = run_on_model(model, vt)
            assert res.errors == [] and res.stuck == 0 and res.complete
            cache[key] = res.outcomes
        if any(holds(test.condition, outcome_dict(test, o)) for o in cache[key]):
            out.append(v)
    return out


@pytest.mark.parametrize(("test_name", "spec"), sorted(PINNED))
def test_pinned_verdicts(test_name: str, spec: str) -> None:
    assert _allowed_variants(test_name, spec) == PINNED[(test_name, spec)]


def test_iriw_on_write_through_is_multi_copy_atomic() -> None:
    """One L2 is the only place a store becomes visible to others: IRIW stays forbidden."""
    assert _allowed_variants("IRIW", "wt") == []


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["bi", "acked"])
def test_iriw_on_broadcast_specs(spec: str) -> None:
    assert _allowed_variants("IRIW", spec) == []


def test_mp_cached_outcome_sets_pinned() -> None:
    test = find_test("MP+cached")
    got = {}
    for spec in ("bi", "acked"):
        model = load_spec(SPECS[spec], model_overrides(test))
        res = run_on_model(model, apply_variant(test, "weak"))
        got[spec] = sorted(outcome_text(test, o) for o in res.outcomes)
    sc = sorted(outcome_text(test, o) for o in sc_outcomes(test))
    assert got["acked"] == sc
    assert got["bi"] == sorted([*sc, "1:r0=1 1:r1=0 x=1 y=1"])


def test_stale_l1_copy_and_eviction() -> None:
    """A reader that cached x at 0 reads it stale until the L1 evicts it: with plain loads it
    can still see 0 then 1 (eviction), never 1 then 0 (same-line order)."""
    test = find_test("CoRR")
    model = load_spec(SPECS["wt"], model_overrides(test))
    weak = run_on_model(model, apply_variant(test, "weak")).outcomes
    assert weak == sc_outcomes(test)
    cached = attrs.evolve(test, cached=((1, "x"),))
    got = run_on_model(load_spec(SPECS["wt"], model_overrides(cached)),
                       apply_variant(cached, "weak")).outcomes
    assert sorted(outcome_text(test, o) for o in got) == [
        "1:r0=0 1:r1=0 x=1", "1:r0=0 1:r1=1 x=1", "1:r0=1 1:r1=1 x=1"]


def test_model_must_match_the_test_size() -> None:
    test = find_test("MP")
    model = load_spec(SPECS["acked"], {"agents": 3})
    with pytest.raises(SpecError, match="needs agents=2"):
        run_on_model(model, test)


def test_max_states_stops_early() -> None:
    test = find_test("WRC")
    res = run_on_model(load_spec(SPECS["acked"], model_overrides(test)),
                       apply_variant(test, "weak"), max_states=50)
    assert not res.complete and res.states == 50


# ---------------------------------------------------------------- differential properties


@st.composite
def programs(draw: st.DrawFn) -> Litmus:
    locs = ("x", "y")
    threads = []
    for _ in range(2):
        ops: list[Op] = []
        regs: list[str] = []
        for _ in range(draw(st.integers(1, 3))):
            loc = draw(st.sampled_from(locs))
            if draw(st.booleans()):
                reg = f"r{len(regs)}"
                regs.append(reg)
                ops.append(Op("load", loc, reg))
            else:
                value = draw(st.sampled_from([1, 2, *regs]))
                ops.append(Op("store", loc, None, value))
        threads.append(tuple(ops))
    return Litmus("random", "", locs, (), (), tuple(threads), Atom("x", 0))


def _model_outcomes(spec: str, test: Litmus, variant: str) -> set:
    return run_on_model(load_spec(SPECS[spec], model_overrides(test)),
                        apply_variant(test, variant)).outcomes


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_acked_protocol_is_sequentially_consistent(test: Litmus) -> None:
    assert _model_outcomes("acked", test, "weak") == sc_outcomes(test)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_write_through_with_gpu_fences_is_sequentially_consistent(test: Litmus) -> None:
    assert _model_outcomes("wt", test, "fence.gpu") == sc_outcomes(test)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_broadcast_invalidate_allows_at_least_sc(test: Litmus) -> None:
    assert _model_outcomes("bi", test, "weak") >= sc_outcomes(test)


# ---------------------------------------------------------------- the verb


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["litmus", SPECS["bi"], "MP+cached", "SB", "--variant", "weak", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = {r["test"]: r for r in doc["results"]}
    assert rows["MP+cached"]["allowed_by_model"] is True
    assert rows["MP+cached"]["allowed_by_sc"] is False
    assert rows["MP+cached"]["beyond_sc"] == ["1:r0=1 1:r1=0 x=1 y=1"]
    assert rows["SB"]["allowed_by_model"] is False


def test_cli_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["litmus", SPECS["wt"], "MP", "-V", "weak", "-V", "fence.gpu"]) == 0
    out = capsys.readouterr().out
    assert "allowed" in out and "forbidden" in out and "fence.gpu" in out


def test_cli_incomplete_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["litmus", SPECS["acked"], "WRC", "-V", "weak", "--max-states", "10"]) == 3


@pytest.mark.parametrize("argv", [
    ["litmus", SPECS["bi"], "NOPE"],
    ["litmus", SPECS["bi"], "MP", "--variant", "strong"],
    ["litmus", SPECS["bi"], "MP", "--param", "agents=3"],
    ["litmus", str(ROOT / "specs" / "missing.coh"), "MP"],
])
def test_cli_bad_input(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


# ---------------------------------------------------------------- the pipelined core

PIPELINED_WT = {  # variants whose condition gpu_write_through allows with a pipelined core
    "LB": WEAK, "WRC": WEAK, "MP": WEAK, "CoRR": [],
    "SB": [*WEAK[:4], "acqrel.gpu", "acqrel.sys", "fence.cta"],
}


@pytest.mark.parametrize("name", sorted(PIPELINED_WT))
def test_pipelined_write_through_verdicts(name: str) -> None:
    test = find_test(name)
    model = load_spec(SPECS["wt"], model_overrides(test))
    allowed = [v for v in VARIANTS if any(
        holds(test.condition, outcome_dict(test, o))
        for o in run_on_model(model, apply_variant(test, v), core="pipelined").outcomes)]
    assert allowed == PIPELINED_WT[name]


def test_pipelined_core_only_adds_outcomes() -> None:
    for name in ("MP", "LB", "CoWR"):
        test = apply_variant(find_test(name), "weak")
        for spec in SPECS.values():
            model = load_spec(spec, model_overrides(test))
            assert run_on_model(model, test).outcomes <= run_on_model(
                model, test, core="pipelined").outcomes


def test_acquire_release_order_even_on_a_spec_without_ordering_events() -> None:
    """The acked spec has no Fence event; release/acquire still order the pipelined core."""
    test = find_test("MP")
    model = load_spec(SPECS["acked"], model_overrides(test))
    weak = run_on_model(model, apply_variant(test, "weak"), core="pipelined").outcomes
    acq = run_on_model(model, apply_variant(test, "acqrel.gpu"), core="pipelined").outcomes
    assert (1, 0, 1, 1) in weak
    assert acq == sc_outcomes(test)


def test_unknown_core_is_bad_input() -> None:
    test = find_test("MP")
    with pytest.raises(SpecError, match="unknown core"):
        run_on_model(load_spec(SPECS["acked"], model_overrides(test)), test, core="ooo")
