"""Litmus programs on hierarchical specs: threads placed on SMs of one GPU or of several
(``coherence.litmus.place``), scoped annotations mapped onto each scope's events
(NOTE(litmus-events) in coherence/litmus/model.py), the verdicts that tell the four GPU models
apart, and ``hw report`` comparing one GPU's results with the intra-GPU placement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.errors import SpecError
from coherence.hw.report import Verdicts
from coherence.litmus.catalogue import find_test
from coherence.litmus.model import program_key, run_on_model
from coherence.litmus.place import coordinates, index_params, load_for_test
from coherence.litmus.program import holds, outcome_dict
from coherence.litmus.variants import apply_variant
from coherence.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent
TWO_LEVEL = str(ROOT / "specs" / "gpu_two_level.coh")
HMG = str(ROOT / "specs" / "hmg.coh")
LITERAL = str(ROOT / "specs" / "multigpu_broadcast.coh")
ACKED = str(ROOT / "specs" / "multigpu_broadcast_acked.coh")
FLAT = str(ROOT / "specs" / "gpu_write_through.coh")


def allowed(spec: str, test: str, variant: str, place: str) -> bool:
    """Whether ``spec`` allows the condition of ``test`` in ``variant`` at ``place``."""
    t = apply_variant(find_test(test), variant)
    model, where = load_for_test(spec, {}, t, place)
    res = run_on_model(model, t, nodes=where.nodes)
    assert res.complete and not res.errors and not res.stuck
    return any(holds(t.condition, outcome_dict(t, o)) for o in res.outcomes)


# ---------------------------------------------------------------- placement


def test_coordinates_of_each_placement() -> None:
    assert coordinates("same-gpu", 3, 2) == ((0, 0), (0, 1), (0, 2))
    assert coordinates("cross-gpu", 3, 2) == ((0, 0), (1, 0), (2, 0))
    assert coordinates("0.0,0.1,1.0", 3, 2) == ((0, 0), (0, 1), (1, 0))
    for bad, what in [("0.0,0.1", "2 places for 3 threads"), ("0,1,2", "needs 2 index values"),
                      ("0.0,0.0,1.0", "two threads on one processor")]:
        with pytest.raises(SpecError, match=what):
            coordinates(bad, 3, 2)


def test_index_types_are_sized_through_their_parameters() -> None:
    model = load_spec(TWO_LEVEL)
    assert index_params(model) == ["gpus", "sms"]
    mp = find_test("MP")
    same, where = load_for_test(TWO_LEVEL, {}, mp, "same-gpu")
    assert {p.name: p.value for p in same.params}["gpus"] == 1
    assert {p.name: p.value for p in same.params}["sms"] == 2
    assert where.names() == ["L1[0, 0]", "L1[0, 1]"]
    cross, where = load_for_test(TWO_LEVEL, {}, mp, "cross-gpu")
    assert {p.name: p.value for p in cross.params}["gpus"] == 2
    assert {p.name: p.value for p in cross.params}["sms"] == 1
    assert where.names() == ["L1[0, 0]", "L1[1, 0]"]
    # IRIW's writers on one GPU and its readers on another: 2 GPUs x 2 SMs
    iriw = find_test("IRIW")
    _, where = load_for_test(TWO_LEVEL, {}, iriw, "0.0,0.1,1.0,1.1")
    assert where.names() == ["L1[0, 0]", "L1[0, 1]", "L1[1, 0]", "L1[1, 1]"]


def test_flat_specs_take_no_placement() -> None:
    with pytest.raises(SpecError, match="not hierarchical"):
        load_for_test(FLAT, {}, find_test("MP"), "cross-gpu")
    model, where = load_for_test(FLAT, {}, find_test("MP"))
    assert model.agents == 2 and where.nodes == (0, 1) and where.names() == ["L1[0]", "L1[1]"]


# ---------------------------------------------------------------- scoped events


def events(spec: str, variant: str) -> list[list[str]]:
    t = apply_variant(find_test("MP"), variant)
    model, _ = load_for_test(spec, {}, t)
    steps, _cached, _locs = program_key(model, t)
    return [[s.event for s in thread] for thread in steps]


def test_each_scope_has_its_events() -> None:
    assert events(HMG, "acqrel.sys") == [["FenceSys", "FenceSys", "Store",
                                          "FenceSys", "FenceSys", "Store"],
                                         ["LoadSys", "FenceSys", "FenceSys", "LoadSys",
                                          "FenceSys", "FenceSys"]]
    assert events(HMG, "acqrel.gpu")[1] == ["LoadGpu", "FenceGpu", "FenceGpu", "LoadGpu",
                                            "FenceGpu", "FenceGpu"]
    assert events(HMG, "fence.cta") == [["Store", "Store"], ["LoadGpu", "LoadGpu"]]
    assert events(HMG, "weak") == [["Store", "Store"], ["Load", "Load"]]
    # volatile is sys scope
    assert events(HMG, "volatile")[1] == ["LoadSys", "LoadSys"]


def test_a_missing_scope_falls_back_to_the_wider_one() -> None:
    # the broadcast specs keep their L2s coherent in hardware: no sys-scope events
    assert events(LITERAL, "acqrel.sys") == events(LITERAL, "acqrel.gpu")
    assert events(LITERAL, "fence.sys")[0] == ["Store", "FenceGpu", "FenceGpu", "Store"]


# ---------------------------------------------------------------- verdicts that separate them


def test_one_gpu_the_hierarchical_models_agree_with_the_flat_write_through_model() -> None:
    for spec in (TWO_LEVEL, HMG, LITERAL, ACKED):
        assert allowed(spec, "MP", "weak", "same-gpu")
        assert not allowed(spec, "MP", "fence.gpu", "same-gpu")
        assert not allowed(spec, "MP+cached", "acqrel.gpu", "same-gpu")


def test_two_level_a_stale_l2_copy_needs_sys_scope() -> None:
    assert allowed(TWO_LEVEL, "MP+cached", "fence.gpu", "cross-gpu")
    assert not allowed(TWO_LEVEL, "MP+cached", "fence.sys", "cross-gpu")


def test_hmg_gpu_scope_does_not_order_across_gpus() -> None:
    assert allowed(HMG, "MP", "acqrel.gpu", "cross-gpu")
    assert not allowed(HMG, "MP", "acqrel.sys", "cross-gpu")


def test_literal_broadcast_loses_an_invalidation_whatever_the_scope() -> None:
    assert allowed(LITERAL, "MP+cached", "fence.sys", "cross-gpu")
    assert not allowed(ACKED, "MP+cached", "fence.sys", "cross-gpu")


# ---------------------------------------------------------------- the command line


def test_cli_place_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["litmus", HMG, "MP", "-V", "acqrel.gpu", "--place", "cross-gpu", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    row = doc["results"][0]
    assert row["place"] == "cross-gpu" and row["processors"] == ["L1[0, 0]", "L1[1, 0]"]
    assert row["allowed_by_model"] is True


@pytest.mark.parametrize(("spec", "place", "message"), [
    (FLAT, "cross-gpu", "is not hierarchical"),
    (HMG, "sideways", "expected same-gpu, cross-gpu"),
    (HMG, "0.0,0.0", "two threads on one processor"),
])
def test_cli_place_errors(capsys: pytest.CaptureFixture[str], spec: str, place: str,
                          message: str) -> None:
    assert main(["litmus", spec, "MP", "-V", "weak", "--place", place]) == 2
    assert message in capsys.readouterr().err


def test_hw_report_compares_one_gpu_with_the_intra_gpu_placement() -> None:
    t = apply_variant(find_test("MP+cached"), "fence.gpu")
    v = Verdicts([TWO_LEVEL], core="blocking")
    model, where = load_for_test(TWO_LEVEL, {}, t, "same-gpu")
    assert v.allowed(TWO_LEVEL, t) == run_on_model(model, t, nodes=where.nodes).outcomes
    cross, far = load_for_test(TWO_LEVEL, {}, t, "cross-gpu")
    assert v.allowed(TWO_LEVEL, t) != run_on_model(cross, t, nodes=far.nodes).outcomes


def test_the_seeds_broadcast_between_gpus_allows_sb_between_sms() -> None:
    """The H200 shows SB's weak outcome between SMs (docs/hardware.md), which the flat
    broadcast_invalidate.coh forbids: it puts the seed's atomic write-and-invalidate between
    SMs. With the broadcast between GPUs' L2s, SMs of one GPU write through to their L2 and SB
    is allowed, as on the hardware."""
    assert allowed(LITERAL, "SB", "weak", "same-gpu")
    assert not allowed(LITERAL, "SB", "fence.gpu", "same-gpu")
    flat = str(ROOT / "specs" / "broadcast_invalidate.coh")
    t = apply_variant(find_test("SB"), "weak")
    model, where = load_for_test(flat, {}, t)
    outcomes = run_on_model(model, t, nodes=where.nodes).outcomes
    assert not any(holds(t.condition, outcome_dict(t, o)) for o in outcomes)
