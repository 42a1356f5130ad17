"""IR -> Murphi, for Rumur: the same transition system, so the same reachable-state count.

NOTE(murphi-encoding): the encoding is chosen so that Rumur with symmetry off counts exactly the
states our checker counts (docs/rumur.md):

* the whole state is one record ``st``, so a transition can be tried on a copy: our semantics
  disables a transition whose send would overflow a network ("blocked"), which Murphi guards
  cannot express directly, so each rule's guard runs the body on a copy and fails if it
  blocked;
* a fifo network is one bounded queue per (source, destination) pair, emptied slots undefined;
* an unordered network is a multiset, kept as a count per distinct message (indexed by source,
  destination and field values) -- canonical by construction, and permuted correctly by
  Rumur's scalarset symmetry (Rumur has no multiset type);
* the atomic bus is a procedure call per message: the receiver's handler runs inside the
  sender's step, as in ``Semantics._deliver_now``;
* Murphi has no sum: a count of messages in flight (NOTE(message-count)) is a function that
  loops over the places a message can be (fifo positions, unordered counters), reads ``st``
  and takes the enclosing binders its body reads as parameters;
* the coherence monitor (``property ...: coherence``) is NOT exported: compare with it skipped;
* our deadlock (nothing enabled, but not quiescent) is Rumur's ``--deadlock-detection stuck``
  plus an ``idle`` rule enabled exactly in quiescent states.

Only ``lines = 1`` and no variables or fields of type ``node`` are supported; anything else
raises a located :class:`ExportError`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, assert_never

import attrs

from coherence import ir
from coherence.errors import NO_SPAN, Span, SpecError
from coherence.semantics import handler_table, spontaneous


class ExportError(SpecError):
    """The spec uses something this exporter cannot translate."""


class _HomeNotAgent(Exception):
    """The home node is used where an agent is needed (a run-time error in our semantics)."""


DIRS = ("a2h", "h2a", "a2a")  # message directions: agent->home, home->agent, agent->agent


@attrs.define
class _Ctx:
    s: str                                   # the State_t designator read and written
    machine: ir.Machine | None = None
    me: str | None = None                    # Murphi expr of the running cache's agent id
    src: tuple[str, str | None] | None = None  # ("home", None) | ("agent", expr)
    fields: dict[str, str] = attrs.Factory(dict)
    # messages bound by `forall m: Msg`: name -> (src node, dst node, field -> Murphi expr)
    mvars: dict[str, tuple[tuple[str, str | None], tuple[str, str | None], dict[str, str]]] = (
        attrs.Factory(dict))
    # their Murphi binders ("l__m_s: AGENT", ...): a message count's function takes them
    mbinders: dict[str, list[str]] = attrs.Factory(dict)


@attrs.frozen
class _Place:
    """Where a message bound by a quantifier or count can be (one direction's fifo position
    or unordered counter): its Murphi binders, nodes and fields, the condition that a
    message is there, and how many are (NOTE(message-count))."""

    binders: list[str]
    src: tuple[str, str | None]
    dst: tuple[str, str | None]
    fields: dict[str, str]
    present: str
    amount: str


@attrs.define
class _Proc:
    """Locals a procedure body needs, collected while its body is generated."""

    decls: dict[str, str] = attrs.Factory(dict)
    counter: int = 0
    calls: set[str] = attrs.Factory(set)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"


def count_text(e: ir.Count, type_text: Callable[[ir.Type], str],
               render: Callable[[ir.Expr], str]) -> str:
    """``count(a: T :: body)`` as a Murphi integer expression (Murphi has no sum).

    Over a scalarset (agents, an index type) no value can be named, so the count is the sum
    over k of "k distinct values make the body true": ``(exists a1, a2 do a1 != a2 & b(a1) &
    b(a2) end ? 1 : 0) + ...``, n(n+1)/2 copies of the body for n values (the last term
    ranges over n^n tuples: exports are for small instances). Over any other finite type the
    values are constants: ``(b(v0) ? 1 : 0) + (b(v1) ? 1 : 0) + ...``."""
    t = e.var_type
    dom = ir.domain(t)
    if isinstance(t, (ir.AgentT, ir.IndexT)):
        terms = []
        for k in range(1, len(dom) + 1):
            names = [f"{e.var}__{i}" for i in range(k)]
            parts = [f"l_{a} != l_{b}" for i, a in enumerate(names) for b in names[i + 1:]]
            parts += [render(_bind(e.body, e.var, ir.Local(x, t, e.span))) for x in names]
            cond = " & ".join(parts)
            for x in reversed(names):
                cond = f"exists l_{x}: {type_text(t)} do {cond} end"
            terms.append(f"(({cond}) ? 1 : 0)")
    elif isinstance(t, (ir.BoolT, ir.IntT, ir.ValueT, ir.EnumT, ir.StateT)):
        terms = [f"({render(_bind(e.body, e.var, ir.Lit(t, v, e.span)))} ? 1 : 0)"
                 for v in dom]
    else:
        raise ExportError(f"count() over {t} is not supported by the Murphi exporter", e.span)
    return "(" + (" + ".join(terms) or "0") + ")"


def count_parameters(e: ir.MsgQuant, ctx: Any, inner: Any,
                     type_text: Callable[[ir.Type], str]) -> tuple[list[str], list[str]]:
    """(parameters, arguments) of a message count's Murphi function (NOTE(message-count)):
    the locals its body reads, then the binders of the enclosing messages it reads, whose
    bindings are copied from ``ctx`` into the function's context ``inner``."""
    local_types, outer = ir.free_names(e)
    params = [f"l_{x}: {type_text(t)}" for x, t in local_types.items()]
    args = [f"l_{x}" for x in local_types]
    for v in outer:
        inner.mvars[v], inner.mbinders[v] = ctx.mvars[v], ctx.mbinders[v]
        params += ctx.mbinders[v]
        args += [b.split(":")[0] for b in ctx.mbinders[v]]
    return params, args


def count_fn(fns: dict[str, str], stem: str, params: list[str], bound: int,
             loops: list[tuple[list[str], str, str, str]]) -> str:
    """The name of a Murphi function that sums, over every place a message can be, ``add``
    where ``present`` and then ``body`` hold: one ``(binders, present, body, add)`` per group
    of places (NOTE(message-count)). The body is evaluated only where a message is (as in
    ``present -> body``): a count of the messages in flight, duplicates included, as
    ``Semantics._msg_quant`` counts them. ``fns`` maps each function's text after its name
    to the name (equal counts share one); emit them with ``count_fn_text``."""
    code = ["n := 0;"]
    for binders, present, body, add in loops:
        inner = [f"if {present} then", f"  if {body} then n := n + {add} end;", "end;"]
        for b in reversed(binders):
            inner = [f"for {b} do", *_ind(inner), "end;"]
        code += inner
    key = "\n".join([f"({'; '.join(params)}): 0..{bound};", f"var n: 0..{bound};", "begin",
                     *_ind([*code, "return n;"]), "end;", ""])
    if key not in fns:
        fns[key] = f"{stem}{len(fns) + 1}"
    return fns[key]


