"""Absurd configurations are refused before anything is built (issue 14, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.engines.size import MAX_ACTION_INSTANCES, estimate
from coherence.spec.load import load_spec, load_spec_text

ROOT = Path(__file__).resolve().parent.parent
GERMAN = str(ROOT / "specs" / "german.coh")


PAIRS = """param agents = 2;
param k = 3;
event E(a: int[0..k], b: int[0..k]);
home machine H { stable state R; init R; }
cache machine C { stable state I; init I; on E(a, b) in I { goto I; } }
"""


def test_huge_parameters_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", GERMAN, "--param", "lines=65536", "--skip", "coherent",
                 "--max-states", "2000", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["message"].startswith(
        "configuration too large: ") and "values in each state" in doc["error"]["message"]


def test_huge_event_parameters_are_refused(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    spec = tmp_path / "pairs.coh"
    spec.write_text(PAIRS)
    assert main(["check", str(spec), "--max-states", "10"]) == 0
    capsys.readouterr()
    assert main(["check", str(spec), "--param", "k=999", "--max-states", "10"]) == 2
    assert "2,000,000 actions to try in each state" in capsys.readouterr().err


def test_deeply_nested_quantifiers_are_refused(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    names = [f"a{i}" for i in range(40)]
    body = " && ".join(f"{x} == {x}" for x in names[:2])
    quants = "".join(f"forall {x}: agent :: " for x in names)
    spec = tmp_path / "nested.coh"
    spec.write_text("param agents = 3;\nhome machine H { stable state R; init R; }\n"
                    "cache machine C { stable state I; init I; rule go in I { goto I; } }\n"
                    f"invariant deep: {quants}{body};\n")
    assert main(["check", str(spec)]) == 2
    assert "nested quantifiers" in capsys.readouterr().err


def test_the_bundled_specs_are_far_below_the_limits() -> None:
    for path in sorted((ROOT / "specs").glob("*.coh")):
        model = load_spec(str(path))
        # a hierarchical spec has no agents: its largest declared sizes instead
        big = ({p.name: min(p.hi, 4) for p in model.params if p.name not in ("lines", "values")}
               if model.is_hierarchical else {"agents": 8})
        size = estimate(load_spec(str(path), big))
        assert size.action_instances < MAX_ACTION_INSTANCES // 100, path


def test_for_loops_and_parameters_multiply() -> None:
    small = estimate(load_spec_text(
        "param agents = 2;\nparam values = 2;\nevent St(v: value);\n"
        "home machine H { stable state R; init R; }\n"
        "cache machine C { stable state I; init I; on St(v) in I { goto I; } }\n", "s.coh"))
    big = estimate(load_spec_text(
        "param agents = 2;\nparam values = 20;\nevent St(v: value);\n"
        "home machine H { stable state R; init R; }\n"
        "cache machine C { stable state I; init I; on St(v) in I { goto I; } }\n", "s.coh"))
    assert (small.action_instances, big.action_instances) == (4, 40)


def test_the_prover_refuses_them_too(capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    names = [f"a{i}" for i in range(40)]
    quants = "".join(f"forall {x}: agent :: " for x in names)
    spec = tmp_path / "nested.coh"
    spec.write_text("param agents = 3;\nhome machine H { stable state R; init R; }\n"
                    "cache machine C { stable state I; init I; rule go in I { goto I; } }\n"
                    f"invariant deep: {quants}a0 == a1;\n")
    assert main(["prove", str(spec), "--agents", "any"]) == 2
    assert "nested quantifiers" in capsys.readouterr().err
    assert main(["prove", str(spec), "--agents", "2", "--bmc", "2"]) == 2
