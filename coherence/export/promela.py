"""IR -> Promela, for Spin: the same transition system, checked for the same failures.

NOTE(promela-encoding): one process, all state global, every step a ``d_step`` (docs/spin.md):

* values are ``int``; "undefined" is the sentinel ``UNDEF`` (no value of any type reaches it);
  sets of agents are bitmasks, arrays are flattened, agent ids and the home node are ints;
* an instance is one transition with its agent and parameters fixed (or one delivery: a fifo
  queue's head, an unordered network's slot); ``en[k]`` says whether instance k is enabled;
* each of our states is ``READY + 1`` Spin states: *raw* (``ph == 0``, ``en`` clear), then
  ``READY`` chunks (one ``d_step`` each: pan labels every statement of a ``d_step``, 2048 at
  most) that check the invariants, report a deliverable message with no handler, and compute
  ``en``: source state and guard true and, for a body that can send on a bounded network,
  the body tried on the live state (rolled back from hidden copies) without blocking. The
  last chunk leaves the *ready* state (``ph == READY``), which fires one enabled instance (one
  ``d_step``) and is raw again;
* model errors (undefined reads, overflow, failed asserts, no transition) and invariants are
  ``assert``s tagged ``/* coherence-failure: ... */`` on their line; a ready state with
  nothing enabled that is not quiescent has no executable statement, so Spin reports it as
  an invalid end state: our deadlock;
* the atomic bus runs the receiver's handler inline, with its own temporaries per nesting
  depth; bus messages that trigger each other in a cycle are refused;
* an unordered network is kept sorted (as our semantics keeps it), so multisets are canonical
  and Spin stores exactly ``(READY + 1) * ours + 1`` states when the spec holds (symmetry
  off);
* the coherence monitor (``property ...: coherence``) is NOT exported: compare with it skipped.

Only ``lines = 1`` and scalar (non-array) values in messages, lets and whole assignments are
supported, and bus deliveries must not recurse; anything else raises a located
:class:`ExportError`.
"""

from __future__ import annotations

import itertools
from typing import assert_never

import attrs

from coherence import ir
from coherence.errors import NO_SPAN, Span, SpecError
from coherence.semantics import (
    BUS_NESTING_LIMIT,
    handler_table,
    param_values,
    range_of,
    spontaneous,
)

UNDEF = "UNDEF"
UNDEF_VALUE = -2147483647
UNDEF_SHORT = -32767  # when every value fits a short: half the state vector
_CHUNK_COST = 1500  # statements per ready chunk: pan labels each, 2048 at most in a d_step
_MAX_STEP = 1900    # the most one transition may have
NONE = -1  # no pending goto


class ExportError(SpecError):
    """The spec uses something this exporter cannot translate."""


@attrs.define
class _Ctx:
    """What names mean while one handler's code is generated."""

    depth: int
    machine: ir.Machine
    me: str | None                      # Promela expr of the running cache's agent id
    src: str | None = None              # the message's source node
    fields: dict[str, str] = attrs.Factory(dict)
    locals: dict[str, tuple[str, bool]] = attrs.Factory(dict)  # name -> (expr, may be undef)
    mvars: dict[str, dict[str, tuple[str, bool]]] = attrs.Factory(dict)


@attrs.frozen
class _Instance:
    """One transition with everything fixed: what ``en[k]`` stands for."""

    label: str
    machine: ir.Machine
    tr: ir.Transition
    agent: int | None
    params: tuple[int, ...]
    net: ir.Network | None = None
    where: int = 0      # fifo: queue index; unordered: slot
    src: int = 0        # fifo: the queue's source


def _ind(lines: list[str], n: int = 1) -> list[str]:
    return ["  " * n + x for x in lines]


def _tag(kind: str, msg: str, span: Span | None) -> str:
    where = f" at {span}" if span is not None and span != NO_SPAN else ""
    text = f"{kind}: {msg}{where}".replace("*/", "* /").replace("\n", " ")
    return f"/* coherence-failure: {text} */"


