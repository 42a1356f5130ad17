"""Safety mutants of the acked scheme without its aux lines are never proved by ``--infer``
(the bundled acked mutants only livelock: their safety is proved, rightly), and each is
refuted with a concrete trace where BMC finds it within its units (the mining search meets
the bug first: a few seconds each)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import PROOF_RLIMIT, ROOT

from coherence.engines import check
from coherence.smt.infer import InferOptions, infer
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

MUTANTS = sorted((ROOT / "tests" / "specs" / "infer" / "acked_safety_mutants").glob("*.coh"))


def test_there_are_mutants() -> None:
    assert len(MUTANTS) == 3


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda p: p.stem)
def test_acked_safety_mutant_breaks_an_invariant_and_is_not_proved(mutant: Path) -> None:
    model = load_spec(mutant)
    model = drop_properties(model, [p.name for p in model.properties])
    assert check(model).verdict == "fails"  # a real bug at the spec's 3 agents
    result = infer(model, InferOptions(rlimit=200_000_000, final_rlimit=PROOF_RLIMIT))
    assert result.proof.verdict == "fails", (result.proof.verdict, result.missing)
    assert result.proof.failures[0].trace and result.proof.instance in (2, 3)
    assert result.lines == [] and "fails at" in (result.missing or "")
