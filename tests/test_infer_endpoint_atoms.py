"""The cutoff instance's atom terms made the fast way (NOTE(infer-endpoint-atoms): a message
column read at a known endpoint takes that agent's terms, and a count is shared by every
binding of the variables it does not read) mean what the plain evaluation of each column
means: a differential test on MSI's vocabulary, whose message templates repeat the counting
atoms at both endpoints."""

from __future__ import annotations

from typing import Any

import pytest
import z3
from helpers import ROOT

from coherence import ir
from coherence.smt.execute import Exec
from coherence.smt.infer_finite import (
    AtomTerms,
    _eval,
    _free_locals,
    atom_exprs,
    encode_instance,
)
from coherence.smt.infer_mine import mine
from coherence.smt.state import num
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.select import drop_properties

MSI = ROOT / "specs" / "msi_directory.coh"
AGENTS = 2
LIMITS = {"global": 1, "agent": 1, "pair": 1, "msg": 1}  # the atoms, not the candidates


@pytest.fixture(scope="module")
def msi_instance() -> tuple[Any, Any]:
    model = drop_properties(load_spec(MSI), ["coherent"])
    _cands, _stats, tpl = mine(model, sizes=(2,), explore_seconds=300, max_literals=LIMITS)
    return encode_instance(model, tpl, AGENTS), tpl


def _differs(a: tuple[Any, Any], b: tuple[Any, Any]) -> Any:
    """Where the two (value, error) pairs say different things."""
    def err(e: Any) -> Any:
        return z3.BoolVal(False) if e is False else e
    return z3.Or(a[0] != b[0], err(a[1]) != err(b[1]))


def test_every_message_column_means_what_its_own_evaluation_means(
        msi_instance: tuple[Any, Any]) -> None:
    ins, tpl = msi_instance
    exprs = atom_exprs(ins.inst, tpl)
    fast = ins.at_cur
    own = AtomTerms(ins.enc, exprs, ins.cur)  # no templates: every column evaluated
    solver = _solver(ins)
    reused = compared = 0
    for name, places in fast.msg.items():
        assert len(places) == len(own.msg[name]) > 0
        present = fast.places[name]
        cols = fast._agent_columns(tpl, name, list(places[0]))
        reused += len(cols)
        for c in cols:
            diff = z3.Or([z3.And(p, _differs(a[c], b[c]))
                          for p, a, b in zip(present, places, own.msg[name], strict=True)])
            assert solver.check(diff) == z3.unsat, (name, tpl.slots[f"msg {name}"][c])
            compared += 1
    assert compared == reused > 100  # the counting atoms at Data's destination among them


def _solver(ins: Any) -> z3.Solver:
    solver = z3.Solver()
    solver.set("rlimit", 50_000_000)
    solver.add(*ins.states)
    return solver


def test_the_counting_agent_columns_mean_what_their_plain_evaluation_means(
        msi_instance: tuple[Any, Any]) -> None:
    ins, tpl = msi_instance
    exprs = atom_exprs(ins.inst, tpl)
    plain = Exec(ins.enc, ins.cur, 0)  # no count shared
    solver = _solver(ins)
    counted = 0
    for (kind, c), e in exprs.items():
        if kind != "i" or "Count(" not in repr(e):  # an ir.Count: shared by _Exec._once
            continue
        counted += 1
        theirs = [_eval(plain, e, {"i": num(k)}) for k in range(AGENTS)]
        diff = z3.Or([_differs(a, b) for a, b in zip(ins.at_cur.agent[c], theirs, strict=True)])
        assert solver.check(diff) == z3.unsat, exprs[(kind, c)]
    assert counted >= 4


def _expr(text: str) -> ir.Expr:
    spec = MSI.read_text() + f"\ninvariant probe: {text};\n"
    model = load_spec_text(spec, str(MSI))
    return next(i.expr for i in model.invariants if i.name == "probe")


def test_free_locals_are_the_variables_read_unbound() -> None:
    e = _expr("forall i: agent :: forall m: Data :: m.dst == i -> "
              "(Cache[i].acks + m.acks == count(y: agent :: "
              "(exists k: Inv :: k.dst == y && k.req == i)))")
    assert _free_locals(e) == frozenset()
    body = e.body.body  # type: ignore[attr-defined]
    assert _free_locals(body) == {"i", "m"}
    count = body.right.right  # type: ignore[attr-defined]
    assert isinstance(count, ir.Count)
    assert _free_locals(count) == {"i"}  # not m: shared by every message slot
    inner = count.body
    assert _free_locals(inner) == {"i", "y"}
    # a name bound inside and read outside its binder stays free outside
    both = _expr("forall i: agent :: (Cache[i].acks == 0 || "
                 "count(y: agent :: Cache[y].acks == 1 && y != i) == 0)")
    assert _free_locals(both.body) == {"i"}  # type: ignore[attr-defined]
