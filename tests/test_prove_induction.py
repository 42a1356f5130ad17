"""k-induction: proofs agree with the reference checker, counterexamples to induction replay,
and induction never proves a mutant that the checker refutes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coherence.engines import check
from coherence.results import CheckOptions
from coherence.errors import SpecError
from coherence.smt.induction import induction
from coherence.spec.load import load_spec, load_spec_text

SPECS = Path(__file__).resolve().parent.parent / "specs"

MUTEX = """
param agents = 3;
message Grant on net;
network net: fifo, capacity = 1;
event Acquire;
event Release;
home machine Lock {
  stable state Free, Taken;
  init Free;
  var owner: agent = undefined;
  rule Take(a: agent) in Free when C[a].state == W { owner := a; send Grant to a; goto Taken; }
  rule Reclaim in Taken when C[owner].state != E && !inflight(Grant, owner) {
    undefine owner; goto Free;
  }
}
cache machine C {
  stable state I, E;
  transient state W;
  init I;
  on Acquire in I { goto W; }
  on Grant in W { goto E; }
  on Release in E { goto I; }
}
invariant mutex: forall a: agent, b: agent :: (C[a].state == E && C[b].state == E) -> a == b;
"""
AUX = """
invariant aux owner: forall a: agent :: (C[a].state == E || inflight(Grant, a)) ->
  (Lock.state == Taken && Lock.owner == a);
invariant aux grant_waits: forall a: agent :: inflight(Grant, a) -> C[a].state == W;
"""


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

STATEMENT = re.compile(r"(goto \w+;|undefine \w+;|send \w+ to \w+;|owner := a;)")
GOTO = re.compile(r"goto (\w+);")


def mutants(text: str) -> list[str]:
    """Every spec obtained by deleting one statement or retargeting one goto."""
    out = []
    for m in STATEMENT.finditer(text):
        out.append(text[:m.start()] + text[m.end():])
    for m in GOTO.finditer(text):
        for target in ("I", "E", "W", "Free", "Taken"):
            if target != m.group(1):
                out.append(f"{text[:m.start()]}goto {target};{text[m.end():]}")
    return out


MUTANTS = mutants(MUTEX + AUX)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MUTANTS), st.sampled_from([2, 3]), st.sampled_from([1, 2]))
def test_induction_never_proves_a_refuted_mutant(text: str, agents: int, k: int) -> None:
    try:
        model = load_spec_text(text, "mutant.coh", {"agents": agents})
    except SpecError:
        return  # the mutation made the spec ill-formed (e.g. a state nothing enters)
    result = induction(model, k)
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
    verdicts = set()
    for text in MUTANTS[:12]:
        try:
            model = load_spec_text(text, "mutant.coh", {"agents": 2})
        except SpecError:
            continue
        verdicts.add(check(model, CheckOptions()).verdict)
    assert verdicts == {"holds", "fails"}
