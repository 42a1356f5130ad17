"""The proof's quantifier-free try (``param.Grounded``, NOTE(param-ground-fallback)) proves only
what holds: an obligation with a counterexample to induction is never proved by it, and the
obligations of an inductive spec mostly are."""

from __future__ import annotations

import re

import pytest
from helpers import (
    AUX,
    MSI_HOME_ACKS_BROKEN,
    MUTEX,
    PROOF_RLIMIT,
    SPECS,
    msi_home_acks_houdini,
)

from coherence import ir
from coherence.smt.param import Grounded, obligations, prove_all
from coherence.spec.load import load_spec_text
from coherence.spec.select import drop_properties

GERMAN = (SPECS / "german.coh").read_text()
AUX_START = GERMAN.index("// ---- auxiliary invariants")


def _broken(model: ir.Model) -> list[tuple[str, str]]:
    """(goal, what) of every obligation the full proof finds a counterexample for."""
    result = prove_all(model, rlimit=PROOF_RLIMIT)
    assert result.verdict != "holds" and result.ctis
    out = []
    for c in result.ctis:
        m = re.fullmatch(r"(\S+) is not preserved by (action .*) \(for some number of agents\)",
                         c)
        assert m is not None, c
        out.append((m.group(1), m.group(2)))
    return out


def _never_proves_a_broken_obligation(model: ir.Model) -> int:
    broken = set(_broken(model))
    _enc, _cur, queries = obligations(model)
    hit = [q for q in queries if (q.goal, q.what) in broken]
    assert {(q.goal, q.what) for q in hit} == broken
    for q in hit:
        assert not Grounded(q).proves(q.assertions[-1]), (q.goal, q.what)
    return len(hit)


def test_mutex_without_aux_keeps_its_counterexamples() -> None:
    assert _never_proves_a_broken_obligation(load_spec_text(MUTEX)) >= 1


@pytest.mark.parametrize("cut", [
    "gnte_to_invalid",
    pytest.param("exclusive_is_alone", marks=pytest.mark.slow),  # 50-75 s of Z3 each
    pytest.param("inv_to_holder", marks=pytest.mark.slow),
])
def test_german_without_one_aux_line_keeps_its_counterexamples(cut: str) -> None:
    """German's hand-written proof with one line missing: the obligations it leaves open."""
    aux = GERMAN[AUX_START:]
    lines = aux.split("\ninvariant ")
    kept = [x for x in lines if not x.startswith(f"aux {cut}:")]
    assert len(kept) == len(lines) - 1, f"no aux line {cut} in specs/german.coh"
    text = GERMAN[:AUX_START] + "\ninvariant ".join(kept)
    model = drop_properties(load_spec_text(text), ["coherent"])
    assert _never_proves_a_broken_obligation(model) >= 1


def test_mutex_with_aux_obligations_are_mostly_proved_quantifier_free() -> None:
    """A weakening proves less than the quantified form: 29 of the 45 step obligations here
    (the others go on to the quantified solver)."""
    model = load_spec_text(MUTEX + AUX)
    _enc, _cur, queries = obligations(model)
    steps = [q for q in queries if q.what != "init"]
    proved = sum(Grounded(q).proves(q.assertions[-1]) for q in steps)
    assert 2 * proved >= len(steps), (proved, len(steps))


def test_grounding_stops_at_its_instance_budget() -> None:
    """A ground context that would take minutes to build (MSI's count invariants: message
    quantifiers over node pairs, nested) is given up (``TooLarge``): the quantified solver and
    the CTI search still decide the query."""
    import z3

    from coherence.smt.infer_ground import Grounder, TooLarge
    from coherence.smt.nodes import HOME, NODE, UNDEF_N

    p = z3.Function("p", NODE, NODE, z3.BoolSort())
    x, y = z3.Consts("x y", NODE)
    claim = z3.ForAll([x, y], p(x, y))
    assert z3.is_and(Grounder(NODE, [HOME, UNDEF_N], budget=4).ground(claim, True))
    with pytest.raises(TooLarge):
        Grounder(NODE, [HOME, UNDEF_N], budget=3).ground(claim, True)



@pytest.fixture(scope="module")
def mha_queries() -> list:
    return obligations(msi_home_acks_houdini())[2]


def test_goal_witnesses_let_the_ground_try_prove_three_agent_lines(mha_queries: list) -> None:
    """A goal's existentials (the source of a ``Data`` in flight) have witnesses that the
    hypotheses are instantiated at too: a three-agent obligation the quantified solver gives
    up on (5 s, then a minute) is proved in the ground context over the goal's nodes, and
    not in the action's context alone. Its neighbour ``inferred_43`` needed them too until
    the home became the source of the forwarded requests (NOTE(home-sources)); it is proved
    in the action's context now."""
    step = [q for q in mha_queries if q.what == "action Dir.message GetS in M"]
    goals = {q.goal: q for q in step}
    grounded = Grounded(step[0])
    goal = goals["invariant:inferred_44"].assertions[-1]
    assert not grounded.proves(goal, wider=False)
    assert grounded.proves(goal)
    assert grounded.proves(goals["invariant:inferred_43"].assertions[-1], wider=False)


@pytest.mark.parametrize(("goal", "what"), MSI_HOME_ACKS_BROKEN)
def test_goal_witnesses_never_prove_a_broken_obligation(mha_queries: list, goal: str,
                                                        what: str) -> None:
    """Obligations with a concrete counterexample to induction (tests/test_infer_repair.py
    replays them) stay unproved by the ground try, with its goal witnesses."""
    hit = [q for q in mha_queries if (q.goal, q.what) == (goal, what)]
    assert len(hit) == 1, (goal, what)
    assert not Grounded(hit[0]).proves(hit[0].assertions[-1])


def test_reuse_skips_what_an_earlier_proof_settled() -> None:
    """``prove_all(reuse=...)`` (the repair rounds of ``--infer``): the settled obligations of
    a proof are skipped by the next one on the spec with more lines, and those that were not
    settled are still checked (their counterexamples stay)."""
    weak = load_spec_text(MUTEX)
    first = prove_all(weak, rlimit=PROOF_RLIMIT)
    assert first.verdict != "holds" and first.ctis and first.settled
    keys = {q.key for q in obligations(weak)[2]}
    assert set(first.settled) < keys
    again = prove_all(weak, rlimit=PROOF_RLIMIT, reuse=first.settled)
    assert again.ctis == first.ctis  # what was not settled is checked again
    assert set(again.settled) == set(first.settled)
    strong = load_spec_text(MUTEX + AUX)
    whole = prove_all(strong, rlimit=PROOF_RLIMIT)
    reused = prove_all(strong, rlimit=PROOF_RLIMIT, reuse=first.settled)
    assert whole.verdict == reused.verdict == "holds"
    assert set(reused.settled) == set(whole.settled) == {q.key for q in obligations(strong)[2]}
    assert set(first.settled) <= set(reused.settled)


def test_query_keys_are_one_per_query_and_survive_more_lines() -> None:
    weak, strong = load_spec_text(MUTEX), load_spec_text(MUTEX + AUX)
    wq, sq = obligations(weak)[2], obligations(strong)[2]
    assert len({q.key for q in wq}) == len(wq)
    assert len({q.key for q in sq}) == len(sq)
    by_key = {q.key: q for q in sq}
    for q in wq:  # the same obligation (goal, action) under the same key
        assert (by_key[q.key].goal, by_key[q.key].what) == (q.goal, q.what)
