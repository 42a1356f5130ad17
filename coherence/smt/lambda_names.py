"""NOTE(count-set-names): a set counted under a quantifier, given a name of its own.

A count under a quantifier (MSI's ``forall i: agent :: ... acks == count(y: agent :: ...i...)``)
is ``card`` of a lambda whose body mentions the quantifier's variable. Z3 lifts each such lambda
out of the quantifier that holds it, into a function of its free variables, and it does so per
quantifier: the hypothesis's set and the goal's, the very same term, become two functions, and
``card`` of the one is not ``card`` of the other without extensionality over sets of agents.
Z3 5.4 then found no proof in 30 s of ``forall i :: P(i) |- forall i :: P(i) || i == a``
(MSI's ``inferred_38`` at ``GetS in I``); with the set named once, as here, it is unsat at
once (1.2 s with the whole hypothesis).

``LambdaNames`` names each distinct lambda with free variables under ``card`` by one function
of those variables, for every formula of a solver, and defines it. Distinct up to the names of
bound variables: the set of ``inferred_38`` (``y@1``, under one quantifier) is the set of
``inferred_150`` (``y@3``, under three), and one name lets Z3 read the one count as the other.
The definition:
``forall z :: F(z) == lambda y :: body(z, y)``. The definitions are a conservative extension
(any model of the formulas gives ``F`` that meaning), so an unsat answer is still a proof; a
model is never trusted as a counterexample in a spec that counts anyway (``param._trusted``).

A count the action leaves alone but whose set reads arrays the action writes (MSI's
``inferred_30``, FwdGetM messages, at ``PutS in I``, which queues a PutAck on the same network)
is a set of another name after the action. Z3 does not split on whether two sets are equal, so
``congruences`` gives it the split, for each set of the goal and each set of the hypotheses:
``forall v :: card(F(v)) == card(G(v)) || exists y :: F(v)[y] != G(v)[y]`` (valid: equal sets
have equal counts). On that obligation a fresh solver answered unknown after 30 s; with them,
unsat in 4.4 s.
"""

from __future__ import annotations

import itertools
from typing import Any

import z3

from coherence.smt.nodes import raw_apps
from coherence.smt.param_count import CARD

_FRESH = itertools.count()  # one name per set, across every solver of the process


