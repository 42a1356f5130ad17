"""NOTE(houdini-errors-after): Houdini's instance takes steps by agent 0 only (the symmetry of
agent ids), but the action that errs after the step may be another agent's: its error target
at the post-state reads the errors of every action of agents 0, 1 and 2. Before, it read agent
0's alone, and msi_home_acks' lines chosen at 4 (and 5) agents broke at 5 agents: the home
took one cache's InvAck and erred at another's (results/infer/README.md, "Session 31")."""

from __future__ import annotations

import pytest
from helpers import ROOT

from coherence import ir
from coherence.smt.infer_finite import _agents_of, _for_agent0, unordered_keys
from coherence.smt.system import Encoder
from coherence.spec.load import load_spec, rebind

ACK_GATHER = ROOT / "tests" / "specs" / "infer" / "ack_gather.coh"
HOME_ACKS = ROOT / "tests" / "specs" / "infer" / "msi_home_acks.coh"


def _receipts(agents: int) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The home's Ack receipts (by sender) that step, and those the error target reads."""
    inst = rebind(load_spec(ACK_GATHER), {"agents": agents})
    keys = unordered_keys(inst)
    enc = Encoder(inst)
    stepped, read = [], []
    for a in enc.actions:
        tr = inst.machine(a.machine).transitions[a.transition]
        if a.kind is not ir.TransitionKind.MESSAGE or a.agent is not None or tr.name != "Ack":
            continue
        who = _agents_of(enc, a, keys)
        if who is None:
            assert not _for_agent0(enc, a, keys)  # a slot that never holds an Ack
            continue
        (sender,) = who
        if _for_agent0(enc, a, keys):
            stepped.append((sender,))
        if who <= {0, 1, 2}:
            read.append((sender,))
    return sorted(set(stepped)), sorted(set(read))


def test_the_error_target_reads_other_agents_receipts() -> None:
    assert _receipts(3) == ([(0,)], [(0,), (1,), (2,)])
    # past three agents, a permutation fixing agent 0 brings any other one to 1 or 2
    assert _receipts(5) == ([(0,)], [(0,), (1,), (2,)])


def test_a_cache_step_names_its_agent_and_the_home_step_none() -> None:
    inst = rebind(load_spec(ACK_GATHER), {"agents": 3})
    enc = Encoder(inst)
    keys = unordered_keys(inst)
    own = {frozenset(_agents_of(enc, a, keys) or ()) for a in enc.actions
           if a.kind is not ir.TransitionKind.MESSAGE}
    assert own == {frozenset({0}), frozenset({1}), frozenset({2})}


def test_ack_gather_is_proved_with_the_requestor_remembered() -> None:
    from coherence.smt.infer import InferOptions, infer
    result = infer(load_spec(ACK_GATHER), InferOptions(rlimit=20_000_000,
                                                       final_rlimit=16_000_000))
    assert result.proof.verdict == "holds"
    assert any("isundefined(Dir.waiting)" in line for line in result.lines), result.lines


@pytest.mark.slow
def test_msi_home_acks_lines_chosen_at_4_agents_hold_its_home_acks_at_5() -> None:
    # about 3 min on the 2-core machine: before, InvAck in S_M broke error:error at 5 agents
    from coherence.smt import param
    from coherence.smt.finite_core import FiniteCore
    from coherence.smt.infer import InferOptions, appended_text
    from coherence.smt.infer_finite import houdini_finite
    from coherence.smt.infer_mine import closes_cycle, mine
    from coherence.spec.load import extend
    from coherence.spec.select import drop_properties
    model = drop_properties(load_spec(HOME_ACKS), ["coherent"])
    opts = InferOptions()
    cands, _stats, tpl = mine(model, sizes=opts.sizes, max_literals=opts.literals)
    cands = [c for c in cands if not closes_cycle(c)]
    result = houdini_finite(model, cands, tpl, 4)
    assert result.failed == []
    lines = [f"invariant aux h{k}: {cands[k].text};" for k in result.support]
    ob = param.Obligations(extend(model, appended_text(lines)))
    group = next(g for g in range(1, ob.groups) if ob.label(g) == "Dir.message InvAck in S_M")
    broken, last = FiniteCore(ob, 5).broken(ob.group(group), 20_000_000_000)
    assert broken == [] and str(last) == "unsat"
