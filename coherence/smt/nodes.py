"""The ``Node`` sort of the parameterised encoding (``param``) and its named constants: its own
module so that the encoding's helpers (``param_count``) share them without importing ``param``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import z3

NODE = z3.DeclareSort("Node")
HOME = z3.Const("home", NODE)
UNDEF_N = z3.Const("undefined_node", NODE)


def is_agent(x: Any) -> Any:
    return z3.And(x != HOME, x != UNDEF_N)


def raw_apps(formulas: list[Any], quantifiers: bool = True) -> Iterator[Any]:
    """Each distinct application of ``formulas`` (under their quantifiers too, unless
    ``quantifiers`` is False), depth first, as a raw AST of ``formulas[0].ctx``: the Python
    wrappers cost microseconds per node, and MSI's hypotheses have hundreds of thousands."""
    if not formulas:
        return
    ref = formulas[0].ctx.ref()
    seen: set[int] = set()
    todo = [f.as_ast() for f in formulas]
    while todo:
        a = todo.pop()
        key = z3.Z3_get_ast_id(ref, a)
        if key in seen:
            continue
        seen.add(key)
        kind = z3.Z3_get_ast_kind(ref, a)
        if kind == z3.Z3_QUANTIFIER_AST and quantifiers:
            todo.append(z3.Z3_get_quantifier_body(ref, a))
        elif kind == z3.Z3_APP_AST:
            yield a
            todo.extend(z3.Z3_get_app_arg(ref, a, k) for k in range(z3.Z3_get_app_num_args(ref, a)))


def node_constants(t: Any, quantifiers: bool = False) -> list[Any]:
    """The uninterpreted ``Node`` constants of ``t`` outside its quantifiers (and under them
    with ``quantifiers``), in the order first met."""
    ctx = t.ctx
    ref = ctx.ref()
    node = NODE.ast
    out = []
    for a in raw_apps([t], quantifiers):
        if z3.Z3_get_app_num_args(ref, a) == 0 and z3.Z3_is_eq_sort(
                ref, z3.Z3_get_sort(ref, a), node) and z3.Z3_get_decl_kind(
                ref, z3.Z3_get_app_decl(ref, a)) == z3.Z3_OP_UNINTERPRETED:
            out.append(z3.z3._to_expr_ref(a, ctx))
    return out


# NOTE(finite-core): the encoding's quantifiers over ``Node``, built by these two functions,
# are conjunctions and disjunctions over a list of nodes while ``finite_nodes`` is in force:
# the same encoding of a fixed size, quantifier-free, whose unsat cores say which hypotheses
# a goal needs (``finite_core``). Outside it they are Z3's quantifiers.
_FINITE: list[Any] | None = None


@contextmanager
def finite_nodes(nodes: list[Any]) -> Iterator[None]:
    """Every quantifier built inside ranges over ``nodes`` only."""
    global _FINITE
    saved, _FINITE = _FINITE, nodes
    try:
        yield
    finally:
        _FINITE = saved


def finite() -> list[Any] | None:
    """The nodes quantifiers range over (``finite_nodes``), or None: all of them."""
    return _FINITE


def forall(xs: list[Any], body: Any) -> Any:
    if _FINITE is None:
        return z3.ForAll(xs, body)
    return _join(z3.Z3_mk_and, instances(_FINITE, xs, body), body.ctx)


def exists(xs: list[Any], body: Any) -> Any:
    if _FINITE is None:
        return z3.Exists(xs, body)
    return _join(z3.Z3_mk_or, instances(_FINITE, xs, body), body.ctx)


def _join(make: Any, parts: list[Any], ctx: Any) -> Any:
    """``z3.And``/``z3.Or`` of Boolean terms without its per-argument checks in Python."""
    args = (z3.Ast * len(parts))(*(p.as_ast() for p in parts))
    return z3.BoolRef(make(ctx.ref(), len(parts), args), ctx)


def instances(nodes: list[Any], xs: list[Any], body: Any) -> list[Any]:
    """``body`` at every tuple of ``nodes`` for ``xs``: Z3's substitution called directly
    (``z3.substitute`` checks every pair's sorts in Python, most of the time of building
    MSI's obligations at 4 agents)."""
    ctx = body.ctx
    n = len(xs)
    old = (z3.Ast * n)(*(x.as_ast() for x in xs))
    new = (z3.Ast * n)()
    out = []
    for combo in itertools.product(nodes, repeat=n):
        for k, v in enumerate(combo):
            new[k] = v.as_ast()
        out.append(z3.z3._to_expr_ref(z3.Z3_substitute(ctx.ref(), body.as_ast(), n, old, new),
                                      ctx))
    return out
