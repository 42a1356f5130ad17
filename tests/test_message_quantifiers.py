"""``forall m: Msg :: ...`` over the messages in flight means the same thing in every engine.

German's auxiliary invariants quantify over GntS, GntE, Inv and InvAck messages; its mutants
(specs/mutants/german_*.coh) carry none of them. Appended to a mutant, those invariants fail,
and the first depth at which BMC (the Z3 encoding of message quantifiers) finds each one
failing equals the reference checker's shortest counterexample, property by property. Rumur
agrees on German itself (tests/test_export_murphi.py, with the quantifiers exported).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import assert_agree

from coherence.engines import check
from coherence.results import CheckOptions
from coherence.spec.load import load_spec_text
from coherence.spec.select import drop_properties

ROOT = Path(__file__).resolve().parent.parent
GERMAN = (ROOT / "specs" / "german.coh").read_text()
AUX = GERMAN[GERMAN.index("// ---- auxiliary invariants"):]


def _mutant_with_aux(name: str, agents: int = 2):
    text = (ROOT / "specs" / "mutants" / f"{name}.coh").read_text() + "\n" + AUX
    model = load_spec_text(text, f"{name}+aux.coh", {"agents": agents})
    return drop_properties(model, ["coherent"])


# The mutants break the aux invariants at 3-5 steps; each step deeper about triples Z3's time
@pytest.mark.parametrize("depth", [5, pytest.param(6, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["german_gnts_not_recorded", "german_exgntd_not_set"])
def test_bmc_and_checker_agree_on_message_quantifiers(name: str, depth: int) -> None:
    model = _mutant_with_aux(name)
    found = assert_agree(model, depth)
    assert found, f"the mutant should break an invariant within {depth} steps"


def test_aux_invariants_hold_on_german_and_catch_a_mutant() -> None:
    model = drop_properties(load_spec_text(GERMAN, "german.coh", {"agents": 2}), ["coherent"])
    assert check(model).verdict == "holds"
    # stopped at the first failing level, as the mutants verb does (18 states, not 7,842)
    result = check(_mutant_with_aux("german_gnts_not_recorded"), CheckOptions(stop_at_first=True))
    assert result.verdict == "fails"
    assert {f.name for f in result.failures} & {"gnts_to_sharer", "sharer_has_copy_or_message",
                                                "copy_is_shared"}


EXISTS = """
param agents = 2;
message Req(v: value);
network net: unordered, capacity = 2;
home machine H { stable state R; init R; on Req { } }
cache machine C { stable state I, W; init I; rule Ask in I { send Req(1) to home; goto W; } }
invariant nobody_asks_for_one: !(exists m: Req :: m.v == 1 && m.dst == home);
invariant asker_waits: forall m: Req :: C[m.src].state == W;
"""


def test_exists_over_messages_and_src_dst() -> None:
    model = load_spec_text(EXISTS, "exists.coh")
    result = check(model)
    assert [(f.name, f.length) for f in result.failures] == [("nobody_asks_for_one", 1)]
    assert assert_agree(model, 3) == {"invariant:nobody_asks_for_one": 1}
