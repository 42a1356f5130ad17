"""NOTE(finite-core): an obligation at a fixed number of agents is quantifier-free, its unsat
core names the hypotheses a goal needs, and the quantified obligation with only those is
asked. The core is a choice of hypotheses, never a proof: a goal that fails has none, and
what proves a goal is the quantified query, a subset of the obligation's hypotheses."""

from __future__ import annotations

import time

import z3
from helpers import ROOT, SPECS

from coherence.smt import nodes, param
from coherence.smt.alpha import alpha_equal
from coherence.smt.finite_core import used_definitions
from coherence.smt.nodes import HOME, NODE, UNDEF_N, finite_nodes
from coherence.smt.param_count import count
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties

RLIMIT = 20_000_000  # Z3 units per check: deterministic


def _german(extra: str = "") -> param.Obligations:
    model = drop_properties(load_spec(SPECS / "german.coh"), ["coherent"])
    return param.Obligations(extend(model, extra) if extra else model)


def _answer(assertions: list[z3.ExprRef]) -> z3.CheckSatResult:
    solver = z3.Solver()
    solver.set("rlimit", RLIMIT)
    solver.add(*assertions)
    return solver.check()


def test_quantifiers_over_a_fixed_size_are_its_instances() -> None:
    x, y = z3.Consts("fc_x fc_y", NODE)
    p = z3.Function("fc_p", NODE, NODE, z3.BoolSort())
    a = z3.Const("fc_a", NODE)
    assert z3.is_quantifier(nodes.forall([x], p(x, x)))
    with finite_nodes([HOME, a]):
        every = nodes.forall([x, y], p(x, y))
        some = nodes.exists([x], p(x, HOME))
        counted = count(x, p(x, x))
    assert not z3.is_quantifier(every) and not z3.is_quantifier(some)
    assert _answer([every != z3.And(p(HOME, HOME), p(HOME, a), p(a, HOME), p(a, a))]) \
        == z3.unsat
    assert _answer([some != z3.Or(p(HOME, HOME), p(a, HOME))]) == z3.unsat
    # a count is the number of agents among the nodes: the home is none
    assert _answer([a != HOME, a != UNDEF_N, p(a, a), p(HOME, HOME), counted != 1]) == z3.unsat
    assert nodes.finite() is None  # the fixed size ends with its block


def test_one_query_is_its_groups() -> None:
    ob = _german()
    g = next(g for g in range(1, ob.groups) if "GntE" in ob.label(g))
    whole = {q.key: q for q in ob.group(g)}
    for key, q in whole.items():
        if q.unchanged:  # a frame is the pre-state's formula there; ``query`` asks it
            continue
        alone = ob.query(g, key)
        assert alone is not None, key
        assert alpha_equal(alone.assertions[-1], q.assertions[-1]), key
        assert len(alone.assertions) == len(q.assertions)
    assert ob.query(g, ("invariant:no-such-line", g - 1, -1)) is None


def test_the_core_keeps_few_hypotheses_and_they_prove_the_goal() -> None:
    ob = _german()
    core = ob.finite_core()
    asked = 0
    for g in range(1, ob.groups):
        for q in ob.group(g):
            if q.unchanged:
                continue
            keep = core.hypotheses(q, RLIMIT)
            assert keep is not None, (q.goal, q.what)
            assert len(keep) < len(ob.inv)
            small = core.restricted(q, keep)
            # the quantified query, only fewer hypotheses: its goal and action are q's
            assert small.assertions[-1].eq(q.assertions[-1])
            assert small.assertions[-2].eq(q.assertions[-2])
            assert all(any(h.eq(a) for a in q.assertions) for h in small.assertions)
            assert _answer(small.quantified) == z3.unsat, (q.goal, q.what)
            asked += 1
    assert asked > 100


def test_a_goal_that_fails_has_no_core() -> None:
    # false: a cache that receives GntE is in E after it; the other actions preserve it
    ob = _german("invariant aux never_exclusive: forall i: agent :: Cache[i].state != E;")
    core = ob.finite_core()
    granted = kept = 0
    for g in range(1, ob.groups):
        for q in ob.group(g):
            if q.goal != "invariant:never_exclusive" or q.unchanged:
                continue
            keep = core.hypotheses(q, RLIMIT)
            if "GntE" in q.what:
                granted += 1
                assert keep is None, q.what
                budget = param.Budget(None, 10 * RLIMIT, time.perf_counter())
                assert not param._core_try(q, ob.finite_core, budget)
            elif keep is not None:
                kept += 1
                assert _answer(core.restricted(q, keep).quantified) == z3.unsat, q.what
    assert granted == 1 and kept >= 1


def test_only_the_definitions_used_are_kept() -> None:
    z = z3.Const("fc_z", NODE)
    y = z3.Const("fc_y", NODE)
    f = z3.Function("fc_F", NODE, z3.ArraySort(NODE, z3.BoolSort()))
    g = z3.Function("fc_G", NODE, z3.ArraySort(NODE, z3.BoolSort()))
    h = z3.Function("fc_H", NODE, z3.ArraySort(NODE, z3.BoolSort()))
    q = z3.Function("fc_q", NODE, NODE, z3.BoolSort())
    def_f = z3.ForAll([z], f(z) == z3.Lambda([y], g(z)[y]))  # F's set reads G's
    def_g = z3.ForAll([z], g(z) == z3.Lambda([y], q(z, y)))
    def_h = z3.ForAll([z], h(z) == z3.Lambda([y], z3.Not(q(z, y))))
    a = z3.Const("fc_a", NODE)
    kept = used_definitions([def_f, def_g, def_h], [f(a)[a]])
    assert [d.get_id() for d in kept] == [def_f.get_id(), def_g.get_id()]
    assert used_definitions([def_f, def_g, def_h], [q(a, a)]) == []


def test_broken_names_the_goals_a_step_breaks_and_none_once_the_lines_are_inductive() -> None:
    # the token chain: mutual exclusion alone is not inductive at 3 agents (a token in flight
    # beside a holder), its inferred lines are (tests/test_cycle_clauses.py proves them)
    from coherence.smt.finite_core import FiniteCore
    from coherence.smt.param import Obligations
    spec = ROOT / "tests" / "specs" / "infer" / "token_chain.coh"
    lines = ("invariant aux a1: forall i: agent :: (inflight(Tok) -> (Cache[i].state != T));\n"
             "invariant aux a2: forall i: agent, j: agent :: i != j -> ((inflight(Tok, i)) -> "
             "(!(inflight(Tok, j))));\n")
    for text, expect in (("", True), (lines, False)):
        ob = Obligations(extend(load_spec(spec), text) if text else load_spec(spec))
        core = FiniteCore(ob, 3)
        g = next(g for g in range(1, ob.groups) if ob.label(g) == "Cache.message Tok in W")
        broken, last = core.broken(ob.group(g), 100_000_000)
        assert ("invariant:mutex" in broken) == expect, broken
        if not expect:  # nothing broken: the last answer says the rest hold
            assert last == z3.unsat
