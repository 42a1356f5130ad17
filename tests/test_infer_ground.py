"""``infer_ground``: quantifier-free weakenings are sound (an unsatisfiable grounding means the
quantified formula is unsatisfiable) and precise enough to prove what instances prove."""

from __future__ import annotations

import z3

from coherence.smt.infer_ground import Grounder, instances, resolved

NODE = z3.DeclareSort("TestNode")
P = z3.Function("P", NODE, z3.BoolSort())
R = z3.Function("R", NODE, NODE, z3.BoolSort())
a, b, c = z3.Consts("a b c", NODE)
x, y = z3.Consts("x y", NODE)


def _unsat(*fs: z3.BoolRef) -> bool:
    s = z3.Solver()
    s.set("rlimit", 5_000_000)  # deterministic units, never a wall clock
    s.add(*fs)
    r = s.check()
    assert r != z3.unknown
    return r == z3.unsat


def test_universal_hypothesis_is_instantiated_over_the_terms() -> None:
    g = Grounder(NODE, [a, b])
    hyp = g(z3.ForAll([x], P(x)))
    assert not z3.is_quantifier(hyp)
    assert _unsat(hyp, z3.Not(P(a)))
    # a term outside the set is not covered: a weakening, never a stronger claim
    assert not _unsat(hyp, z3.Not(P(c)))


def test_negated_universal_goal_is_witnessed_by_the_pool() -> None:
    g = Grounder(NODE, [a, b])
    goal = g.goal(z3.Not(z3.ForAll([x, y], R(x, y))), [a, b])
    assert not z3.is_quantifier(goal)
    assert _unsat(goal, R(a, b))


def test_existential_in_a_hypothesis_gets_a_witness_per_instance() -> None:
    # forall x. exists y. R(x, y): one Skolem term per instance, never one shared witness
    t = Grounder(NODE, [a, b], (x,))
    tmpl = t(z3.Exists([y], R(x, y)))
    both = z3.And(instances(tmpl, (x,), [(a,), (b,)]))
    assert not z3.is_quantifier(both)
    # R(a, w) and R(b, w') with w != w' allowed: "no node relates to two" stays satisfiable
    distinct_witness = z3.ForAll([x, y], z3.Implies(z3.And(R(a, x), R(b, y)), x != y))
    assert not _unsat(both, distinct_witness, a != b)


def test_polarity_under_negation_and_implication() -> None:
    g = Grounder(NODE, [a])
    # (exists x. P(x)) -> P(a), asserted: the existential is in a negative position, i.e. a
    # universal: instantiated at a, it gives P(a) -> P(a)
    f = g(z3.Implies(z3.Exists([x], P(x)), P(a)))
    assert not z3.is_quantifier(f)
    assert not _unsat(f)
    # not (forall x. P(x)) with P true at every term is still satisfiable (a fresh witness)
    assert not _unsat(g(z3.Not(z3.ForAll([x], P(x)))), P(a))


def test_quantifier_inside_a_term_if_is_lifted() -> None:
    bv = z3.BitVecSort(16)
    as_int = z3.If(z3.ForAll([x], P(x)), z3.BitVecVal(1, bv), z3.BitVecVal(0, bv))
    g = Grounder(NODE, [a])
    f = g(as_int != 0)  # "forall x. P(x)" as the encoders write it
    assert not g.has_quantifier(f)
    assert _unsat(f, z3.Not(P(a)))


def test_nested_goal_quantifiers_take_the_pools_constants() -> None:
    # not (forall x. P(x) -> b2i(forall y. R(x, y)) != 0), as the encoder writes a two-agent
    # invariant: both witnesses come from the pool, so hypotheses instantiated there apply
    bv = z3.BitVecSort(16)
    inner = z3.If(z3.ForAll([y], R(x, y)), z3.BitVecVal(1, bv), z3.BitVecVal(0, bv))
    inv = z3.ForAll([x], z3.Implies(P(x), inner != 0))
    g = Grounder(NODE, [a, b])
    goal = g.goal(z3.Not(inv), [a, b])
    assert "sk!" not in goal.sexpr()
    assert _unsat(goal, g(inv))


def test_resolved_drops_a_variable_its_body_pins_down() -> None:
    """``∃x. x = a ∧ φ(x)`` is ``φ(a)`` and ``∀x. x ≠ a ∨ φ(x)`` too: equivalent, and no
    instance to build (a message quantifier naming its source and destination)."""
    pinned = [z3.Exists([x, y], z3.And(x == a, y == b, R(x, y))),
              z3.ForAll([x], z3.Or(x != a, R(x, x)))]
    for t in pinned:
        r = resolved(t)
        assert not Grounder(NODE, [a]).has_quantifier(r), r
        assert _unsat(r != t)
    free = z3.ForAll([x], R(x, a))
    assert Grounder(NODE, [a]).has_quantifier(resolved(free))
    assert _unsat(resolved(free) != free)


def test_a_goal_gets_the_same_witness_in_every_grounder() -> None:
    """Witnesses are named after their formula: a goal grounded again over more terms (the
    proof's wider context, NOTE(param-ground-fallback)) names the same nodes, so the
    hypotheses can be instantiated at them."""
    goal = z3.Exists([x], z3.And(P(x), z3.Not(R(x, a))))
    one = Grounder(NODE, [a]).goal(goal, [])
    two = Grounder(NODE, [a, b, c]).goal(goal, [])
    assert one.eq(two)
    witness = [t for t in _constants(one) if t.sort() == NODE and not t.eq(a)]
    assert len(witness) == 1
    # instantiated at the witness, "P holds nowhere" refutes the goal; over a and b only, not
    wide = Grounder(NODE, [a, b, *witness])
    assert _unsat(wide(z3.ForAll([y], z3.Not(P(y)))), two)
    assert not _unsat(Grounder(NODE, [a, b])(z3.ForAll([y], z3.Not(P(y)))), two)
    # two different existentials never share a witness
    other = Grounder(NODE, [a]).goal(z3.Exists([x], z3.And(P(x), R(x, a))), [])
    assert not (set(map(str, _constants(other))) & {str(w) for w in witness})


def _constants(t: z3.ExprRef) -> list[z3.ExprRef]:
    out: dict[int, z3.ExprRef] = {}
    todo = [t]
    while todo:
        e = todo.pop()
        if z3.is_app(e):
            if e.num_args() == 0 and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                out[e.get_id()] = e
            todo.extend(e.children())
    return list(out.values())


def test_resolved_leaves_a_term_the_tactics_refuse_as_it_is(monkeypatch) -> None:
    import coherence.smt.infer_ground as ground

    def refuse(_t: z3.ExprRef) -> None:
        raise z3.Z3Exception("not taken")

    monkeypatch.setattr(ground, "_RESOLVE", refuse)
    t = z3.ForAll([x], z3.Or(x != a, P(x)))
    assert resolved(t).eq(t)