class PromelaExporter:
    def __init__(self, model: ir.Model) -> None:
        self.m = model
        if model.lines != 1:
            raise ExportError(f"the Promela exporter supports lines = 1 (got {model.lines})",
                              _param_span(model, "lines"))
        for a in model.assumptions:
            raise ExportError(f"assume {a.name}: state constraints are not supported by the "
                              "Promela export (Spin would store and count the states they "
                              "discard); use the Murphi export with Rumur", a.span)
        self.n = model.agents
        self.home = model.home
        self.cache = model.caches[0] if model.caches else None
        self.handlers = handler_table(model)
        self.nodes = self.n + 1
        self.temps: set[str] = set()
        self.counter = itertools.count()
        self.msg_index = {msg.name: i for i, msg in enumerate(model.messages)}
        self._may_block: dict[str, bool] = {}
        self._visiting: set[str] = set()

    # ------------------------------------------------------------ helpers

    def temp(self, stem: str) -> str:
        name = f"t_{stem}{next(self.counter)}"
        self.temps.add(name)
        return name

    def fixed(self, name: str) -> str:
        self.temps.add(name)
        return name

    @staticmethod
    def fail(kind: str, msg: str, span: Span | None = None) -> str:
        """``assert(false)`` tagged with our failure on its line (read back from the trail)."""
        return f"assert(false) {_tag(kind, msg, span)}"

    def check(self, pre: list[str], cond: str, msg: str, span: Span) -> None:
        pre.append(f"assert({cond}); {_tag('error', msg, span)}")

    def defined(self, pre: list[str], val: tuple[str, bool], what: str, span: Span) -> str:
        v, maybe = val
        if maybe:
            self.check(pre, f"{v} != {UNDEF}", f"read of undefined value ({what})", span)
        return v

    def net_msgs(self, net: ir.Network) -> list[ir.Message]:
        return [x for x in self.m.messages if x.network == net.name]

    def state_var(self, mach: ir.Machine, agent: str | None) -> str:
        return "h_state" if mach.kind is ir.MachineKind.HOME else f"k_state[{agent}]"

    def state_const(self, mach: ir.Machine, name: str) -> int:
        return mach.state_index(name)

    # ------------------------------------------------------------ storage

    def short(self) -> bool:
        """Whether every stored value (and UNDEF_SHORT) fits a Promela ``short``."""
        types: list[ir.Type] = [v.type for v in self.m.globals]
        types += [v.type for mach in self.m.machines for v in mach.vars]
        types += [f.type for msg in self.m.messages for f in msg.fields]
        limit = 30000
        for t in types:
            while isinstance(t, ir.ArrayT):
                t = t.elem
            if isinstance(t, ir.IntT) and (t.lo < -limit or t.hi > limit):
                return False
            if t.size() > limit:
                return False
        return self.nodes * self.nodes < limit

    def arrays(self) -> list[tuple[str, int]]:
        """Every state variable (name, number of ints; 0 for a scalar)."""
        out: list[tuple[str, int]] = []
        for v in self.m.globals:
            out.append((f"g_{v.name}", _cells(v.type) if isinstance(v.type, ir.ArrayT) else 0))
        if self.home is not None:
            out.append(("h_state", 0))
            for v in self.home.vars:
                out.append((f"h_{v.name}",
                            _cells(v.type) if isinstance(v.type, ir.ArrayT) else 0))
        if self.cache is not None:
            out.append(("k_state", self.n))
            for v in self.cache.vars:
                out.append((f"k_{v.name}", self.n * _cells(v.type)))
        for net in self.m.networks:
            msgs = self.net_msgs(net)
            if not msgs or net.ordering is ir.Ordering.BUS:
                continue
            c = net.capacity
            if net.ordering is ir.Ordering.FIFO:
                q = self.nodes * self.nodes
                out += [(f"f_{net.name}_len", q), (f"f_{net.name}_t", q * c)]
                out += [(f"f_{net.name}_{x.name}_{f.name}", q * c) for x in msgs for f in x.fields]
            else:
                out += [(f"u_{net.name}_cnt", 0), (f"u_{net.name}_src", c),
                        (f"u_{net.name}_dst", c), (f"u_{net.name}_t", c)]
                out += [(f"u_{net.name}_{x.name}_{f.name}", c) for x in msgs for f in x.fields]
        return out

    def loc(self, e: ir.Expr, ctx: _Ctx, pre: list[str]) -> tuple[str, str | None]:
        """(array name, flat offset) or (scalar name, None) of a variable or array element."""
        if isinstance(e, ir.GVar):
            return f"g_{e.name}", ("0" if isinstance(e.type, ir.ArrayT) else None)
        if isinstance(e, ir.MVar):
            if e.agent is None:
                return f"h_{e.name}", ("0" if isinstance(e.type, ir.ArrayT) else None)
            a = self.agent_expr(e.agent, ctx, pre, e.span)
            return f"k_{e.name}", f"({a}) * {_cells(e.type)}"
        if isinstance(e, ir.Index):
            base_t = e.base.type
            if not isinstance(base_t, ir.ArrayT):
                raise ExportError("indexing a value that is not an array", e.span)
            name, off = self.loc(e.base, ctx, pre)
            if off is None:
                raise ExportError("indexing a value that is not an array", e.span)
            i = self.defined(pre, self.expr(e.index, ctx, pre), "array index", e.span)
            lo = ir.index_offset(base_t.index)
            size = base_t.index.size()
            self.check(pre, f"{i} - {lo} >= 0 && {i} - {lo} < {size}",
                       "array index out of range", e.span)
            return name, f"{off} + ({i} - {lo}) * {_cells(base_t.elem)}"
        raise ExportError(f"cannot export {type(e).__name__} as an array or variable "
                          "(arrays must be variables)", e.span)

    @staticmethod
    def at(loc: tuple[str, str | None]) -> str:
        return loc[0] if loc[1] is None else f"{loc[0]}[{loc[1]}]"

    # ------------------------------------------------------------ expressions

    def agent_expr(self, e: ir.Expr, ctx: _Ctx, pre: list[str], span: Span) -> str:
        if isinstance(e, ir.SelfId):
            assert ctx.me is not None
            return ctx.me
        v, maybe = self.expr(e, ctx, pre)
        if maybe:
            self.check(pre, f"{v} != {UNDEF}", "agent index is undefined", span)
        if not isinstance(e.type, ir.AgentT) or maybe:
            self.check(pre, f"{v} < {self.n}", "the home node is not an agent", span)
        return v

    def expr(self, e: ir.Expr, ctx: _Ctx, pre: list[str]) -> tuple[str, bool]:
        """A side-effect-free Promela expression (after ``pre`` ran) and whether it may be
        undefined."""
        if isinstance(e.type, ir.ArrayT) and not isinstance(e, (ir.GVar, ir.MVar, ir.Index)):
            raise ExportError("array values are only supported as variables", e.span)
        match e:
            case ir.Lit():
                if e.value is None:
                    return UNDEF, True
                return str(int(e.value)), False
            case ir.Local():
                return ctx.locals[e.name]
            case ir.SelfId():
                assert ctx.me is not None
                return ctx.me, False
            case ir.GVar() | ir.MVar() | ir.Index():
                if isinstance(e.type, ir.ArrayT):
                    raise ExportError("whole arrays cannot be used as values in the Promela export",
                                      e.span)
                return self.at(self.loc(e, ctx, pre)), True
            case ir.MState():
                if e.agent is None:
                    return "h_state", False
                return f"k_state[{self.agent_expr(e.agent, ctx, pre, e.span)}]", False
            case ir.MsgField():
                return ctx.fields[e.name], True
            case ir.MsgSrc():
                assert ctx.src is not None
                return ctx.src, False
            case ir.Unary():
                a = self.defined(pre, self.expr(e.arg, ctx, pre), f"operand of {e.op}", e.span)
                return (f"(1 - {a})" if e.op == "!" else f"(-{a})"), False
            case ir.Binary():
                return self.binary(e, ctx, pre), False
            case ir.SetLit():
                if not isinstance(e.type, ir.SetT):
                    raise ExportError("a set of states or enum members is only supported after "
                                      "'in'", e.span)
                parts = [self.defined(pre, self.expr(x, ctx, pre), "set element", e.span)
                         for x in e.elems]
                bits = " | ".join(f"(1 << {p})" for p in parts)
                return (f"({bits})" if parts else "0"), False
            case ir.Call():
                return self.call(e, ctx, pre), False
            case ir.Quant():
                return self.quant(e, ctx, pre), False
            case ir.Count():
                return self.count(e, ctx, pre), False
            case ir.InFlight():
                return self.inflight(e, ctx, pre), False
            case ir.MsgQuant():
                return self.msg_quant(e, ctx, pre), False
            case ir.MsgVarAttr():
                return ctx.mvars[e.var][e.attr]
            case ir.Cond():
                return self.cond(e, ctx, pre)
            case _:
                assert_never(e)

    def cond(self, e: ir.Cond, ctx: _Ctx, pre: list[str]) -> tuple[str, bool]:
        """Only the chosen branch runs (its checks included), as in the semantics."""
        c = self.defined(pre, self.expr(e.cond, ctx, pre), "condition of if", e.span)
        then: list[str] = []
        a, a_undef = self.expr(e.then, ctx, then)
        orelse: list[str] = []
        b, b_undef = self.expr(e.orelse, ctx, orelse)
        t = self.temp("ce")
        pre.append(f"if :: {c} != 0 -> {' '.join(then)} {t} = {a} "
                   f":: else -> {' '.join(orelse)} {t} = {b} fi;")
        return t, a_undef or b_undef

    def call(self, e: ir.Call, ctx: _Ctx, pre: list[str]) -> str:
        if e.func == "all_agents":
            return str((1 << self.n) - 1)
        if e.func == "size":
            s = self.defined(pre, self.expr(e.args[0], ctx, pre), "set", e.span)
            bits = " + ".join(f"(({s} >> {i}) & 1)" for i in range(self.n))
            return f"({bits or '0'})"
        if e.func == "isundefined":
            return f"({self.expr(e.args[0], ctx, pre)[0]} == {UNDEF})"
        raise ExportError(f"the Promela export does not know the built-in {e.func}()", e.span)

    def binary(self, e: ir.Binary, ctx: _Ctx, pre: list[str]) -> str:
        op, span = e.op, e.span
        what = f"operand of {op}"
        if op in ("&&", "||", "->"):
            a = self.defined(pre, self.expr(e.left, ctx, pre), what, span)
            sub: list[str] = []
            b = self.defined(sub, self.expr(e.right, ctx, sub), what, span)
            first = f"{a} != 0" if op != "->" else f"{a} == 0"
            if not sub:
                join = "&&" if op == "&&" else "||"
                return f"({first} {join} {b} != 0)"
            t = self.temp("sc")
            # Short-circuit: the right operand (and its errors) only when it is needed.
            sub_text = "\n".join(sub)
            if op == "&&":
                pre.append(f"if :: {a} != 0 -> {sub_text} {t} = ({b} != 0) "
                           f":: else -> {t} = 0 fi;")
            else:
                pre.append(f"if :: {first} -> {t} = 1 "
                           f":: else -> {sub_text} {t} = ({b} != 0) fi;")
            return t
        if op == "in" and isinstance(e.right, ir.SetLit) and not isinstance(e.right.type,
                                                                            ir.SetT):
            a = self.defined(pre, self.expr(e.left, ctx, pre), what, span)
            elems = [self.expr(x, ctx, pre)[0] for x in e.right.elems]
            return "(" + (" || ".join(f"{a} == {x}" for x in elems) or "false") + ")"
        if isinstance(e.left.type, ir.ArrayT) or isinstance(e.right.type, ir.ArrayT):
            raise ExportError("comparing whole arrays is not supported by the Promela export",
                              span)
        a = self.defined(pre, self.expr(e.left, ctx, pre), what, span)
        if op == "in":
            s = self.defined(pre, self.expr(e.right, ctx, pre), "set", span)
            return f"(({s} >> {a}) & 1)"
        b = self.defined(pre, self.expr(e.right, ctx, pre),
                         "set element" if op in ("with", "without") else what, span)
        if op == "with":
            return f"({a} | (1 << {b}))"
        if op == "without":
            return f"({a} & ~(1 << {b}))"
        return f"({a} {op} {b})"

    def bound_body(self, var: str, v: str, body: ir.Expr, ctx: _Ctx) -> tuple[str, str]:
        """(value, statements) of ``body`` with ``var`` bound to the loop variable ``v``: the
        body of a quantifier's or a count's loop."""
        saved = ctx.locals.get(var)
        ctx.locals[var] = (v, False)
        stmts: list[str] = []
        b = self.expr(body, ctx, stmts)[0]
        _restore(ctx.locals, var, saved)
        return b, "\n".join(stmts)

    def quant(self, e: ir.Quant, ctx: _Ctx, pre: list[str]) -> str:
        forall = 1 if e.kind == "forall" else 0
        dom = ir.domain(e.var_type)
        v, t = self.temp(f"q_{e.var}_"), self.temp("qr")
        b, body_text = self.bound_body(e.var, v, e.body, ctx)
        pre += [f"{t} = {forall}; {v} = {dom.start};",
                f"do :: {v} <= {dom.stop - 1} && {t} == {forall} -> {body_text}",
                f"   if :: ({b} != 0) != {forall} -> {t} = {1 - forall} :: else -> skip fi; "
                f"{v}++",
                "   :: else -> break od;"]
        return t

    def count(self, e: ir.Count, ctx: _Ctx, pre: list[str]) -> str:
        """``count(a: T :: body)``: the body for every value (no early exit), as the
        semantics evaluates it."""
        dom = ir.domain(e.var_type)
        v, t = self.temp(f"c_{e.var}_"), self.temp("cr")
        b, body_text = self.bound_body(e.var, v, e.body, ctx)
        pre += [f"{t} = 0; {v} = {dom.start};",
                f"do :: {v} <= {dom.stop - 1} -> {body_text}",
                f"   if :: {b} != 0 -> {t}++ :: else -> skip fi; {v}++",
                "   :: else -> break od;"]
        return t

    def inflight(self, e: ir.InFlight, ctx: _Ctx, pre: list[str]) -> str:
        msg = self.m.message(e.message)
        net = self.m.network(msg.network)
        t = self.temp("if")
        pre.append(f"{t} = 0;")
        if net.ordering is ir.Ordering.BUS:
            return t
        d = None
        if e.dst is not None:
            d = self.expr(e.dst, ctx, pre)[0]  # not checked: undefined matches nothing
        k = self.msg_index[msg.name]
        if net.ordering is ir.Ordering.UNORDERED:
            i = self.temp("i")
            cond = f"u_{net.name}_t[{i}] == {k}"
            if d is not None:
                cond += f" && u_{net.name}_dst[{i}] == {d}"
            pre.append(f"{i} = 0; do :: {i} < u_{net.name}_cnt -> "
                       f"if :: {cond} -> {t} = 1 :: else -> skip fi; {i}++ "
                       ":: else -> break od;")
            return t
        c = net.capacity
        q, j = self.temp("q"), self.temp("j")
        qcond = "true" if d is None else f"{q} % {self.nodes} == {d}"
        pre.append(f"{q} = 0; do :: {q} < {self.nodes * self.nodes} -> "
                   f"if :: {qcond} -> {j} = 0; do :: {j} < f_{net.name}_len[{q}] -> "
                   f"if :: f_{net.name}_t[{q} * {c} + {j}] == {k} -> {t} = 1 "
                   f":: else -> skip fi; {j}++ :: else -> break od :: else -> skip fi; {q}++ "
                   ":: else -> break od;")
        return t

    def msg_quant(self, e: ir.MsgQuant, ctx: _Ctx, pre: list[str]) -> str:
        """``forall``/``exists`` (stopping at the first message that decides it) or
        ``count`` (NOTE(message-count): the body for every message, duplicates included, no
        early exit, as the semantics counts them) over the messages of a type in flight."""
        msg = self.m.message(e.message)
        net = self.m.network(msg.network)
        counting = e.kind == "count"
        forall = 1 if e.kind == "forall" else 0
        t = self.temp("mc" if counting else "mq")
        pre.append(f"{t} = {0 if counting else forall};")
        if net.ordering is ir.Ordering.BUS:
            return t
        stop = "" if counting else f" && {t} == {forall}"
        k = self.msg_index[msg.name]
        body: list[str] = []
        if net.ordering is ir.Ordering.UNORDERED:
            i = self.temp("i")
            ctx.mvars[e.var] = {"src": (f"u_{net.name}_src[{i}]", False),
                                "dst": (f"u_{net.name}_dst[{i}]", False)}
            for f in msg.fields:
                ctx.mvars[e.var][f.name] = (f"u_{net.name}_{msg.name}_{f.name}[{i}]", True)
            b = self.expr(e.body, ctx, body)[0]
            del ctx.mvars[e.var]
            body_text = "\n".join(body)
            pre.append(f"{i} = 0; do :: {i} < u_{net.name}_cnt{stop} -> "
                       f"if :: u_{net.name}_t[{i}] == {k} -> {body_text} "
                       f"{self.tally(t, b, counting, forall)} "
                       f":: else -> skip fi; {i}++ :: else -> break od;")
            return t
        c = net.capacity
        q, j = self.temp("q"), self.temp("j")
        slot = f"{q} * {c} + {j}"
        ctx.mvars[e.var] = {"src": (f"({q} / {self.nodes})", False),
                            "dst": (f"({q} % {self.nodes})", False)}
        for f in msg.fields:
            ctx.mvars[e.var][f.name] = (f"f_{net.name}_{msg.name}_{f.name}[{slot}]", True)
        ctx.mvars[e.var][ir.POSITION] = (j, False)  # NOTE(message-position): slot 0 the head
        b = self.expr(e.body, ctx, body)[0]
        del ctx.mvars[e.var]
        body_text = "\n".join(body)
        pre.append(f"{q} = 0; do :: {q} < {self.nodes * self.nodes}{stop} -> "
                   f"{j} = 0; do :: {j} < f_{net.name}_len[{q}]{stop} -> "
                   f"if :: f_{net.name}_t[{slot}] == {k} -> {body_text} "
                   f"{self.tally(t, b, counting, forall)} "
                   f":: else -> skip fi; {j}++ :: else -> break od; {q}++ :: else -> break od;")
        return t

    @staticmethod
    def tally(t: str, b: str, counting: bool, forall: int) -> str:
        """A message quantifier's update of its result ``t`` by one message's body ``b``."""
        if counting:
            return f"if :: {b} != 0 -> {t}++ :: else -> skip fi"
        return f"if :: ({b} != 0) != {forall} -> {t} = {1 - forall} :: else -> skip fi"

    # ------------------------------------------------------------ blocking

    def may_block(self, body: tuple[ir.Stmt, ...]) -> bool:
        return any(self.stmt_may_block(s) for s in body)

    def stmt_may_block(self, s: ir.Stmt) -> bool:
        if isinstance(s, (ir.Send, ir.Broadcast, ir.Multicast)):
            net = self.m.network(self.m.message(s.message).network)
            if net.ordering is not ir.Ordering.BUS:
                return True
            return self.bus_may_block(s.message, s.span)
        if isinstance(s, ir.If):
            return self.may_block(s.then) or self.may_block(s.orelse)
        if isinstance(s, ir.For):
            return self.may_block(s.body)
        return False

    def bus_may_block(self, msg: str, span: Span) -> bool:
        if msg in self._may_block:
            return self._may_block[msg]
        if msg in self._visiting:
            raise ExportError(f"messages on the atomic bus trigger each other in a cycle "
                              f"({msg}); the Promela export inlines bus deliveries", span)
        self._visiting.add(msg)
        result = any(self.may_block(t.body) for mach in self.m.machines
                     for t in mach.transitions
                     if t.kind is ir.TransitionKind.MESSAGE and t.name == msg)
        self._visiting.discard(msg)
        self._may_block[msg] = result
        return result

    # ------------------------------------------------------------ statements

    def stmts(self, body: tuple[ir.Stmt, ...], ctx: _Ctx) -> list[str]:
        """Statements in order; after one that may block, the rest runs only if it did not."""
        out: list[str] = []
        for i, s in enumerate(body):
            out += self.stmt(s, ctx)
            if self.stmt_may_block(s) and i + 1 < len(body):
                rest = self.stmts(body[i + 1:], ctx)
                out += ["if", ":: blk == 0 ->", *_ind(rest, 2), ":: else -> skip", "fi;"]
                break
        return out

    def stmt(self, s: ir.Stmt, ctx: _Ctx) -> list[str]:
        pre: list[str] = []
        match s:
            case ir.Assign():
                return self.assign(s, ctx)
            case ir.If():
                c = self.defined(pre, self.expr(s.cond, ctx, pre), "if condition", s.span)
                then = self.stmts(s.then, ctx) or ["skip"]
                orelse = self.stmts(s.orelse, ctx) or ["skip"]
                return [*pre, "if", f":: {c} != 0 ->", *_ind(then, 2), ":: else ->",
                        *_ind(orelse, 2), "fi;"]
            case ir.For():
                dom = ir.domain(s.var_type)
                v = self.temp(f"for_{s.var}_")
                saved = ctx.locals.get(s.var)
                ctx.locals[s.var] = (v, False)
                body = self.stmts(s.body, ctx) or ["skip"]
                _restore(ctx.locals, s.var, saved)
                stop = " && blk == 0" if self.may_block(s.body) else ""
                return [f"{v} = {dom.start};", f"do :: {v} <= {dom.stop - 1}{stop} ->",
                        *_ind(body, 2), f"  {v}++", ":: else -> break", "od;"]
            case ir.Let():
                if isinstance(s.value.type, ir.ArrayT):
                    raise ExportError("let of an array is not supported by the Promela export",
                                      s.span)
                v, maybe = self.expr(s.value, ctx, pre)
                t = self.temp(f"let_{s.var}_")
                ctx.locals[s.var] = (t, maybe)
                return [*pre, f"{t} = {v};"]
            case ir.Send():
                d = self.expr(s.dst, ctx, pre)
                if d[1]:
                    self.check(pre, f"{d[0]} != {UNDEF}", "send to an undefined destination",
                               s.span)
                args = self.args(s.args, ctx, pre)
                return [*pre, *self.deliver(s.message, args, d[0], ctx, s.span)]
            case ir.Broadcast():
                args = self.args(s.args, ctx, pre)
                skip = self.expr(s.exclude, ctx, pre)[0] if s.exclude is not None else "-1"
                x = self.temp("bc")
                inner = self.deliver(s.message, args, x, ctx, s.span)
                stop = " && blk == 0" if self.stmt_may_block(s) else ""
                return [*pre, f"{x} = 0;", f"do :: {x} < {self.n}{stop} ->",
                        f"  if :: {x} != {skip} ->", *_ind(inner, 2), "  :: else -> skip fi;",
                        f"  {x}++", ":: else -> break", "od;"]
            case ir.Goto():
                return [f"ng_{ctx.depth} = {self.state_const(ctx.machine, s.state)};"]
            case ir.Perform():
                self.defined(pre, self.expr(s.value, ctx, pre), f"value of perform {s.kind}",
                             s.span)
                self.agent_expr(s.agent, ctx, pre, s.span)
                return pre or ["skip;"]
            case ir.Assert():
                c = self.defined(pre, self.expr(s.cond, ctx, pre), "assert condition", s.span)
                return [*pre, f"assert({c} != 0); "
                              f"{_tag('error', 'assertion failed: ' + s.text, s.span)}"]
            case _:
                assert_never(s)

    def args(self, args: tuple[ir.Expr, ...], ctx: _Ctx, pre: list[str]) -> list[str]:
        """Argument values copied to temporaries (they may be undefined: copying is fine)."""
        out = []
        for a in args:
            if isinstance(a.type, ir.ArrayT):
                raise ExportError("array-valued message fields are not supported", a.span)
            v = self.expr(a, ctx, pre)[0]
            t = self.temp("arg")
            pre.append(f"{t} = {v};")
            out.append(t)
        return out

    def assign(self, s: ir.Assign, ctx: _Ctx) -> list[str]:
        pre: list[str] = []
        if isinstance(s.target.type, ir.ArrayT):
            raise ExportError("assigning a whole array is not supported by the Promela export",
                              s.span)
        v, _ = self.expr(s.value, ctx, pre)
        t = self.temp("v")
        pre.append(f"{t} = {v};")
        rng = range_of(s.target.type)
        if rng is not None and not (isinstance(s.value, ir.Lit) and (
                s.value.value is None or rng[0] <= s.value.value <= rng[1])):
            self.check(pre, f"{t} == {UNDEF} || ({t} >= {rng[0]} && {t} <= {rng[1]})",
                       f"value out of range {s.target.type}", s.span)
        target = self.at(self.loc(s.target, ctx, pre))
        return [*pre, f"{target} = {t};"]

    # ------------------------------------------------------------ networks

    def deliver(self, name: str, args: list[str], dst: str, ctx: _Ctx, span: Span) -> list[str]:
        msg = self.m.message(name)
        net = self.m.network(msg.network)
        k = self.msg_index[name]
        src = self.source(ctx)
        if net.ordering is ir.Ordering.BUS:
            return self.bus(msg, args, src, dst, ctx, span)
        c = net.capacity
        if net.ordering is ir.Ordering.FIFO:
            q = self.temp("sq")
            slot = f"{q} * {c} + f_{net.name}_len[{q}]"
            fill = [f"f_{net.name}_t[{slot}] = {k};"]
            fill += [f"f_{net.name}_{name}_{f.name}[{slot}] = {a};"
                     for f, a in zip(msg.fields, args, strict=True)]
            return [f"{q} = ({src}) * {self.nodes} + ({dst});",
                    f"if :: f_{net.name}_len[{q}] >= {c} -> blk = 1",
                    ":: else ->", *_ind(fill, 2), f"  f_{net.name}_len[{q}]++", "fi;"]
        u = f"u_{net.name}"
        p, j = self.temp("p"), self.temp("j")
        # Keep the multiset sorted by (src, dst, type, fields), as our semantics does.
        keys = [(f"({src})", f"{u}_src[{p}]"), (f"({dst})", f"{u}_dst[{p}]"),
                (str(k), f"{u}_t[{p}]")]
        keys += [(a, f"{u}_{name}_{f.name}[{p}]") for f, a in zip(msg.fields, args, strict=True)]
        less = f"{keys[-1][0]} < {keys[-1][1]}"
        for a, b in reversed(keys[:-1]):
            less = f"{a} < {b} || ({a} == {b} && ({less}))"
        shift = [f"{arr}[{j}] = {arr}[{j} - 1];" for arr in self.unordered_arrays(net)]
        put = [f"{u}_src[{p}] = {src};", f"{u}_dst[{p}] = {dst};", f"{u}_t[{p}] = {k};"]
        put += [f"{u}_{name}_{f.name}[{p}] = {a};" for f, a in zip(msg.fields, args, strict=True)]
        # other messages' field slots at p are 0 already (shifted or never written)
        put += [f"{u}_{x.name}_{f.name}[{p}] = 0;" for x in self.net_msgs(net) if x.name != name
                for f in x.fields]
        return [f"if :: {u}_cnt >= {c} -> blk = 1", ":: else ->",
                f"  {p} = 0; do :: {p} < {u}_cnt && !({less}) -> {p}++ :: else -> break od;",
                f"  {j} = {u}_cnt; do :: {j} > {p} ->", *_ind(shift, 3), f"    {j}--",
                "  :: else -> break od;", *_ind(put), f"  {u}_cnt++", "fi;"]

    def source(self, ctx: _Ctx) -> str:
        """The sending node: the running cache's agent id, or the home node."""
        src = ctx.me if ctx.machine.kind is ir.MachineKind.CACHE else str(self.n)
        assert src is not None
        return src

    def unordered_arrays(self, net: ir.Network) -> list[str]:
        u = f"u_{net.name}"
        return [f"{u}_src", f"{u}_dst", f"{u}_t"] + [
            f"{u}_{x.name}_{f.name}" for x in self.net_msgs(net) for f in x.fields]

    def bus(self, msg: ir.Message, args: list[str], src: str, dst: str, ctx: _Ctx,
            span: Span) -> list[str]:
        """The receiver's handler inline, one nesting level deeper (its own temporaries)."""
        d = ctx.depth + 1
        if ctx.depth > BUS_NESTING_LIMIT:  # as the semantics: enclosing deliveries, not this one
            raise ExportError("messages on the atomic bus nest more than "
                              f"{BUS_NESTING_LIMIT} deep", span)
        me = self.fixed(f"self_{d}")
        msrc = self.fixed(f"msrc_{d}")
        out = [f"{me} = {dst};", f"{msrc} = {src};"]
        fields = {}
        for f, a in zip(msg.fields, args, strict=True):
            fields[f.name] = self.fixed(f"mf_{d}_{f.name}")
            out.append(f"{fields[f.name]} = {a};")
        branches = []
        for mach, cond in ((self.home, f"{me} == {self.n}"), (self.cache, f"{me} < {self.n}")):
            if mach is None:
                code = [self.fail("error", f"{msg.name} sent to a machine the spec does not "
                                  "have", span) + ";"]
            else:
                hctx = _Ctx(d, mach, me if mach.kind is ir.MachineKind.CACHE else None, msrc,
                            fields)
                code = self.bus_handler(msg, mach, hctx, span)
            branches += [f":: {cond} ->", *_ind(code, 2)]
        return [*out, "if", *branches, "fi;"]

    def bus_handler(self, msg: ir.Message, mach: ir.Machine, ctx: _Ctx, span: Span) -> list[str]:
        ng = self.fixed(f"ng_{ctx.depth}")
        st = self.state_var(mach, ctx.me)
        out = [f"{ng} = {NONE};", "if"]
        for i, sname in enumerate(mach.state_type.members):
            cands = self.handlers.get((mach.name, msg.name, i), [])
            code: list[str]
            if not cands:
                code = [self.fail("error", f"no transition for {msg.name} in state {sname} of "
                                  f"{mach.name}", span) + ";"]
            elif any(t.stall for t in cands):
                code = [self.fail("error", f"{msg.name} cannot stall on the atomic bus",
                                  span) + ";"]
            else:
                code = []
                gs = []
                for t in cands:
                    ctx.locals = {}
                    g = self.temp("g")
                    if t.guard is None:
                        code.append(f"{g} = 1;")
                    else:
                        v = self.defined(code, self.expr(t.guard, ctx, code), "guard", t.span)
                        code.append(f"{g} = ({v} != 0);")
                    gs.append(g)
                total = " + ".join(gs)
                code.append(f"assert({total} == 1); " + _tag(
                    "error", f"exactly one transition of {mach.name} must take {msg.name} on "
                    "the atomic bus", span))
                code.append("if")
                for g, t in zip(gs, cands, strict=True):
                    ctx.locals = {}
                    code += [f":: {g} ->", *_ind(self.stmts(t.body, ctx) or ["skip"], 2)]
                code.append("fi;")
            out += [f":: {st} == {self.state_const(mach, sname)} ->", *_ind(code, 2)]
        out += ["fi;", f"if :: blk == 0 && {ng} != {NONE} -> {st} = {ng} :: else -> skip fi;"]
        return out

    # ------------------------------------------------------------ instances

    def instances(self) -> list[_Instance]:
        """Every transition instance, as ``Semantics.action_instances`` enumerates them
        (NOTE(actions)): the semantics' ``spontaneous`` transitions with their
        ``param_values`` per agent, and each non-stalling message handler per network place.
        tests/test_semantic_decisions.py checks that they are the same."""
        out: list[_Instance] = []
        if self.cache is not None:
            for tr in spontaneous(self.cache):
                for a in range(self.n):
                    for ps in param_values(tr):
                        out.append(_Instance(f"{self.cache.name}[{a}] {tr.kind} {tr.name}"
                                             f"{_args(ps)}", self.cache, tr, a, ps))
        if self.home is not None:
            for tr in spontaneous(self.home):
                for ps in param_values(tr):
                    out.append(_Instance(f"{self.home.name} {tr.kind} {tr.name}{_args(ps)}",
                                         self.home, tr, None, ps))
        for net in self.m.networks:
            if net.ordering is ir.Ordering.BUS:
                continue
            names = {x.name for x in self.net_msgs(net)}
            for mach in self.m.machines:
                for tr in mach.transitions:
                    if tr.kind is not ir.TransitionKind.MESSAGE or tr.stall or tr.name not in names:
                        continue
                    if net.ordering is ir.Ordering.UNORDERED:
                        for i in range(net.capacity):
                            out.append(_Instance(f"{mach.name} receives {tr.name} (slot {i}) "
                                                 f"#{tr.index}", mach, tr, None, (), net, i))
                        continue
                    dsts = [self.n] if mach.kind is ir.MachineKind.HOME else list(range(self.n))
                    for d in dsts:
                        for s in range(self.nodes):
                            q = s * self.nodes + d
                            out.append(_Instance(
                                f"{_machine_label(mach, d, self.n)} receives {tr.name} from "
                                f"node {s} #{tr.index}", mach, tr,
                                d if mach.kind is ir.MachineKind.CACHE else None, (), net, q, s))
        return out

    def setup(self, inst: _Instance) -> tuple[str, _Ctx, list[str]]:
        """(enabling condition before the guard, context, statements binding the message)."""
        mach, tr = inst.machine, inst.tr
        me = str(inst.agent) if inst.agent is not None else None
        ctx = _Ctx(0, mach, me)
        for f, v in zip(tr.params, inst.params, strict=True):
            ctx.locals[f.name] = (str(v), False)
        states = tr.states
        if inst.net is None:
            st = self.state_var(mach, me)
            cond = " || ".join(f"{st} == {self.state_const(mach, x)}" for x in states)
            return f"({cond})", ctx, []
        msg = self.m.message(tr.name)
        k = self.msg_index[msg.name]
        net = inst.net
        if net.ordering is ir.Ordering.FIFO:
            c = net.capacity
            head = inst.where * c
            st = self.state_var(mach, me)
            cond = (f"f_{net.name}_len[{inst.where}] > 0 && f_{net.name}_t[{head}] == {k} && ("
                    + " || ".join(f"{st} == {self.state_const(mach, x)}" for x in states) + ")")
            ctx.src = str(inst.src)
            bind = []
            for f in msg.fields:
                ctx.fields[f.name] = self.fixed(f"mf_0_{f.name}")
                bind.append(f"mf_0_{f.name} = f_{net.name}_{msg.name}_{f.name}[{head}];")
            return cond, ctx, bind
        u, i = f"u_{net.name}", inst.where
        if mach.kind is ir.MachineKind.HOME:
            who = f"{u}_dst[{i}] == {self.n}"
            st = "h_state"
        else:
            who = f"{u}_dst[{i}] < {self.n}"
            ctx.me = self.fixed("self_0")
            st = f"k_state[{u}_dst[{i}]]"
        cond = (f"{i} < {u}_cnt && {u}_t[{i}] == {k} && {who} && ("
                + " || ".join(f"{st} == {self.state_const(mach, x)}" for x in states) + ")")
        ctx.src = self.fixed("msrc_0")
        bind = [f"msrc_0 = {u}_src[{i}];"]
        if mach.kind is ir.MachineKind.CACHE:
            bind.append(f"self_0 = {u}_dst[{i}];")
        for f in msg.fields:
            ctx.fields[f.name] = self.fixed(f"mf_0_{f.name}")
            bind.append(f"mf_0_{f.name} = {u}_{msg.name}_{f.name}[{i}];")
        return cond, ctx, bind

    def remove(self, inst: _Instance) -> list[str]:
        net = inst.net
        if net is None:
            return []
        if net.ordering is ir.Ordering.FIFO:
            c, q = net.capacity, inst.where
            arrs = [f"f_{net.name}_t"] + [f"f_{net.name}_{x.name}_{f.name}"
                                          for x in self.net_msgs(net) for f in x.fields]
            out = []
            for arr in arrs:
                out += [f"{arr}[{q * c + j}] = {arr}[{q * c + j + 1}];" for j in range(c - 1)]
                out.append(f"{arr}[{q * c + c - 1}] = 0;")
            return [*out, f"f_{net.name}_len[{q}]--;"]
        u, j = f"u_{net.name}", self.fixed("t_rm")
        arrs = self.unordered_arrays(net)
        return [f"{j} = {inst.where}; do :: {j} < {u}_cnt - 1 ->",
                *_ind([f"{a}[{j}] = {a}[{j} + 1];" for a in arrs], 2), f"  {j}++",
                ":: else -> break od;", *[f"{a}[{u}_cnt - 1] = 0;" for a in arrs], f"{u}_cnt--;"]

    def body(self, inst: _Instance, ctx: _Ctx) -> list[str]:
        ng = self.fixed("ng_0")
        st = self.state_var(inst.machine, ctx.me)
        return [*self.remove(inst), f"{ng} = {NONE};", *self.stmts(inst.tr.body, ctx),
                f"if :: blk == 0 && {ng} != {NONE} -> {st} = {ng} :: else -> skip fi;"]

    def guard(self, inst: _Instance, ctx: _Ctx, pre: list[str]) -> str:
        if inst.tr.guard is None:
            return "1"
        return self.defined(pre, self.expr(inst.tr.guard, ctx, pre), "guard", inst.tr.span)

    def try_code(self, k: int, inst: _Instance) -> list[str]:
        cond, ctx, bind = self.setup(inst)
        pre: list[str] = []
        g = self.guard(inst, ctx, pre)
        if self.may_block(inst.tr.body):
            # tried on the live state, then rolled back: enabled unless a send blocked
            names = self.written(inst)
            then = [*self.copy(names, "sh_{0}", "{0}"), "blk = 0;", *self.body(inst, ctx),
                    f"en[{k}] = (blk == 0);", *self.copy(names, "{0}", "sh_{0}"), "blk = 0"]
        else:
            then = [f"en[{k}] = 1"]
        return [f"/* {k}: {inst.label} */", "if", f":: {cond} ->", *_ind(bind, 2),
                *_ind(pre, 2), f"  if :: {g} != 0 ->", *_ind(then, 3),
                "  :: else -> skip fi", ":: else -> skip", "fi;"]

    def copy(self, names: list[str], to: str, frm: str) -> list[str]:
        """Copies: small arrays unrolled, larger ones looped (pan allows 2048 statements in
        one d_step)."""
        sizes = dict(self.arrays())
        out = []
        for name in names:
            size = sizes[name]
            if size > 4:
                i = self.fixed("t_cp")
                out.append(f"{i} = 0; do :: {i} < {size} -> {to.format(name)}[{i}] = "
                           f"{frm.format(name)}[{i}]; {i}++ :: else -> break od;")
                continue
            cells = [f"[{i}]" for i in range(size)] if size else [""]
            out += [f"{to.format(name)}{c} = {frm.format(name)}{c};" for c in cells]
        return out

    def written(self, inst: _Instance) -> list[str]:
        """The state variables an instance's body can change (what a try must roll back)."""
        found: set[str] = set()
        if inst.net is not None:
            found.update(self.net_arrays(inst.net))
        self.written_in(inst.tr.body, inst.machine, found, set())
        found.add("h_state" if inst.machine.kind is ir.MachineKind.HOME else "k_state")
        return [name for name, _ in self.arrays() if name in found]

    def written_in(self, body: tuple[ir.Stmt, ...], mach: ir.Machine, found: set[str],
                   seen: set[str]) -> None:
        for s in body:
            if isinstance(s, ir.Assign):
                root: ir.Expr = s.target
                while isinstance(root, ir.Index):
                    root = root.base
                if isinstance(root, ir.GVar):
                    found.add(f"g_{root.name}")
                elif isinstance(root, ir.MVar):
                    found.add(f"h_{root.name}" if root.agent is None else f"k_{root.name}")
            elif isinstance(s, ir.If):
                self.written_in(s.then, mach, found, seen)
                self.written_in(s.orelse, mach, found, seen)
            elif isinstance(s, ir.For):
                self.written_in(s.body, mach, found, seen)
            elif isinstance(s, (ir.Send, ir.Broadcast)):
                net = self.m.network(self.m.message(s.message).network)
                if net.ordering is not ir.Ordering.BUS:
                    found.update(self.net_arrays(net))
                elif s.message not in seen:
                    seen.add(s.message)
                    for other in self.m.machines:
                        for t in other.transitions:
                            if t.kind is ir.TransitionKind.MESSAGE and t.name == s.message:
                                found.add("h_state" if other.kind is ir.MachineKind.HOME
                                          else "k_state")
                                self.written_in(t.body, other, found, seen)

    def net_arrays(self, net: ir.Network) -> list[str]:
        if net.ordering is ir.Ordering.FIFO:
            return [f"f_{net.name}_len", f"f_{net.name}_t"] + [
                f"f_{net.name}_{x.name}_{f.name}" for x in self.net_msgs(net) for f in x.fields]
        return [f"u_{net.name}_cnt", *self.unordered_arrays(net)]

    def fire_code(self, k: int, inst: _Instance) -> list[str]:
        _, ctx, bind = self.setup(inst)
        return [f":: d_step {{ ph == READY && en[{k}] ->  /* {inst.label} */", *_ind(bind, 2),
                *_ind(self.body(inst, ctx), 2), "    fired()", "  }"]

    # ------------------------------------------------------------ checks in every state

    def problems(self) -> list[str]:
        """A message that can be delivered but has no transition in the receiver's state."""
        out: list[str] = []
        for net in self.m.networks:
            msgs = self.net_msgs(net)
            if net.ordering is ir.Ordering.BUS or not msgs:
                continue
            for mach, dst_home in ((self.home, True), (self.cache, False)):
                if net.ordering is ir.Ordering.FIFO:
                    c = net.capacity
                    dsts = [self.n] if dst_home else list(range(self.n))
                    for d in dsts:
                        for s in range(self.nodes):
                            q = s * self.nodes + d
                            head = (f"f_{net.name}_len[{q}] > 0", f"f_{net.name}_t[{q * c}]")
                            st = None if mach is None else self.state_var(
                                mach, None if dst_home else str(d))
                            out += self.no_handler(mach, msgs, head, st)
                else:
                    u = f"u_{net.name}"
                    for i in range(net.capacity):
                        where = f"{u}_dst[{i}] == {self.n}" if dst_home else (
                            f"{u}_dst[{i}] < {self.n}")
                        head = (f"{i} < {u}_cnt && {where}", f"{u}_t[{i}]")
                        st = None if mach is None else self.state_var(
                            mach, None if dst_home else f"{u}_dst[{i}]")
                        out += self.no_handler(mach, msgs, head, st)
        return out

    def no_handler(self, mach: ir.Machine | None, msgs: list[ir.Message],
                   head: tuple[str, str], st: str | None) -> list[str]:
        present, t = head
        if mach is None or st is None:
            return [f"assert(!({present})); "
                    + _tag("no-transition", "a message sent to a machine the spec lacks", None)]
        handled = []
        for msg in msgs:
            # NOTE(no-transition): the semantics' handler table
            states = [i for i in range(mach.state_type.size())
                      if (mach.name, msg.name, i) in self.handlers]
            if states:
                handled.append(f"({t} == {self.msg_index[msg.name]} && ("
                               + " || ".join(f"{st} == {x}" for x in states) + "))")
        ok = " || ".join(handled) or "false"
        return [f"assert(!({present} && !({ok}))); "
                + _tag("no-transition", f"a message with no transition in the state of "
                       f"{mach.name}", None)]

    def invariants(self) -> list[list[str]]:
        """The code checking each invariant."""
        out: list[list[str]] = []
        for inv in self.m.invariants:
            ctx = _Ctx(0, self.home or self.cache, None)  # type: ignore[arg-type]
            pre: list[str] = []
            v = self.expr(inv.expr, ctx, pre)[0]
            out.append([f"/* invariant {inv.name} */", *pre,
                        f"assert(({v}) != 0); {_tag('invariant', inv.name, inv.span)}"])
        return out

    def quiescent(self) -> str:
        conds = []
        for net in self.m.networks:
            if net.ordering is ir.Ordering.BUS or not self.net_msgs(net):
                continue
            if net.ordering is ir.Ordering.FIFO:
                conds += [f"f_{net.name}_len[{q}] == 0" for q in range(self.nodes * self.nodes)]
            else:
                conds.append(f"u_{net.name}_cnt == 0")
        for mach in self.m.machines:
            stable = [mach.state_index(s.name) for s in mach.states if s.stable]
            agents = [None] if mach.kind is ir.MachineKind.HOME else [str(a) for a in range(self.n)]
            for a in agents:
                st = self.state_var(mach, a)
                conds.append("(" + (" || ".join(f"{st} == {x}" for x in stable) or "false") + ")")
        return " && ".join(conds) or "true"

    # ------------------------------------------------------------ the model

    def initial(self) -> list[str]:
        out: list[str] = []
        ctx = _Ctx(0, self.home or self.cache, None)  # type: ignore[arg-type]

        def init(name: str, v: ir.Var, cells: int, count: int) -> None:
            pre: list[str] = []
            val = self.expr(v.init, ctx, pre)[0]
            if pre:
                raise ExportError("initial values must be constants", v.span)
            if cells == 0:
                out.append(f"{name} = {val};")
            else:
                out.append(f"t_init = 0; do :: t_init < {cells * count} -> {name}[t_init] = "
                           f"{val}; t_init++ :: else -> break od;")
        self.fixed("t_init")
        for v in self.m.globals:
            init(f"g_{v.name}", v, _cells(v.type) if isinstance(v.type, ir.ArrayT) else 0, 1)
        if self.home is not None:
            out.append(f"h_state = {self.home.state_index(self.home.init_state)};")
            for v in self.home.vars:
                init(f"h_{v.name}", v, _cells(v.type) if isinstance(v.type, ir.ArrayT) else 0,
                     1)
        if self.cache is not None:
            out.append(f"t_init = 0; do :: t_init < {self.n} -> k_state[t_init] = "
                       f"{self.cache.state_index(self.cache.init_state)}; t_init++ "
                       ":: else -> break od;")
            for v in self.cache.vars:
                init(f"k_{v.name}", v, _cells(v.type), self.n)
        return out

    def export(self) -> str:
        m = self.m
        insts = self.instances()
        self.fixed("blk")
        tries = [self.try_code(k, inst) for k, inst in enumerate(insts)]
        fire_codes = [self.fire_code(k, inst) for k, inst in enumerate(insts)]
        for k, inst in enumerate(insts):
            if max(_cost(tries[k]), _cost(fire_codes[k])) > _MAX_STEP:
                raise ExportError(f"{inst.label}: too large for one Spin d_step (pan allows "
                                  "2048 statements in one)", inst.tr.span)
        fires = [x for code in fire_codes for x in code]
        problems = self.problems()
        invariants = self.invariants()
        init = self.initial()
        arrays = self.arrays()
        head = [f"/* Generated by `coherence export --to promela` from {m.file}",
                "   params: " + " ".join(f"{p.name}={p.value}" for p in m.params)]
        mon = [p.name for p in m.properties if p.kind == "coherence"]
        if mon:
            head.append(f"   NOT exported: the coherence monitor ({', '.join(mon)}); "
                        "compare with it skipped.")
        head += ["   Check: spin -a model.pml && gcc -DSAFETY -o pan pan.c && ./pan -m10000000",
                 "   Each of our states is READY + 1 Spin states: raw (ph == 0), partly ready, and",
                 "   ready (ph == READY, en[] computed). An invalid end state is a deadlock. */",
                 "",
                 f"#define UNDEF ({UNDEF_SHORT if self.short() else UNDEF_VALUE})",
                 f"#define NINST {max(len(insts), 1)}", ""]
        ctype = "short" if self.short() else "int"
        decls = [f"{ctype} {name}[{size}];" if size else f"{ctype} {name};"
                 for name, size in arrays]
        shadows = [f"hidden int sh_{name}[{size}];" if size else f"hidden int sh_{name};"
                   for name, size in arrays]
        # pan labels every statement of a d_step, 2048 at most: the raw -> ready step is cut
        # into chunks, each its own d_step (one more stored state per chunk).
        chunks: list[list[str]] = [[]]
        cost = 0
        for code in [*invariants, *([x] for x in problems), *tries]:
            c = _cost(code)
            if cost + c > _CHUNK_COST and chunks[-1]:
                chunks.append([])
                cost = 0
            chunks[-1] += code
            cost += c
        last = len(chunks)
        steps = []
        for i, chunk in enumerate(chunks):
            tail = [f"quiet = ({self.quiescent()});"] if i == last - 1 else []
            steps += [f"  :: d_step {{ ph == {i} ->", *_ind([*chunk, *tail, f"ph = {i + 1}"], 3),
                      "  }"]
        self.fixed("t_cp")
        temps = [f"hidden int {t};" for t in sorted(self.temps)]
        out = [*head, f"#define READY {last}", *decls, "bit en[NINST];", "byte ph;",
               "bit quiet;", "", *shadows, *temps, "",
               "inline fired() {",
               "  t_cp = 0; do :: t_cp < NINST -> en[t_cp] = 0; t_cp++ :: else -> break od;",
               "  quiet = 0; ph = 0", "}", "",
               "active proctype main() {", "  d_step {", *_ind(init, 2), "    ph = 0", "  };",
               "  do",
               "  /* raw (ph 0) -> ready (ph READY): invariants, messages with no transition, "
               "what is enabled */", *steps,
               "  :: d_step { ph == READY && quiet -> skip }  /* quiescent: not a deadlock */",
               *_ind(fires), "  od", "}", ""]
        return "\n".join(out)


