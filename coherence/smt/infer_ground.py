"""Quantifier-free weakenings of the parameterised encoding's formulas, for Houdini.

A proof obligation of ``param.py`` is a set of assertions that must be unsatisfiable. Each
universal quantifier over nodes in a positive position (an existential in a negative one) is
replaced by its instances over a finite set of ground terms: the agents the step touches, the
home's node variables, the constants naming the goal's agents. Instantiating an assumption only
weakens it, so an unsatisfiable weakening proves the original obligation; a satisfiable one may
be spurious, which costs Houdini a candidate, never soundness (the final proof re-checks
everything from scratch). Existentials in positive positions are Skolemized (by a function of
the template's parameters, so that each instance gets its own witness); what is left is
quantifier-free, which Z3 decides in milliseconds where it times out on the quantified form.

Term-level ``If``s whose condition contains a quantifier (``b2i`` of ``exists``) are lifted to
the Boolean level first, so that every quantifier has one polarity.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import z3

_BOOL = z3.BoolSort()


class TooLarge(Exception):
    """Grounding would build more quantifier instances than its budget allows."""


class Grounder:
    """Grounds formulas over the node terms ``terms``; ``params`` are constants that stand for
    a template's arguments (each instance substitutes them: Skolem terms depend on them).
    ``budget``: the quantifier instances it may build (``TooLarge`` past it; None: no cap)."""

    def __init__(self, node_sort: Any, terms: list[Any], params: tuple[Any, ...] = (),
                 budget: int | None = None) -> None:
        self.node = node_sort
        self.terms = list(terms)
        self.params = params
        self.left = budget
        self.deadline: float | None = None  # a time.perf_counter() past which it gives up
        self.memo: dict[tuple[int, bool], tuple[Any, Any]] = {}
        self.hasq: dict[int, tuple[Any, bool]] = {}

    def has_quantifier(self, t: Any) -> bool:
        return self._hasq(t.ctx.ref(), t.as_ast())

    def _hasq(self, ctx: Any, a: Any) -> bool:
        """On raw ASTs: the Python wrappers cost microseconds per node."""
        key = z3.Z3_get_ast_id(ctx, a)
        hit = self.hasq.get(key)
        if hit is not None:
            return hit[1]
        kind = z3.Z3_get_ast_kind(ctx, a)
        if kind == z3.Z3_QUANTIFIER_AST:
            out = (not z3.Z3_is_lambda(ctx, a)
                   or self._hasq(ctx, z3.Z3_get_quantifier_body(ctx, a)))
        elif kind == z3.Z3_APP_AST:
            out = any(self._hasq(ctx, z3.Z3_get_app_arg(ctx, a, k))
                      for k in range(z3.Z3_get_app_num_args(ctx, a)))
        else:
            out = False
        z3.Z3_inc_ref(ctx, a)  # kept alive: Z3 reuses the ids of dead terms
        self.hasq[key] = (a, out)
        return out

    def __call__(self, t: Any, positive: bool = True) -> Any:
        return self.ground(t, positive)

    def ground(self, t: Any, pos: bool) -> Any:
        if not self.has_quantifier(t):
            return t
        key = (t.get_id(), pos)
        hit = self.memo.get(key)
        if hit is not None:
            return hit[1]
        out = self._ground(t, pos)
        self.memo[key] = (t, out)  # the term is kept alive: Z3 reuses the ids of dead ones
        return out

    def goal(self, t: Any, pool: list[Any]) -> Any:
        """``t`` (asserted: a negated goal) grounded, its outermost existentials that sit in
        disjunctive positions witnessed by ``pool``'s constants (shared by every goal, so that
        the hypotheses need instances at those constants only); reusing a witness across
        disjuncts is sound (``∃x A ∨ ∃y B`` is ``∃x (A(x) ∨ B(x))``)."""
        return self._goal(t, True, pool, 0)

    def _goal(self, t: Any, pos: bool, pool: list[Any], used: int) -> Any:
        if not self.has_quantifier(t):
            return t
        if z3.is_quantifier(t) and not t.is_lambda():
            n = t.num_vars()
            sorts = [t.var_sort(k) for k in range(n)]
            if t.is_forall() == pos or any(s != self.node for s in sorts):
                return self.ground(t, pos)
            witnesses = [pool[used + k] if used + k < len(pool) else self._skolem(t, k)
                         for k in range(n)]
            return self._goal(z3.substitute_vars(t.body(), *reversed(witnesses)), pos, pool,
                              used + n)
        if not z3.is_app(t):
            return t
        k = t.decl().kind()
        if (k == z3.Z3_OP_OR and pos) or (k == z3.Z3_OP_AND and not pos):
            parts = [self._goal(c, pos, pool, used) for c in t.children()]
            return z3.Or(parts) if pos else z3.And(parts)
        if k == z3.Z3_OP_NOT:
            return z3.Not(self._goal(t.arg(0), not pos, pool, used))
        if k == z3.Z3_OP_IMPLIES:
            a, b = t.children()
            if pos or not (self.has_quantifier(a) and self.has_quantifier(b)):
                return z3.Or(z3.Not(self._goal(a, not pos, pool, used)),
                             self._goal(b, pos, pool, used))
        if k in (z3.Z3_OP_AND, z3.Z3_OP_OR):  # conjunctive here: the pool goes to a single
            cs = t.children()                  # conjunct with existentials, never to two
            if sum(self.has_quantifier(c) for c in cs) == 1:
                parts = [self._goal(c, pos, pool, used) for c in cs]
                return z3.And(parts) if k == z3.Z3_OP_AND else z3.Or(parts)
        if k not in (z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_IMPLIES):
            lifted = self._lift(t)
            if lifted is not None:
                return self._goal(lifted, pos, pool, used)
        return self.ground(t, pos)

    def _skolem(self, quantifier: Any, k: int) -> Any:
        """The witness of ``quantifier``'s ``k``-th variable, named after the quantifier
        (alive in ``memo``): grounding one formula twice, in this or another grounder over
        more terms, gives the same witnesses, so that a goal's witnesses can be added to the
        terms the hypotheses are instantiated at."""
        sort = quantifier.var_sort(k)
        name = f"sk!{quantifier.get_id()}!{k}"
        if not self.params:
            return z3.Const(name, sort)
        f = z3.Function(name, *(p.sort() for p in self.params), sort)
        return f(*self.params)

    def _ground(self, t: Any, pos: bool) -> Any:
        if z3.is_quantifier(t) and not t.is_lambda():
            n = t.num_vars()
            body = t.body()
            universal = t.is_forall() == pos
            sorts = [t.var_sort(k) for k in range(n)]
            if universal and all(s == self.node for s in sorts):
                if self.deadline is not None and time.perf_counter() > self.deadline:
                    raise TooLarge("past its deadline")
                if self.left is not None:
                    self.left -= len(self.terms) ** n
                    if self.left < 0:
                        raise TooLarge
                cases = [self.ground(z3.substitute_vars(body, *reversed(vals)), pos)
                         for vals in itertools.product(self.terms, repeat=n)]
                if t.is_forall():
                    return z3.And(cases) if cases else z3.BoolVal(True)
                return z3.Or(cases) if cases else z3.BoolVal(False)
            if universal:  # over another sort: kept (exact, if not quantifier-free)
                return t
            witnesses = [self._skolem(t, k) for k in range(n)]
            return self.ground(z3.substitute_vars(body, *reversed(witnesses)), pos)
        if not z3.is_app(t):
            return t
        k = t.decl().kind()
        if k == z3.Z3_OP_AND:
            return z3.And([self.ground(c, pos) for c in t.children()])
        if k == z3.Z3_OP_OR:
            return z3.Or([self.ground(c, pos) for c in t.children()])
        if k == z3.Z3_OP_NOT:
            return z3.Not(self.ground(t.arg(0), not pos))
        if k == z3.Z3_OP_IMPLIES:
            return z3.Or(z3.Not(self.ground(t.arg(0), not pos)), self.ground(t.arg(1), pos))
        if t.sort() == _BOOL and k == z3.Z3_OP_ITE:
            c, a, b = t.children()
            return z3.And(z3.Or(z3.Not(self.ground(c, not pos)), self.ground(a, pos)),
                          z3.Or(self.ground(c, pos), self.ground(b, pos)))
        if k in (z3.Z3_OP_EQ, z3.Z3_OP_IFF) and t.arg(0).sort() == _BOOL:
            a, b = t.children()
            return z3.And(z3.Or(z3.Not(self.ground(a, not pos)), self.ground(b, pos)),
                          z3.Or(z3.Not(self.ground(b, not pos)), self.ground(a, pos)))
        lifted = self._lift(t)
        if lifted is not None:
            return self.ground(lifted, pos)
        # a quantifier inside a term that is not an If's condition (e.g. an array lambda):
        # kept as it is (exact)
        return t

    def _lift(self, t: Any) -> Any | None:
        """An atom with a quantifier inside a term (``b2i(forall ...) != 0``) as the Boolean
        ``If`` of that quantifier, or None."""
        if t.sort() != _BOOL:
            return None
        ite = self._quantified_ite(t)
        if ite is None:
            return None
        c, a, b = ite.children()
        then = z3.simplify(z3.substitute(t, (ite, a)))
        other = z3.simplify(z3.substitute(t, (ite, b)))
        if z3.is_true(then) and z3.is_false(other):
            return c
        if z3.is_false(then) and z3.is_true(other):
            return z3.Not(c)
        return z3.If(c, then, other)

    def _quantified_ite(self, t: Any) -> Any | None:
        """A non-Boolean ``If`` inside ``t`` whose condition has a quantifier."""
        todo = [t]
        seen: set[int] = set()
        while todo:
            x = todo.pop()
            if x.get_id() in seen or not self.has_quantifier(x) or z3.is_quantifier(x):
                continue
            seen.add(x.get_id())
            if (z3.is_app(x) and x.decl().kind() == z3.Z3_OP_ITE and x.sort() != _BOOL
                    and self.has_quantifier(x.arg(0))):
                return x
            if z3.is_app(x):
                todo.extend(x.children())
        return None


def resolved(t: Any) -> Any:
    """``t`` simplified with destructive equality resolution (``∃x. x = a ∧ φ(x)`` is
    ``φ(a)``, ``∀x. x ≠ a ∨ φ(x)`` too): equivalent, and a message quantifier that names its
    source and destination, or a check of an impossible model error, then builds no instances.
    On MSI's 78 inferred lines it cuts one action's ground context from 347,670 instances to
    12,804."""
    try:
        parts = list(_RESOLVE(t)[0])
    except z3.Z3Exception:  # a term the tactics do not take: grounded as it is (equivalent)
        return t
    if not parts:
        return z3.BoolVal(True)
    return parts[0] if len(parts) == 1 else z3.And(*parts)


_RESOLVE = z3.Then("simplify", "der", "simplify")


def instances(template: Any, params: tuple[Any, ...], tuples: list[tuple[Any, ...]]) -> list[Any]:
    """``template`` (quantifier-free over ``params``) at each tuple of ground terms."""
    return [z3.substitute(template, *zip(params, vals, strict=True)) for vals in tuples]
