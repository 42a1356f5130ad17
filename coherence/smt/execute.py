"""Symbolic execution of one IR transition over a ``SymState``: the Z3 twin of ``semantics``.

Each function here mirrors the function of ``coherence.semantics`` with the same name, so the
two can be read side by side. Control flow becomes guarded updates: every write is
``If(pc, new, old)`` where ``pc`` is the conjunction of the branch conditions taken, minus the
paths that already raised a model error or blocked on a full network (exceptions in the
reference semantics). The result of a step is three disjoint conditions (ok / error / blocked)
and the successor state (meaningful when ok).

NOTE(z3-exactness): the encoding must agree with ``semantics`` exactly (not just soundly): BMC
depths are cross-checked against the reference checker's shortest traces, and every Z3 trace is
replayed through ``semantics`` before it is shown.

NOTE(z3-hierarchy): in a hierarchical spec ``agent`` is the acting node (never None: there is
no home) and ``caches`` has a row per node; a reference to another machine's instance
(``L2[g].x``, ``msg.src``) is a node term, checked as the semantics checks it (undefined, or
not an instance of the machine named) and resolved by selecting among that machine's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_never

import z3

from coherence import ir
from coherence.errors import Span
from coherence.semantics import BUS_NESTING_LIMIT, fits, range_of
from coherence.smt.state import (
    UNDEF_BV,
    ArrV,
    Queue,
    SetV,
    Slot,
    SymState,
    Unsupported,
    as_int,
    is_num,
    num,
    undef,
)

TRUE, FALSE = z3.BoolVal(True), z3.BoolVal(False)


def b2i(b: Any) -> Any:
    return z3.If(b, num(1), num(0))


def arithmetic(op: str, a: Any, b: Any) -> Any:
    """``+``, ``-`` or a comparison (as 0/1) of two scalars of one sort."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    rel = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
           ">=": a >= b}[op]
    return b2i(rel)


def truth(x: Any) -> Any:
    return x != 0


def conc(t: Any) -> int | None:
    """The Python int of a term that is a literal, else None."""
    if isinstance(t, int):
        return t
    t = z3.simplify(t) if not is_num(t) else t
    return as_int(t) if is_num(t) else None


def ite(c: Any, a: Any, b: Any) -> Any:
    """``If`` over any symbolic value (scalars, sets, arrays)."""
    if isinstance(a, SetV):
        return SetV(tuple(x if x.eq(y) else z3.If(c, x, y)
                          for x, y in zip(a.bits, b.bits, strict=True)))
    if isinstance(a, ArrV):
        return ArrV(tuple(ite(c, x, y) for x, y in zip(a.elems, b.elems, strict=True)))
    if a.eq(b):
        return a
    return z3.If(c, a, b)


# NOTE(fast-connectives): the encoders build tens of thousands of conjunctions and
# disjunctions per proof; z3.And/z3.Or and z3.is_true/is_false spend most of their time in
# Python (sort coercion, a FuncDeclRef per test). Every term lives in Z3's main context, where
# ``true`` and ``false`` are unique terms, so an id compares them, and a list of Bool terms
# goes to Z3_mk_and/Z3_mk_or directly: the same terms, made in the same order (German's
# final proof alone 2.33 -> 1.98 s, its Houdini's encoding 0.77 -> 0.45 s).
_TRUE_ID, _FALSE_ID = TRUE.get_id(), FALSE.get_id()


def _nary(make: Callable[..., Any], xs: list[Any]) -> Any:
    args = (z3.Ast * len(xs))()
    for k, x in enumerate(xs):
        args[k] = x.as_ast()
    ctx = xs[0].ctx
    return z3.BoolRef(make(ctx.ref(), len(xs), args), ctx)


def all_of(xs: list[Any]) -> Any:
    if not all(isinstance(x, z3.BoolRef) for x in xs):
        return _all_of_any(xs)
    out = []
    for x in xs:
        key = x.get_id()
        if key == _FALSE_ID:
            return FALSE
        if key != _TRUE_ID:
            out.append(x)
    return TRUE if not out else out[0] if len(out) == 1 else _nary(z3.Z3_mk_and, out)


