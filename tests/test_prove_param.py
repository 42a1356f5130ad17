"""Proofs for every number of agents: proved specs also hold at fixed sizes in the reference
checker, refutations are concrete replayed instances, mutants are never proved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import AUX, MUTEX, PROOF_RLIMIT, SPECS, mutants, well_formed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coherence.engines import check
from coherence.smt.param import prove_all
from coherence.smt.state import Unsupported
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties


def _write(tmp_path: Path, text: str, name: str = "spec.coh") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_mutex_with_aux_is_proved_for_every_n_and_holds_at_fixed_sizes(tmp_path: Path) -> None:
    path = _write(tmp_path, MUTEX + AUX)
    result = prove_all(load_spec(path), rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds" and result.exit_code == 0
    assert "invariant:mutex" in result.proved
    for n in (2, 3, 4):
        assert check(load_spec(path, {"agents": n})).verdict == "holds"


def test_mutex_without_aux_is_not_inductive_and_not_a_pass(tmp_path: Path) -> None:
    result = prove_all(load_spec(_write(tmp_path, MUTEX)), rlimit=PROOF_RLIMIT)
    assert result.verdict == "unknown" and result.exit_code == 3
    assert any("invariant:mutex" in c for c in result.ctis)
    # the CTI is concrete (German's, in the slow tier, too): a cache in E while a Grant is
    # on its way to another, which receives it
    cti = next(c for c in result.cti_details if "invariant:mutex" in c.summary)
    assert any(line.startswith("C[") and line.endswith("state E") for line in cti.pre)
    assert any(line.startswith("network net: Grant") for line in cti.pre)
    assert "receives Grant" in cti.step.event


def test_literal_scheme_is_refuted_by_a_replayed_instance() -> None:
    model = load_spec(SPECS / "broadcast_invalidate.coh")
    result = prove_all(model, rlimit=PROOF_RLIMIT)
    assert result.verdict == "fails" and result.instance == 2
    assert result.failures[0].name == "data_value" and result.failures[0].length == 4


COUNTING = """
param agents = 3;
message Ack;
network net: fifo, capacity = 1;
home machine H { stable state R; init R; var acks: int[0..agents] = 0;
  rule Start when acks == 0 { acks := agents - 1; }
}
cache machine C { stable state I; init I; }
invariant fine: H.acks >= 0;
"""


def test_counting_agents_is_reported_where_it_happens(tmp_path: Path) -> None:
    with pytest.raises(Unsupported) as err:
        prove_all(load_spec(_write(tmp_path, COUNTING)), rlimit=PROOF_RLIMIT)
    assert err.value.span.line == 6  # acks := agents - 1
    assert "number of agents" in err.value.message


def _holds_at(path: Path, sizes: tuple[int, ...]) -> None:
    for n in sizes:
        model = drop_properties(load_spec(path, {"agents": n}), ["coherent"])
        assert check(model).verdict == "holds"


def test_german_is_proved_for_every_n_and_holds_at_fixed_sizes() -> None:
    model = drop_properties(load_spec(SPECS / "german.coh"), ["coherent"])
    result = prove_all(model, rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds", result.reason
    assert {"invariant:CtrlProp", "invariant:DataProp", "error:error"} <= set(result.proved)
    _holds_at(SPECS / "german.coh", (2, 3))


@pytest.mark.slow  # 30-130 s of Z3 on the shared machine; German's proof is the default tier's
def test_acked_broadcast_is_proved_for_every_n_and_holds_at_fixed_sizes() -> None:
    path = SPECS / "broadcast_invalidate_acked.coh"
    result = prove_all(drop_properties(load_spec(path), ["coherent"]), rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds", result.reason
    assert {"invariant:data_value", "invariant:stale_copy_is_doomed",
            "abstraction:one-message-per-kind"} <= set(result.proved)
    _holds_at(path, (2, 3))


@pytest.mark.slow  # over a minute of Z3 on the shared machine; the mutex CTI is the default
def test_a_missing_aux_invariant_gives_a_concrete_replayed_cti() -> None:
    path = SPECS / "german.coh"
    model = drop_properties(load_spec(path), ["coherent", "sharer_has_copy_or_message"])
    # the BMC look for a real bug (there is none): brief
    result = prove_all(model, rlimit=PROOF_RLIMIT, refute_depth=3)
    assert result.verdict == "unknown" and result.exit_code == 3  # never a pass
    cti = next(c for c in result.cti_details if "inv_to_holder" in c.summary)
    # a sharer in I with no message on its way, about to be sent an Inv
    assert any("Cache[0]: state I" in line for line in cti.pre)
    assert "SendInv" in cti.step.event
    assert check(drop_properties(load_spec(path, {"agents": 2}), ["coherent"])).verdict == "holds"


DUPLICATE = """
param agents = 2;
message Req;
network net: unordered, capacity = 3;
home machine H { stable state R; init R; on Req { } }
cache machine C { stable state I; init I; rule Ask { send Req to home; } }
invariant fine: true;
"""


def test_two_messages_of_a_kind_on_an_unordered_network_are_never_a_pass(
        tmp_path: Path) -> None:
    result = prove_all(load_spec(_write(tmp_path, DUPLICATE)), rlimit=PROOF_RLIMIT)
    assert result.verdict == "unknown"
    assert any("abstraction:one-message-per-kind" in c for c in result.ctis)
    assert any("two Req messages" in c.summary for c in result.cti_details)


MUTANTS = well_formed(mutants(MUTEX + AUX))
REFUTE_DEPTH = 10  # prove_all's default: how deep it looks for a concrete counterexample


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MUTANTS))
def test_a_mutant_proved_for_every_n_holds_at_2_and_3(tmp_path_factory: pytest.TempPathFactory,
                                                      text: str) -> None:
    path = _write(tmp_path_factory.mktemp("m"), text)
    result = prove_all(load_spec(path), rlimit=PROOF_RLIMIT, refute_depth=REFUTE_DEPTH)
    for n in (2, 3):
        reference = check(load_spec(path, {"agents": n}))
        # every failure but deadlock (not part of a proof for every N) is within reach of the
        # refutation, which must then find one: neither a proof nor an unknown
        real = [f for f in reference.failures if f.kind != "deadlock"]
        if real and min(f.length for f in real) <= REFUTE_DEPTH:
            assert result.verdict == "fails", (n, real[0].message, result.reason)
        if result.verdict == "holds":
            assert not real
    if result.verdict == "unknown":  # not inductive, with the steps that break it; Z3 never
        assert result.ctis, result.reason  # ran out of its resource limit
    if result.verdict == "fails":
        assert result.instance in (2, 3)
        assert result.failures and result.failures[0].trace


GERMAN_AUX = (SPECS / "german.coh").read_text()
GERMAN_AUX = GERMAN_AUX[GERMAN_AUX.index("// ---- auxiliary invariants"):]
LIVENESS = {"can_rest", "shared_granted", "exclusive_granted"}  # German's liveness properties
# the mutants that break a safety property (the others only livelock: their safety is proved)
GERMAN_MUTANTS = sorted(p.stem for p in (SPECS / "mutants").glob("german_*.coh")
                        if not set(re.search(r"^// EXPECT: (.*)$", p.read_text(), re.M)
                                   .group(1).split(",")) <= LIVENESS)


# slow tier (over a minute of Z3 each on the shared machine); by default, the mutex's
# mutants are never proved (test_a_mutant_proved_for_every_n_holds_at_2_and_3)
@pytest.mark.slow
@pytest.mark.parametrize("name", GERMAN_MUTANTS)
def test_german_mutants_with_the_aux_invariants_are_refuted(tmp_path: Path, name: str) -> None:
    """The aux invariants prove German; they must not prove any of its seeded bugs."""
    text = (SPECS / "mutants" / f"{name}.coh").read_text() + "\n" + GERMAN_AUX
    model = drop_properties(load_spec(_write(tmp_path, text, f"{name}.coh")), ["coherent"])
    result = prove_all(model, rlimit=PROOF_RLIMIT)
    assert result.verdict == "fails" and result.instance in (2, 3)
    assert result.failures[0].trace  # replayed by the reference semantics
    assert result.ctis  # and the proof says which step breaks which invariant
