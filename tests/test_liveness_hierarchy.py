"""Liveness on hierarchical specs (issues 16 and 20): fairness tasks per machine instance and
per message, properties quantified over index types, the binder orbits of the hierarchy's
symmetry, both engines' graphs, the bundled hierarchical specs' properties (which hold) and a
seeded NACK-and-retry livelock (which only a liveness property catches)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HIER_COUNTS, ROOT
from test_liveness_engines import (
    assert_same_graph,
    assert_valid_lasso,
    compiled_builder,
)

from coherence import ir, load_spec_text
from coherence.engines import check
from coherence.engines.compiled import CompiledEngine
from coherence.liveness import check_liveness
from coherence.liveness.built import instances
from coherence.liveness.check import representatives
from coherence.results import CheckOptions
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

pytestmark = pytest.mark.skipif(
    CompiledEngine().available() is not None, reason="no C compiler")

HIER_SPECS = ["gpu_two_level", "hmg", "multigpu_broadcast", "multigpu_broadcast_acked"]
NACK_RETRY = ROOT / "tests/specs/hierarchy/gpu_two_level_nack_retry.coh"
TWO_LEVEL = ROOT / "tests/specs/hierarchy/two_level_wt.coh"


def hier(path: Path, gpus: int, sms: int) -> ir.Model:
    """Without the coherence monitor, which no liveness property reads (and whose error
    edges, at 2 GPUs where `coherent` fails by design, a liveness graph leaves out)."""
    return drop_properties(load_spec(path, {"gpus": gpus, "sms": sms}), ["coherent"])


def bundled(name: str, gpus: int, sms: int) -> ir.Model:
    return hier(ROOT / "specs" / f"{name}.coh", gpus, sms)


Lasso = list[tuple[str, int, int | None]]


def lassos(model: ir.Model, symmetry: bool) -> tuple[Lasso, Lasso]:
    """(name, steps, loop start) of every failure, on the reference and compiled graphs.

    With one thread the compiled search numbers the states in the reference engine's order
    (both expand actions in NOTE(actions) order), so the two graphs are equal id for id and
    every counterexample is the same, step for step (checked here); with more threads the
    ids within a level vary, and so may the choice among equally shallow lassos."""
    opts = CheckOptions(symmetry=symmetry, threads=1)
    ref = check_liveness(model, opts)
    comp = check_liveness(model, opts, compiled_builder())
    assert comp.engine == "compiled" and ref.engine == "reference"
    assert (comp.states, comp.edges, comp.skipped) == (ref.states, ref.edges, ref.skipped)
    assert [[s.action for s in f.trace] for f in ref.failures] == [
        [s.action for s in f.trace] for f in comp.failures]
    for f in [*ref.failures, *comp.failures]:
        if f.kind == "liveness":
            assert_valid_lasso(model, f)
    threaded = check_liveness(model, CheckOptions(symmetry=symmetry), compiled_builder())
    assert [f.name for f in threaded.failures] == [f.name for f in comp.failures]
    return ([(f.name, f.length, f.loop_start) for f in ref.failures],
            [(f.name, f.length, f.loop_start) for f in comp.failures])


# ---------------------------------------------------------------- the bundled specs


@pytest.mark.parametrize("name", HIER_SPECS)
def test_bundled_hierarchical_liveness_holds_on_both_engines_at_1x2(name: str) -> None:
    model = bundled(name, 1, 2)
    assert {"load_completes", "write_through_acknowledged", "can_rest"} <= {
        p.name for p in model.liveness}
    ref, comp = lassos(model, symmetry=False)
    assert ref == comp == []


@pytest.mark.slow
@pytest.mark.parametrize("name", HIER_SPECS)
def test_bundled_hierarchical_liveness_holds_on_both_engines_at_2x1(name: str) -> None:
    ref, comp = lassos(bundled(name, 2, 1), symmetry=False)
    assert ref == comp == []


@pytest.mark.parametrize("name", HIER_SPECS)
def test_bundled_hierarchical_graphs_are_equal_edge_for_edge_at_1x2(name: str) -> None:
    assert_same_graph(bundled(name, 1, 2))


@pytest.mark.parametrize("name", ["gpu_two_level", "multigpu_broadcast_acked"])
def test_weak_fairness_alone_starves_an_sm(name: str) -> None:
    # the `strong fair` marks are what makes the requests complete: without them another
    # SM's stores keep the L2 busy whenever the starved request could be taken
    text = (ROOT / "specs" / f"{name}.coh").read_text().replace("strong fair on", "on")
    model = drop_properties(load_spec_text(text, f"weak_{name}.coh", {"gpus": 1, "sms": 2}),
                            ["coherent"])
    ref, comp = lassos(model, symmetry=True)
    assert {n for n, _, _ in comp} >= {"load_completes", "write_through_acknowledged"}
    assert ref == comp


def test_strong_marks_and_liveness_properties_change_no_state_count() -> None:
    # HIER_COUNTS pins the counts; the marks and properties are liveness only
    text = (ROOT / "specs" / "hmg.coh").read_text()
    plain = text.replace("strong fair on", "on").split("// ---- liveness")[0]
    a, b = (check(drop_properties(load_spec_text(t, "a.coh", {"gpus": 1, "sms": 2}),
                                  ["coherent"]), CheckOptions(), engine="reference")
            for t in (text, plain))
    assert a.states == b.states == HIER_COUNTS["hmg", 1, 2, False][0]


# ---------------------------------------------------------------- the seeded livelock


def test_nack_retry_livelock_is_caught_by_liveness_alone_with_equal_lassos() -> None:
    model = hier(NACK_RETRY, 1, 2)
    safety = check(model, CheckOptions(), engine="reference")
    assert safety.verdict == "holds", [f.name for f in safety.failures]
    for symmetry in (False, True):
        ref, comp = lassos(model, symmetry)
        assert ref == comp
        assert [n for n, _, _ in comp] == ["load_completes"]
        _name, steps, loop = comp[0]
        assert loop is not None and 1 < loop < steps


@pytest.mark.slow
def test_nack_retry_livelock_needs_two_sms_of_one_gpu() -> None:
    # one SM per GPU: nobody else keeps that L2 busy, and every load completes
    model = hier(NACK_RETRY, 2, 1)
    assert_same_graph(model)
    assert lassos(model, symmetry=True) == ([], [])
    ref, comp = lassos(hier(NACK_RETRY, 1, 3), symmetry=True)
    assert ref == comp and [n for n, _, _ in comp] == ["load_completes"]


def test_check_command_runs_liveness_on_a_hierarchy(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "coherence.cli", "check", str(NACK_RETRY), "--param",
         "gpus=1", "--liveness", "--json"], capture_output=True, text=True, cwd=tmp_path,
        check=False)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["verdict"] == "fails"
    assert [f["property"] for f in out["failures"]] == ["load_completes"]
    assert any(n.startswith("liveness: ") and n.endswith("engine compiled")
               for n in out["notes"])
    assert any("decided by a renamed one" in n for n in out["notes"])


# ---------------------------------------------------------------- binder orbits


ORBITS = """
liveness one_each: forall g: gpu :: forall s: sm :: L1[g, s].state == W ~> L1[g, s].state == I;
liveness two_gpus: forall g: gpu :: forall h: gpu :: forall s: sm ::
  L1[g, s].state == W ~> L1[h, s].state != W;
