"""IR expressions and statements back to short spec-like text, for diagram labels.

Parameters were substituted by lowering, so ``agents - 1`` reads as ``3 - 1``; conditions
that became constants are folded (``if agents == 1`` with agents=3 keeps only the else branch),
so a label shows what this instance of the protocol does.
"""

from __future__ import annotations

from typing import assert_never

from coherence import ir

_PREC = {"->": 1, "||": 2, "&&": 3, "==": 5, "!=": 5, "<": 5, "<=": 5, ">": 5, ">=": 5,
         "in": 5, "+": 6, "-": 6, "with": 6, "without": 6}


Own = tuple[str, int] | None  # (machine, index of the state a transition starts in)


def const(e: ir.Expr, own: Own = None) -> int | None:
    """The value of a constant expression, else None.

    Constants are literals and, when ``own`` is given, the machine's own control state: it
    is the transition's source state for the whole body (a goto takes effect at the end).
    """
    if isinstance(e, ir.Lit):
        return e.value
    if isinstance(e, ir.MState) and own is not None and e.machine == own[0] and (
            e.agent is None or isinstance(e.agent, ir.SelfId)):
        return own[1]
    if isinstance(e, ir.Unary):
        a = const(e.arg, own)
        if a is None:
            return None
        return 1 - a if e.op == "!" else -a
    if isinstance(e, ir.Binary) and e.op == "in" and isinstance(e.right, ir.SetLit) and (
            not isinstance(e.right.type, ir.SetT)):
        a = const(e.left, own)
        elems = [const(x, own) for x in e.right.elems]
        if a is None or None in elems:
            return None
        return int(a in elems)
    if isinstance(e, ir.Binary) and e.op in _FOLD:
        a, b = const(e.left, own), const(e.right, own)
        if a is None or b is None:
            return None
        return int(_FOLD[e.op](a, b))
    return None


_FOLD = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "&&": lambda a, b: bool(a) and bool(b), "||": lambda a, b: bool(a) or bool(b),
    "->": lambda a, b: (not a) or bool(b),
}


def live_branch(s: ir.If, own: Own = None) -> tuple[ir.Stmt, ...] | None:
    """The branch a constant condition always takes, or None if the condition varies."""
    c = const(s.cond, own)
    if c is None:
        return None
    return s.then if c else s.orelse


