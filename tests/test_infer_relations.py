"""Candidates about two agents related through a message, and about the agent a message
names (NOTE(infer-relations) in coherence/smt/infer_atoms.py): what MSI-like directories need
(``Inv to j for i``, ``Cache[m.req].state == IM_D`` for a forwarded request)."""

from __future__ import annotations

from itertools import permutations

import pytest
from helpers import ROOT

from coherence.engines import check
from coherence.smt.infer import appended_text
from coherence.smt.infer_atoms import vocabulary
from coherence.smt.infer_mine import Candidate, Templates, is_relation, mine
from coherence.spec.load import extend, load_spec, rebind
from coherence.spec.select import drop_properties

HOME_ACKS = ROOT / "tests" / "specs" / "infer" / "msi_home_acks.coh"
MSI = ROOT / "specs" / "msi_directory.coh"
LIMITS = {"global": 1, "agent": 2, "pair": 2, "msg": 2}
CHECKED_AT_ONCE = 80


@pytest.fixture(scope="module")
def mined() -> tuple[list[Candidate], Templates]:
    model = drop_properties(load_spec(HOME_ACKS), ["coherent"])
    cands, stats, tpl = mine(model, sizes=(2, 3), max_literals=LIMITS)
    assert [complete for _n, _s, complete, _sec in stats.sizes] == [True, True]
    return cands, tpl


def _related(c: Candidate) -> bool:
    return any(is_relation(w) or w.startswith("f:") for _a, w, _p in c.lits)


def test_the_vocabulary_relates_two_agents_through_a_message() -> None:
    voc = vocabulary(load_spec(MSI), set())
    rel = {a.text for a in voc.relations}
    assert "(exists k: Inv :: k.dst == {y} && k.req == {x})" in rel
    assert "(exists k: InvAck :: k.src == {y} && k.dst == {x})" in rel
    # Data is sent by the home and by the owner: between two agents it is still a relation
    assert "(exists k: Data :: k.src == {y} && k.dst == {x})" in rel
    # and, though the home receives Data too, "Data to {x}" is an agent's atom
    assert "inflight(Data, {x})" in {a.text for a in voc.agent}
    # and where a Data goes or comes from is told apart: the home, or an agent
    assert "inflight(Data, home)" in {a.text for a in voc.globals}
    assert {"{m}.src == home", "{m}.dst == home"} <= {a.text for a in voc.fields["Data"]}
    assert not any("home" in a.text for a in voc.fields["Inv"])  # only the home sends it
    assert voc.agent_fields["FwdGetM"] == [(0, "req")]
    assert voc.agent_fields["Data"] == []


def test_relations_and_named_agents_are_mined(
        mined: tuple[list[Candidate], Templates]) -> None:
    texts = {c.text for c in mined[0]}
    # the requestor of a forwarded GetM waits for its data
    assert "forall m: FwdGetM :: (Cache[m.req].state == IM_D)" in texts
    # an Inv to j for i: i asked for M (one of the two orders, never both)
    one = ("forall i: agent, j: agent :: i != j -> ((Cache[i].state != IM_D) -> "
           "(!(exists k: Inv :: k.dst == j && k.req == i)))")
    other = one.replace("k.dst == j && k.req == i", "k.dst == i && k.req == j") \
               .replace("Cache[i]", "Cache[j]")
    assert one in texts
    assert other not in texts


def test_two_data_to_one_requestor_is_ruled_out_by_a_three_agent_clause(
        mined: tuple[list[Candidate], Templates]) -> None:
    triples = [c for c in mined[0] if c.kind == "triple"]
    assert ("forall i: agent, j: agent, l: agent :: i != j && i != l && j != l -> "
            "((exists k: Data :: k.src == j && k.dst == i) -> "
            "(!(exists k: Data :: k.src == l && k.dst == i)))") in {c.text for c in triples}
    for c in triples:  # about all three agents, each literal a relation
        wheres = [w for _a, w, _p in c.lits]
        assert all(map(is_relation, wheres)) and set("".join(wheres)) == set("ijl"), c.text
    # once up to renaming the agents: no two clauses are one under another order of i, j, l
    def shape(c: Candidate, order: tuple[str, ...]) -> frozenset[tuple[str, str, bool]]:
        rename = dict(zip("ijl", order, strict=True))
        return frozenset((a.text, "".join(rename[x] for x in w), p) for a, w, p in c.lits)
    seen: set[frozenset[tuple[str, str, bool]]] = set()
    for c in triples:
        images = {shape(c, order) for order in permutations("ijl")}
        assert not images & seen, c.text
        seen |= images


def test_each_pair_clause_is_enumerated_once_up_to_swapping_i_and_j(
        mined: tuple[list[Candidate], Templates]) -> None:
    cands, tpl = mined
    slots = tpl.slots["pair"]
    swap = {"i": "j", "j": "i", "ij": "ji", "ji": "ij"}
    index = {(id(a), w): c for c, (a, w) in enumerate(slots)}
    seen: set[frozenset[tuple[int, bool]]] = set()
    pairs = [c for c in cands if c.kind == "pair"]
    assert any(_related(c) for c in pairs)
    for c in pairs:
        cols = frozenset(c.cols)
        swapped = frozenset((index[(id(slots[k][0]), swap.get(slots[k][1], slots[k][1]))], p)
                            for k, p in c.cols)
        assert swapped == cols or swapped not in seen, c.text
        seen.add(cols)


def test_no_clause_contains_a_smaller_one_of_its_template(
        mined: tuple[list[Candidate], Templates]) -> None:
    by_kind: dict[str, list[frozenset[tuple[int, bool]]]] = {}
    for c in mined[0]:
        by_kind.setdefault(c.kind, []).append(frozenset(c.cols))
    for c in mined[0]:
        assert not any(o < frozenset(c.cols) for o in by_kind[c.kind]), c.text


def test_mined_relations_hold_in_the_checker_where_they_were_mined(
        mined: tuple[list[Candidate], Templates]) -> None:
    # the readers that mined them against the semantics of their text, at the sizes mined
    model = drop_properties(load_spec(HOME_ACKS), ["coherent"])
    related = [c for c in mined[0] if _related(c)]
    assert len(related) > 100
    lines = [f"invariant aux r{k}: {c.text};" for k, c in enumerate(related)]
    for start in range(0, len(lines), CHECKED_AT_ONCE):
        group = lines[start:start + CHECKED_AT_ONCE]
        for agents in (2, 3):
            result = check(rebind(extend(model, appended_text(group)), {"agents": agents}),
                           engine="auto")
            assert result.verdict == "holds", result.failures[:1]


@pytest.mark.slow
def test_msi_home_acks_houdini_keeps_every_target_at_4_agents() -> None:
    # about 4 min on the 2-core machine: before the relations, "no message without a
    # transition" was dropped (results/infer/msi_home_acks_relations.md)
    from coherence.smt.infer_finite import houdini_finite
    model = drop_properties(load_spec(HOME_ACKS), ["coherent"])
    cands, _stats, tpl = mine(model, sizes=(2, 3),
                              max_literals={"global": 2, "agent": 4, "pair": 3, "msg": 3})
    result = houdini_finite(model, cands, tpl, 4)
    assert result.failed == []
    chosen = [cands[k] for k in result.support]
    assert any(_related(c) for c in chosen)  # the new atoms are what it needs
    lines = [f"invariant aux h{k}: {c.text};" for k, c in enumerate(chosen)]
    for agents in (2, 3, 4):
        result_n = check(rebind(extend(model, appended_text(lines)), {"agents": agents}),
                         engine="auto")
        assert result_n.verdict == "holds", result_n.failures[:1]
