"""Vacuity: properties that hold only because nothing they speak of ever happens.

An invariant ``forall i: agent :: P -> Q`` holds trivially when ``P`` is never true. For each
implication in an invariant (under its ``forall``s and ``&&``s, and inside the consequents of
other implications) a *witness* invariant ``!(exists ... :: P)`` is added to the model that
the engine explores: the engine "violating" it means some reachable state makes the premise
true. Witnesses are ordinary invariants, so every engine (reference, compiled, …) supports
them with no code of its own; the driver takes their results out of the failures.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from coherence import ir
from coherence.errors import Span
from coherence.results import FailureKey

WITNESS_PREFIX = "__premise__"


@attrs.frozen
class Premise:
    invariant: str
    expr: ir.Expr  # the premise, closed by ``exists`` over the invariant's bound variables
    span: Span  # where the premise is written

    @property
    def witness_name(self) -> str:
        return f"{WITNESS_PREFIX}{self.invariant}@{self.span.line}:{self.span.col}"


def _close(binders: list[ir.Quant | ir.MsgQuant], body: ir.Expr) -> ir.Expr:
    for q in reversed(binders):
        if isinstance(q, ir.Quant):
            body = ir.Quant("exists", q.var, q.var_type, body, ir.BoolT(), q.span)
        else:
            body = ir.MsgQuant("exists", q.var, q.message, body, ir.BoolT(), q.span)
    return body


def premises(model: ir.Model) -> list[Premise]:
    out: list[Premise] = []
    for inv in model.invariants:
        out.extend(_premises(inv))
    return out


def _premises(inv: ir.Invariant) -> Iterator[Premise]:
    # (expression, binders so far, premise so far), walked without recursion
    stack: list[tuple[ir.Expr, list[ir.Quant | ir.MsgQuant], ir.Expr | None]] = [
        (inv.expr, [], None)]
    while stack:
        e, binders, outer = stack.pop()
        if isinstance(e, (ir.Quant, ir.MsgQuant)) and e.kind == "forall":
            stack.append((e.body, [*binders, e], outer))
        elif isinstance(e, ir.Binary) and e.op == "&&":
            stack.append((e.right, binders, outer))
            stack.append((e.left, binders, outer))
        elif isinstance(e, ir.Binary) and e.op == "->":
            premise = e.left if outer is None else ir.Binary(
                "&&", outer, e.left, ir.BoolT(), e.left.span)
            yield Premise(inv.name, _close(binders, premise), e.left.span)
            stack.append((e.right, binders, premise))


def with_witnesses(model: ir.Model) -> tuple[ir.Model, dict[FailureKey, Premise]]:
    """The model with one witness invariant per premise, and the witness keys."""
    found = premises(model)
    witnesses = tuple(ir.Invariant(p.witness_name, ir.Unary("!", p.expr, ir.BoolT()), True,
                                   p.span) for p in found)
    keys = {("invariant", p.witness_name): p for p in found}
    return attrs.evolve(model, invariants=(*model.invariants, *witnesses)), keys


def is_witness(key: FailureKey) -> bool:
    return len(key) >= 2 and key[1].startswith(WITNESS_PREFIX)


def vacuous_message(p: Premise) -> str:
    return (f"invariant {p.invariant} holds vacuously where its premise at {p.span} is "
            "concerned: no reachable state makes that premise true")
