"""Counting candidates for ``--infer`` (NOTE(param-count) in coherence/smt/infer_atoms.py): the
acks a requestor still expects equal the agents that owe it one (MSI's
``Cache[i].acks == count(y: agent :: Inv to y for i || InvAck from y to i)``)."""

from __future__ import annotations

import pytest
from helpers import ROOT

from coherence.engines import check
from coherence.smt.infer import appended_text
from coherence.smt.infer_atoms import ORDER_GROUP, vocabulary
from coherence.smt.infer_mine import Candidate, mine
from coherence.spec.load import extend, load_spec, load_spec_text, rebind
from coherence.spec.select import drop_properties

MSI = ROOT / "specs" / "msi_directory.coh"
OWED = ("count(y: agent :: (exists k: Inv :: k.dst == y && k.req == {x}) || "
        "(exists k: InvAck :: k.src == y && k.dst == {x}))")
CHECKED_AT_ONCE = 60
LIMITS = {"global": 1, "agent": 2, "pair": 1, "msg": 2}


@pytest.fixture(scope="module")
def msi_mined() -> list[Candidate]:
    model = drop_properties(load_spec(MSI), ["coherent"])
    # the reference search takes about 6 s at 3 agents, mine's default budget: a loaded
    # machine must not cut it to a prefix
    cands, stats, _tpl = mine(model, sizes=(2, 3), explore_seconds=300, max_literals=LIMITS)
    assert all(complete for _n, _s, complete, _sec in stats.sizes)
    return cands


@pytest.fixture(scope="module")
def msi_counts(msi_mined: list[Candidate]) -> list[Candidate]:
    return [c for c in msi_mined if "count(" in c.text]


def test_the_vocabulary_counts_what_is_owed_to_an_agent() -> None:
    voc = vocabulary(load_spec(MSI), set())
    agent = {a.text for a in voc.agent if a.counted}
    assert f"Cache[{{x}}].acks == {OWED}" in agent
    assert "count(y: agent :: (exists k: Inv :: k.dst == y && k.req == {x})) == 0" in agent
    # "nobody owes" of a disjunction is the conjunction of its parts': not an atom of its own
    assert f"{OWED} == 0" not in agent
    # Data goes to the home too: the sum is about a receiving agent only
    data = {a.text for a in voc.fields["Data"] if a.counted}
    assert ("(forall z: agent :: {m}.dst == z -> (Cache[z].acks + {m}.acks == "
            + OWED.replace("{x}", "z") + "))") in data
    assert not any(a.counted for a in voc.globals)


def test_msi_ack_counting_is_mined(msi_counts: list[Candidate]) -> None:
    texts = {c.text for c in msi_counts}
    owed_i = OWED.replace("{x}", "i")
    for state in ("IM_A", "SM_A"):  # waiting for acks only: the count is what is owed
        assert f"forall i: agent :: ((Cache[i].state == {state}) -> (Cache[i].acks == " \
               f"{owed_i}))" in texts
    # with Data still in flight the count is split between the cache and the message, so
    # this one is false in a reachable state and must not be mined
    assert f"forall i: agent :: ((Cache[i].state == IM_AD) -> (Cache[i].acks == " \
           f"{owed_i}))" not in texts
    owed_z = OWED.replace("{x}", "z")
    assert f"forall m: Data :: (forall z: agent :: m.dst == z -> (Cache[z].acks + m.acks == " \
           f"{owed_z}))" in texts


def test_a_count_only_concludes_a_clause_about_its_own_agent(
        msi_counts: list[Candidate]) -> None:
    assert msi_counts
    for c in msi_counts:
        counted = [(a, w, p) for a, w, p in c.lits if a.counted]
        assert len(counted) == 1, c.text
        atom, where, positive = counted[0]
        assert not positive, c.text  # negated in the conjunction: the clause's conclusion
        assert where in ("i", "m"), c.text  # an agent's, or a message's sum
        at = "dst" if where == "m" else where
        for a, w, _p in c.lits:
            if a is not atom:
                assert w == at and a.group.startswith(("C.state", "to.")), c.text


def test_mined_counts_hold_in_the_checker_at_3_agents(msi_counts: list[Candidate]) -> None:
    # the readers that mined them, against the spec's own semantics of their text (in groups:
    # all at once is past the checker's bound on quantifier steps per state)
    model = drop_properties(load_spec(MSI), ["coherent"])
    lines = [f"invariant aux c{k}: {c.text};" for k, c in enumerate(msi_counts)]
    for start in range(0, len(lines), CHECKED_AT_ONCE):
        group = lines[start:start + CHECKED_AT_ONCE]
        with_counts = extend(model, appended_text(group))
        assert len(with_counts.invariants) == len(model.invariants) + len(group)
        result = check(rebind(with_counts, {"agents": 3}), engine="auto")
        assert result.verdict == "holds", result.failures[:1]