def count_fn_text(fns: dict[str, str]) -> list[str]:
    """The functions ``count_fn`` named, in the order they were made (callees first)."""
    return [line for key, name in fns.items() for line in f"function {name}{key}".split("\n")]


def _bind(node: Any, name: str, value: ir.Expr) -> Any:
    """``node`` with the local ``name`` replaced by ``value`` (the front end rejects binding a
    name again inside its scope, so no inner binder can shadow it)."""
    if isinstance(node, ir.Local) and node.name == name:
        return value
    if isinstance(node, tuple):
        return tuple(_bind(x, name, value) for x in node)
    if not attrs.has(type(node)) or isinstance(node, Span):
        return node
    changes = {}
    for f in attrs.fields(type(node)):
        old = getattr(node, f.name)
        new = _bind(old, name, value)
        if new is not old:
            changes[f.name] = new
    return attrs.evolve(node, **changes) if changes else node


def _ind(lines: list[str], n: int = 1) -> list[str]:
    return ["  " * n + x for x in lines]


class MurphiNames(abc.ABC):
    """What both Murphi exporters (flat, and hierarchical in murphi_hier) name and declare alike:
    enum and state constants, networks, and the type declarations of enums, control states and
    network messages. A subclass has ``m`` (the model) and ``type`` (a type's Murphi text)."""

    m: ir.Model

    @abc.abstractmethod
    def type(self, t: ir.Type) -> str:
        """A type's Murphi text (the exporters declare types differently)."""

    def net(self, name: str) -> ir.Network:
        return self.m.network(name)

    @staticmethod
    def enum_const(enum: str, member: str) -> str:
        return f"E_{enum}_{member}"

    @staticmethod
    def state_const(machine: str, state: str) -> str:
        return f"S_{machine}_{state}"

    def net_messages(self, net: ir.Network) -> list[ir.Message]:
        return [msg for msg in self.m.messages if msg.network == net.name]

    @staticmethod
    def ruleset(binders: list[str], rule: list[str]) -> list[str]:
        if not binders:
            return [*rule, ""]
        return [f"ruleset {'; '.join(binders)} do", *_ind(rule), "end;", ""]

    def common_type_decls(self) -> list[str]:
        """Enums, control states, fifo messages and queues, bus message records."""
        m = self.m
        out: list[str] = []
        for e in m.enums:
            consts = ", ".join(self.enum_const(e.name, x) for x in e.members)
            out.append(f"  T_{e.name}: enum {{ {consts} }};")
        for mach in m.machines:
            consts = ", ".join(self.state_const(mach.name, x) for x in mach.state_type.members)
            out.append(f"  T_{mach.name}_state: enum {{ {consts} }};")
        for net in m.networks:
            msgs = self.net_messages(net)
            if net.ordering is ir.Ordering.FIFO and msgs:
                out.append(f"  MsgType_{net.name}: enum {{ "
                           + ", ".join(f"MT_{x.name}" for x in msgs) + " };")
                fields = [f"mtype: MsgType_{net.name};"] + [
                    f"f_{x.name}_{f.name}: {self.type(f.type)};" for x in msgs for f in x.fields]
                out.append(f"  Msg_{net.name}: record " + " ".join(fields) + " end;")
                out.append(f"  Q_{net.name}: record count: 0..{net.capacity}; "
                           f"q: array [0..{net.capacity - 1}] of Msg_{net.name}; end;")
            if net.ordering is ir.Ordering.BUS:
                for x in msgs:
                    if x.fields:
                        out.append(f"  R_{x.name}: record " + " ".join(
                            f"f_{f.name}: {self.type(f.type)};" for f in x.fields) + " end;")
        return out