class LambdaNames:
    """The names of one solver's counted sets: ``name`` rewrites a formula (the same set
    gets the same name in every formula given); ``definitions`` returns those made since it
    was last asked."""

    def __init__(self) -> None:
        self._memo: dict[int, Any] = {}
        self._free: dict[int, dict[int, Any]] = {}  # term id -> {free index: sort}
        self._names: dict[int, Any] = {}  # canonical lambda id -> its function
        self._canonical: dict[tuple[int, int], Any] = {}  # (term id, binder depth) -> term
        self._new: list[Any] = []

    def name(self, formula: Any) -> Any:
        return self._rewrite(formula)

    def definitions(self) -> list[Any]:
        out, self._new = self._new, []
        return out

    def sets_in(self, formulas: list[Any]) -> dict[int, Any]:
        """The named sets' functions that ``formulas`` apply, by declaration id; on raw
        ASTs (the hypotheses of MSI's actions have hundreds of thousands of nodes)."""
        if not formulas or not self._names:
            return {}
        mine = {f.get_id(): f for f in self._names.values()}
        ref = formulas[0].ctx.ref()
        found: dict[int, Any] = {}
        for a in raw_apps(formulas):
            fid = z3.Z3_get_ast_id(ref, z3.Z3_func_decl_to_ast(ref, z3.Z3_get_app_decl(ref, a)))
            if fid in mine:
                found[fid] = mine[fid]
        return found

    def congruences(self, new: list[Any], old: list[Any]) -> list[Any]:
        """For each set function of ``new`` and each other of ``old`` over the same free
        variables: their counts are equal, or some element tells the sets apart."""
        out = []
        for f in new:
            for g in old:
                if f.eq(g) or f.arity() != g.arity() or not f.range().eq(g.range()) or any(
                        not f.domain(k).eq(g.domain(k)) for k in range(f.arity())):
                    continue
                vs = [z3.FreshConst(f.domain(k), "v") for k in range(f.arity())]
                y = z3.FreshConst(f.range().domain(), "w")
                out.append(z3.ForAll(vs, z3.Or(CARD(f(*vs)) == CARD(g(*vs)),
                                               z3.Exists([y], f(*vs)[y] != g(*vs)[y]))))
        return out

    def _rewrite(self, t: Any) -> Any:
        """``t`` with every counted lambda that has free variables named; iterative, each
        subterm once."""
        memo = self._memo
        todo: list[tuple[Any, bool]] = [(t, False)]
        while todo:
            x, expanded = todo.pop()
            key = x.get_id()
            if key in memo:
                continue
            if z3.is_app(x) and x.decl().eq(CARD) and _is_lambda(x.arg(0)) \
                    and self._free_vars(x.arg(0)):
                memo[key] = CARD(self._named(x.arg(0)))
                continue
            kids = _children(x)
            if not kids:
                memo[key] = x
            elif not expanded:
                todo.append((x, True))
                todo.extend((k, False) for k in kids if k.get_id() not in memo)
            else:
                new = [memo[k.get_id()] for k in kids]
                memo[key] = x if all(a.eq(b) for a, b in zip(new, kids, strict=True)) \
                    else _update(x, new)
        return memo[t.get_id()]

    def _named(self, lam: Any) -> Any:
        """``F(v...)``, the lambda's function applied to its free variables."""
        free = self._free_vars(lam)
        idx = sorted(free)
        lam = self._canonical_names(lam)
        fn = self._names.get(lam.get_id())
        if fn is None:
            sorts = [free[i] for i in idx]
            fn = z3.Function(f"counted_set!{next(_FRESH)}", *sorts, lam.sort())
            zs = [z3.FreshConst(s, "z") for s in sorts]
            by_index = dict(zip(idx, zs, strict=True))
            fill = [by_index.get(j, zs[0]) for j in range(idx[-1] + 1)]
            self._new.append(z3.ForAll(zs, fn(*zs) == z3.substitute_vars(lam, *fill)))
            self._names[lam.get_id()] = fn
        return fn(*[z3.Var(i, free[i]) for i in idx])

    def _canonical_names(self, t: Any) -> Any:
        """``t`` with each bound variable named by its binder depth within ``t`` (``c0``,
        ``c1``...): alpha-equal lambdas become one term."""
        memo = self._canonical
        todo: list[tuple[Any, int, bool]] = [(t, 0, False)]
        while todo:
            x, depth, expanded = todo.pop()
            key = (x.get_id(), depth)
            if key in memo:
                continue
            inner = depth + x.num_vars() if z3.is_quantifier(x) else depth
            kids = _children(x)
            if not kids:
                memo[key] = x
            elif not expanded:
                todo.append((x, depth, True))
                todo.extend((k, inner, False) for k in kids
                            if (k.get_id(), inner) not in memo)
            else:
                new = [memo[(k.get_id(), inner)] for k in kids]
                memo[key] = _renamed(x, new[0], depth) if z3.is_quantifier(x) else \
                    x if all(a.eq(b) for a, b in zip(new, kids, strict=True)) else _update(x, new)
        return memo[(t.get_id(), 0)]

    def _free_vars(self, t: Any) -> dict[int, Any]:
        """The free de Bruijn indices of ``t`` with their sorts; iterative, memoized."""
        table = self._free
        todo: list[tuple[Any, bool]] = [(t, False)]
        while todo:
            x, expanded = todo.pop()
            key = x.get_id()
            if key in table:
                continue
            if z3.is_var(x):
                table[key] = {z3.get_var_index(x): x.sort()}
                continue
            kids = _children(x)
            if not kids:
                table[key] = {}
            elif not expanded:
                todo.append((x, True))
                todo.extend((k, False) for k in kids if k.get_id() not in table)
            elif z3.is_quantifier(x):
                n = x.num_vars()
                table[key] = {i - n: s for i, s in table[x.body().get_id()].items() if i >= n}
            else:
                merged: dict[int, Any] = {}
                for k in kids:
                    merged.update(table[k.get_id()])
                table[key] = merged
        return table[t.get_id()]


def _is_lambda(t: Any) -> bool:
    return z3.is_quantifier(t) and t.is_lambda()


def _children(t: Any) -> list[Any]:
    if z3.is_quantifier(t):
        return [t.body()]
    if z3.is_app(t):
        return t.children()
    return []


def _renamed(q: Any, body: Any, depth: int) -> Any:
    """The quantifier ``q`` over ``body``, its variables named ``c<depth>``... (patterns
    dropped: they only guide instantiation)."""
    n = q.num_vars()
    ctx = q.ctx
    sorts = (z3.Sort * n)(*[q.var_sort(k).ast for k in range(n)])
    names = (z3.Symbol * n)(*[z3.to_symbol(f"c{depth + k}", ctx) for k in range(n)])
    if q.is_lambda():
        ref = z3.Z3_mk_lambda(ctx.ref(), n, sorts, names, body.as_ast())
    else:
        ref = z3.Z3_mk_quantifier(ctx.ref(), q.is_forall(), q.weight(), 0, None, n, sorts,
                                  names, body.as_ast())
    return z3.QuantifierRef(ref, ctx)


def _update(t: Any, kids: list[Any]) -> Any:
    """``t`` with its children (a quantifier's body) replaced."""
    args = (z3.Ast * len(kids))(*[k.as_ast() for k in kids])
    ref = z3.Z3_update_term(t.ctx_ref(), t.as_ast(), len(kids), args)
    if z3.is_quantifier(t):
        return z3.QuantifierRef(ref, t.ctx)
    return z3.z3._to_expr_ref(ref, t.ctx)
