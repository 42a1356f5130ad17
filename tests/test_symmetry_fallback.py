"""Symmetry reduction is exact only for models that do not depend on agent ids. The MSI
snooping mutant whose GetM is not broadcast lets several caches hold M, and the atomic bus then
delivers a GetS to them in agent order, so who supplies the data depends on the ids: a
reduced counterexample cannot be replayed. The checker then searches again without symmetry,
says so, and gives the unreduced answer (never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coherence.cli import main
from coherence.engines import check
from coherence.engines.driver import NOT_SYMMETRIC
from coherence.results import CheckOptions
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

MUTANT = Path(__file__).resolve().parent.parent / "specs/mutants/msi_snoop_getm_not_broadcast.coh"


def test_a_non_symmetric_model_is_searched_again_without_symmetry() -> None:
    # without the coherence monitor, as its header says (460 states rather than 28,240)
    model = drop_properties(load_spec(MUTANT, {"agents": 3}), ["coherent"])
    reduced = check(model)
    full = check(model, CheckOptions(symmetry=False))
    assert reduced.notes == [NOT_SYMMETRIC] and full.notes == []
    assert reduced.symmetry == full.symmetry == "off"
    assert reduced.states == full.states
    assert [(f.name, f.length) for f in reduced.failures] == [
        (f.name, f.length) for f in full.failures]


def test_the_cli_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(MUTANT), "--agents", "3"]) == 1
    out = capsys.readouterr().out
    assert "symmetry reduction was turned off" in out