class Printer:
    """Prints IR in the context of one machine (its own variables print bare)."""

    def __init__(self, model: ir.Model, machine: ir.Machine | None = None,
                 source: str | None = None) -> None:
        self.model = model
        self.machine = machine
        self.own: Own = None  # fold tests of the machine's state when its state is known
        if machine is not None and source is not None:
            self.own = (machine.name, machine.state_index(source))

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr, prec: int = 0) -> str:
        match e:
            case ir.Lit():
                return self.lit(e)
            case ir.Local():
                return e.name
            case ir.SelfId():
                return "self"
            case ir.GVar():
                return e.name
            case ir.MVar():
                return self.owner(e.machine, e.agent) + e.name
            case ir.MState():
                return self.owner(e.machine, e.agent) + "state"
            case ir.MsgField():
                return f"msg.{e.name}"
            case ir.MsgSrc():
                return "msg.src"
            case ir.Index():
                return f"{self.expr(e.base, 9)}[{self.expr(e.index)}]"
            case ir.Unary(op="!", arg=ir.Binary(op="in") as inner):
                text = f"{self.expr(inner.left, 6)} not in {self.expr(inner.right, 6)}"
                return f"({text})" if prec > 5 else text
            case ir.Unary():
                return f"{e.op}{self.expr(e.arg, 8)}"
            case ir.Binary():
                c = const(e)
                if c is not None and e.op in ("+", "-"):
                    return str(c)
                p = _PREC.get(e.op, 5)
                text = f"{self.expr(e.left, p)} {e.op} {self.expr(e.right, p + 1)}"
                return f"({text})" if p < prec else text
            case ir.SetLit():
                return "{" + ", ".join(self.expr(x) for x in e.elems) + "}"
            case ir.Call():
                return f"{e.func}({', '.join(self.expr(a) for a in e.args)})"
            case ir.Quant():
                text = f"{e.kind} {e.var}: {e.var_type} :: {self.expr(e.body)}"
                return f"({text})" if prec > 0 else text
            case ir.Count():
                return f"count({e.var}: {e.var_type} :: {self.expr(e.body)})"
            case ir.InFlight():
                dst = f", {self.expr(e.dst)}" if e.dst is not None else ""
                return f"inflight({e.message}{dst})"
            case ir.MsgQuant() if e.kind == "count":
                return f"count({e.var}: {e.message} :: {self.expr(e.body)})"
            case ir.MsgQuant():
                text = f"{e.kind} {e.var}: {e.message} :: {self.expr(e.body)}"
                return f"({text})" if prec > 0 else text
            case ir.MsgVarAttr():
                return f"{e.var}.{e.attr}"
            case ir.Cond():
                text = (f"if {self.expr(e.cond)} then {self.expr(e.then)} else "
                        f"{self.expr(e.orelse)}")
                return f"({text})" if prec > 0 else text
            case ir.NodeOf():
                if not e.indices:
                    return e.machine
                return f"{e.machine}[{', '.join(self.expr(x) for x in e.indices)}]"
            case ir.NodeIndex():
                return self.node_index(e)
            case ir.NodeIs():
                text = f"{self.expr(e.node, 9)} is {e.machine}"
                return f"({text})" if prec > 5 else text
            case _:
                assert_never(e)

    def node_index(self, e: ir.NodeIndex) -> str:
        """``msg.src.sm``; the printing machine's own index reads as its binder name (``g`` in
        ``machine L2[g: gpu]``), as the spec writes it."""
        if isinstance(e.node, ir.SelfId) and self.machine is not None:
            for f in self.machine.indices:
                if isinstance(f.type, ir.IndexT) and f.type.name == e.index:
                    return f.name
        return f"{self.expr(e.node, 9)}.{e.index}"

    def lit(self, e: ir.Lit) -> str:
        v, t = e.value, e.type
        if v is None:
            return "undefined"
        if isinstance(t, ir.BoolT):
            return "true" if v else "false"
        if isinstance(t, (ir.EnumT, ir.StateT)):
            return t.members[v]
        if isinstance(t, ir.NodeT) and v == t.n:
            return "home"
        if isinstance(t, ir.SetT) and v == 0:
            return "{}"
        return str(v)

    def owner(self, machine: str, agent: ir.Expr | None) -> str:
        """``C[a].`` / ``H.``, or nothing for the printing machine's own variables."""
        own = self.machine is not None and machine == self.machine.name
        if agent is None:
            return "" if own else f"{machine}."
        if isinstance(agent, ir.SelfId) and own:
            return ""
        if isinstance(agent, ir.NodeOf) and agent.machine == machine:
            return f"{self.expr(agent)}."  # a hierarchy's instance: L2[g].
        return f"{machine}[{self.expr(agent)}]."

    # ------------------------------------------------------------ statements

    def actions(self, body: tuple[ir.Stmt, ...]) -> list[str]:
        """One short line per action; gotos are left out (the diagram's edge shows them)."""
        out: list[str] = []
        for s in body:
            text = self.stmt(s)
            if text:
                out.append(text)
        return out

    def stmt(self, s: ir.Stmt) -> str:
        match s:
            case ir.Assign():
                target = self.expr(s.target)
                v = s.value
                if isinstance(v, ir.Lit) and v.value is None:
                    return f"undefine {target}"
                if isinstance(v, ir.Binary) and v.op in ("with", "without") and v.left == s.target:
                    method = "add" if v.op == "with" else "remove"
                    return f"{target}.{method}({self.expr(v.right)})"
                if isinstance(s.target.type, ir.SetT) and isinstance(v, ir.Lit) and v.value == 0:
                    return f"{target}.clear()"
                return f"{target} := {self.expr(v)}"
            case ir.Let():
                return f"let {s.var} = {self.expr(s.value)}"
            case ir.Send():
                return f"send {self.message(s.message, s.args)} to {self.expr(s.dst)}"
            case ir.Broadcast():
                exc = f" except {self.expr(s.exclude)}" if s.exclude is not None else ""
                return f"broadcast {self.message(s.message, s.args)}{exc}"
            case ir.Multicast():
                exc = f" except {self.expr(s.exclude)}" if s.exclude is not None else ""
                to = s.machine + (f"[{', '.join(self.expr(x) for x in s.prefix)}]"
                                  if s.prefix else "")
                return f"broadcast {self.message(s.message, s.args)} to {to}{exc}"
            case ir.Perform():
                by = ""
                if not (isinstance(s.agent, ir.SelfId)):
                    by = f" by {self.expr(s.agent)}"
                return f"perform {s.kind}({self.expr(s.value)}){by}"
            case ir.Goto():
                return ""
            case ir.Assert():
                return ""
            case ir.If():
                live = live_branch(s, self.own)
                if live is not None:
                    return "; ".join(self.actions(live))
                then = "; ".join(self.actions(s.then))
                gotos = _gotos(s.then)
                if gotos:
                    then += f"{'; ' if then else ''}→ {gotos}"
                text = f"if {self.expr(s.cond)} {{ {then} }}"
                if s.orelse:
                    other = "; ".join(self.actions(s.orelse))
                    gotos = _gotos(s.orelse)
                    if gotos:
                        other += f"{'; ' if other else ''}→ {gotos}"
                    text += f" else {{ {other} }}"
                return text
            case ir.For():
                return f"for {s.var}: {s.var_type} {{ {'; '.join(self.actions(s.body))} }}"
            case _:
                assert_never(s)

    def message(self, name: str, args: tuple[ir.Expr, ...]) -> str:
        if not args:
            return name
        return f"{name}({', '.join(self.expr(a) for a in args)})"


