"""k-induction: proofs agree with the reference checker, counterexamples to induction replay,
and induction never proves a mutant that the checker refutes."""

from __future__ import annotations

import pytest
from helpers import AUX, MUTEX, PROOF_RLIMIT, SPECS, mutants, well_formed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coherence.engines import check
from coherence.results import CheckOptions
from coherence.smt.induction import induction
from coherence.spec.load import load_spec, load_spec_text


@pytest.mark.parametrize("agents", [2, 3])
def test_aux_invariants_make_mutex_inductive(agents: int) -> None:
    model = load_spec_text(MUTEX + AUX, "mutex.coh", {"agents": agents})
    result = induction(model, 1)
    assert result.verdict == "holds" and result.exit_code == 0
    assert check(model).verdict == "holds"


def test_counterexample_to_induction_is_shown_and_replayed() -> None:
    model = load_spec_text(MUTEX, "mutex.coh", {"agents": 3})
    result = induction(model, 1)
    assert result.verdict == "unknown" and result.exit_code == 3  # never a pass
    assert result.cti is not None
    assert "invariant:mutex" in result.cti.groups
    # the pre-state has one cache in E and a Grant travelling to another one
    assert any("state E" in line for line in result.cti.pre)
    assert any("Grant" in line for line in result.cti.pre)
    assert "receives Grant" in result.cti.step.event
    assert check(model).verdict == "holds"  # reachable states are fine: it is only a CTI


def test_base_case_failure_is_a_replayed_counterexample() -> None:
    model = load_spec(SPECS / "broadcast_invalidate.coh", {"agents": 2})
    result = induction(model, 4)
    assert result.verdict == "fails"
    assert [f.length for f in result.failures] == [4]
    assert result.failures[0].name == "data_value"


# ---------------------------------------------------------------- mutants

MUTANTS = well_formed(mutants(MUTEX + AUX))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MUTANTS), st.sampled_from([2, 3]), st.sampled_from([1, 2]))
def test_induction_never_proves_a_refuted_mutant(text: str, agents: int, k: int) -> None:
    model = load_spec_text(text, "mutant.coh", {"agents": agents})
    result = induction(model, k, rlimit=PROOF_RLIMIT)
    assert result.verdict != "unknown" or result.cti is not None, result.reason
    reference = check(model)
    if result.verdict == "holds":
        assert reference.verdict == "holds"
    if reference.verdict == "fails":
        assert result.verdict != "holds"
    if result.verdict == "fails":  # a base-case counterexample is a real one
        assert reference.verdict == "fails"
        assert min(f.length for f in result.failures) == min(
            f.length for f in reference.failures)


def test_mutants_are_not_all_trivial() -> None:
    """The mutant pool contains both refuted and proved specs, so the property can fail."""
    assert len(MUTANTS) >= 12  # the ill-formed ones are left out, not drawn and skipped
    verdicts = {check(load_spec_text(text, "mutant.coh", {"agents": 2}), CheckOptions()).verdict
                for text in MUTANTS[:12]}
    assert verdicts == {"holds", "fails"}