class MurphiExporter(MurphiNames):
    def __init__(self, model: ir.Model) -> None:
        self.m = model
        if model.lines != 1:
            lines = next((p.span for p in model.params if p.name == "lines"), NO_SPAN)
            raise ExportError(f"the Murphi exporter supports lines = 1 (got {model.lines})",
                              lines if lines.line > 0 else NO_SPAN)
        self.home = model.home
        self.cache = model.caches[0] if model.caches else None
        self.n = model.agents
        for mach in model.machines:
            for v in mach.vars:
                self._no_node(v.type, v.span, f"variable {v.name}")
        for v in model.globals:
            self._no_node(v.type, v.span, f"variable {v.name}")
        for msg in model.messages:
            for f in msg.fields:
                self._no_node(f.type, f.span, f"field {msg.name}.{f.name}")
        self.rule_specs: list[tuple[str, list[str], str, str]] = []
        self.count_fns: dict[str, str] = {}  # NOTE(message-count): count_fn's functions
        self.rule_args: dict[str, list[str]] = {}
        self.handlers = handler_table(model)

    def _no_node(self, t: ir.Type, span: Span, what: str) -> None:
        if isinstance(t, ir.ArrayT):  # types nest at most 4 deep (the front end's limit)
            self._no_node(t.index, span, what)
            self._no_node(t.elem, span, what)
        if isinstance(t, ir.NodeT):
            raise ExportError(f"{what}: type node is not supported by the Murphi exporter "
                              "(use agent)", span)

    # ------------------------------------------------------------ names and types

    def msg_net(self, msg: str) -> ir.Network:
        return self.net(self.m.message(msg).network)

    def type(self, t: ir.Type) -> str:
        if isinstance(t, ir.BoolT):
            return "boolean"
        if isinstance(t, ir.IntT):
            return f"{t.lo}..{t.hi}"
        if isinstance(t, ir.ValueT):
            return f"0..{t.n - 1}"
        if isinstance(t, ir.AgentT):
            return "AGENT"
        if isinstance(t, ir.EnumT):
            return f"T_{t.name}"
        if isinstance(t, ir.StateT):
            return f"T_{t.machine}_state"
        if isinstance(t, ir.SetT):
            return "AgentSet"
        if isinstance(t, ir.ArrayT):
            return f"array [{self.type(t.index)}] of {self.type(t.elem)}"
        raise ExportError(f"type {t} is not supported by the Murphi exporter", NO_SPAN)

    def receiver(self, d: str) -> ir.Machine | None:
        return self.home if d == "a2h" else self.cache

    def dirs(self) -> list[str]:
        out = []
        if self.cache is not None and self.home is not None:
            out += ["a2h", "h2a"]
        if self.cache is not None:
            out.append("a2a")
        return out

    # fifo queues and unordered counters -------------------------------------------

    def queue(self, net: ir.Network, d: str, src: str | None, dst: str | None,
              s: str) -> str:
        base = f"{s}.n_{net.name}_{d}"
        if d == "a2h":
            return f"{base}[{src}]"
        if d == "h2a":
            return f"{base}[{dst}]"
        return f"{base}[{src}][{dst}]"

    def slot_dims(self, msg: ir.Message) -> list[tuple[str, ir.Field, bool]]:
        """(index type, field, may be undefined) per field of an unordered message."""
        out = []
        for f in msg.fields:
            t = f.type
            if isinstance(t, (ir.ValueT, ir.IntT)):
                lo, hi = (0, t.n - 1) if isinstance(t, ir.ValueT) else (t.lo, t.hi)
                out.append((f"{lo}..{hi + 1}", f, True))  # hi + 1 stands for "undefined"
            elif isinstance(t, (ir.BoolT, ir.AgentT, ir.EnumT)):
                out.append((self.type(t), f, False))
            else:
                raise ExportError(f"field {msg.name}.{f.name}: type {t} cannot index an "
                                  "unordered network's counters", f.span)
        return out

    def counter(self, msg: ir.Message, d: str, src: str | None, dst: str | None,
                slots: list[str], s: str) -> str:
        idx = []
        if d in ("a2h", "a2a"):
            idx.append(src)
        if d in ("h2a", "a2a"):
            idx.append(dst)
        idx += slots
        return f"{s}.n_{msg.network}_{msg.name}_{d}" + "".join(f"[{i}]" for i in idx)

    def counter_type(self, msg: ir.Message, d: str, cap: int) -> str:
        dims = []
        if d in ("a2h", "a2a"):
            dims.append("AGENT")
        if d in ("h2a", "a2a"):
            dims.append("AGENT")
        dims += [t for t, _, _ in self.slot_dims(msg)]
        out = f"0..{cap}"
        for dim in reversed(dims):
            out = f"array [{dim}] of {out}"
        return out

    # ------------------------------------------------------------ expressions

    def node(self, e: ir.Expr, ctx: _Ctx) -> tuple[str, str | None]:
        if isinstance(e, ir.Lit) and isinstance(e.type, ir.NodeT):
            if e.value == self.n:
                return ("home", None)
            raise ExportError("node literals other than home are not supported", e.span)
        if isinstance(e, ir.MsgSrc):
            assert ctx.src is not None
            return ctx.src
        if isinstance(e, ir.MsgVarAttr) and e.attr in ("src", "dst"):
            src, dst, _fields = ctx.mvars[e.var]
            return src if e.attr == "src" else dst
        if isinstance(e.type, ir.NodeT):
            raise ExportError("node-valued expressions other than msg.src and home are not "
                              "supported", e.span)
        return ("agent", self.expr(e, ctx))

    def agent(self, e: ir.Expr, ctx: _Ctx) -> str:
        kind, x = self.node(e, ctx)
        if kind == "home":
            raise _HomeNotAgent()
        assert x is not None
        return x

    def expr(self, e: ir.Expr, ctx: _Ctx) -> str:
        match e:
            case ir.Lit():
                if e.value is None:
                    raise ExportError("'undefined' can only be assigned here", e.span)
                t = e.type
                if isinstance(t, ir.BoolT):
                    return "true" if e.value else "false"
                if isinstance(t, ir.EnumT):
                    return self.enum_const(t.name, t.members[e.value])
                if isinstance(t, ir.StateT):
                    return self.state_const(t.machine, t.members[e.value])
                if isinstance(t, ir.NodeT):
                    raise _HomeNotAgent()
                if isinstance(t, ir.SetT):
                    raise ExportError("set constants are only supported in assignments and "
                                      "comparisons", e.span)
                if isinstance(t, ir.AgentT):
                    raise ExportError("agent constants cannot be exported (agents are a "
                                      "scalarset)", e.span)
                return str(e.value)
            case ir.Local():
                return f"l_{e.name}"
            case ir.SelfId():
                assert ctx.me is not None
                return ctx.me
            case ir.GVar():
                return f"{ctx.s}.g_{e.name}"
            case ir.MVar():
                if e.agent is None:
                    return f"{ctx.s}.h_{e.name}"
                return f"{ctx.s}.c[{self.agent(e.agent, ctx)}].v_{e.name}"
            case ir.MState():
                if e.agent is None:
                    return f"{ctx.s}.h_state"
                return f"{ctx.s}.c[{self.agent(e.agent, ctx)}].state"
            case ir.MsgField():
                return ctx.fields[e.name]
            case ir.MsgSrc():
                return self.agent(e, ctx)
            case ir.Index():
                idx = (self.agent(e.index, ctx) if isinstance(e.index.type, ir.NodeT)
                       else self.expr(e.index, ctx))
                return f"{self.expr(e.base, ctx)}[{idx}]"
            case ir.Unary():
                arg = self.expr(e.arg, ctx)
                return f"(!{arg})" if e.op == "!" else f"(-{arg})"
            case ir.Binary():
                return self.binary(e, ctx)
            case ir.SetLit():
                raise ExportError("set literals are only supported in assignments, comparisons "
                                  "and 'in'", e.span)
            case ir.Call():
                if e.func == "size":
                    return f"SetSize({self.expr(e.args[0], ctx)})"
                if e.func == "all_agents":
                    raise ExportError("all_agents() is only supported in assignments "
                                      "(s := all_agents() [without a])", e.span)
                return f"isundefined({self.expr(e.args[0], ctx)})"
            case ir.Quant():
                op = "forall" if e.kind == "forall" else "exists"
                return (f"({op} l_{e.var}: {self.type(e.var_type)} do "
                        f"{self.expr(e.body, ctx)} end)")
            case ir.Count():
                return count_text(e, self.type, lambda x: self.expr(x, ctx))
            case ir.InFlight():
                return self.inflight(e, ctx)
            case ir.MsgQuant():
                return self.msg_quant(e, ctx)
            case ir.MsgVarAttr():
                if e.attr in ("src", "dst"):
                    return self.agent(e, ctx)
                return ctx.mvars[e.var][2][e.attr]
            case ir.Cond():
                if isinstance(e.type, ir.SetT):
                    raise ExportError("a conditional expression choosing between sets is not "
                                      "supported by the Murphi exporter", e.span)
                return (f"({self.expr(e.cond, ctx)} ? {self.expr(e.then, ctx)} : "
                        f"{self.expr(e.orelse, ctx)})")
            case _:
                assert_never(e)

    def binary(self, e: ir.Binary, ctx: _Ctx) -> str:
        op = e.op
        if op in ("==", "!=") and (isinstance(e.left.type, ir.NodeT)
                                   or isinstance(e.right.type, ir.NodeT)):
            a, b = self.node(e.left, ctx), self.node(e.right, ctx)
            if a[0] != b[0]:
                same = "false"
            elif a[0] == "home":
                same = "true"
            else:
                same = f"({a[1]} = {b[1]})"
            return same if op == "==" else f"(!{same})"
        if op in ("==", "!=") and (isinstance(e.left, ir.SetLit) or isinstance(e.right, ir.SetLit)):
            lit, other = (e.left, e.right) if isinstance(e.left, ir.SetLit) else (e.right, e.left)
            assert isinstance(lit, ir.SetLit)
            x = "l__setx"
            members = " | ".join(f"{x} = {self.agent(el, ctx)}" for el in lit.elems) or "false"
            same = (f"(forall {x}: AGENT do {self.expr(other, ctx)}[{x}] = ({members}) end)")
            return same if op == "==" else f"(!{same})"
        if op == "in":
            if isinstance(e.right, ir.SetLit) and not isinstance(e.right.type, ir.SetT):
                left = self.expr(e.left, ctx)
                parts = [f"{left} = {self.expr(x, ctx)}" for x in e.right.elems]
                return "(" + (" | ".join(parts) or "false") + ")"
            return f"{self.expr(e.right, ctx)}[{self.agent(e.left, ctx)}]"
        if op in ("with", "without"):
            raise ExportError("set union/difference is only supported as s.add(a) / "
                              "s.remove(a)", e.span)
        sym = {"&&": "&", "||": "|", "->": "->", "==": "=", "!=": "!=", "<": "<", "<=": "<=",
               ">": ">", ">=": ">=", "+": "+", "-": "-"}[op]
        return f"({self.expr(e.left, ctx)} {sym} {self.expr(e.right, ctx)})"

    def inflight(self, e: ir.InFlight, ctx: _Ctx) -> str:
        msg = self.m.message(e.message)
        net = self.net(msg.network)
        if net.ordering is ir.Ordering.BUS:
            return "false"
        dst = self.node(e.dst, ctx) if e.dst is not None else None
        parts = []
        for d in self.dirs():
            if dst is not None and (dst[0] == "home") != (d == "a2h"):
                continue
            qs, qd = "l__ifs", (dst[1] if dst is not None else "l__ifd")
            binders = []
            if d in ("a2h", "a2a"):
                binders.append(f"{qs}: AGENT")
            if d in ("h2a", "a2a") and dst is None:
                binders.append(f"{qd}: AGENT")
            if net.ordering is ir.Ordering.FIFO:
                q = self.queue(net, d, qs, qd, ctx.s)
                cond = (f"(exists l__ifk: 0..{net.capacity - 1} do (l__ifk < {q}.count & "
                        f"{q}.q[l__ifk].mtype = MT_{msg.name}) end)")
            else:
                slots = []
                for i, (t, _, _) in enumerate(self.slot_dims(msg)):
                    binders.append(f"l__iff{i}: {t}")
                    slots.append(f"l__iff{i}")
                cond = f"({self.counter(msg, d, qs, qd, slots, ctx.s)} > 0)"
            for b in reversed(binders):
                cond = f"(exists {b} do {cond} end)"
            parts.append(cond)
        return "(" + (" | ".join(parts) or "false") + ")"

    def msg_dirs(self, name: str) -> list[str]:
        """The directions a message can travel, from its sends: a quantifier over messages
        must not ask whether the home node is an agent for a direction never used."""
        out = set()
        for machine in self.m.machines:
            for tr in machine.transitions:
                for st in ir.walk_stmts(tr.body):
                    if isinstance(st, ir.Broadcast) and st.message == name:
                        out.add("a2a" if machine.kind is ir.MachineKind.CACHE else "h2a")
                    if not isinstance(st, ir.Send) or st.message != name:
                        continue
                    literal = isinstance(st.dst, ir.Lit) and isinstance(st.dst.type, ir.NodeT)
                    to_agent = not literal  # an agent, or a node such as msg.src
                    to_home = literal or isinstance(st.dst.type, ir.NodeT)
                    if machine.kind is ir.MachineKind.CACHE:
                        out |= ({"a2h"} if to_home else set()) | (
                            {"a2a"} if to_agent else set())
                    else:
                        out |= {"h2a"} if to_agent else set()
        return [d for d in self.dirs() if d in out]

    def msg_quant(self, e: ir.MsgQuant, ctx: _Ctx) -> str:
        """One quantifier per direction (agent->home, home->agent, agent->agent) over the
        places a message can be: fifo positions, or the unordered network's counters."""
        if e.kind == "count":
            return self.msg_count(e, ctx)
        forall = e.kind == "forall"
        parts = []
        for pl in self.msg_places(e, ctx.s):
            ctx.mvars[e.var] = (pl.src, pl.dst, pl.fields)
            ctx.mbinders[e.var] = pl.binders
            try:
                body = self.expr(e.body, ctx)
            finally:
                del ctx.mvars[e.var], ctx.mbinders[e.var]
            cond = f"({pl.present} -> {body})" if forall else f"({pl.present} & {body})"
            for b in reversed(pl.binders):
                cond = f"({'forall' if forall else 'exists'} {b} do {cond} end)"
            parts.append(cond)
        joiner = " & " if forall else " | "
        return "(" + (joiner.join(parts) or ("true" if forall else "false")) + ")"

    def msg_count(self, e: ir.MsgQuant, ctx: _Ctx) -> str:
        """NOTE(message-count): ``count(m: Msg :: body)`` as the call of a function that sums
        over the places of ``msg_places`` (a fifo position counts one, an unordered counter
        its value). Murphi has no sum; the function reads the state ``st`` itself and takes
        the locals and the enclosing messages' binders that the body reads as parameters."""
        if ctx.s != "st" or ctx.me is not None or ctx.src is not None or ctx.fields:
            raise ExportError("count over messages in flight is only supported in invariants",
                              e.span)
        inner = _Ctx(ctx.s)
        params, args = count_parameters(e, ctx, inner, self.type)
        loops = []
        for pl in self.msg_places(e, ctx.s):
            inner.mvars[e.var], inner.mbinders[e.var] = (pl.src, pl.dst, pl.fields), pl.binders
            loops.append((pl.binders, pl.present, self.expr(e.body, inner), pl.amount))
        if not loops:  # the atomic bus holds nothing between steps
            return "0"
        assert isinstance(e.type, ir.IntT)
        name = count_fn(self.count_fns, "MsgCount", params, e.type.hi, loops)
        return f"{name}({', '.join(args)})"

    def msg_places(self, e: ir.MsgQuant, s: str) -> list[_Place]:
        """Every place a message of ``e``'s type can be, per direction it can travel."""
        msg = self.m.message(e.message)
        net = self.net(msg.network)
        if net.ordering is ir.Ordering.BUS:
            return []
        qs, qd, qk = f"l__{e.var}_s", f"l__{e.var}_d", f"l__{e.var}_k"
        out = []
        for d in self.msg_dirs(msg.name):
            binders = []
            if d in ("a2h", "a2a"):
                binders.append(f"{qs}: AGENT")
            if d in ("h2a", "a2a"):
                binders.append(f"{qd}: AGENT")
            src = ("agent", qs) if d in ("a2h", "a2a") else ("home", None)
            dst = ("agent", qd) if d in ("h2a", "a2a") else ("home", None)
            if net.ordering is ir.Ordering.FIFO:
                q = self.queue(net, d, qs, qd, s)
                binders.append(f"{qk}: 0..{net.capacity - 1}")
                present = f"({qk} < {q}.count & {q}.q[{qk}].mtype = MT_{msg.name})"
                fields = {f.name: f"{q}.q[{qk}].f_{msg.name}_{f.name}" for f in msg.fields}
                # NOTE(message-position): m.pos is the slot, q[0] the head (no field is
                # named pos: the front end refuses it)
                fields[ir.POSITION] = qk
                amount = "1"
            else:
                slots = []
                fields = {}
                for i, (t, f, _) in enumerate(self.slot_dims(msg)):
                    binders.append(f"l__{e.var}_f{i}: {t}")
                    slots.append(f"l__{e.var}_f{i}")
                    fields[f.name] = f"l__{e.var}_f{i}"
                amount = self.counter(msg, d, qs, qd, slots, s)
                present = f"({amount} > 0)"
            out.append(_Place(binders, src, dst, fields, present, amount))
        return out

    # ------------------------------------------------------------ statements

    def stmts(self, body: tuple[ir.Stmt, ...], ctx: _Ctx, p: _Proc) -> list[str]:
        out: list[str] = []
        for s in body:
            out += self.stmt(s, ctx, p)
        return out

    def stmt(self, s: ir.Stmt, ctx: _Ctx, p: _Proc) -> list[str]:
        try:
            return self._stmt(s, ctx, p)
        except ExportError as e:
            if e.span != NO_SPAN:
                raise
            raise ExportError(e.message, s.span) from None  # located at the statement

    def _stmt(self, s: ir.Stmt, ctx: _Ctx, p: _Proc) -> list[str]:
        match s:
            case ir.Assign():
                return self.assign(s, ctx, p)
            case ir.If():
                out = [f"if {self.expr(s.cond, ctx)} then"]
                out += _ind(self.stmts(s.then, ctx, p))
                if s.orelse:
                    out.append("else")
                    out += _ind(self.stmts(s.orelse, ctx, p))
                return [*out, "end;"]
            case ir.For():
                return [f"for l_{s.var}: {self.type(s.var_type)} do",
                        *_ind(self.stmts(s.body, ctx, p)), "end;"]
            case ir.Let():
                p.decls[f"l_{s.var}"] = self.type(s.value.type) if not isinstance(
                    s.value.type, ir.NodeT) else "AGENT"
                if isinstance(s.value.type, ir.NodeT):
                    return [f"l_{s.var} := {self.agent(s.value, ctx)};"]
                return [f"l_{s.var} := {self.expr(s.value, ctx)};"]
            case ir.Send():
                return self.send(s.message, s.args, self.node(s.dst, ctx), ctx, p)
            case ir.Broadcast():
                x = p.fresh("l__bc")
                inner = self.send(s.message, s.args, ("agent", x), ctx, p)
                if s.exclude is not None:
                    kind, ex = self.node(s.exclude, ctx)
                    if kind == "agent":
                        inner = [f"if {x} != {ex} then", *_ind(inner), "end;"]
                return [f"for {x}: AGENT do", *_ind(inner), "end;"]
            case ir.Goto():
                assert ctx.machine is not None
                p.decls["l__ns"] = self.type(ctx.machine.state_type)
                return [f"l__ns := {self.state_const(ctx.machine.name, s.state)};"]
            case ir.Perform():
                # Our semantics errs on performing an undefined value; so does this.
                if _designator(s.value):
                    v = self.expr(s.value, ctx)
                    return [f'if isundefined({v}) then error "read of undefined value (perform)" '
                            "end;"]
                return []
            case ir.Assert():
                text = s.text.replace('"', "'")
                return [f'assert {self.expr(s.cond, ctx)} "{text}";']
            case _:
                assert_never(s)

    def assign(self, s: ir.Assign, ctx: _Ctx, p: _Proc) -> list[str]:
        target = self.expr(s.target, ctx)
        v = s.value
        if isinstance(v, ir.Lit) and v.value is None:
            return [f"undefine {target};"]
        everyone = ir.Call("all_agents", (), v.type)
        if v == everyone or (isinstance(v, ir.Binary) and v.op == "without"
                             and v.left == everyone):
            x = p.fresh("l__sx")
            out = [f"for {x}: AGENT do {target}[{x}] := true end;"]
            if isinstance(v, ir.Binary):
                out.append(f"{target}[{self.agent(v.right, ctx)}] := false;")
            return out
        if isinstance(v, ir.Binary) and v.op in ("with", "without"):
            if v.left != s.target:
                raise ExportError("set union/difference is only supported as s.add(a) / "
                                  "s.remove(a)", s.span)
            flag = "true" if v.op == "with" else "false"
            return [f"{target}[{self.agent(v.right, ctx)}] := {flag};"]
        if isinstance(v, ir.Lit) and isinstance(v.type, ir.SetT) and v.value == 0:
            x = p.fresh("l__sx")
            return [f"for {x}: AGENT do {target}[{x}] := false end;"]
        if isinstance(v, ir.SetLit) and isinstance(v.type, ir.SetT):
            x = p.fresh("l__sx")
            out = [f"for {x}: AGENT do {target}[{x}] := false end;"]
            out += [f"{target}[{self.agent(el, ctx)}] := true;" for el in v.elems]
            return out
        if isinstance(v.type, ir.NodeT):
            return [f"{target} := {self.agent(v, ctx)};"]
        return [f"{target} := {self.expr(v, ctx)};"]

    def send(self, name: str, args: tuple[ir.Expr, ...], dst: tuple[str, str | None],
             ctx: _Ctx, p: _Proc) -> list[str]:
        msg = self.m.message(name)
        net = self.net(msg.network)
        assert ctx.machine is not None
        from_home = ctx.machine.kind is ir.MachineKind.HOME
        src = None if from_home else ctx.me
        if dst[0] == "home":
            if from_home:
                raise ExportError(f"{name}: home-to-home messages are not supported", NO_SPAN)
            d = "a2h"
        else:
            d = "h2a" if from_home else "a2a"
        if net.ordering is ir.Ordering.BUS:
            call_args = [ctx.s]
            if d in ("a2h", "a2a"):
                call_args.append(src or "")
            if d in ("h2a", "a2a"):
                call_args.append(dst[1] or "")
            out: list[str] = []
            if msg.fields:
                rec = f"l__o_{name}"
                p.decls[rec] = f"R_{name}"
                out.append(f"undefine {rec};")
                for f, a in zip(msg.fields, args, strict=True):
                    if not (isinstance(a, ir.Lit) and a.value is None):
                        out.append(f"{rec}.f_{f.name} := {self.value_of(a, ctx)};")
                call_args.append(rec)
            proc = f"B_{name}_{d}"
            p.calls.add(proc)
            call_args.append("blk")
            return [*out, f"{proc}({', '.join(call_args)});", "if blk then return end;"]
        if net.ordering is ir.Ordering.FIFO:
            q = self.queue(net, d, src, dst[1], ctx.s)
            out = [f"if {q}.count >= {net.capacity} then blk := true; return end;",
                   f"{q}.q[{q}.count].mtype := MT_{name};"]
            for f, a in zip(msg.fields, args, strict=True):
                if not (isinstance(a, ir.Lit) and a.value is None):
                    out.append(f"{q}.q[{q}.count].f_{name}_{f.name} := {self.value_of(a, ctx)};")
            out.append(f"{q}.count := {q}.count + 1;")
            return out
        slots = []
        for (_, f, may_undef), a in zip(self.slot_dims(msg), args, strict=True):
            t = f.type
            hi = (t.n - 1) if isinstance(t, ir.ValueT) else getattr(t, "hi", 0)
            if may_undef and isinstance(a, ir.Lit) and a.value is None:
                slots.append(str(hi + 1))
            elif may_undef and _designator(a):
                x = self.expr(a, ctx)
                slots.append(f"(isundefined({x}) ? {hi + 1} : {x})")
            else:
                slots.append(self.value_of(a, ctx))
        c = self.counter(msg, d, src, dst[1], slots, ctx.s)
        total = f"{ctx.s}.t_{net.name}"
        return [f"if {total} >= {net.capacity} then blk := true; return end;",
                f"{c} := {c} + 1;", f"{total} := {total} + 1;"]

    def value_of(self, a: ir.Expr, ctx: _Ctx) -> str:
        return self.agent(a, ctx) if isinstance(a.type, ir.NodeT) else self.expr(a, ctx)

    # ------------------------------------------------------------ procedures

    def body_proc(self, name: str, params: list[str], prologue: list[str],
                  body: list[str], p: _Proc, ctx: _Ctx) -> list[str]:
        """A procedure on ``var s: State_t`` that sets ``blk`` when it must not fire."""
        epilogue: list[str] = []
        if "l__ns" in p.decls:
            assert ctx.machine is not None
            st = (f"{ctx.s}.h_state" if ctx.machine.kind is ir.MachineKind.HOME
                  else f"{ctx.s}.c[{ctx.me}].state")
            epilogue = [f"if !isundefined(l__ns) then {st} := l__ns end;"]
            prologue = ["undefine l__ns;", *prologue]
        head = f"procedure {name}(var s: State_t; " + "".join(f"{x}; " for x in params)
        head += "var blk: boolean);"
        decls = [f"var {k}: {t};" for k, t in sorted(p.decls.items())]
        return [head, *_ind(decls), "begin", *_ind(prologue + body + epilogue), "end;", ""]

    def guarded(self, tr: ir.Transition, ctx: _Ctx, p: _Proc) -> list[str]:
        out = []
        if tr.guard is not None:
            out.append(f"if !({self.expr(tr.guard, ctx)}) then blk := true; return end;")
        return out + self.stmts(tr.body, ctx, p)

    def trans_body(self, tr: ir.Transition, ctx: _Ctx, p: _Proc) -> list[str]:
        try:
            return self.guarded(tr, ctx, p)
        except _HomeNotAgent:
            return ['error "the home node is not an agent";']

    # ------------------------------------------------------------ the model

    def export(self) -> str:
        m = self.m
        out: list[str] = [
            f"-- Generated by `coherence export --to murphi` from {m.file}",
            "-- params: " + " ".join(f"{p.name}={p.value}" for p in m.params),
        ]
        mon = [p.name for p in m.properties if p.kind == "coherence"]
        if mon:
            out.append(f"-- NOT exported: the coherence monitor ({', '.join(mon)}); "
                       "compare with it skipped.")
        out += ["", "const", f"  N_AGENTS: {self.n};", "", "type",
                "  AGENT: scalarset(N_AGENTS);", "  AgentSet: array [AGENT] of boolean;"]
        out += self.common_type_decls()
        if self.cache is not None:
            fields = [f"state: T_{self.cache.name}_state;"] + [
                f"v_{v.name}: {self.type(v.type)};" for v in self.cache.vars]
            out.append("  Cache_t: record " + " ".join(fields) + " end;")
        sfields = [f"g_{v.name}: {self.type(v.type)};" for v in m.globals]
        if self.home is not None:
            sfields.append(f"h_state: T_{self.home.name}_state;")
            sfields += [f"h_{v.name}: {self.type(v.type)};" for v in self.home.vars]
        if self.cache is not None:
            sfields.append("c: array [AGENT] of Cache_t;")
        for net in m.networks:
            if net.ordering is ir.Ordering.FIFO and self.net_messages(net):
                for d in self.dirs():
                    dims = "array [AGENT] of array [AGENT] of" if d == "a2a" else (
                        "array [AGENT] of")
                    sfields.append(f"n_{net.name}_{d}: {dims} Q_{net.name};")
            elif net.ordering is ir.Ordering.UNORDERED:
                # t_NET: the number of messages in flight, a function of the counters (so it
                # adds no states); kept to test the capacity without summing every counter.
                sfields.append(f"t_{net.name}: 0..{net.capacity};")
                for msg in self.net_messages(net):
                    for d in self.dirs():
                        sfields.append(f"n_{net.name}_{msg.name}_{d}: "
                                       f"{self.counter_type(msg, d, net.capacity)};")
        out.append("  State_t: record")
        out += _ind(sfields, 2)
        out += ["  end;", "", "var", "  st: State_t;", ""]
        props = []  # first: their message counts' functions go before the rules
        for inv in m.invariants:
            try:
                body = self.expr(inv.expr, _Ctx("st"))
            except _HomeNotAgent:
                body = "false"
            props.append(f'invariant "{inv.name}" {body};')
        for a in m.assumptions:  # NOTE(assume): Rumur discards such states, as we do
            try:
                body = self.expr(a.expr, _Ctx("st"))
            except _HomeNotAgent:
                body = "false"  # it cannot be evaluated: false, as in Semantics.assumed
            props.append(f'assume "{a.name}" {body};')
        out += self.helpers()
        out += count_fn_text(self.count_fns)
        out += self.procedures()
        out += self.startstate()
        out += self.rules()
        out += props
        return "\n".join(out) + "\n"

    def helpers(self) -> list[str]:
        out = ["function SetSize(x: AgentSet): 0..N_AGENTS;",
               "var n: 0..N_AGENTS;",
               "begin",
               "  n := 0;",
               "  for a: AGENT do if x[a] then n := n + 1 end end;",
               "  return n;",
               "end;", ""]
        # Quiescent: nothing in flight, every machine in a stable state.
        conds = []
        for net in self.m.networks:
            if net.ordering is ir.Ordering.FIFO and self.net_messages(net):
                for d in self.dirs():
                    q = self.queue(net, d, "l__s", "l__d", "s")
                    c = f"{q}.count = 0"
                    if d in ("a2h", "a2a"):
                        c = f"forall l__s: AGENT do {c} end"
                    if d in ("h2a", "a2a"):
                        c = f"forall l__d: AGENT do {c} end"
                    conds.append(f"({c})")
            elif net.ordering is ir.Ordering.UNORDERED:
                conds.append(f"s.t_{net.name} = 0")
        if self.home is not None:
            stable = [self.state_const(self.home.name, x.name) for x in self.home.states
                      if x.stable]
            conds.append("(" + (" | ".join(f"s.h_state = {x}" for x in stable) or "false") + ")")
        if self.cache is not None:
            stable = [self.state_const(self.cache.name, x.name) for x in self.cache.states
                      if x.stable]
            inner = " | ".join(f"s.c[l__a].state = {x}" for x in stable) or "false"
            conds.append(f"(forall l__a: AGENT do {inner} end)")
        out += ["function Quiescent(s: State_t): boolean;", "begin",
                "  return " + (" & ".join(conds) or "true") + ";", "end;", ""]
        return out

    # bus deliveries, then every transition as a procedure + its enabledness test

    def bus_proc(self, msg: ir.Message, d: str) -> tuple[list[str], set[str]]:
        mach = self.receiver(d)
        assert mach is not None
        p = _Proc()
        params = []
        src: tuple[str, str | None] = ("home", None)
        if d in ("a2h", "a2a"):
            params.append("src: AGENT")
            src = ("agent", "src")
        me = None
        if d in ("h2a", "a2a"):
            params.append("dst: AGENT")
            me = "dst"
        if msg.fields:
            params.append(f"m: R_{msg.name}")
        ctx = _Ctx("s", mach, me, src, {f.name: f"m.f_{f.name}" for f in msg.fields})
        st = "s.h_state" if mach.kind is ir.MachineKind.HOME else "s.c[dst].state"
        body: list[str] = []
        first = True
        for i, sname in enumerate(mach.state_type.members):
            cands = self.handlers.get((mach.name, msg.name, i), [])
            if not cands:
                code = [f'error "no transition for {msg.name} in state {sname} of '
                        f'{mach.name}";']
            elif any(t.stall for t in cands):
                code = [f'error "{msg.name} cannot stall on the atomic bus";']
            elif len(cands) == 1 and cands[0].guard is None:
                code = self.safe_stmts(cands[0].body, ctx, p)
            else:
                p.decls["l__cnt"] = "0..64"
                code = ["l__cnt := 0;"]
                for i, t in enumerate(cands):
                    p.decls[f"l__g{i}"] = "boolean"
                    g = self.expr(t.guard, ctx) if t.guard is not None else "true"
                    code += [f"l__g{i} := {g};", f"if l__g{i} then l__cnt := l__cnt + 1 end;"]
                code.append(f'if l__cnt != 1 then error "exactly one transition of '
                            f'{mach.name} must take {msg.name} on the atomic bus" end;')
                for i, t in enumerate(cands):
                    code += [f"if l__g{i} then", *_ind(self.safe_stmts(t.body, ctx, p)), "end;"]
            kw = "if" if first else "elsif"
            first = False
            body += [f"{kw} {st} = {self.state_const(mach.name, sname)} then", *_ind(code)]
        body.append("end;")
        return self.body_proc(f"B_{msg.name}_{d}", params, [], body, p, ctx), p.calls

    def safe_stmts(self, body: tuple[ir.Stmt, ...], ctx: _Ctx, p: _Proc) -> list[str]:
        try:
            return self.stmts(body, ctx, p)
        except _HomeNotAgent:
            return ['error "the home node is not an agent";']

    def procedures(self) -> list[str]:
        # bus procedures, callees first
        procs: dict[str, tuple[list[str], set[str]]] = {}
        for net in self.m.networks:
            if net.ordering is not ir.Ordering.BUS:
                continue
            for msg in self.net_messages(net):
                for d in self.dirs():
                    procs[f"B_{msg.name}_{d}"] = self.bus_proc(msg, d)
        out: list[str] = []
        done: set[str] = set()
        visiting: set[str] = set()

        def emit(name: str) -> None:
            if name in done:
                return
            if name in visiting:
                raise ExportError(f"atomic-bus messages trigger each other in a cycle "
                                  f"({name}); Murphi procedures cannot recurse", NO_SPAN)
            visiting.add(name)
            for callee in sorted(procs[name][1]):
                emit(callee)
            visiting.discard(name)
            done.add(name)
            out.extend(procs[name][0])
        for name in procs:
            emit(name)
        for mach in self.m.machines:  # NOTE(actions): the semantics' instances, as rulesets
            fires = {tr.index for tr in spontaneous(mach)}
            for tr in mach.transitions:
                if tr.stall:
                    continue
                if tr.kind is ir.TransitionKind.MESSAGE:
                    msg = self.m.message(tr.name)
                    net = self.net(msg.network)
                    if net.ordering is ir.Ordering.BUS:
                        continue
                    for d in self.dirs():
                        if self.receiver(d) is mach:
                            out += self.delivery(mach, tr, msg, net, d)
                elif tr.index in fires:
                    out += self.action(mach, tr)
        return out

    def action(self, mach: ir.Machine, tr: ir.Transition) -> list[str]:
        p = _Proc()
        params = []
        me = None
        if mach.kind is ir.MachineKind.CACHE:
            params.append("l__self: AGENT")
            me = "l__self"
        params += [f"l_{f.name}: {self.type(f.type)}" for f in tr.params]
        ctx = _Ctx("s", mach, me, None)
        name = f"T_{mach.name}_{tr.index}"
        out = self.body_proc(name, params, [], self.trans_body(tr, ctx, p), p, ctx)
        binders = (["l__self: AGENT"] if me else []) + [
            f"l_{f.name}: {self.type(f.type)}" for f in tr.params]
        args = (["l__self"] if me else []) + [f"l_{f.name}" for f in tr.params]
        st = "st.h_state" if mach.kind is ir.MachineKind.HOME else "st.c[l__self].state"
        states = " | ".join(f"{st} = {self.state_const(mach.name, x)}" for x in tr.states)
        out += self.enabled_fn(name, binders, args)
        label = f"{mach.name} {tr.kind} {tr.name} #{tr.index}"
        self.rule_specs.append((label, binders, f"({states})", f"{name}"))
        self.rule_args[name] = args
        return out

    def enabled_fn(self, name: str, binders: list[str], args: list[str]) -> list[str]:
        head = f"function Can_{name}(s: State_t" + "".join(f"; {b}" for b in binders)
        call = ", ".join(["t", *args, "b"])
        return [head + "): boolean;", "var t: State_t;", "var b: boolean;", "begin",
                "  t := s;", "  b := false;", f"  {name}({call});", "  return !b;", "end;", ""]

    def delivery(self, mach: ir.Machine, tr: ir.Transition, msg: ir.Message,
                 net: ir.Network, d: str) -> list[str]:
        p = _Proc()
        binders: list[str] = []
        src: tuple[str, str | None] = ("home", None)
        if d in ("a2h", "a2a"):
            binders.append("l__src: AGENT")
            src = ("agent", "l__src")
        me = None
        if d in ("h2a", "a2a"):
            binders.append("l__self: AGENT")
            me = "l__self"
        prologue: list[str] = []
        if net.ordering is ir.Ordering.FIFO:
            q = self.queue(net, d, "l__src", "l__self", "s")
            p.decls["l__m"] = f"Msg_{net.name}"
            fields = {f.name: f"l__m.f_{msg.name}_{f.name}" for f in msg.fields}
            prologue += [f"l__m := {q}.q[0];"]
            for k in range(net.capacity - 1):
                prologue.append(f"{q}.q[{k}] := {q}.q[{k + 1}];")
            prologue += [f"undefine {q}.q[{net.capacity - 1}];", f"{q}.count := {q}.count - 1;"]
            present = f"({self.queue(net, d, 'l__src', 'l__self', 'st')}.count > 0 & " \
                      f"{self.queue(net, d, 'l__src', 'l__self', 'st')}.q[0].mtype = MT_{msg.name})"
        else:
            fields = {}
            slots = []
            for i, (t, f, may_undef) in enumerate(self.slot_dims(msg)):
                binders.append(f"l__f{i}: {t}")
                slots.append(f"l__f{i}")
                local = f"l__m_{f.name}"
                p.decls[local] = self.type(f.type)
                fields[f.name] = local
                if may_undef:
                    hi = t.split("..")[1]
                    prologue.append(f"if l__f{i} = {hi} then undefine {local} else "
                                    f"{local} := l__f{i} end;")
                else:
                    prologue.append(f"{local} := l__f{i};")
            c = self.counter(msg, d, "l__src", "l__self", slots, "s")
            prologue[:0] = [f"{c} := {c} - 1;", f"s.t_{net.name} := s.t_{net.name} - 1;"]
            present = f"({self.counter(msg, d, 'l__src', 'l__self', slots, 'st')} > 0)"
        ctx = _Ctx("s", mach, me, src, fields)
        name = f"D_{mach.name}_{tr.index}_{d}"
        out = self.body_proc(name, binders, prologue, self.trans_body(tr, ctx, p), p, ctx)
        args = [b.split(":")[0] for b in binders]
        st = "st.h_state" if mach.kind is ir.MachineKind.HOME else "st.c[l__self].state"
        states = " | ".join(f"{st} = {self.state_const(mach.name, x)}" for x in tr.states)
        out += self.enabled_fn(name, binders, args)
        label = f"{mach.name} receives {msg.name} ({d}) #{tr.index}"
        self.rule_specs.append((label, binders, f"{present} & ({states})", name))
        self.rule_args[name] = args
        return out

    def startstate(self) -> list[str]:
        m = self.m
        ctx = _Ctx("st")
        body = ["undefine st;"]

        def init(target: str, v: ir.Var) -> list[str]:
            e = v.init
            if isinstance(e, ir.Lit) and e.value is None:
                return []
            if isinstance(v.type, ir.SetT):
                if not (isinstance(e, ir.Lit) and e.value == 0) and not (
                        isinstance(e, ir.SetLit) and not e.elems):
                    raise ExportError("a set must start empty in the Murphi export", v.span)
                return [f"for l__x: AGENT do {target}[l__x] := false end;"]
            if isinstance(v.type, ir.ArrayT):
                return [f"for l__i: {self.type(v.type.index)} do "
                        f"{target}[l__i] := {self.expr(e, ctx)} end;"]
            return [f"{target} := {self.expr(e, ctx)};"]
        for v in m.globals:
            body += init(f"st.g_{v.name}", v)
        if self.home is not None:
            body.append(f"st.h_state := {self.state_const(self.home.name, self.home.init_state)};")
            for v in self.home.vars:
                body += init(f"st.h_{v.name}", v)
        if self.cache is not None:
            inner = [f"st.c[l__a].state := "
                     f"{self.state_const(self.cache.name, self.cache.init_state)};"]
            for v in self.cache.vars:
                inner += init(f"st.c[l__a].v_{v.name}", v)
            body += ["for l__a: AGENT do", *_ind(inner), "end;"]
        for net in m.networks:
            if net.ordering is ir.Ordering.FIFO and self.net_messages(net):
                for d in self.dirs():
                    q = self.queue(net, d, "l__s", "l__d", "st")
                    line = f"{q}.count := 0;"
                    if d in ("a2h", "a2a"):
                        line = f"for l__s: AGENT do {line} end;"
                    if d in ("h2a", "a2a"):
                        line = f"for l__d: AGENT do {line} end;"
                    body.append(line)
            elif net.ordering is ir.Ordering.UNORDERED:
                body.append(f"st.t_{net.name} := 0;")
                for msg in self.net_messages(net):
                    for d in self.dirs():
                        binders = []
                        idx = []
                        if d in ("a2h", "a2a"):
                            binders.append("l__s: AGENT")
                        if d in ("h2a", "a2a"):
                            binders.append("l__d: AGENT")
                        for i, (t, _, _) in enumerate(self.slot_dims(msg)):
                            binders.append(f"l__f{i}: {t}")
                            idx.append(f"l__f{i}")
                        line = f"{self.counter(msg, d, 'l__s', 'l__d', idx, 'st')} := 0;"
                        for b in reversed(binders):
                            line = f"for {b} do {line} end;"
                        body.append(line)
        return ['startstate "init"', "begin", *_ind(body), "end;", ""]

    def rules(self) -> list[str]:
        out = []
        for label, binders, cond, name in self.rule_specs:
            args = self.rule_args[name]
            can = f"Can_{name}(" + ", ".join(["st", *args]) + ")"
            call = f"{name}(" + ", ".join(["st", *args, "b"]) + ");"
            rule = [f'rule "{label}"', f"  {cond} & {can}", "==>", "var b: boolean;", "begin",
                    "  b := false;", f"  {call}", "end;"]
            out += self.ruleset(binders, rule)
        # 'no transition' errors: a deliverable message with no handler in the current state
        for net in self.m.networks:
            if net.ordering is ir.Ordering.BUS:
                continue
            for msg in self.net_messages(net):
                for d in self.dirs():
                    mach = self.receiver(d)
                    assert mach is not None
                    missing = [s for i, s in enumerate(mach.state_type.members)
                               if (mach.name, msg.name, i) not in self.handlers]
                    if not missing:
                        continue
                    binders = []
                    if d in ("a2h", "a2a"):
                        binders.append("l__src: AGENT")
                    if d in ("h2a", "a2a"):
                        binders.append("l__self: AGENT")
                    if net.ordering is ir.Ordering.FIFO:
                        q = self.queue(net, d, "l__src", "l__self", "st")
                        present = f"({q}.count > 0 & {q}.q[0].mtype = MT_{msg.name})"
                    else:
                        slots = []
                        for i, (t, _, _) in enumerate(self.slot_dims(msg)):
                            binders.append(f"l__f{i}: {t}")
                            slots.append(f"l__f{i}")
                        present = f"({self.counter(msg, d, 'l__src', 'l__self', slots, 'st')} > 0)"
                    st = "st.h_state" if mach.kind is ir.MachineKind.HOME else "st.c[l__self].state"
                    states = " | ".join(f"{st} = {self.state_const(mach.name, x)}"
                                        for x in missing)
                    rule = [f'rule "no transition for {msg.name} ({d})"',
                            f"  {present} & ({states})", "==>", "begin",
                            f'  error "no transition for {msg.name} in {mach.name}";', "end;"]
                    out += self.ruleset(binders, rule)
        out += ['rule "idle (quiescent)"', "  Quiescent(st)", "==>", "begin", "end;", ""]
        return out



def _designator(e: ir.Expr) -> bool:
    return isinstance(e, (ir.GVar, ir.MVar, ir.Index, ir.Local, ir.MsgField))


def to_murphi(model: ir.Model) -> str:
    """The Murphi text of ``model`` (the coherence monitor is left out; see the module doc);
    a hierarchical spec goes through ``coherence.export.murphi_hier``."""
    if model.is_hierarchical:
        from coherence.export.murphi_hier import hier_to_murphi
        return hier_to_murphi(model)
    return MurphiExporter(model).export()
