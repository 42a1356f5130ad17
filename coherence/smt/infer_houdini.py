"""Candidate formulas on the parameterised encoding of ``param.py``, composed from their atoms.

Each atom a candidate uses is lowered once from spec text (``lower_atoms``) and executed by
``PExec`` on a state under a binding of ``i``, ``j`` or ``m``; a candidate is its atoms'
clause, so no candidate is parsed or encoded whole here (``infer_qf`` grounds and checks them;
the final proof in ``infer.py`` parses the printed text and proves it again from scratch).
"""

from __future__ import annotations

from typing import Any

import z3

from coherence import ir
from coherence.smt.execute import TRUE, all_of, any_of, truth
from coherence.smt.infer_mine import Candidate, binding, is_relation
from coherence.smt.param import (
    NODE,
    ParamEncoder,
    PExec,
    PState,
    is_agent,
)


def lower_atoms(model: ir.Model, cands: list[Candidate]) -> dict[tuple[str, str, str], Any]:
    """The IR of every (atom text, where, message type) the candidates use, lowered in one go
    with the spec (same parameters): ``where`` is g, i, j, m, src or dst."""
    from coherence.spec.load import extend
    keys: dict[tuple[str, str, str], str] = {}
    for c in cands:
        msg = c.kind[4:] if c.kind.startswith("msg ") else ""
        for atom, where, _pos in c.lits:
            keys.setdefault((atom.text, where, msg), "")
    lines = []
    for k, (text, where, msg) in enumerate(keys):
        name = f"inferatom{k}"
        keys[(text, where, msg)] = name
        if where == "g" and not msg:
            lines.append(f"invariant aux {name}: {text};")
        elif _two_agents(where):  # NOTE(infer-relations): i and j free
            x, y = binding(where)
            lines.append(f"invariant aux {name}: forall i: agent :: forall j: agent :: "
                         f"{text.replace('{x}', x).replace('{y}', y)};")
        else:
            x, _y = binding(where)
            lines.append(f"invariant aux {name}: forall m: {msg} :: "
                         f"{text.replace('{x}', x).replace('{m}', 'm')};")
    lowered = extend(model, "\n".join(lines) + "\n")
    by_name = {i.name: i.expr for i in lowered.invariants}
    out = {}
    for (text, where, msg), name in keys.items():
        e = by_name[name]
        for _ in range(0 if where == "g" and not msg else 2 if _two_agents(where) else 1):
            e = e.body  # type: ignore[attr-defined]
        out[(text, where, msg)] = e
    return out


def _two_agents(where: str) -> bool:
    """Whether an atom at ``where`` is lowered under ``forall i :: forall j ::``."""
    return where in ("i", "j") or is_relation(where)


class Composer:
    """Candidate formulas over a state, from their atoms (cached per state and binding)."""

    def __init__(self, enc: ParamEncoder, atoms: dict[tuple[str, str, str], Any]) -> None:
        self.enc = enc
        self.atoms = atoms

    def _values(self, s: PState, c: Candidate, bind: dict[str, Any],
                msg: str) -> tuple[list[Any], Any]:
        ex = PExec(self.enc, s)
        ex.locals.update(bind)
        vals = []
        for atom, where, pos in c.lits:
            v = truth(ex.expr(self.atoms[(atom.text, where, msg)], TRUE))
            vals.append(z3.Not(v) if pos else v)
        return vals, any_of(ex.errs)

    def formula(self, s: PState, c: Candidate) -> Any:
        if c.kind == "global":
            vals, err = self._values(s, c, {}, "")
            return z3.And(z3.Not(err), any_of(vals))
        if c.kind == "agent":
            i = z3.FreshConst(NODE, "i")
            vals, err = self._values(s, c, {"i": i}, "")
            return z3.ForAll([i], z3.Implies(is_agent(i), z3.And(z3.Not(err), any_of(vals))))
        if c.kind == "pair":
            i, j = z3.FreshConst(NODE, "i"), z3.FreshConst(NODE, "j")
            vals, err = self._values(s, c, {"i": i, "j": j}, "")
            dom = z3.And(is_agent(i), is_agent(j), i != j)
            return z3.ForAll([i, j], z3.Implies(dom, z3.And(z3.Not(err), any_of(vals))))
        msg = c.kind[4:]
        src, dst = z3.FreshConst(NODE, "m_src"), z3.FreshConst(NODE, "m_dst")
        ex = PExec(self.enc, s)
        parts = []
        for present, bound in ex.placed(msg, src, dst):
            vals, err = self._values(s, c, {"m": bound}, msg)
            parts.append(z3.Implies(present, z3.And(z3.Not(err), any_of(vals))))
        return z3.ForAll([src, dst], all_of(parts))