# ---------------------------------------------------------------- helpers


def _cost(code: list[str]) -> int:
    """A bound on the jump targets pan makes of Promela code: options and statements."""
    return sum(x.count("::") + x.count(";") + x.count("->") for x in code)


def _cells(t: ir.Type) -> int:
    if isinstance(t, ir.ArrayT):
        return t.index.size() * _cells(t.elem)
    return 1




def _args(ps: tuple[int, ...]) -> str:
    return f"({', '.join(map(str, ps))})" if ps else ""


def _machine_label(mach: ir.Machine, agent: int, n: int) -> str:
    return mach.name if mach.kind is ir.MachineKind.HOME else f"{mach.name}[{agent}]"


def _restore(d: dict, key: str, saved: object) -> None:
    if saved is None:
        d.pop(key, None)
    else:
        d[key] = saved


def _param_span(model: ir.Model, name: str) -> Span:
    for p in model.params:
        if p.name == name:
            return p.span
    return NO_SPAN


def to_promela(model: ir.Model) -> str:
    """The Promela text of ``model`` (the coherence monitor is left out; see the module doc);
    a hierarchical spec goes through ``coherence.export.promela_hier``."""
    if model.is_hierarchical:
        from coherence.export.promela_hier import hier_to_promela
        return hier_to_promela(model)
    return PromelaExporter(model).export()