liveness per_gpu: forall g: gpu :: L2[g].state == BW ~> L2[g].state == R;
liveness by_node: forall n: node :: n is L2 ~> n is L2;
"""


def test_representatives_rename_each_index_type_on_its_own() -> None:
    text = TWO_LEVEL.read_text() + ORBITS
    model = load_spec_text(text, "o.coh", {"gpus": 3, "sms": 2})
    kept = {(i.prop.name, i.values) for i in representatives(instances(model))}
    nodes = len(ir.instances(model))
    assert kept == {("one_each", (0, 0)), ("two_gpus", (0, 0, 0)), ("two_gpus", (0, 1, 0)),
                    ("per_gpu", (0,)), *{("by_node", (n,)) for n in range(nodes)}}


@pytest.mark.parametrize(("gpus", "sms"), [(1, 2), (2, 1)])
def test_one_instance_per_orbit_gives_every_verdict(gpus: int, sms: int) -> None:
    text = TWO_LEVEL.read_text() + ORBITS
    model = load_spec_text(text, "o.coh", {"gpus": gpus, "sms": sms, "values": 1})
    every = check_liveness(model, CheckOptions(symmetry=False), compiled_builder())
    orbits = check_liveness(model, CheckOptions(symmetry=True), compiled_builder())
    assert every.skipped == 0 and orbits.skipped > 0
    assert {f.name for f in orbits.failures} == {f.name for f in every.failures}
    assert {f.name for f in every.failures} >= {"one_each"}  # two_level_wt starves too
