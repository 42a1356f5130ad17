"""Vacuous passes are reported (issue 14, item 4): a run in which nothing ever fires, and an
invariant whose premise no reachable state makes true; every engine through its witnesses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.engines import check
from coherence.results import CheckOptions
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.select import drop_properties
from coherence.vacuity import premises

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ["reference", pytest.param("compiled", marks=pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler"))]

NEVER_MODIFIED = """param agents = 2;
param values = 2;
event Load;
event Store(v: value);
home machine H { stable state R; init R; }
cache machine C {
  stable state I, M;
  init I;
  var data: value = 0;
  on Load in I { perform load(data); }
  on Store(v) in M { data := v; perform store(v); }
}
invariant m_is_alone: forall i: agent, j: agent :: (i != j && C[i].state == M) -> C[j].state == I;
invariant data_defined: forall i: agent :: !isundefined(C[i].data);
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_premise_that_never_holds_is_vacuous(engine: str) -> None:
    model = load_spec_text(NEVER_MODIFIED, "never.coh")
    result = check(model, CheckOptions(), engine=engine)
    assert result.verdict == "holds"
    assert len(result.vacuous) == 1
    assert "invariant m_is_alone holds vacuously" in result.vacuous[0]
    assert "never.coh:9:" in result.vacuous[0] or "never.coh:" in result.vacuous[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_bundled_protocols_are_not_vacuous(engine: str) -> None:
    for name in ("german", "msi_directory", "broadcast_invalidate_acked"):
        model = drop_properties(load_spec(str(ROOT / "specs" / f"{name}.coh"),
                                          {"agents": 2}), ["coherent"])
        result = check(model, CheckOptions(), engine=engine)
        assert result.verdict == "holds" and result.vacuous == [], name


def test_a_machine_that_never_moves_is_vacuous(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    spec = tmp_path / "stuck.coh"
    spec.write_text("param agents = 2;\nhome machine H { stable state R; init R; }\n"
                    "cache machine C { stable state I; init I; rule go in I when false "
                    "{ goto I; } }\ninvariant ok: true;\n")
    assert main(["check", str(spec), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["vacuous"] and doc["vacuous"][0].startswith("no action ever fired")
    assert main(["check", str(spec)]) == 0
    assert "vacuous: no action ever fired" in capsys.readouterr().out


def test_premises_are_found_under_foralls_conjunctions_and_consequents() -> None:
    model = load_spec(str(ROOT / "specs" / "german.coh"), {"agents": 2})
    ctrl = [p for p in premises(model) if p.invariant == "CtrlProp"]
    assert len(ctrl) == 3  # i != j, and i != j && E, and i != j && S


def test_no_vacuity_switch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "never.coh"
    spec.write_text(NEVER_MODIFIED)
    assert main(["check", str(spec), "--no-vacuity", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vacuous"] == []


def test_a_partial_search_claims_nothing_vacuous() -> None:
    model = load_spec_text(NEVER_MODIFIED, "never.coh")
    result = check(model, CheckOptions(max_depth=0))
    assert result.stopped and result.vacuous == []


def test_coverage_marks_transitions_that_never_fire(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    spec = tmp_path / "never.coh"
    spec.write_text(NEVER_MODIFIED)
    assert main(["check", str(spec), "--coverage", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    fired = {c["transition"]: c["fired"] for c in doc["coverage"]}
    assert fired == {"on Load in I": 2, "on Store in M": 0}
    assert main(["check", str(spec), "--coverage"]) == 0
    out = capsys.readouterr().out
    assert "coverage: 1 of 2 transitions fired" in out
    assert "never  C: on Store in M" in out


def test_the_prover_says_when_there_is_nothing_to_prove(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "nop.coh"
    spec.write_text("param agents = 2;\n"
                    "cache machine C { stable state I; init I; rule go { goto I; } }\n")
    assert main(["prove", str(spec), "--agents", "any"]) == 0
    assert "note: nothing to prove" in capsys.readouterr().err
    assert main(["prove", str(spec), "--agents", "any", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nothing_to_prove"] is True
    german = str(ROOT / "specs" / "german.coh")
    assert main(["prove", german, "--agents", "2", "--bmc", "1", "--skip", "coherent",
                 "--json"]) == 3  # bounded: nothing failed up to depth 1
    assert json.loads(capsys.readouterr().out)["nothing_to_prove"] is False


def test_a_spec_without_machines_is_an_error(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    for text in ("", "// comments only\n", "param agents = 2;\ninvariant t: true;\n"):
        spec = tmp_path / "none.coh"
        spec.write_text(text)
        assert main(["check", str(spec)]) == 2
        assert "none.coh:1:1: error: the spec has no machine" in capsys.readouterr().err
