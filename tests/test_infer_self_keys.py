"""NOTE(infer-self-keys): the finite Houdini's instance holds a node's message to itself
wherever the final proof's parameterised encoding does, so its lines are not inductive at a
size where the final proof finds a counterexample to induction with one (session 21: MSI's
154 lines, inductive at 4 agents, broken at 1 agent by a ``Data`` from a cache to itself)."""

from __future__ import annotations

import re

import pytest
import z3
from helpers import MSI_HOME_ACKS, MSI_HOME_ACKS_HOUDINI, houdini_step

from coherence import ir
from coherence.smt import infer_finite
from coherence.smt.infer import InferOptions
from coherence.smt.infer_mine import Candidate, Templates, mine
from coherence.spec.load import load_spec, rebind
from coherence.spec.select import drop_properties


def _model() -> ir.Model:
    return drop_properties(load_spec(MSI_HOME_ACKS), ["coherent"])


@pytest.fixture(scope="module")
def mined() -> tuple[list[Candidate], Templates]:
    o = InferOptions()
    cands, stats, tpl = mine(_model(), o.sizes, o.max_states, float("inf"), o.literals)
    assert all(complete for _n, _s, complete, _sec in stats.sizes)
    return cands, tpl


def _houdini_lines(cands: list[Candidate]) -> set[int]:
    by_text = {c.text: k for k, c in enumerate(cands)}
    texts = [m.group(1) for m in re.finditer(r"invariant aux \w+: (.*);",
                                             MSI_HOME_ACKS_HOUDINI.read_text())]
    assert len(texts) == 78
    missing = [t for t in texts if t not in by_text]
    assert not missing, missing
    return {by_text[t] for t in texts}


def test_a_type_its_own_kind_sends_and_receives_has_keys_from_a_node_to_itself() -> None:
    inst = rebind(_model(), {"agents": 2})
    keys = infer_finite._possible_keys(inst)
    home = inst.agents
    # Data: caches and the home send it, caches and the home receive it
    assert {("Data", 0, 0), ("Data", 1, 1), ("Data", home, home)} <= keys
    assert ("Data", 0, 1) in keys
    # forwards go from the home to caches only: never to the home, never from a cache
    assert not any(k[0] == "FwdGetS" and (k[1] != home or k[2] == home) for k in keys)
    assert ("FwdGetS", home, 0) in keys
    # requests go from caches to the home only
    assert ("GetS", 0, home) in keys and ("GetS", 0, 0) not in keys


def _step_breaking(cands: list[Candidate], tpl: Templates, chosen: set[int]) -> z3.CheckSatResult:
    return houdini_step(_model(), cands, tpl, chosen, 1)


def test_houdinis_lines_are_not_inductive_with_one_agent_as_the_final_proof_found(
        mined: tuple[list[Candidate], Templates]) -> None:
    # helpers.MSI_HOME_ACKS_BROKEN: the final proof's counterexamples to induction of these
    # lines with one agent hold a Data from a node to itself; the instance sees them now
    cands, tpl = mined
    assert _step_breaking(cands, tpl, _houdini_lines(cands)) == z3.sat


def test_without_the_keys_to_itself_the_instance_missed_them(
        mined: tuple[list[Candidate], Templates], monkeypatch: pytest.MonkeyPatch) -> None:
    # the instance before NOTE(infer-self-keys): no key from a node to itself
    cands, tpl = mined
    before = infer_finite._possible_keys
    monkeypatch.setattr(infer_finite, "_possible_keys",
                        lambda m: {k for k in before(m) if k[1] != k[2]})
    assert _step_breaking(cands, tpl, _houdini_lines(cands)) == z3.unsat


def test_the_lines_completed_at_one_agent_are_inductive_there(
        mined: tuple[list[Candidate], Templates]) -> None:
    # NOTE(houdini-smaller): the selection seeded with the lines, at 1 agent, adds what its
    # counterexamples need, among them "no message from a node to itself"
    cands, tpl = mined
    lines = _houdini_lines(cands)
    said: list[str] = []
    smaller = infer_finite._Smaller(_model(), cands, tpl, infer_finite.CHECK_RLIMIT, None,
                                    said.append)
    chosen, alive, failed, changed = smaller.complete(range(1, 2), lines,
                                                      set(range(len(cands))), [])
    assert changed and not failed
    assert smaller.stats["sizes"] == [1] and smaller.stats["added"] == len(chosen - lines) > 0
    added = [cands[k].text for k in sorted(chosen - lines)]
    assert any(re.search(r"\bm\.src != m\.dst\b", t) for t in added), added
    assert any("1 agents:" in s for s in said)
    assert _step_breaking(cands, tpl, chosen) == z3.unsat
    # complete again: nothing changes
    assert smaller.complete(range(1, 2), chosen, alive, failed)[3] is False