def any_of(xs: list[Any]) -> Any:
    if not all(isinstance(x, z3.BoolRef) for x in xs):
        return _any_of_any(xs)
    out = []
    for x in xs:
        key = x.get_id()
        if key == _TRUE_ID:
            return TRUE
        if key != _FALSE_ID:
            out.append(x)
    return FALSE if not out else out[0] if len(out) == 1 else _nary(z3.Z3_mk_or, out)


def _all_of_any(xs: list[Any]) -> Any:
    xs = [x for x in xs if not z3.is_true(x)]
    if any(z3.is_false(x) for x in xs):
        return FALSE
    return TRUE if not xs else xs[0] if len(xs) == 1 else z3.And(xs)


def _any_of_any(xs: list[Any]) -> Any:
    xs = [x for x in xs if not z3.is_false(x)]
    if any(z3.is_true(x) for x in xs):
        return TRUE
    return FALSE if not xs else xs[0] if len(xs) == 1 else z3.Or(xs)


class Exec:
    """The symbolic ``_Env`` of one step: a copy of the state plus the path bookkeeping."""

    hier = False  # NOTE(z3-hierarchy); subclasses that build their own state keep False

    def __init__(self, enc: Any, state: SymState, line: int) -> None:
        self.enc = enc
        self.n = enc.n
        self.hier = enc.layout.hier
        self.line = line
        self.state = state.copy()
        self.globals, self.home, self.caches = self.state.lines[line]
        self.nets = self.state.nets
        self.agent: int | None = None
        self.msg: tuple[Any, list[Any], int] | None = None  # (src, fields, type)
        self.locals: dict[str, Any] = {}
        self.path: list[Any] = []
        self.errs: list[Any] = []
        self.sent_twice: list[Any] = []  # NOTE(infer-keyed-slots)
        self.blocks: list[Any] = []
        self.pc: Any = TRUE
        self.goto: Any = num(-1)
        self.performs: list[tuple[Any, Any, str, Any]] = []  # (cond, agent, kind, value)
        self.depth = 0

    # ------------------------------------------------------------ path conditions

    def alive(self) -> Any:
        parts = list(self.path)
        if self.errs:
            parts.append(z3.Not(any_of(self.errs)))
        if self.blocks:
            parts.append(z3.Not(any_of(self.blocks)))
        return all_of(parts)

    def refresh(self) -> None:
        self.pc = self.alive()

    def error(self, cond: Any, bad: Any) -> None:
        c = all_of([cond, bad])
        if not z3.is_false(c):
            self.errs.append(c)

    def check(self, v: Any, cond: Any) -> Any:
        """``_check``: reading undefined is an error."""
        if not isinstance(v, (SetV, ArrV)):
            self.error(cond, v == UNDEF_BV)
        return v

    # ------------------------------------------------------------ expressions

    def choose(self, cv: Any, a: Any, b: Any) -> Any:
        """The value of ``if cv then a else b`` (both branches already evaluated)."""
        return ite(cv, a, b)

    def expr(self, e: ir.Expr, c: Any) -> Any:
        match e:
            case ir.Lit():
                if isinstance(e.type, ir.SetT):
                    if e.value is None:
                        raise Unsupported("the Z3 back end cannot encode an undefined set", e.span)
                    return SetV(tuple(z3.BoolVal(bool((e.value >> a) & 1))
                                      for a in range(e.type.elem.n)))
                if isinstance(e.type, ir.ArrayT):
                    raise Unsupported("the Z3 back end cannot encode array literals", e.span)
                return undef() if e.value is None else num(e.value)
            case ir.Local():
                return self.locals[e.name]
            case ir.SelfId():
                if self.agent is None:
                    return undef()
                return num(self.agent)
            case ir.GVar():
                return self.globals[self.enc.global_slot[e.name]]
            case ir.MVar():
                slot = self.enc.var_slot[(e.machine, e.name)]
                if e.agent is None:
                    return self.home[slot]
                if self.hier:
                    return self.node_row(e.agent, e.machine, c, slot)
                return self.select_agent(self.agent_expr(e.agent, c), slot)
            case ir.MState():
                if e.agent is None:
                    return self.home[0]
                if self.hier:
                    return self.node_row(e.agent, e.machine, c, 0)
                return self.select_agent(self.agent_expr(e.agent, c), 0)
            case ir.MsgField():
                assert self.msg is not None
                return self.msg[1][self.enc.field_pos[(self.msg[2], e.name)]]
            case ir.MsgSrc():
                assert self.msg is not None
                return self.msg[0]
            case ir.Index():
                base = self.expr(e.base, c)
                idx = self.check(self.expr(e.index, c), c)
                off = ir.index_offset(e.base.type.index)  # type: ignore[union-attr]
                return select(base.elems, idx, off)
            case ir.Unary():
                arg = self.check(self.expr(e.arg, c), c)
                return 1 - arg if e.op == "!" else -arg
            case ir.Binary():
                return self.binary(e, c)
            case ir.SetLit():
                elems = [self.expr(x, c) for x in e.elems]
                if isinstance(e.type, ir.SetT):
                    for x in elems:
                        self.check(x, c)
                    return SetV(tuple(any_of([x == a for x in elems])
                                      for a in range(e.type.elem.n)))
                return elems
            case ir.Call(func="all_agents"):
                return SetV(tuple(TRUE for _ in range(self.n)))
            case ir.Call():
                arg = self.expr(e.args[0], c)
                if e.func == "size":
                    return z3.Sum([b2i(x) for x in arg.bits]) if arg.bits else num(0)
                if isinstance(arg, (SetV, ArrV)):
                    return num(0)
                return b2i(arg == UNDEF_BV)
            case ir.Quant():
                return self.quant(e, c)
            case ir.Count():
                return self.count(e, c)
            case ir.InFlight():
                return self.inflight(e, c)
            case ir.MsgQuant():
                return self.msg_quant(e, c)
            case ir.MsgVarAttr():
                src, dst, fields, pos = self.locals[e.var]
                if e.attr == "src":
                    return src
                if e.attr == "dst":
                    return dst
                if e.attr == ir.POSITION:  # NOTE(message-position)
                    return pos
                return fields[self.enc.field_pos[(self.enc.msg_index[e.message], e.attr)]]
            case ir.Cond():  # only the chosen branch's errors count
                cv = truth(self.check(self.expr(e.cond, c), c))
                a = self.expr(e.then, all_of([c, cv]))
                b = self.expr(e.orelse, all_of([c, z3.Not(cv)]))
                return self.choose(cv, a, b)
            case ir.NodeOf():
                return self.node_of(e, c)
            case ir.NodeIndex():
                return self.node_index(e, c)
            case ir.NodeIs():
                node = self.check(self.expr(e.node, c), c)
                return b2i(self.is_instance(node, e.machine))
            case _:
                assert_never(e)

    # ------------------------------------------------------------ nodes (NOTE(z3-hierarchy))

    def node_of(self, e: ir.NodeOf, c: Any) -> Any:
        """``Semantics._node_of``: the machine's first node plus its index values in mixed
        radix (each one checked defined)."""
        base, _count = self.enc.machine_nodes[e.machine]
        sizes = [f.type.size() for f in self.enc.model.machine(e.machine).indices]
        k: Any = num(0)
        for x, size in zip(e.indices, sizes, strict=True):
            v = self.check(self.expr(x, c), c)
            k = k * size + v
        k = k + base
        value = conc(k)
        return num(value) if value is not None else k

    def node_index(self, e: ir.NodeIndex, c: Any) -> Any:
        """``Semantics._node_index``: a node's value of one index type; an error when the
        node's machine is not indexed by it."""
        node = self.check(self.expr(e.node, c), c)
        table = self.enc.node_index_values(e.index)
        self.error(c, any_of([node == k for k, v in enumerate(table) if v is None]))
        return select([undef() if v is None else num(v) for v in table], node, 0)

    def is_instance(self, node: Any, machine: str) -> Any:
        base, count = self.enc.machine_nodes[machine]
        k = conc(node)
        if k is not None:
            return z3.BoolVal(base <= k < base + count)
        return z3.And(node >= base, node < base + count)

    def node_expr(self, e: ir.Expr, c: Any, machine: str | None) -> Any:
        """``Semantics.agent_expr`` of a hierarchical spec: a defined node, an instance of
        ``machine`` (of the processors' machine when None)."""
        a = self.expr(e, c)
        self.error(c, a == UNDEF_BV)
        want = machine if machine is not None else self.enc.processor
        if want is None:
            self.error(c, TRUE)
        else:
            self.error(c, z3.Not(self.is_instance(a, want)))
        return a

    def node_row(self, e: ir.Expr, machine: str, c: Any, slot: int) -> Any:
        """Variable ``slot`` of the instance of ``machine`` that node ``e`` names."""
        if isinstance(e, ir.SelfId):
            assert self.agent is not None
            return self.caches[self.agent][slot]
        a = self.node_expr(e, c, machine)
        base, count = self.enc.machine_nodes[machine]
        return select([self.caches[base + i][slot] for i in range(count)], a, base)

    def agent_expr(self, e: ir.Expr, c: Any) -> Any:
        a = self.expr(e, c)
        self.error(c, a == UNDEF_BV)
        self.error(c, a >= self.n)
        return a

    def select_agent(self, a: Any, slot: int) -> Any:
        k = conc(a)
        if k is not None and 0 <= k < self.n:
            return self.caches[k][slot]
        return select([self.caches[i][slot] for i in range(self.n)], a, 0)

    def binary(self, e: ir.Binary, c: Any) -> Any:
        op = e.op
        if op in ("&&", "||", "->"):
            a = truth(self.check(self.expr(e.left, c), c))
            cb = all_of([c, a]) if op in ("&&", "->") else all_of([c, z3.Not(a)])
            b = truth(self.check(self.expr(e.right, cb), cb))
            if op == "&&":
                return b2i(z3.And(a, b))
            if op == "||":
                return b2i(z3.Or(a, b))
            return b2i(z3.Or(z3.Not(a), b))
        a = self.expr(e.left, c)
        b = self.expr(e.right, c)
        if op == "in":
            if isinstance(b, list):
                self.check(a, c)
                return b2i(any_of([a == x for x in b]))
            self.check(a, c)
            return b2i(select_bit(b, a))
        if op in ("with", "without"):
            self.check(b, c)
            bits = tuple(z3.Or(x, b == i) if op == "with" else z3.And(x, b != i)
                         for i, x in enumerate(a.bits))
            return SetV(bits)
        if isinstance(a, SetV):
            if op not in ("==", "!="):
                raise Unsupported(f"the Z3 back end cannot compare sets with {op}", e.span)
            eq = all_of([x == y for x, y in zip(a.bits, b.bits, strict=True)])
            return b2i(eq if op == "==" else z3.Not(eq))
        if isinstance(a, ArrV):
            raise Unsupported("the Z3 back end cannot compare arrays", e.span)
        self.check(a, c)
        self.check(b, c)
        return arithmetic(op, a, b)

    def quant(self, e: ir.Quant, c: Any) -> Any:
        saved = self.locals.get(e.var)
        instances: list[tuple[Any, Any]] = []
        for v in ir.domain(e.var_type):
            self.locals[e.var] = num(v)
            instances.append(self.instance(e.body, c))
        if saved is None:
            self.locals.pop(e.var, None)
        else:
            self.locals[e.var] = saved
        return self.decide(e.kind == "forall", instances)

    def instance(self, body: ir.Expr, c: Any) -> tuple[Any, Any]:
        """One instance of a quantifier's body under ``c``: (truth, error condition). Its
        errors are taken off ``errs``: ``decide`` puts back what the quantifier raises."""
        mark = len(self.errs)
        t = truth(self.expr(body, c))
        err = any_of(self.errs[mark:])
        del self.errs[mark:]
        return t, err

    def decide(self, forall: bool, instances: list[tuple[Any, Any]]) -> Any:
        """NOTE(quantifier-errors): an error-free instance that decides the quantifier decides
        it; otherwise any instance's error is the quantifier's."""
        decided = any_of([all_of([TRUE if z3.is_false(err) else z3.Not(err),
                                  z3.Not(t) if forall else t]) for t, err in instances])
        errs = [err for _t, err in instances if not z3.is_false(err)]
        if errs:
            self.errs.append(z3.And(any_of(errs), z3.Not(decided)))
        truths = [t for t, _err in instances]
        return b2i(all_of(truths) if forall else any_of(truths))

    def count(self, e: ir.Count, c: Any) -> Any:
        """``Semantics``' count: the body is evaluated for every value (no short cut, so each
        value's errors count under ``c``), and the truths summed like ``size``."""
        saved = self.locals.get(e.var)
        truths: list[Any] = []
        for v in ir.domain(e.var_type):
            self.locals[e.var] = num(v)
            truths.append(truth(self.expr(e.body, c)))
        if saved is None:
            self.locals.pop(e.var, None)
        else:
            self.locals[e.var] = saved
        return z3.Sum([b2i(t) for t in truths]) if truths else num(0)

    def inflight(self, e: ir.InFlight, c: Any) -> Any:
        d = self.expr(e.dst, c) if e.dst is not None else None
        return b2i(any_of([present if d is None else all_of([present, dst == d])
                           for present, (_src, dst, _f, _p) in self.messages(e.message)]))

    def messages(self, message: str) -> list[tuple[Any, tuple[Any, Any, list[Any], Any]]]:
        """(present, (src, dst, fields, pos)) for every place a message of this type can be;
        ``pos`` is the slot of a fifo queue, 0 its head (NOTE(message-position)), and -1 on
        an unordered network, where the front end lets no expression read it."""
        t = self.enc.msg_index[message]
        net_i = self.enc.net_index[self.enc.model.message(message).network]
        contents = self.nets[net_i]
        net = self.enc.model.networks[net_i]
        out = []
        if net.ordering is ir.Ordering.UNORDERED:
            for s in contents:
                out.append((all_of([s.valid, s.line == self.line, s.type == t]),
                            (s.src, s.dst, s.fields, num(-1))))
        elif net.ordering is ir.Ordering.FIFO:
            for (src, dst, ln), q in contents.items():
                if ln != self.line:
                    continue
                for k, ty in enumerate(q.types):
                    out.append((all_of([q.count > k, ty == t]),
                                (num(src), num(dst), q.fields[k], num(k))))
        return out

    def msg_quant(self, e: ir.MsgQuant, c: Any) -> Any:
        if e.kind == "count":
            return self.msg_count(e, c)
        forall = e.kind == "forall"
        saved = self.locals.get(e.var)
        instances = []
        for present, binding in self.messages(e.message):
            self.locals[e.var] = binding
            t, err = self.instance(e.body, all_of([c, present]))
            instances.append((z3.Implies(present, t) if forall else z3.And(present, t), err))
        if saved is None:
            self.locals.pop(e.var, None)
        else:
            self.locals[e.var] = saved
        return self.decide(forall, instances)

    def msg_count(self, e: ir.MsgQuant, c: Any) -> Any:
        """NOTE(message-count): ``Semantics``' count of the messages in flight, duplicates
        included: a place counts when a message of the type is there and makes the body true.
        As ``count`` over a type, no short cut: the body of every message there is evaluated,
        and any of their errors is the count's (NOTE(quantifier-errors): the reference raises
        the least, the replay of the trace names it); an empty place raises nothing."""
        saved = self.locals.get(e.var)
        hits: list[Any] = []
        for present, binding in self.messages(e.message):
            self.locals[e.var] = binding
            t = truth(self.expr(e.body, all_of([c, present])))
            hits.append(all_of([present, t]))
        if saved is None:
            self.locals.pop(e.var, None)
        else:
            self.locals[e.var] = saved
        return z3.Sum([b2i(h) for h in hits]) if hits else num(0)

    # ------------------------------------------------------------ statements

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: ir.Stmt) -> None:
        self.refresh()
        pc = self.pc
        if z3.is_false(pc):
            return
        match s:
            case ir.Assign():
                value = self.expr(s.value, pc)
                self.assign(s.target, value, s.span)
            case ir.If():
                cond = truth(self.check(self.expr(s.cond, pc), pc))
                self.path.append(cond)
                self.block(s.then)
                self.path.pop()
                self.path.append(z3.Not(cond))
                self.block(s.orelse)
                self.path.pop()
            case ir.For():
                for v in ir.domain(s.var_type):
                    self.locals[s.var] = num(v)
                    self.block(s.body)
                self.locals.pop(s.var, None)
            case ir.Let():
                self.locals[s.var] = self.expr(s.value, pc)
            case ir.Send():
                args = [self.expr(a, pc) for a in s.args]
                d = self.check(self.expr(s.dst, pc), pc)
                self.refresh()
                self.deliver(self.enc.msg_index[s.message], args, d, s.span,
                             self.fitting_args(s.message, s.args))
            case ir.Broadcast():
                args = [self.expr(a, pc) for a in s.args]
                fitting = self.fitting_args(s.message, s.args)
                skip = self.expr(s.exclude, pc) if s.exclude is not None else None
                for a in range(self.n):
                    self.refresh()
                    if skip is None:
                        self.deliver(self.enc.msg_index[s.message], args, num(a), s.span,
                                     fitting)
                    else:
                        self.path.append(skip != a)
                        self.refresh()
                        self.deliver(self.enc.msg_index[s.message], args, num(a), s.span,
                                     fitting)
                        self.path.pop()
            case ir.Goto():
                machine = self.current_machine()
                self.goto = z3.If(pc, num(machine.state_index(s.state)), self.goto)
            case ir.Perform():
                value = self.check(self.expr(s.value, pc), pc)
                if self.hier:  # the monitor's entry: the processor's place among them
                    agent = self.node_expr(s.agent, pc, None)
                    if self.enc.processor is not None:
                        agent = agent - self.enc.machine_nodes[self.enc.processor][0]
                else:
                    agent = self.agent_expr(s.agent, pc)
                self.performs.append((pc, agent, s.kind, value))
            case ir.Multicast():
                self.multicast(s, pc)
            case ir.Assert():
                cond = truth(self.check(self.expr(s.cond, pc), pc))
                self.error(pc, z3.Not(cond))
            case _:
                assert_never(s)

    def current_machine(self) -> ir.Machine:
        if self.hier:
            assert self.agent is not None
            return self.enc.layout.rows[self.agent]
        return self.enc.home if self.agent is None else self.enc.cache

    def assign(self, target: ir.Expr, value: Any, span: Span) -> None:
        rng = range_of(target.type)
        if rng is not None and not isinstance(value, (SetV, ArrV)):
            self.error(self.pc, z3.And(value != UNDEF_BV, z3.Or(value < rng[0], value > rng[1])))
        self.write(target, value, self.pc)

    def write(self, target: ir.Expr, value: Any, cond: Any) -> None:
        if isinstance(target, ir.GVar):
            slot = self.enc.global_slot[target.name]
            self.globals[slot] = ite(cond, value, self.globals[slot])
            return
        if isinstance(target, ir.MVar):
            slot = self.enc.var_slot[(target.machine, target.name)]
            if target.agent is None:
                self.home[slot] = ite(cond, value, self.home[slot])
                return
            if self.hier:
                self.write_row(target, slot, value, cond)
                return
            a = self.agent_expr(target.agent, cond)
            k = conc(a)
            for i in range(self.n):
                if k is not None and k != i:
                    continue
                ci = cond if k is not None else all_of([cond, a == i])
                self.caches[i][slot] = ite(ci, value, self.caches[i][slot])
            return
        assert isinstance(target, ir.Index)
        arr = self.expr(target.base, cond)
        idx = self.check(self.expr(target.index, cond), cond)
        off = ir.index_offset(target.base.type.index)  # type: ignore[union-attr]
        k = conc(idx)
        elems = list(arr.elems)
        for i in range(len(elems)):
            if k is not None and k != i + off:
                continue
            ci = cond if k is not None else all_of([cond, idx == i + off])
            elems[i] = ite(ci, value, elems[i])
        self.write(target.base, ArrV(tuple(elems)), TRUE)

    def write_row(self, target: ir.MVar, slot: int, value: Any, cond: Any) -> None:
        """A write to another instance's (or its own) variable in a hierarchical spec."""
        assert target.agent is not None
        if isinstance(target.agent, ir.SelfId):
            assert self.agent is not None
            row = self.caches[self.agent]
            row[slot] = ite(cond, value, row[slot])
            return
        a = self.node_expr(target.agent, cond, target.machine)
        base, count = self.enc.machine_nodes[target.machine]
        k = conc(a)
        for i in range(base, base + count):
            if k is not None and k != i:
                continue
            ci = cond if k is not None else all_of([cond, a == i])
            self.caches[i][slot] = ite(ci, value, self.caches[i][slot])

    def multicast(self, s: ir.Multicast, pc: Any) -> None:
        """``Semantics._multicast``: to every instance of the machine whose leading index
        values are the prefix's, but the excluded node, in node order."""
        args = [self.expr(a, pc) for a in s.args]
        want = [self.check(self.expr(x, pc), pc) for x in s.prefix]
        skip = self.expr(s.exclude, pc) if s.exclude is not None else None
        t = self.enc.msg_index[s.message]
        base, count = self.enc.machine_nodes[s.machine]
        inst = self.enc.instances
        for node in range(base, base + count):
            values = inst[node].values
            cond = all_of([*(w == v for w, v in zip(want, values, strict=False)),
                           *([] if skip is None else [skip != node])])
            self.path.append(cond)
            self.refresh()
            self.deliver(t, args, num(node), s.span)
            self.path.pop()
        self.refresh()

    # ------------------------------------------------------------ networks

    def deliver(self, t: int, fields: list[Any], dst: Any, span: Span,
                fitting: tuple[bool, ...] = ()) -> None:
        """Sends message type ``t``; ``fitting``: the fields whose range check cannot fail
        (``fitting_args``)."""
        pc = self.pc
        if z3.is_false(pc):
            return
        net_i = self.enc.net_index[self.enc.model.messages[t].network]
        net = self.enc.model.networks[net_i]
        src = self.agent if self.agent is not None else self.n
        # the semantics' range check of each field (flat specs too: a field computed by
        # arithmetic, ``size(s) - 1``, can leave its range)
        self.field_ranges(t, fields, fitting)
        self.refresh()
        pc = self.pc
        if z3.is_false(pc):
            return
        fields = fields + [num(0)] * (self.enc.layout.max_fields - len(fields))
        if net.ordering is ir.Ordering.BUS:
            self.deliver_now(t, fields, src, dst, span)
            return
        if net.ordering is ir.Ordering.UNORDERED and net_i in self.enc.keyed:
            self.deliver_keyed(net_i, t, fields, src, dst)
            return
        if net.ordering is ir.Ordering.UNORDERED:
            slots: list[Slot] = self.nets[net_i]
            full = all_of([s.valid for s in slots])
            self.blocks.append(all_of([pc, full]))
            free_before: list[Any] = []
            for s in slots:
                here = all_of([pc, z3.Not(s.valid), *free_before])
                free_before.append(s.valid)
                s.valid = z3.Or(s.valid, here)
                s.line = ite(here, num(self.line), s.line)
                s.src = ite(here, num(src), s.src)
                s.dst = ite(here, dst, s.dst)
                s.type = ite(here, num(t), s.type)
                s.fields = [ite(here, f, g) for f, g in zip(fields, s.fields, strict=True)]
            return
        queues: dict[tuple[int, int, int], Queue] = self.nets[net_i]
        k = conc(dst)
        for d in range(self.enc.layout.nodes):
            if k is not None and k != d:
                continue
            cd = pc if k is not None else all_of([pc, dst == d])
            q = queues.get((src, d, self.line))
            if q is None:  # NOTE(z3-fifo-pairs): never, if the static pairs are right; an
                self.error(cd, TRUE)  # error here would not replay (TraceReplayError)
                continue
            self.blocks.append(all_of([cd, q.count >= net.capacity]))
            for j in range(net.capacity):
                here = all_of([cd, q.count == j])
                q.types[j] = ite(here, num(t), q.types[j])
                q.fields[j] = [ite(here, f, g) for f, g in zip(fields, q.fields[j], strict=True)]
            q.count = z3.If(all_of([cd, q.count < net.capacity]), q.count + 1, q.count)

    def deliver_keyed(self, net_i: int, t: int, fields: list[Any], src: int, dst: Any) -> None:
        """Into the slot of (t, src, dst) (NOTE(infer-keyed-slots)): a message already there
        is recorded (``sent_twice``: the parameterised encoding's one-message-per-kind
        obligation, not a model error), a destination with no slot is a model error."""
        slots: list[Slot] = self.nets[net_i]
        k = conc(dst)
        hit = []
        for (tt, a, d), idx in self.enc.keyed[net_i].items():
            if tt != t or a != src or (k is not None and k != d):
                continue
            here = self.pc if k is not None else all_of([self.pc, dst == d])
            hit.append(here)
            s = slots[idx]
            self.sent_twice.append(all_of([here, s.valid]))
            s.valid = z3.Or(s.valid, here)
            s.fields = [ite(here, f, g) for f, g in zip(fields, s.fields, strict=True)]
        self.error(self.pc, z3.Not(any_of(hit)))

    def fitting_args(self, message: str, args: tuple[ir.Expr, ...]) -> tuple[bool, ...]:
        """Which of a send's arguments fit their field's range by their type (``fits``):
        ``field_ranges`` leaves those out (a delivery without them checks every field)."""
        fields = self.enc.model.message(message).fields
        return tuple(fits(a.type, f.type) for a, f in zip(args, fields, strict=True))

    def field_ranges(self, t: int, fields: list[Any], fitting: tuple[bool, ...] = ()) -> None:
        """``Semantics.deliver``: a field value outside its type's range is a model error
        (but for the ``fitting`` ones)."""
        for k, (f, v) in enumerate(zip(self.enc.model.messages[t].fields, fields,
                                       strict=True)):
            rng = range_of(f.type)
            if rng is None or isinstance(v, (SetV, ArrV)) or (k < len(fitting) and fitting[k]):
                continue
            self.error(self.pc, z3.And(v != UNDEF_BV, z3.Or(v < rng[0], v > rng[1])))

    def deliver_now(self, t: int, fields: list[Any], src: int, dst: Any, span: Span) -> None:
        """Atomic bus: the receiver's transition runs inside the sender's step."""
        if self.depth > BUS_NESTING_LIMIT:
            self.error(self.pc, TRUE)
            return
        k = conc(dst)
        targets = [k] if k is not None else list(range(self.enc.layout.nodes))
        for d in targets:
            if k is None:
                self.path.append(dst == d)
                self.refresh()
            self._deliver_to(t, fields, src, d)
            if k is None:
                self.path.pop()
        self.refresh()

    def _deliver_to(self, t: int, fields: list[Any], src: int, d: int) -> None:
        enc = self.enc
        if self.hier:
            machine: ir.Machine | None = enc.layout.rows[d]
        else:
            machine = enc.home if d == self.n else enc.cache
        name = enc.model.messages[t].name
        if machine is None:
            self.error(self.pc, TRUE)
            return
        agent = None if machine.kind is ir.MachineKind.HOME else d
        state = self.home[0] if agent is None else self.caches[agent][0]
        saved = (self.agent, self.msg, self.locals, self.goto)
        self.agent, self.msg, self.goto = agent, (num(src), fields, t), num(-1)
        self.locals = {}
        pc = self.pc
        for sidx in range(machine.state_type.size()):
            cs = all_of([pc, state == sidx])
            candidates = enc.sem.handlers.get((machine.name, name, sidx), [])
            if not candidates or any(tr.stall for tr in candidates):
                self.error(cs, TRUE)
                continue
            guards = [truth(self.check(self.guard(tr, cs), cs)) for tr in candidates]
            exactly_one = z3.PbEq([(g, 1) for g in guards], 1) if len(guards) > 1 else guards[0]
            self.error(cs, z3.Not(exactly_one))
            for tr, g in zip(candidates, guards, strict=True):
                self.path.append(state == sidx)
                self.path.append(g)
                self.depth += 1
                self.block(tr.body)
                self.depth -= 1
                self.path.pop()
                self.path.pop()
        self.refresh()
        self.apply_goto(agent)
        self.agent, self.msg, self.locals, self.goto = saved

    def guard(self, tr: ir.Transition, c: Any) -> Any:
        return self.expr(tr.guard, c) if tr.guard is not None else num(1)

    def apply_goto(self, agent: int | None) -> None:
        g = self.goto
        if is_num(g) and as_int(g) == -1:
            return
        row = self.home if agent is None else self.caches[agent]
        row[0] = z3.If(g == -1, row[0], g)
        self.goto = num(-1)


def select(elems: list[Any] | tuple[Any, ...], idx: Any, off: int) -> Any:
    k = conc(idx)
    if k is not None and 0 <= k - off < len(elems):
        return elems[k - off]
    out = elems[-1]
    for i in range(len(elems) - 2, -1, -1):
        out = ite(idx == i + off, elems[i], out)
    return out


def select_bit(s: SetV, a: Any) -> Any:
    k = conc(a)
    if k is not None:
        return s.bits[k] if 0 <= k < len(s.bits) else FALSE
    return any_of([z3.And(a == i, b) for i, b in enumerate(s.bits)])


def remove_slot(slot: Slot) -> None:
    slot.valid = FALSE


def pop_queue(q: Queue) -> None:
    cap = len(q.types)
    q.types = [*q.types[1:], q.types[-1]] if cap > 1 else list(q.types)
    q.fields = [*q.fields[1:], q.fields[-1]] if cap > 1 else list(q.fields)
    q.count = q.count - 1


_ = (SymState,)
