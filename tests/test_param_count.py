"""Counting in proofs for every number of agents (NOTE(param-count) in coherence/smt/param.py):
the cardinality axioms prove the counting facts a step needs and nothing false, integer ranges
that move with the number of agents are linear bounds, and a spec that counts is proved for
every N while its mutants are not."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
import z3

from coherence.smt.infer import InferOptions, infer
from coherence.smt.nodes import HOME, NODE, UNDEF_N, is_agent
from coherence.smt.param import Budget, obligations, prove_all
from coherence.smt.param_count import (
    INT,
    Linear,
    agents_count,
    card,
    card_terms,
    exact,
    scaled_ranges,
    venn_axioms,
)
from coherence.smt.param_cti import find_cti
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.select import drop_properties

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "tests" / "specs"
RLIMIT = 150_000_000

S = z3.Array("S", NODE, z3.BoolSort())
X, Y = z3.Consts("x y", NODE)


def _decide(goal: z3.BoolRef, facts: list[z3.BoolRef], pool: list[z3.ExprRef]) -> z3.CheckSatResult:
    """Whether ``facts`` and the Venn axioms of their card terms refute ``not goal``."""
    terms = card_terms([*facts, goal])
    solver = z3.Solver()
    solver.set("rlimit", 20_000_000)
    solver.add(HOME != UNDEF_N, *facts, *venn_axioms(terms, pool), z3.Not(goal))
    return solver.check()


def test_removing_a_member_counts_one_less() -> None:
    post = z3.Store(S, X, False)
    facts = [is_agent(X), S[X]]
    assert _decide(card(post) == card(S) - 1, facts, [HOME, UNDEF_N, X]) == z3.unsat


def test_adding_a_non_member_counts_one_more() -> None:
    post = z3.Store(S, X, True)
    facts = [is_agent(X), z3.Not(S[X])]
    assert _decide(card(post) == card(S) + 1, facts, [HOME, UNDEF_N, X]) == z3.unsat


def test_two_distinct_non_members_leave_room_for_two() -> None:
    facts = [is_agent(X), is_agent(Y), X != Y, z3.Not(S[X]), z3.Not(S[Y])]
    assert _decide(card(S) + 2 <= agents_count(), facts, [HOME, UNDEF_N, X, Y]) == z3.unsat


def test_empty_count_means_no_member() -> None:
    facts = [is_agent(X), card(S) == 0]
    assert _decide(z3.Not(S[X]), facts, [HOME, UNDEF_N, X]) == z3.unsat


def test_the_axioms_prove_nothing_false() -> None:
    pool = [HOME, UNDEF_N, X, Y]
    absent = [is_agent(X), z3.Not(S[X])]
    present = [is_agent(X), S[X]]
    # x was not there, so adding it changes the count; x was there, so removing it does
    assert _decide(card(z3.Store(S, X, True)) == card(S), absent, pool) == z3.sat
    assert _decide(card(z3.Store(S, X, False)) == card(S), present, pool) == z3.sat
    # two known non-members leave room for two, not for three
    two = [is_agent(X), is_agent(Y), X != Y, z3.Not(S[X]), z3.Not(S[Y])]
    assert _decide(card(S) + 3 <= agents_count(), two, pool) == z3.sat


def test_exact_count_over_a_finite_universe() -> None:
    elems = [HOME, UNDEF_N, *z3.Consts("k0 k1 k2", NODE)]
    solver = z3.Solver()
    solver.add(z3.Distinct(*elems))
    t = card(S)
    total = exact(t, elems, lambda x: x)
    for bits in itertools.product([False, True], repeat=3):
        solver.push()
        solver.add(*[S[e] == b for e, b in zip(elems[2:], bits, strict=True)])
        solver.add(S[HOME], S[UNDEF_N])  # not agents: never counted
        assert solver.check() == z3.sat
        assert solver.model().eval(total).as_long() == sum(bits)
        solver.pop()
    assert total.sort() == INT


SCALED = """
param agents = 3;
param lines = 1;
param values = 1;
home machine H { stable state R; init R; var n: int[0..agents] = 0;
  var d: int[0 - agents..agents + 1] = 0; var k: int[0..2] = 0; }