def _gotos(body: tuple[ir.Stmt, ...]) -> str:
    """The state a branch's last goto names, shown inside a conditional action."""
    names = [s.state for s in body if isinstance(s, ir.Goto)]
    return names[-1] if names else ""


_NEGATE = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


def negated(printer: Printer, cond: ir.Expr) -> str:
    if isinstance(cond, ir.Binary) and cond.op in _NEGATE:
        return printer.expr(ir.Binary(_NEGATE[cond.op], cond.left, cond.right, cond.type))
    if isinstance(cond, ir.Unary) and cond.op == "!":
        return printer.expr(cond.arg)
    return f"!{printer.expr(cond, 8)}"


def paths(printer: Printer, body: tuple[ir.Stmt, ...]) -> list[tuple[list[str], str | None]]:
    """Every control path through a body: (its actions, the state it ends in or None).

    Branches on a condition that varies become separate paths, each with a ``when COND``
    action where the branch is taken, so an edge to one state shows only what leads there.
    Conditions that are constant in this instance are folded away.
    """
    current: list[tuple[list[str], str | None]] = [([], None)]
    for s in body:
        current = [p for acts, tgt in current for p in _step(printer, s, acts, tgt)]
    return current


def _step(printer: Printer, s: ir.Stmt, acts: list[str],
          tgt: str | None) -> list[tuple[list[str], str | None]]:
    if isinstance(s, ir.Goto):
        return [(acts, s.state)]
    if isinstance(s, ir.If):
        live = live_branch(s, printer.own)
        branches: list[tuple[list[str], tuple[ir.Stmt, ...]]]
        if live is not None:
            branches = [([], live)]
        else:
            branches = [([f"when {printer.expr(s.cond)}"], s.then),
                        ([f"when {negated(printer, s.cond)}"], s.orelse)]
        out: list[tuple[list[str], str | None]] = []
        for head, stmts in branches:
            cur = [(acts + head, tgt)]
            for x in stmts:
                cur = [p for a, t in cur for p in _step(printer, x, a, t)]
            out += cur
        return out
    if isinstance(s, ir.For) and any(isinstance(x, ir.Goto) for x in ir.walk_stmts(s.body)):
        ends = [t for _, t in paths(printer, s.body) if t is not None]
        text = printer.stmt(s)
        return [([*acts, text], tgt)] + [([*acts, text], t) for t in dict.fromkeys(ends)]
    text = printer.stmt(s)
    return [([*acts, text] if text else acts, tgt)]
