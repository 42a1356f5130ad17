"""Every seeded bug in specs/mutants/ is caught, by the property its header names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.errors import SpecError
from coherence.mutants import find_mutants, parse_header, run_mutant

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = find_mutants(ROOT / "specs" / "mutants")


def test_there_are_at_least_20_mutants_of_at_least_4_specs() -> None:
    assert len(MUTANTS) >= 20
    assert len({parse_header(p).base for p in MUTANTS}) >= 4
    for p in MUTANTS:
        assert (ROOT / parse_header(p).base).is_file()


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_mutant_is_caught_as_expected(path: Path) -> None:
    result = run_mutant(parse_header(path))
    assert result.caught, path
    assert result.expected_caught, (path, result.failed)
    assert result.length is not None and result.length >= 1


def test_the_mutant_differs_from_its_base_in_the_model() -> None:
    for p in MUTANTS:
        body = p.read_text(encoding="utf-8").split("//\n", 1)[1]
        assert body != (ROOT / parse_header(p).base).read_text(encoding="utf-8"), p


# one mutant of each base spec by default (each mutant is also run alone above); the whole
# directory, the README's command, in the slow tier
SAMPLE = sorted({parse_header(p).base: p for p in MUTANTS}.values())


@pytest.mark.parametrize("which", ["sample", pytest.param("all", marks=pytest.mark.slow)])
def test_verb_reports_score_and_lengths(which: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    directory, paths = ROOT / "specs" / "mutants", MUTANTS
    if which == "sample":
        directory, paths = tmp_path, SAMPLE
        for p in SAMPLE:
            shutil.copy(p, tmp_path / p.name)
    assert main(["mutants", str(directory), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["score"] == 1.0 and doc["mutants"] == len(paths)
    assert all(r["counterexample_length"] for r in doc["results"])


def test_a_correct_spec_is_a_missed_mutant(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "specs" / "msi_snooping.coh").read_text(encoding="utf-8")
    (tmp_path / "m.coh").write_text("// MUTANT OF: specs/msi_snooping.coh\n// CHANGE: none\n"
                                    "// EXPECT: swmr\n" + text, encoding="utf-8")
    assert main(["mutants", str(tmp_path)]) == 1
    assert "MISSED" in capsys.readouterr().out


def test_bad_header_is_located(tmp_path: Path) -> None:
    p = tmp_path / "bad.coh"
    p.write_text("// MUTANT OF: x\n// CHANGE: y\n// EXPECT: z\n// AGENTS: many\n")
    with pytest.raises(SpecError, match="AGENTS"):
        parse_header(p)
    p.write_text("// MUTANT OF: x\n// CHANGE: y\n// WHATEVER: z\n")
    with pytest.raises(SpecError) as err:
        parse_header(p)
    assert err.value.span.line == 3


def test_a_directory_without_mutants_is_bad_input(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mutants", str(tmp_path)]) == 2
    assert "no mutant specs (*.coh) in this directory" in capsys.readouterr().err