cache machine C { stable state I; init I; }
"""


def test_ranges_that_move_with_the_number_of_agents_are_linear_bounds() -> None:
    model = load_spec_text(SCALED, "scaled.coh")
    home = model.machine("H")
    ranges = scaled_ranges(model)
    by_name = {v.name: ranges.get(v.span) for v in home.vars}
    assert by_name == {"n": (Linear(0, 0), Linear(0, 1)),            # 0 .. N
                       "d": (Linear(0, -1), Linear(1, 1)),           # -N .. N + 1
                       "k": None}                                    # fixed: a bit-vector


def _prove(name: str) -> str:
    return prove_all(load_spec(str(SPECS / "count" / name)), rlimit=RLIMIT).verdict


def test_a_counter_beside_its_set_is_proved_for_every_n() -> None:
    assert _prove("sharer_set_and_counter.coh") == "holds"


def test_a_counter_that_forgets_to_decrement_is_not_proved(tmp_path: Path) -> None:
    text = (SPECS / "count" / "sharer_set_and_counter.coh").read_text()
    mutant = text.replace("    n := n - 1;\n", "")
    assert mutant != text
    path = tmp_path / "mutant.coh"
    path.write_text(mutant)
    model = load_spec(str(path))
    result = prove_all(model, rlimit=RLIMIT)
    assert result.verdict == "fails", (result.verdict, result.ctis)
    assert any("counted" in f.name for f in result.failures)


@pytest.mark.parametrize("spec", ["msi_directory", "mesi_directory"])
def test_msi_and_mesi_are_inside_the_fragment(spec: str) -> None:
    """Their ack counter (``int[0 - agents..agents]``) and ``size(sharers)`` in Data are
    encoded: a counterexample to induction of their bare invariants replays, with integer
    counters, through the reference semantics."""
    model = drop_properties(load_spec(str(ROOT / "specs" / f"{spec}.coh")), ["coherent"])
    _enc, _cur, queries = obligations(model)
    assert all(q.counts for q in queries)
    q = next(q for q in queries if q.goal == "invariant:swmr"
             and q.what.startswith("action Cache.message Data in IS_D"))
    cti = find_cti(model, q, Budget(None, RLIMIT, time.perf_counter()), range(1, 3))
    assert cti is not None
    assert "swmr" in cti.summary
    assert any("acks=" in line for line in cti.pre), cti.pre


def test_inference_never_proves_the_counter_that_forgets_to_decrement(tmp_path: Path) -> None:
    text = (SPECS / "infer" / "sharer_counter.coh").read_text()
    mutant = text.replace("    n := n - 1;\n", "")
    assert mutant != text
    path = tmp_path / "mutant.coh"
    path.write_text(mutant)
    result = infer(load_spec(str(path)), InferOptions(
        sizes=(2,), literals={"global": 1, "agent": 2, "pair": 1, "msg": 1},
        rlimit=20_000_000, final_rlimit=100_000_000, explore_seconds=float("inf")))
    assert result.proof.verdict == "fails", (result.proof.verdict, result.proof.reason)


def test_msi_counting_invariants_hold_in_the_checker() -> None:
    """The hand-written counting invariants of MSI (tests/specs/count/msi_counting_aux.coh)
    hold at 3 agents, so a proof attempt with them starts from true invariants."""
    from coherence.engines import check
    from coherence.results import CheckOptions
    model = drop_properties(load_spec(str(SPECS / "count" / "msi_counting_aux.coh")),
                            ["coherent"])
    assert {"owed_with_data", "owed_after_data", "nobody_owes"} <= {
        i.name for i in model.invariants}
    result = check(model, CheckOptions(deadlock=False, liveness=False, vacuity=False))
    assert result.verdict == "holds", [f.name for f in result.failures]
    assert result.states == 9910


# A count sent in a field of fixed range: size(s) reaches 4 at 4 agents, out of int[0..3].
COUNT_IN_FIXED_FIELD = """param agents = 2;
network net: unordered, capacity = agents + 1;
message Hello on net;
message D(k: int[0..3]) on net;
cache machine C {
  stable state S, T;
  init S;
  rule Join in S { send Hello to home; goto T; }
}
home machine H {
  stable state R;
  init R;
  var s: set<agent> = {};
  on Hello { s.add(msg.src); }
  rule Go in R when !inflight(D) { send D(SENT) to home; }
  on D { }
}
"""


def test_a_count_sent_in_a_fixed_range_field_is_range_checked() -> None:
    """``Semantics.deliver`` checks every field's range. A count in a fixed-range field was a
    Z3 sort error (a traceback); now it is checked and converted: its overflow, possible
    only from 4 agents on, keeps the proof from holding, and a step that errs at once is a
    failure."""
    grows = prove_all(load_spec_text(COUNT_IN_FIXED_FIELD.replace("SENT", "size(s)")),
                      rlimit=RLIMIT)
    assert grows.verdict == "unknown"
    assert any("then H.rule Go in R errs" in c for c in grows.ctis), grows.ctis
    negative = prove_all(load_spec_text(COUNT_IN_FIXED_FIELD.replace("SENT", "size(s) - 1")),
                         rlimit=RLIMIT)
    assert negative.verdict == "fails"
    assert [f.message for f in negative.failures] == ["value -1 of D.k is out of range "
                                                      "int[0..3]"]


COUNT_INTO_FIXED = """
param agents = 2;
network req: unordered, capacity = agents;
message Go on req;
home machine H {
  stable state R; init R;
  var sharers: set<agent> = {};
  var n: int[0..2] = 0;
  on Go { sharers.add(msg.src); ASSIGN }
}
cache machine C {
  stable state I, G; init I;
  rule Start in I { send Go to home; goto G; }
}
invariant bounded: H.n <= 2;
invariant aux go_from_g: forall m: Go :: C[m.src].state == G && !(m.src in H.sharers);
invariant aux sharer_g: forall a: agent :: a in H.sharers -> C[a].state == G;
"""


@pytest.mark.parametrize(("assign", "verdict"), [
    ("n := size(sharers);", "fails"),  # 3 at 3 agents: out of int[0..2]
    ("if size(sharers) <= 2 { n := size(sharers); }", "holds"),
    # a count in one branch of a conditional expression, a literal in the other: was a Z3
    # sort error (found by tests/test_infer_random_soundness.py's slow tier)
    ("n := (if size(sharers) > 2 then 2 else size(sharers));", "holds"),
    ("n := (if inflight(Go) then 1 else size(sharers));", "fails"),
])
def test_a_count_assigned_to_a_variable_of_fixed_range_is_range_checked(
        assign: str, verdict: str) -> None:
    # was a Z3 sort error (an integer stored in a bit-vector array): a traceback
    model = load_spec_text(COUNT_INTO_FIXED.replace("ASSIGN", assign), "c.coh")
    result = prove_all(model, rlimit=RLIMIT)
    assert result.verdict == verdict, (result.reason, result.ctis)
    if verdict == "fails":
        assert result.instance == 3
        assert "value 3 is out of range int[0..2]" in result.failures[0].message


# -------------------------------------------------------------- isundefined() of a count-sized int

UNDEF_TEMPLATE = """
param agents = 2;
network quiet: unordered, capacity = 1;
message Never on quiet;
event Go;
home machine H {{ stable state R; init R; on Never {{ }} }}
cache machine C {{
  stable state A, B; init A;
  var k: int[0..agents] = {init};
  on Never in A {{ }}
  on Go in A {{ {go} goto B; }}
}}
invariant p: forall i: agent :: {prop};
"""


@pytest.mark.parametrize(("init", "go", "prop", "verdict"), [
    # session 21: isundefined() of an integer whose range moves with N was false in every
    # state of the encoding, and the first case was PROVED for every number of agents
    ("undefined", "", "!isundefined(C[i].k)", "fails"),
    ("undefined", "", "isundefined(C[i].k)", "holds"),
    ("0", "", "!isundefined(C[i].k)", "holds"),
    ("0", "undefine k;", "!isundefined(C[i].k)", "fails"),
    ("0", "undefine k;", "C[i].state == A -> !isundefined(C[i].k)", "holds"),
])
def test_isundefined_of_an_integer_sized_by_the_agents(init: str, go: str, prop: str,
                                                       verdict: str) -> None:
    from coherence.engines import check
    text = UNDEF_TEMPLATE.format(init=init, go=go, prop=prop)
    model = load_spec_text(text, "undef.coh")
    assert check(model).verdict == verdict  # the explicit checker at 2 agents agrees
    result = prove_all(model, rlimit=100_000_000)
    assert result.verdict == verdict, (result.reason, result.failures)
