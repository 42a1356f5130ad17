"""NOTE(frame-unchanged): an obligation whose property the action leaves as it was (the same
formula up to bound-variable names) is settled without Z3. Alpha-equality must be exact, and
the obligations it marks must be the ones Z3 proves at once, never one with a counterexample
to induction."""

from __future__ import annotations

import pytest
import z3
from helpers import MSI_HOME_ACKS_BROKEN, MUTEX, PROOF_RLIMIT, SPECS, msi_home_acks_houdini
from hypothesis import given
from hypothesis import strategies as st

from coherence import ir
from coherence.smt.alpha import alpha_equal
from coherence.smt.param import obligations, prove_all
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.select import drop_properties

S = z3.DeclareSort("FrameS")
F = z3.Function("frame_f", S, S, z3.BoolSort())
G = z3.Function("frame_g", S, S)
CONSTS = z3.Consts("frame_c frame_d", S)


def test_fresh_bound_names_are_the_same_formula() -> None:
    a, b = z3.FreshConst(S, "i"), z3.FreshConst(S, "i")
    c = CONSTS[0]
    one, other = z3.ForAll([a], F(a, c)), z3.ForAll([b], F(b, c))
    assert not one.eq(other)  # why the shortcut is needed: Z3 sees two terms
    assert alpha_equal(one, other)
    assert alpha_equal(z3.Lambda([a], F(a, c)), z3.Lambda([b], F(b, c)))


def test_differences_beyond_bound_names_are_seen() -> None:
    a, b = z3.FreshConst(S, "i"), z3.FreshConst(S, "j")
    c, d = CONSTS
    assert not alpha_equal(z3.ForAll([a], F(a, c)), z3.ForAll([a], F(c, a)))
    assert not alpha_equal(z3.ForAll([a], F(a, c)), z3.Exists([a], F(a, c)))
    assert not alpha_equal(z3.ForAll([a], F(a, c)), z3.ForAll([a], F(a, d)))
    assert not alpha_equal(z3.ForAll([a, b], F(a, b)), z3.ForAll([a, b], F(b, a)))
    x, y = z3.FreshInt("x"), z3.FreshConst(z3.BoolSort(), "x")
    assert not alpha_equal(z3.ForAll([x], x > 0), z3.ForAll([y], y))


# a formula as data: ("f", t, t) | ("not", p) | ("and", p, p) | ("all", p) | ("ex", p), terms
# ("c", k) | ("v", depth) | ("g", t); ("v", d) names the variable of the d-th enclosing binder
_TERM = st.recursive(
    st.one_of(st.tuples(st.just("c"), st.integers(0, 1)),
              st.tuples(st.just("v"), st.integers(0, 2))),
    lambda t: st.tuples(st.just("g"), t), max_leaves=3)
_FORMULA = st.recursive(
    st.tuples(st.just("f"), _TERM, _TERM),
    lambda p: st.one_of(st.tuples(st.just("not"), p), st.tuples(st.just("and"), p, p),
                        st.tuples(st.sampled_from(["all", "ex"]), p)),
    max_leaves=6)


def _build(form: tuple, bound: list) -> z3.ExprRef:
    """The formula with fresh names for every binder's variable (a variable out of scope is a
    constant)."""
    def term(t: tuple) -> z3.ExprRef:
        if t[0] == "c":
            return CONSTS[t[1]]
        if t[0] == "v":
            return bound[-1 - t[1]] if t[1] < len(bound) else CONSTS[0]
        return G(term(t[1]))
    if form[0] == "f":
        return F(term(form[1]), term(form[2]))
    if form[0] == "not":
        return z3.Not(_build(form[1], bound))
    if form[0] == "and":
        return z3.And(_build(form[1], bound), _build(form[2], bound))
    x = z3.FreshConst(S, "i")
    body = _build(form[1], [*bound, x])
    return z3.ForAll([x], body) if form[0] == "all" else z3.Exists([x], body)


def _canonical(form: tuple, depth: int = 0) -> object:
    """The formula's meaning as data: a variable out of scope is the constant it becomes."""
    def term(t: tuple) -> object:
        if t[0] == "v":
            return ("v", t[1]) if t[1] < depth else ("c", 0)
        return ("g", term(t[1])) if t[0] == "g" else t
    if form[0] == "f":
        return ("f", term(form[1]), term(form[2]))
    if form[0] in ("all", "ex"):
        return (form[0], _canonical(form[1], depth + 1))
    return (form[0], *(_canonical(p, depth) for p in form[1:]))


@given(_FORMULA, _FORMULA)
def test_alpha_equality_is_equality_of_the_formulas(one: tuple, other: tuple) -> None:
    assert alpha_equal(_build(one, []), _build(one, []))
    same = _canonical(one) == _canonical(other)
    assert alpha_equal(_build(one, []), _build(other, [])) == same


def _unchanged(queries: list) -> list:
    marked = [q for q in queries if q.unchanged]
    assert all(q.what.startswith("action ") for q in marked)
    return marked


def test_marked_obligations_are_the_ones_z3_proves_at_once() -> None:
    """German's proof: each marked obligation is unsatisfiable in a fresh solver within a
    small resource limit (its hypothesis is the negated goal, renamed)."""
    model = drop_properties(load_spec(SPECS / "german.coh"), ["coherent"])
    _enc, _cur, queries = obligations(model)
    marked = _unchanged(queries)
    # 20 properties, 15 actions: the home's request handling leaves the caches' lines alone
    assert 40 <= len(marked) < len(queries) // 2, (len(marked), len(queries))
    for q in marked:
        solver = z3.Solver()
        solver.set("rlimit", 2_000_000)
        solver.add(*q.assertions)
        assert solver.check() == z3.unsat, (q.goal, q.what)


def _german_without_aux() -> ir.Model:
    text = (SPECS / "german.coh").read_text()
    return drop_properties(load_spec_text(text[:text.index("// ---- auxiliary invariants")]),
                           ["coherent"])


@pytest.mark.parametrize("spec", [
    "mutex",
    pytest.param("german", marks=pytest.mark.slow),  # 40-75 s of Z3
])
def test_an_action_that_changes_a_property_is_not_marked(spec: str) -> None:
    """Specs without their auxiliary lines: the obligations with a counterexample to induction
    (found by the proof) are never marked, and the proof still finds them."""
    model = load_spec_text(MUTEX) if spec == "mutex" else _german_without_aux()
    result = prove_all(model, rlimit=PROOF_RLIMIT)
    assert result.verdict != "holds" and result.ctis
    _enc, _cur, queries = obligations(model)
    marked = {(q.goal, q.what) for q in _unchanged(queries)}
    for cti in result.ctis:
        assert not any(cti.startswith(f"{goal} is not preserved by {what} ")
                       for goal, what in marked), cti


def test_msi_home_acks_broken_obligations_are_not_marked() -> None:
    queries = obligations(msi_home_acks_houdini())[2]
    marked = {(q.goal, q.what) for q in _unchanged(queries)}
    assert marked, "msi_home_acks' home actions leave the caches' lines alone"
    assert not marked & set(MSI_HOME_ACKS_BROKEN)
