"""NOTE(infer-repair): a final proof's concrete counterexamples to induction put back mined
candidates that are false in their pre-states, and only such candidates."""

from __future__ import annotations

import time

import pytest
from helpers import MSI_HOME_ACKS, MSI_HOME_ACKS_BROKEN, PROOF_RLIMIT, msi_home_acks_houdini

from coherence.semantics import Semantics
from coherence.smt.infer import InferOptions
from coherence.smt.infer_mine import mine, violated
from coherence.smt.infer_repair import PER_CTI, repairs
from coherence.smt.param import Budget, obligations
from coherence.smt.param_cti import find_cti
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties


@pytest.fixture(scope="module")
def ctis() -> list:
    model = msi_home_acks_houdini()
    queries = obligations(model)[2]
    out = []
    for goal, what in MSI_HOME_ACKS_BROKEN:
        q = next(q for q in queries if (q.goal, q.what) == (goal, what))
        cti = find_cti(model, q, Budget(None, PROOF_RLIMIT, time.perf_counter()), range(1, 2))
        assert cti is not None, (goal, what)
        out.append(cti)
    return out


def test_a_counterexample_keeps_its_state(ctis: list) -> None:
    for cti in ctis:
        assert cti.instance is not None and cti.state is not None, cti.summary
        assert len(cti.state[0][0][2]) == cti.instance.agents


def test_counterexamples_put_back_the_candidates_they_falsify(ctis: list) -> None:
    model = drop_properties(load_spec(MSI_HOME_ACKS), ["coherent"])
    opts = InferOptions()
    cands, _stats, tpl = mine(model, opts.sizes, opts.max_states, opts.explore_seconds,
                              opts.literals)
    added = repairs(cands, range(len(cands)), [], tpl, ctis)
    texts = [cands[k].text for k in added]
    # every counterexample holds a Data from a node to itself, which no explored state does
    assert "forall m: Data :: (m.src != m.dst)" in texts
    assert len(added) == len(set(added)) and len(added) <= PER_CTI * len(ctis)
    rows = [tpl.rows(Semantics(c.instance), c.state, readable_only=True) for c in ctis]
    for k in added:
        assert any(violated(cands[k], r) for r in rows), cands[k].text
    # what is taken already, or was not kept by Houdini, is never put back
    first = added[0]
    assert first not in repairs(cands, range(len(cands)), [first], tpl, ctis)
    assert repairs(cands, [], [], tpl, ctis) == []


def test_infer_proves_again_with_the_candidates_put_back(ctis: list,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop in ``infer``: a final proof with counterexamples to induction is run again on
    the lines plus what they put back, and the verdict is the last proof's (Houdini and the
    proofs stand in: the real ones take half an hour on this spec)."""
    import coherence.smt.infer as infer_mod
    import coherence.smt.infer_finite as finite_mod
    from coherence.smt.infer_finite import FiniteResult
    from coherence.smt.param import ParamResult

    def houdini(model, cands, *_a, **_k):  # every candidate kept, none chosen
        return FiniteResult(list(range(len(cands))), [], [], {"queries": 0, "unknown": 0})

    proved: list[list[str]] = []

    settled = [("invariant:swmr", 0, -1), ("no-transition:*", 3, -1)]
    reused: list[object] = []

    def prove(model, reuse=(), **_k):
        proved.append([inv.name for inv in model.invariants])
        reused.append(reuse)
        if len(proved) == 1:
            return ParamResult("unknown", [], ["..."], [], None, [], "cti", 0.0, ctis,
                               settled=settled)
        return ParamResult("holds", [], [], [], None, [], None, 0.0)

    monkeypatch.setattr(finite_mod, "houdini_finite", houdini)
    monkeypatch.setattr(infer_mod, "prove_all", prove)
    model = drop_properties(load_spec(MSI_HOME_ACKS), ["coherent"])
    result = infer_mod.infer(model)
    assert result.proof.verdict == "holds"
    assert len(proved) == 2 and proved[0] == [inv.name for inv in model.invariants]
    assert "forall m: Data :: (m.src != m.dst)" in "\n".join(result.lines)
    assert len(proved[1]) == len(proved[0]) + len(result.lines)
    assert reused == [(), settled]  # the second proof skips what the first settled
    assert result.stats["repairs"][0]["reused"] == len(settled)
    assert result.stats["repairs"][0]["ctis"] == len(ctis)
    assert result.stats["repairs"][0]["added"] == len(result.lines)
    assert result.stats["final"] == len(result.lines)
