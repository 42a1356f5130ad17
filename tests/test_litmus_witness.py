"""``coherence litmus --witness``: each allowed outcome comes with a run that ends in it.

The witnesses are checked independently of the litmus runner: their actions are replayed on
the full model (invariants and the coherence monitor included) by ``trace.replay_actions``,
and the outcome is recomputed from what that replay performs: each thread's loads of a line
take, in program order, the values its agent's load performs on that line returned (after
the loads that fill the cache before the test, ``cached``), and each location ends with the
value of the last store performed on it.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from helpers import ROOT

from coherence.cli import main
from coherence.litmus.catalogue import find_test
from coherence.litmus.model import model_overrides, run_on_model
from coherence.litmus.program import Litmus, Outcome, outcome_text
from coherence.litmus.variants import apply_variant
from coherence.semantics import Semantics
from coherence.spec.load import load_spec
from coherence.trace import Step, action_from_json, replay_actions

WT = str(ROOT / "specs" / "gpu_write_through.coh")
BI = str(ROOT / "specs" / "broadcast_invalidate.coh")
CATALOGUE = ROOT / "specs" / "litmus"


def replayed_outcome(spec: str, test: Litmus, steps: list[Step]) -> Outcome:
    model = load_spec(spec, model_overrides(test))
    sem = Semantics(model)
    replay = replay_actions(sem, [action_from_json(s.action) for s in steps])
    assert [r.event for r in replay] == [s.event for s in steps]
    state = sem.initial_states()[0]
    loads: dict[tuple[int, int], list[int]] = defaultdict(list)
    last_store = [test.initial(loc) for loc in test.locations]
    stores = 0
    for st in steps:
        out = sem.execute(state, action_from_json(st.action))
        assert out is not None and out.state is not None and out.error is None
        for p in out.performs:
            if p.kind == "load":
                loads[(p.agent, p.line)].append(p.value)
            else:
                last_store[p.line] = p.value
                stores += 1
        state = out.state
    assert sem.quiescent(state), "a witness ends with the protocol at rest"
    for tid, loc in test.cached:  # the prelude's loads come first
        loads[(tid, test.locations.index(loc))].pop(0)
    regs = []
    for tid, ops in enumerate(test.threads):
        for op in ops:
            if op.kind == "load":
                regs.append(loads[(tid, test.locations.index(op.loc or ""))].pop(0))
    assert not any(loads.values()), "every load performed belongs to the program"
    assert stores == sum(op.kind == "store" for ops in test.threads for op in ops)
    return (*regs, *last_store)


@pytest.mark.parametrize(("spec", "name", "core"), [
    (WT, "MP", "blocking"), (WT, "MP", "pipelined"), (BI, "MP+cached", "blocking")])
def test_every_witness_replays_to_its_outcome(spec: str, name: str, core: str) -> None:
    test = apply_variant(find_test(name, CATALOGUE), "weak")
    model = load_spec(spec, model_overrides(test))
    result = run_on_model(model, test, core=core, witnesses=True)
    assert set(result.witnesses) == result.outcomes and len(result.outcomes) >= 3
    for outcome, steps in result.witnesses.items():
        assert replayed_outcome(spec, test, steps) == outcome, outcome_text(test, outcome)


def test_mp_weak_outcome_has_a_witness_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["litmus", WT, "MP", "-V", "weak", "--witness", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert row["allowed_by_model"] is True and row["allowed_by_sc"] is False
    by_outcome = {w["outcome"]: w for w in row["witnesses"]}
    assert sorted(by_outcome) == sorted(row["model_outcomes"])
    weak = by_outcome["1:r0=1 1:r1=0 x=1 y=1"]
    assert weak["condition"] and weak["beyond_sc"]
    steps = [Step.from_json(s) for s in weak["steps"]]
    test = find_test("MP", CATALOGUE)
    assert replayed_outcome(WT, test, steps) == (1, 0, 1, 1)
    assert row["lines"] == {"x": 0, "y": 1} and row["threads"] == ["L1[0]", "L1[1]"]


def test_text_output_numbers_each_witness(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["litmus", WT, "MP", "-V", "fence.gpu", "--witness"]) == 0
    out = capsys.readouterr().out
    assert "MP fence.gpu: 3 allowed outcomes (thread 0 on L1[0], thread 1 on L1[1]; " \
           "x is line 0, y is line 1)" in out
    assert "witness of 1:r0=1 1:r1=1 x=1 y=1: " in out and "(beyond SC)" not in out
    assert "  1. L1[0]: " in out


def test_no_witnesses_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["litmus", WT, "MP", "-V", "weak", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert "witnesses" not in row