def test_fifo_queue_lengths_are_mined(msi_counts: list[Candidate]) -> None:
    """NOTE(message-count): MSI's forwards travel on fifo queues of capacity 2 (a PutAck can
    wait behind a forward), so "at most one of a type" is a fact mining must offer: without
    it, Houdini's pre-states held two PutAcks in one queue."""
    texts = {c.text for c in msi_counts}
    for t in ("FwdGetS", "FwdGetM", "Inv", "PutAck"):
        assert f"forall i: agent :: (count(k: {t} :: k.dst == i) <= 1)" in texts
    voc = vocabulary(load_spec(MSI), set())
    queued = {a.text for a in voc.agent if a.group.startswith("fifo1.")}
    # only the fifo network's types: Data and InvAck travel unordered
    assert queued == {f"count(k: {t} :: k.dst == {{x}}) <= 1"
                      for t in ("FwdGetS", "FwdGetM", "Inv", "PutAck")}


def test_a_queue_of_capacity_one_has_no_length_atom() -> None:
    text = MSI.read_text().replace("network fwd: fifo, capacity = 2;",
                                   "network fwd: fifo, capacity = 1;")
    voc = vocabulary(load_spec_text(text, "msi1.coh"), set())
    assert not [a for a in voc.agent if a.group.startswith("fifo1.")]


FWD = ("FwdGetS", "FwdGetM", "Inv", "PutAck")


def _order(first: str, then: str, x: str = "i") -> str:
    return (f"(forall ahead: {first} :: forall behind: {then} :: (ahead.dst == {x} && "
            f"behind.dst == {x} && ahead.src == behind.src) -> ahead.pos < behind.pos)")


def test_fifo_orders_are_mined_alone(msi_mined: list[Candidate]) -> None:
    """NOTE(message-position): the home sends a sharer its ``Inv`` before the ``PutAck`` of
    its ``PutS``, never after; Houdini's pre-state with them the other way round broke "no
    message without a transition" (results/infer/README.md, session 14). The order atoms
    are mined as clauses alone, and only the orders of reachable queues."""
    texts = {c.text for c in msi_mined if ".pos" in c.text}
    assert f"forall i: agent :: {_order('Inv', 'PutAck')}" in texts
    assert f"forall i: agent :: {_order('PutAck', 'Inv')}" not in texts
    # two forwards are never queued together: both orders hold
    assert f"forall i: agent :: {_order('FwdGetS', 'FwdGetM')}" in texts
    assert f"forall i: agent :: {_order('FwdGetM', 'FwdGetS')}" in texts
    assert all(t.startswith("forall i: agent :: (forall ahead: ") for t in texts), texts
    assert len(texts) == 7


def test_the_mined_orders_are_exactly_those_the_checker_finds(
        msi_mined: list[Candidate]) -> None:
    """Every order of two forwards, as an invariant at 3 agents: the checker's verdicts are
    mining's (its ``read`` of a state and the text's meaning agree)."""
    mined = {c.text for c in msi_mined if ".pos" in c.text}
    model = drop_properties(load_spec(MSI), ["coherent"])
    pairs = [(a, b) for a in FWD for b in FWD if a != b]
    lines = "".join(f"invariant order_{a}_{b}: forall i: agent :: {_order(a, b)};\n"
                    for a, b in pairs)
    result = check(rebind(extend(model, lines), {"agents": 3}), engine="auto")
    failed = {f.name for f in result.failures}
    for a, b in pairs:
        text = f"forall i: agent :: {_order(a, b)}"
        assert (f"order_{a}_{b}" in failed) == (text not in mined), (a, b)
    assert failed  # PutAck before Inv at least: the table cannot pass by holding everywhere


def test_order_atoms_are_offered_for_fifo_queues_only() -> None:
    voc = vocabulary(load_spec(MSI), set())
    orders = {a.text for a in voc.agent if a.group.startswith(ORDER_GROUP)}
    assert orders == {_order(a, b, "{x}") for a in FWD for b in FWD if a != b}
    text = MSI.read_text().replace("network fwd: fifo, capacity = 2;",
                                   "network fwd: fifo, capacity = 1;")
    one = vocabulary(load_spec_text(text, "msi1.coh"), set())
    assert not [a for a in one.agent if a.group.startswith(ORDER_GROUP)]
    text = MSI.read_text().replace("network fwd: fifo, capacity = 2;",
                                   "network fwd: unordered, capacity = 2;")
    unordered = vocabulary(load_spec_text(text, "msi_u.coh"), set())
    assert not [a for a in unordered.agent if a.group.startswith(ORDER_GROUP)]
