"""Hierarchical specs (``machine L1[g: gpu, s: sm]``) -> Murphi, for Rumur.

NOTE(murphi-hierarchy): the encoding of ``coherence.export.murphi`` (NOTE(murphi-encoding):
the state as one record, each rule's guard trying its body on a copy, fifo queues per
(source, destination), unordered networks as counters, the bus as procedure calls, ``idle``
in quiescent states) with index types as scalarsets:

* each index type is a scalarset ``IDX_t`` (``index sm: sms within gpu`` too: an sm id is
  an id within its GPU, so it ranges over ``sms`` values);
* machine ``M[g: gpu, s: sm]`` is ``m_M: array [IDX_gpu] of array [IDX_sm] of R_M`` (a record
  of its control state and variables); a machine without indices is one record;
* a node is a record ``Node_t`` of its machine (``k``) and one field per index type, those its
  machine lacks left undefined, so that equal nodes are equal records; where a node is known
  statically (``self``, ``L2[g]``, ``msg.src`` in a rule per source machine) no record is
  built;
* queues and counters are per (source machine, destination machine) pair that the spec's
  sends can produce, indexed by both instances' indices; an unordered message's node field
  splits its counters by the node's machine (or undefined) and is indexed by its indices.

Symmetry: Rumur permutes each scalarset with one permutation everywhere, so the sm ids of
every GPU are renamed together: its group is S(gpus) x S(sms), a subgroup of ours (sms
permuted within each GPU separately, GPUs with their sms: the wreath product). The reduced
counts are equal when gpus = 1 or sms = 1 (the groups coincide) and Rumur's is larger
otherwise. Without symmetry the counts are equal.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import assert_never

import attrs

from coherence import ir
from coherence.errors import NO_SPAN, Span
from coherence.export.murphi import (
    ExportError,
    MurphiNames,
    _designator,
    _ind,
    _Proc,
    count_fn,
    count_fn_text,
    count_parameters,
    count_text,
)
from coherence.semantics import handler_table, spontaneous

UNDEF_KIND = ""  # a node field's "machine" when the node is undefined


@attrs.frozen
class _Node:
    """A node during generation: static (its machine and index values as Murphi
    expressions) or dynamic (a Murphi designator of type Node_t)."""

    machine: str | None = None
    idx: tuple[str, ...] = ()
    dyn: str | None = None
    undef: bool = False


@attrs.define
class _Ctx:
    s: str
    machine: ir.Machine | None = None
    me: _Node | None = None
    src: _Node | None = None
    fields: dict[str, str | _Node] = attrs.Factory(dict)
    mvars: dict[str, tuple[_Node, _Node, dict[str, str | _Node]]] = attrs.Factory(dict)
    mbinders: dict[str, list[str]] = attrs.Factory(dict)  # their Murphi binders


def _kname(kind: str) -> str:
    return kind or "undef"


class HierMurphiExporter(MurphiNames):
    def __init__(self, model: ir.Model) -> None:
        self.m = model
        if model.lines != 1:
            span = next((p.span for p in model.params if p.name == "lines"), NO_SPAN)
            raise ExportError(f"the Murphi exporter supports lines = 1 (got {model.lines})",
                              span)
        self.handlers = handler_table(model)
        self.machines = {mach.name: mach for mach in model.machines}
        proc = ir.event_machine(model)
        self.processor = proc.name if proc is not None else None
        self.rule_specs: list[tuple[str, list[str], str, str, list[str]]] = []
        self.fail_fns: dict[str, str] = {}
        self.count_fns: dict[str, str] = {}  # NOTE(message-count): count_fn's functions
        self._analyse()

    # ------------------------------------------------------------ who sends what to whom

    def _analyse(self) -> None:
        """Per message its sending machines, destination machines and, per node field, the
        machines of the nodes it can carry (UNDEF_KIND: undefined): a fixpoint over sends."""
        names = list(self.machines)
        everyone = set(names)
        self.senders: dict[str, set[str]] = {x.name: set() for x in self.m.messages}
        self.dsts: dict[str, set[str]] = {x.name: set() for x in self.m.messages}
        self.fkinds: dict[tuple[str, str], set[str]] = {
            (x.name, f.name): set() for x in self.m.messages for f in x.fields
            if isinstance(f.type, ir.HNodeT)}
        for _ in range(len(self.m.messages) + 2):
            changed = False
            for mach in self.m.machines:
                for tr in mach.transitions:
                    handled = tr.name if tr.kind is ir.TransitionKind.MESSAGE else None
                    for st in ir.walk_stmts(tr.body):
                        if not isinstance(st, (ir.Send, ir.Multicast)):
                            continue
                        msg = self.m.message(st.message)
                        add = {mach.name} - self.senders[msg.name]
                        if isinstance(st, ir.Multicast):
                            to = {st.machine}
                        else:
                            to = self._kinds(st.dst, mach, handled, everyone) - {UNDEF_KIND}
                        add_d = to - self.dsts[msg.name]
                        self.senders[msg.name] |= add
                        self.dsts[msg.name] |= add_d
                        changed |= bool(add or add_d)
                        for f, a in zip(msg.fields, st.args, strict=True):
                            if (msg.name, f.name) in self.fkinds:
                                ks = self._kinds(a, mach, handled, everyone | {UNDEF_KIND})
                                new = ks - self.fkinds[(msg.name, f.name)]
                                self.fkinds[(msg.name, f.name)] |= new
                                changed |= bool(new)
            if not changed:
                break
        self.pairs = {x.name: sorted(itertools.product(sorted(self.senders[x.name]),
                                                       sorted(self.dsts[x.name])))
                      for x in self.m.messages}

    def _kinds(self, e: ir.Expr, mach: ir.Machine, handled: str | None,
               everyone: set[str]) -> set[str]:
        if isinstance(e, ir.SelfId):
            return {mach.name}
        if isinstance(e, ir.NodeOf):
            if len(e.indices) == 1 and isinstance(e.indices[0].type, ir.HNodeT):
                return {e.machine}
            return {e.machine}
        if isinstance(e, ir.MsgSrc) and handled is not None:
            return set(self.senders[handled])
        if isinstance(e, ir.MsgField) and handled is not None and (
                (handled, e.name) in self.fkinds):
            return set(self.fkinds[(handled, e.name)])
        if isinstance(e, ir.Lit) and e.value is None:
            return {UNDEF_KIND}
        return set(everyone)

    # ------------------------------------------------------------ names and types

    @staticmethod
    def kind_const(machine: str) -> str:
        return f"K_{machine}"

    def type(self, t: ir.Type) -> str:
        if isinstance(t, ir.BoolT):
            return "boolean"
        if isinstance(t, ir.IntT):
            return f"{t.lo}..{t.hi}"
        if isinstance(t, ir.ValueT):
            return f"0..{t.n - 1}"
        if isinstance(t, ir.IndexT):
            return f"IDX_{t.name}"
        if isinstance(t, ir.HNodeT):
            return "Node_t"
        if isinstance(t, ir.EnumT):
            return f"T_{t.name}"
        if isinstance(t, ir.StateT):
            return f"T_{t.machine}_state"
        if isinstance(t, ir.SetT):
            return f"array [{self.type(t.elem)}] of boolean"
        if isinstance(t, ir.ArrayT):
            return f"array [{self.type(t.index)}] of {self.type(t.elem)}"
        raise ExportError(f"type {t} is not supported by the Murphi exporter", NO_SPAN)

    def idx_types(self, machine: str) -> list[str]:
        return [self.type(f.type) for f in self.machines[machine].indices]

    def inst(self, machine: str, idx: tuple[str, ...] | list[str], s: str) -> str:
        return f"{s}.m_{machine}" + "".join(f"[{i}]" for i in idx)

    def net_pairs(self, net: ir.Network) -> list[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for msg in self.net_messages(net):
            out |= set(self.pairs[msg.name])
        return sorted(out)

    def queue(self, net: ir.Network, src: _Node, dst: _Node, s: str) -> str:
        assert src.machine is not None and dst.machine is not None
        return (f"{s}.n_{net.name}_{src.machine}_{dst.machine}"
                + "".join(f"[{i}]" for i in (*src.idx, *dst.idx)))

    def queue_type(self, net: ir.Network, src: str, dst: str) -> str:
        out = f"Q_{net.name}"
        for t in reversed([*self.idx_types(src), *self.idx_types(dst)]):
            out = f"array [{t}] of {out}"
        return out

    # unordered counters: per message, pair and node-field kinds -------------------

    def node_fields(self, msg: ir.Message) -> list[ir.Field]:
        return [f for f in msg.fields if isinstance(f.type, ir.HNodeT)]

    def kind_combos(self, msg: ir.Message) -> list[tuple[str, ...]]:
        return list(itertools.product(*[sorted(self.fkinds[(msg.name, f.name)])
                                        for f in self.node_fields(msg)]))

    def slot_dims(self, msg: ir.Message, kinds: tuple[str, ...]) -> list[tuple[str, ir.Field,
                                                                                bool, int]]:
        """Per counter dimension: (index type, field, may be undefined, position in a node
        field's indices or -1)."""
        out = []
        kind_of = dict(zip([f.name for f in self.node_fields(msg)], kinds, strict=True))
        for f in msg.fields:
            t = f.type
            if isinstance(t, (ir.ValueT, ir.IntT)):
                lo, hi = (0, t.n - 1) if isinstance(t, ir.ValueT) else (t.lo, t.hi)
                out.append((f"{lo}..{hi + 1}", f, True, -1))
            elif isinstance(t, (ir.BoolT, ir.EnumT, ir.IndexT)):
                out.append((self.type(t), f, False, -1))
            elif isinstance(t, ir.HNodeT):
                k = kind_of[f.name]
                if k:
                    out += [(x, f, False, j) for j, x in enumerate(self.idx_types(k))]
            else:
                raise ExportError(f"field {msg.name}.{f.name}: type {t} cannot index an "
                                  "unordered network's counters", f.span)
        return out

    def counter(self, msg: ir.Message, src: _Node, dst: _Node, kinds: tuple[str, ...],
                slots: list[str], s: str) -> str:
        assert src.machine is not None and dst.machine is not None
        name = f"{s}.n_{msg.network}_{msg.name}_{src.machine}_{dst.machine}"
        name += "".join(f"_{_kname(k)}" for k in kinds)
        return name + "".join(f"[{i}]" for i in (*src.idx, *dst.idx, *slots))

    def counter_type(self, msg: ir.Message, src: str, dst: str, kinds: tuple[str, ...],
                     cap: int) -> str:
        dims = [*self.idx_types(src), *self.idx_types(dst)]
        dims += [t for t, _, _, _ in self.slot_dims(msg, kinds)]
        out = f"0..{cap}"
        for dim in reversed(dims):
            out = f"array [{dim}] of {out}"
        return out

    # ------------------------------------------------------------ nodes

    def node(self, e: ir.Expr, ctx: _Ctx) -> _Node:
        match e:
            case ir.SelfId():
                assert ctx.me is not None
                return ctx.me
            case ir.MsgSrc():
                assert ctx.src is not None
                return ctx.src
            case ir.NodeOf():
                if len(e.indices) == 1 and isinstance(e.indices[0].type, ir.HNodeT):
                    inner = self.node(e.indices[0], ctx)
                    if inner.dyn is None:
                        if inner.machine != e.machine:
                            raise ExportError(f"this node is never an instance of {e.machine}",
                                              e.span)
                        return inner
                    if not self.machines[e.machine].indices:
                        raise ExportError(f"{e.machine}[a node]: the Murphi export needs the "
                                          "instance's indices", e.span)
                    return _Node(e.machine, tuple(
                        self.of_machine(inner.dyn, e.machine, f.type.name)
                        for f in self.machines[e.machine].indices
                        if isinstance(f.type, ir.IndexT)))
                return _Node(e.machine, tuple(self.expr(x, ctx) for x in e.indices))
            case ir.MsgField():
                v = ctx.fields[e.name]
                assert isinstance(v, _Node)
                return v
            case ir.MsgVarAttr():
                src, dst, fields = ctx.mvars[e.var]
                if e.attr == "src":
                    return src
                if e.attr == "dst":
                    return dst
                v = fields[e.attr]
                assert isinstance(v, _Node)
                return v
            case ir.Lit() if e.value is None:
                return _Node(undef=True)
            case ir.GVar() | ir.MVar() | ir.Index() | ir.Local():
                return _Node(dyn=self.expr(e, ctx))
        raise ExportError("this node-valued expression is not supported by the Murphi export",
                          e.span)

    def of_machine(self, dyn: str, machine: str, index: str) -> str:
        """Index ``index`` of node ``dyn``, which must be an instance of ``machine``."""
        fn = f"Of_{machine}_{index}"
        self.fail_fns[fn] = "\n".join([
            f"function {fn}(n: Node_t): IDX_{index};", "begin",
            f'  if n.k != {self.kind_const(machine)} then error "the node is not an instance '
            f'of {machine}" end;', f"  return n.i_{index};", "end;", ""])
        return f"{fn}({dyn})"

    def node_eq(self, a: _Node, b: _Node) -> str:
        if a.undef or b.undef:
            raise ExportError("comparing a node with 'undefined' (use isundefined)", NO_SPAN)
        if a.dyn is None and b.dyn is None:
            if a.machine != b.machine:
                return "false"
            parts = [f"{x} = {y}" for x, y in zip(a.idx, b.idx, strict=True)]
            return "(" + (" & ".join(parts) or "true") + ")"
        if a.dyn is not None and b.dyn is not None:
            return f"NodeEq({a.dyn}, {b.dyn})"
        stat, dyn = (a, b) if b.dyn is not None else (b, a)
        assert stat.machine is not None and dyn.dyn is not None
        names = self.index_names(stat.machine)
        parts = [f"{dyn.dyn}.k = {self.kind_const(stat.machine)}"]
        parts += [f"{dyn.dyn}.i_{n} = {v}" for n, v in zip(names, stat.idx, strict=True)]
        return "(" + " & ".join(parts) + ")"

    def index_names(self, machine: str) -> list[str]:
        return [f.type.name for f in self.machines[machine].indices
                if isinstance(f.type, ir.IndexT)]

    def assign_node(self, target: str, v: _Node) -> list[str]:
        if v.undef:
            return [f"undefine {target};"]
        if v.dyn is not None:
            return [f"{target} := {v.dyn};"]
        assert v.machine is not None
        out = [f"undefine {target};", f"{target}.k := {self.kind_const(v.machine)};"]
        out += [f"{target}.i_{n} := {x};"
                for n, x in zip(self.index_names(v.machine), v.idx, strict=True)]
        return out

    def kind_split(self, v: _Node, kinds: list[str], body: Callable[[_Node], list[str]],
                   what: str) -> list[str]:
        """``body(static node)`` for a dynamic node, per machine it can be an instance of."""
        if v.dyn is None:
            return body(v)
        out: list[str] = []
        for k in kinds:
            if k == UNDEF_KIND:
                continue
            idx = tuple(f"{v.dyn}.i_{n}" for n in self.index_names(k))
            kw = "if" if not out else "elsif"
            out += [f"{kw} {v.dyn}.k = {self.kind_const(k)} then",
                    *_ind(body(_Node(k, idx)))]
        if not out:
            return [f'error "{what}";']
        return [*out, "else", f'  error "{what}";', "end;"]

    # ------------------------------------------------------------ expressions

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
                if isinstance(t, ir.SetT):
                    raise ExportError("set constants are only supported in assignments",
                                      e.span)
                if isinstance(t, (ir.IndexT, ir.HNodeT, ir.AgentT, ir.NodeT)):
                    raise ExportError("ids are a scalarset: constants cannot be exported",
                                      e.span)
                return str(e.value)
            case ir.Local():
                return f"l_{e.name}"
            case ir.GVar():
                return f"{ctx.s}.g_{e.name}"
            case ir.MVar():
                return f"{self.designator(e.machine, e.agent, ctx, e.span)}.v_{e.name}"
            case ir.MState():
                return f"{self.designator(e.machine, e.agent, ctx, e.span)}.state"
            case ir.MsgField():
                v = ctx.fields[e.name]
                if isinstance(v, _Node):
                    raise ExportError("a node here is not supported by the Murphi export",
                                      e.span)
                return v
            case ir.NodeIndex():
                n = self.node(e.node, ctx)
                if n.dyn is not None:
                    return f"{n.dyn}.i_{e.index}"
                if n.undef:
                    return self.fail_fn(f"Undef_{e.index}", f"IDX_{e.index}",
                                        "read of undefined value (node)")
                assert n.machine is not None
                names = self.index_names(n.machine)
                if e.index in names:
                    return n.idx[names.index(e.index)]
                return self.fail_fn(f"NoIdx_{n.machine}_{e.index}", f"IDX_{e.index}",
                                    f"{n.machine} has no {e.index} index")
            case ir.NodeIs():
                n = self.node(e.node, ctx)
                if n.dyn is not None:
                    return f"({n.dyn}.k = {self.kind_const(e.machine)})"
                return "true" if n.machine == e.machine else "false"
            case ir.Index():
                if isinstance(e.index.type, ir.HNodeT):
                    raise ExportError("arrays indexed by node are not supported by the Murphi "
                                      "export", e.span)
                return f"{self.expr(e.base, ctx)}[{self.expr(e.index, ctx)}]"
            case ir.Unary():
                arg = self.expr(e.arg, ctx)
                return f"(!{arg})" if e.op == "!" else f"(-{arg})"
            case ir.Binary():
                return self.binary(e, ctx)
            case ir.SetLit():
                raise ExportError("set literals are only supported in assignments and 'in'",
                                  e.span)
            case ir.Call():
                if e.func == "size":
                    t = e.args[0].type
                    assert isinstance(t, ir.SetT)
                    return f"SetSize_{self.type(t.elem)}({self.expr(e.args[0], ctx)})"
                if e.func == "isundefined":
                    a = e.args[0]
                    if isinstance(a.type, ir.HNodeT):
                        n = self.node(a, ctx)
                        if n.dyn is None:
                            return "true" if n.undef else "false"
                        return f"isundefined({n.dyn}.k)"
                    return f"isundefined({self.expr(a, ctx)})"
                raise ExportError(f"{e.func}() is not supported in a hierarchical spec",
                                  e.span)
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
                    raise ExportError("a node here is not supported by the Murphi export",
                                      e.span)
                v = ctx.mvars[e.var][2][e.attr]
                if isinstance(v, _Node):
                    raise ExportError("a node here is not supported by the Murphi export",
                                      e.span)
                return v
            case ir.Cond():
                if isinstance(e.type, (ir.SetT, ir.HNodeT)):
                    raise ExportError("a conditional expression choosing between sets or "
                                      "nodes is not supported by the Murphi exporter", e.span)
                return (f"({self.expr(e.cond, ctx)} ? {self.expr(e.then, ctx)} : "
                        f"{self.expr(e.orelse, ctx)})")
            case ir.SelfId() | ir.MsgSrc() | ir.NodeOf():
                raise ExportError("a node here is not supported by the Murphi export", e.span)
            case _:
                assert_never(e)

    def fail_fn(self, name: str, rtype: str, message: str) -> str:
        self.fail_fns[name] = "\n".join([f"function {name}(): {rtype};", "begin",
                                         f'  error "{message}";', "end;", ""])
        return f"{name}()"

    def designator(self, machine: str, agent: ir.Expr | None, ctx: _Ctx, span: Span) -> str:
        assert agent is not None
        n = self.node(agent, ctx)
        if n.dyn is not None:
            names = self.index_names(machine)
            if not names:
                raise ExportError(f"{machine} through a node variable: not supported by the "
                                  "Murphi export", span)
            return self.inst(machine, [self.of_machine(n.dyn, machine, x) for x in names],
                             ctx.s)
        if n.undef or n.machine != machine:
            raise ExportError(f"this node is never an instance of {machine}", span)
        return self.inst(machine, n.idx, ctx.s)

    def binary(self, e: ir.Binary, ctx: _Ctx) -> str:
        op = e.op
        if op in ("==", "!=") and isinstance(e.left.type, ir.HNodeT):
            same = self.node_eq(self.node(e.left, ctx), self.node(e.right, ctx))
            return same if op == "==" else f"(!{same})"
        if op == "in":
            if isinstance(e.right, ir.SetLit) and not isinstance(e.right.type, ir.SetT):
                left = self.expr(e.left, ctx)
                parts = [f"{left} = {self.expr(x, ctx)}" for x in e.right.elems]
                return "(" + (" | ".join(parts) or "false") + ")"
            return f"{self.expr(e.right, ctx)}[{self.expr(e.left, ctx)}]"
        if op in ("with", "without"):
            raise ExportError("set union/difference is only supported as s.add(a) / "
                              "s.remove(a)", e.span)
        if isinstance(e.left.type, ir.SetT):
            raise ExportError("comparing sets is not supported by the Murphi export", e.span)
        sym = {"&&": "&", "||": "|", "->": "->", "==": "=", "!=": "!=", "<": "<", "<=": "<=",
               ">": ">", ">=": ">=", "+": "+", "-": "-"}[op]
        return f"({self.expr(e.left, ctx)} {sym} {self.expr(e.right, ctx)})"

    def static_binders(self, machine: str, stem: str) -> tuple[_Node, list[str]]:
        """A static node of ``machine`` over fresh variables ``stem0..``, and their binders."""
        types = self.idx_types(machine)
        names = [f"{stem}{i}" for i in range(len(types))]
        return _Node(machine, tuple(names)), [f"{n}: {t}" for n, t in zip(names, types,
                                                                            strict=True)]

    def places(self, msg: ir.Message, stem: str, s: str,
               dst: _Node | None = None) -> list[tuple[list[str], str, _Node, _Node,
                                                       dict[str, str | _Node], str]]:
        """Every place a message can be: (binders, 'it is there' condition, src, dst, fields,
        how many are there) per pair, fifo position or counter."""
        net = self.net(msg.network)
        out = []
        for sm, dm in self.pairs[msg.name]:
            if dst is not None and dst.dyn is None and dst.machine != dm:
                continue
            src, binders = self.static_binders(sm, f"{stem}s")
            if dst is not None and dst.dyn is None:
                d = dst
            else:
                d, more = self.static_binders(dm, f"{stem}d")
                binders += more
            guard = "true"
            if dst is not None and dst.dyn is not None:
                guard = self.node_eq(dst, d)
            if net.ordering is ir.Ordering.FIFO:
                q = self.queue(net, src, d, s)
                k = f"{stem}k"
                present = f"({k} < {q}.count & {q}.q[{k}].mtype = MT_{msg.name})"
                fields: dict[str, str | _Node] = {}
                for f in msg.fields:
                    slot = f"{q}.q[{k}].f_{msg.name}_{f.name}"
                    fields[f.name] = _Node(dyn=slot) if isinstance(f.type, ir.HNodeT) else slot
                fields[ir.POSITION] = k  # NOTE(message-position): the slot, q[0] the head
                out.append(([*binders, f"{k}: 0..{net.capacity - 1}"],
                            f"({guard} & {present})", src, d, fields, "1"))
                continue
            for kinds in self.kind_combos(msg):
                extra, slots, fields = self.slot_binders(msg, kinds, f"{stem}f")
                amount = self.counter(msg, src, d, kinds, slots, s)
                out.append(([*binders, *extra], f"({guard} & ({amount} > 0))", src, d, fields,
                            amount))
        return out

    def slot_binders(self, msg: ir.Message, kinds: tuple[str, ...],
                     stem: str) -> tuple[list[str], list[str], dict[str, str | _Node]]:
        """Binders of an unordered counter's field dimensions, their names and the fields."""
        binders, slots = [], []
        fields: dict[str, str | _Node] = {}
        kind_of = dict(zip([f.name for f in self.node_fields(msg)], kinds, strict=True))
        node_idx: dict[str, list[str]] = {}
        for i, (t, f, _, _) in enumerate(self.slot_dims(msg, kinds)):
            binders.append(f"{stem}{i}: {t}")
            slots.append(f"{stem}{i}")
            if isinstance(f.type, ir.HNodeT):
                node_idx.setdefault(f.name, []).append(f"{stem}{i}")
            else:
                fields[f.name] = f"{stem}{i}"
        for name, k in kind_of.items():
            fields[name] = _Node(k, tuple(node_idx.get(name, []))) if k else _Node(undef=True)
        return binders, slots, fields

    def inflight(self, e: ir.InFlight, ctx: _Ctx) -> str:
        msg = self.m.message(e.message)
        if self.net(msg.network).ordering is ir.Ordering.BUS:
            return "false"
        dst = self.node(e.dst, ctx) if e.dst is not None else None
        parts = []
        for binders, cond, _s, _d, _f, _n in self.places(msg, "l__if", ctx.s, dst):
            for b in reversed(binders):
                cond = f"(exists {b} do {cond} end)"
            parts.append(cond)
        return "(" + (" | ".join(parts) or "false") + ")"

    def msg_quant(self, e: ir.MsgQuant, ctx: _Ctx) -> str:
        msg = self.m.message(e.message)
        if e.kind == "count":
            return self.msg_count(e, ctx)
        forall = e.kind == "forall"
        if self.net(msg.network).ordering is ir.Ordering.BUS:
            return "true" if forall else "false"
        parts = []
        for binders, present, src, dst, fields, _n in self.places(msg, f"l__{e.var}_", ctx.s):
            ctx.mvars[e.var] = (src, dst, fields)
            ctx.mbinders[e.var] = binders
            try:
                body = self.expr(e.body, ctx)
            finally:
                del ctx.mvars[e.var], ctx.mbinders[e.var]
            cond = f"({present} -> {body})" if forall else f"({present} & {body})"
            for b in reversed(binders):
                cond = f"({'forall' if forall else 'exists'} {b} do {cond} end)"
            parts.append(cond)
        joiner = " & " if forall else " | "
        return "(" + (joiner.join(parts) or ("true" if forall else "false")) + ")"

    def msg_count(self, e: ir.MsgQuant, ctx: _Ctx) -> str:
        """NOTE(message-count): ``count(m: Msg :: body)`` as the call of a function that sums
        over the places of ``places`` (a fifo position counts one, an unordered counter its
        value), as in the flat exporter (``MurphiExporter.msg_count``)."""
        if ctx.s != "st" or ctx.me is not None or ctx.src is not None or ctx.fields:
            raise ExportError("count over messages in flight is only supported in invariants",
                              e.span)
        msg = self.m.message(e.message)
        if self.net(msg.network).ordering is ir.Ordering.BUS:
            return "0"  # the atomic bus holds nothing between steps
        inner = _Ctx(ctx.s)
        params, args = count_parameters(e, ctx, inner, self.type)
        loops = []
        for binders, present, src, dst, fields, amount in self.places(msg, f"l__{e.var}_",
                                                                      ctx.s):
            inner.mvars[e.var], inner.mbinders[e.var] = (src, dst, fields), binders
            loops.append((binders, present, self.expr(e.body, inner), amount))
        if not loops:
            return "0"
        assert isinstance(e.type, ir.IntT)
        name = count_fn(self.count_fns, "MsgCount", params, e.type.hi, loops)
        return f"{name}({', '.join(args)})"

    # ------------------------------------------------------------ statements

    def stmts(self, body: tuple[ir.Stmt, ...], ctx: _Ctx, p: _Proc) -> list[str]:
        out: list[str] = []
        for s in body:
            try:
                out += self._stmt(s, ctx, p)
            except ExportError as err:
                if err.span != NO_SPAN:
                    raise
                raise ExportError(err.message, s.span) from None
        return out

    def _stmt(self, s: ir.Stmt, ctx: _Ctx, p: _Proc) -> list[str]:
        match s:
            case ir.Assign():
                return self.assign(s, ctx, p)
            case ir.If():
                out = [f"if {self.expr(s.cond, ctx)} then", *_ind(self.stmts(s.then, ctx, p))]
                if s.orelse:
                    out += ["else", *_ind(self.stmts(s.orelse, ctx, p))]
                return [*out, "end;"]
            case ir.For():
                return [f"for l_{s.var}: {self.type(s.var_type)} do",
                        *_ind(self.stmts(s.body, ctx, p)), "end;"]
            case ir.Let():
                p.decls[f"l_{s.var}"] = self.type(s.value.type)
                if isinstance(s.value.type, ir.HNodeT):
                    return self.assign_node(f"l_{s.var}", self.node(s.value, ctx))
                return [f"l_{s.var} := {self.expr(s.value, ctx)};"]
            case ir.Send():
                dst = self.node(s.dst, ctx)
                if dst.undef:
                    return ['error "send to an undefined destination";']
                kinds = sorted(self.dsts[s.message])
                return self.kind_split(dst, kinds, lambda d: self.send(s.message, s.args, d,
                                                                      ctx, p),
                                       f"{s.message} sent to a node it never goes to")
            case ir.Multicast():
                return self.multicast(s, ctx, p)
            case ir.Broadcast():
                raise ExportError("broadcast without `to` in a hierarchical spec", s.span)
            case ir.Goto():
                assert ctx.machine is not None
                p.decls["l__ns"] = self.type(ctx.machine.state_type)
                return [f"l__ns := {self.state_const(ctx.machine.name, s.state)};"]
            case ir.Perform():
                out = []
                if _designator(s.value):
                    v = self.expr(s.value, ctx)
                    out.append(f'if isundefined({v}) then error "read of undefined value '
                               '(perform)" end;')
                who = self.node(s.agent, ctx)
                if who.undef:
                    return ['error "node is undefined";']
                if who.dyn is not None:
                    out.append(f"if {who.dyn}.k != {self.kind_const(self.processor or '')} "
                               'then error "the node is not a processor" end;')
                elif who.machine != self.processor:
                    out.append('error "the node is not a processor";')
                return out
            case ir.Assert():
                text = s.text.replace('"', "'")
                return [f'assert {self.expr(s.cond, ctx)} "{text}";']
            case _:
                assert_never(s)

    def multicast(self, s: ir.Multicast, ctx: _Ctx, p: _Proc) -> list[str]:
        """To every instance of the machine whose leading indices are the prefix's values
        (loops over the others, in node order); not to ``exclude``."""
        types = self.idx_types(s.machine)
        idx = [self.expr(x, ctx) for x in s.prefix]
        loops = []
        for t in types[len(idx):]:
            v = p.fresh("l__mc")
            idx.append(v)
            loops.append(f"for {v}: {t} do")
        target = _Node(s.machine, tuple(idx))
        inner = self.send(s.message, s.args, target, ctx, p)
        if s.exclude is not None:
            ex = self.node(s.exclude, ctx)
            if not ex.undef:
                same = self.node_eq(ex, target)
                if ex.dyn is not None:
                    same = f"(!isundefined({ex.dyn}.k) & {same})"
                inner = [f"if !{same} then", *_ind(inner), "end;"]
        for loop in reversed(loops):
            inner = [loop, *_ind(inner), "end;"]
        return inner

    def assign(self, s: ir.Assign, ctx: _Ctx, p: _Proc) -> list[str]:
        target = self.expr(s.target, ctx)
        v = s.value
        if isinstance(v, ir.Cond):  # only the chosen branch is evaluated
            return [f"if {self.expr(v.cond, ctx)} then",
                    *_ind(self.assign(ir.Assign(s.target, v.then, s.span), ctx, p)), "else",
                    *_ind(self.assign(ir.Assign(s.target, v.orelse, s.span), ctx, p)), "end;"]
        if isinstance(v, ir.Lit) and v.value is None:
            return [f"undefine {target};"]
        if isinstance(v.type, ir.HNodeT):
            return self.assign_node(target, self.node(v, ctx))
        if isinstance(s.target.type, ir.SetT):
            elem = self.type(s.target.type.elem)
            x = p.fresh("l__sx")
            if isinstance(v, ir.Binary) and v.op in ("with", "without"):
                if v.left != s.target:
                    raise ExportError("set union/difference is only supported as s.add(a) / "
                                      "s.remove(a)", s.span)
                flag = "true" if v.op == "with" else "false"
                return [f"{target}[{self.expr(v.right, ctx)}] := {flag};"]
            if isinstance(v, ir.Lit) and v.value == 0:
                return [f"for {x}: {elem} do {target}[{x}] := false end;"]
            if isinstance(v, ir.SetLit):
                return [f"for {x}: {elem} do {target}[{x}] := false end;",
                        *[f"{target}[{self.expr(el, ctx)}] := true;" for el in v.elems]]
            if not _designator(v):
                raise ExportError("this set expression is not supported by the Murphi export",
                                  s.span)
        return [f"{target} := {self.expr(v, ctx)};"]

    def send(self, name: str, args: tuple[ir.Expr, ...], dst: _Node, ctx: _Ctx,
             p: _Proc) -> list[str]:
        msg = self.m.message(name)
        net = self.net(msg.network)
        src = ctx.me
        assert src is not None and src.machine is not None and dst.machine is not None
        if (src.machine, dst.machine) not in self.pairs[name]:
            return [f'error "{name} from {src.machine} to {dst.machine}: never sent";']
        if net.ordering is ir.Ordering.BUS:
            out: list[str] = []
            call = [ctx.s, *src.idx, *dst.idx]
            if msg.fields:
                rec = f"l__o_{name}"
                p.decls[rec] = f"R_{name}"
                out.append(f"undefine {rec};")
                for f, a in zip(msg.fields, args, strict=True):
                    out += self.put_field(f"{rec}.f_{f.name}", f, a, ctx)
                call.append(rec)
            proc = f"B_{name}_{src.machine}_{dst.machine}"
            p.calls.add(proc)
            call.append("blk")
            return [*out, f"{proc}({', '.join(call)});", "if blk then return end;"]
        if net.ordering is ir.Ordering.FIFO:
            q = self.queue(net, src, dst, ctx.s)
            out = [f"if {q}.count >= {net.capacity} then blk := true; return end;",
                   f"{q}.q[{q}.count].mtype := MT_{name};"]
            for f, a in zip(msg.fields, args, strict=True):
                out += self.put_field(f"{q}.q[{q}.count].f_{name}_{f.name}", f, a, ctx)
            return [*out, f"{q}.count := {q}.count + 1;"]
        total = f"{ctx.s}.t_{net.name}"
        head = [f"if {total} >= {net.capacity} then blk := true; return end;"]
        # node fields: split by the machine of each node sent
        nodes = {f.name: self.node(a, ctx) for f, a in zip(msg.fields, args, strict=True)
                 if isinstance(f.type, ir.HNodeT)}

        def emit(chosen: dict[str, _Node]) -> list[str]:
            if len(chosen) < len(nodes):
                fname = next(n for n in nodes if n not in chosen)
                v = nodes[fname]
                kinds = sorted(self.fkinds[(name, fname)])
                if v.undef:
                    return emit({**chosen, fname: v})
                if v.dyn is not None:
                    cases = [f"if isundefined({v.dyn}.k) then",
                             *_ind(emit({**chosen, fname: _Node(undef=True)}))] \
                        if UNDEF_KIND in kinds else []
                    split = self.kind_split(v, kinds, lambda n: emit({**chosen, fname: n}),
                                            f"{name}.{fname}: a node it never carries")
                    if cases:
                        split[0] = "elsif" + split[0][2:]
                        return [*cases, *split]
                    return split
                return emit({**chosen, fname: v})
            kinds_t = tuple(UNDEF_KIND if chosen[f.name].undef else (chosen[f.name].machine
                                                                       or "")
                            for f in self.node_fields(msg))
            if any(k not in self.fkinds[(name, f.name)]
                   for k, f in zip(kinds_t, self.node_fields(msg), strict=True)):
                return [f'error "{name}: a node field it never carries";']
            slots = []
            for (_, f, may_undef, j), a in zip(self.slot_dims(msg, kinds_t),
                                               self.slot_args(msg, kinds_t, args), strict=True):
                if j >= 0:
                    n = chosen[f.name]
                    slots.append(n.idx[j])
                    continue
                t = f.type
                hi = (t.n - 1) if isinstance(t, ir.ValueT) else getattr(t, "hi", 0)
                if may_undef and isinstance(a, ir.Lit) and a.value is None:
                    slots.append(str(hi + 1))
                elif may_undef and _designator(a):
                    x = self.expr(a, ctx)
                    slots.append(f"(isundefined({x}) ? {hi + 1} : {x})")
                else:
                    slots.append(self.expr(a, ctx))
            c = self.counter(msg, src, dst, kinds_t, slots, ctx.s)
            return [f"{c} := {c} + 1;", f"{total} := {total} + 1;"]
        return head + emit({})

    def slot_args(self, msg: ir.Message, kinds: tuple[str, ...],
                  args: tuple[ir.Expr, ...]) -> list[ir.Expr]:
        """The argument behind each counter dimension (a node field's once per index)."""
        by_field = dict(zip([f.name for f in msg.fields], args, strict=True))
        return [by_field[f.name] for _, f, _, _ in self.slot_dims(msg, kinds)]

    def put_field(self, target: str, f: ir.Field, a: ir.Expr, ctx: _Ctx) -> list[str]:
        if isinstance(a, ir.Lit) and a.value is None:
            return []
        if isinstance(f.type, ir.HNodeT):
            return self.assign_node(target, self.node(a, ctx))
        return [f"{target} := {self.expr(a, ctx)};"]

    # ------------------------------------------------------------ procedures

    def body_proc(self, name: str, params: list[str], prologue: list[str],
                  body: list[str], p: _Proc, ctx: _Ctx) -> list[str]:
        epilogue: list[str] = []
        if "l__ns" in p.decls:
            assert ctx.machine is not None and ctx.me is not None
            st = self.inst(ctx.machine.name, ctx.me.idx, ctx.s) + ".state"
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

    def bus_proc(self, msg: ir.Message, sm: str, dm: str) -> tuple[list[str], set[str]]:
        mach = self.machines[dm]
        p = _Proc()
        src, sb = self.static_binders(sm, "src")
        me, db = self.static_binders(dm, "dst")
        params = [*sb, *db]
        fields: dict[str, str | _Node] = {}
        for f in msg.fields:
            fields[f.name] = (_Node(dyn=f"m.f_{f.name}") if isinstance(f.type, ir.HNodeT)
                              else f"m.f_{f.name}")
        if msg.fields:
            params.append(f"m: R_{msg.name}")
        ctx = _Ctx("s", mach, me, src, fields)
        st = self.inst(dm, me.idx, "s") + ".state"
        body: list[str] = []
        for i, sname in enumerate(mach.state_type.members):
            cands = self.handlers.get((mach.name, msg.name, i), [])
            if not cands:
                code = [f'error "no transition for {msg.name} in state {sname} of {dm}";']
            elif any(t.stall for t in cands):
                code = [f'error "{msg.name} cannot stall on the atomic bus";']
            elif len(cands) == 1 and cands[0].guard is None:
                code = self.stmts(cands[0].body, ctx, p)
            else:
                p.decls["l__cnt"] = "0..64"
                code = ["l__cnt := 0;"]
                for j, t in enumerate(cands):
                    p.decls[f"l__g{j}"] = "boolean"
                    g = self.expr(t.guard, ctx) if t.guard is not None else "true"
                    code += [f"l__g{j} := {g};", f"if l__g{j} then l__cnt := l__cnt + 1 end;"]
                code.append(f'if l__cnt != 1 then error "exactly one transition of {dm} must '
                            f'take {msg.name} on the atomic bus" end;')
                for j, t in enumerate(cands):
                    code += [f"if l__g{j} then", *_ind(self.stmts(t.body, ctx, p)), "end;"]
            kw = "if" if not body else "elsif"
            body += [f"{kw} {st} = {self.state_const(dm, sname)} then", *_ind(code)]
        body.append("end;")
        return self.body_proc(f"B_{msg.name}_{sm}_{dm}", params, [], body, p, ctx), p.calls

    def procedures(self) -> list[str]:
        procs: dict[str, tuple[list[str], set[str]]] = {}
        for net in self.m.networks:
            if net.ordering is not ir.Ordering.BUS:
                continue
            for msg in self.net_messages(net):
                for sm, dm in self.pairs[msg.name]:
                    procs[f"B_{msg.name}_{sm}_{dm}"] = self.bus_proc(msg, sm, dm)
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
        for mach in self.m.machines:
            fires = {tr.index for tr in spontaneous(mach)}
            for tr in mach.transitions:
                if tr.stall:
                    continue
                if tr.kind is ir.TransitionKind.MESSAGE:
                    msg = self.m.message(tr.name)
                    net = self.net(msg.network)
                    if net.ordering is ir.Ordering.BUS:
                        continue
                    for sm, dm in self.pairs[msg.name]:
                        if dm == mach.name:
                            out += self.delivery(mach, tr, msg, net, sm)
                elif tr.index in fires:
                    out += self.action(mach, tr)
        return out

    def states_cond(self, mach: ir.Machine, me: _Node, states: tuple[str, ...]) -> str:
        st = self.inst(mach.name, me.idx, "st") + ".state"
        return "(" + " | ".join(f"{st} = {self.state_const(mach.name, x)}" for x in states) + ")"

    def action(self, mach: ir.Machine, tr: ir.Transition) -> list[str]:
        p = _Proc()
        me, binders = self.static_binders(mach.name, "l__self")
        binders += [f"l_{f.name}: {self.type(f.type)}" for f in tr.params]
        ctx = _Ctx("s", mach, me)
        name = f"T_{mach.name}_{tr.index}"
        out = self.body_proc(name, binders, [], self.guarded(tr, ctx, p), p, ctx)
        args = [b.split(":")[0] for b in binders]
        out += self.enabled_fn(name, binders, args)
        label = f"{mach.name} {tr.kind} {tr.name} #{tr.index}"
        self.rule_specs.append((label, binders, self.states_cond(mach, me, tr.states), name,
                                args))
        return out

    @staticmethod
    def enabled_fn(name: str, binders: list[str], args: list[str]) -> list[str]:
        head = f"function Can_{name}(s: State_t" + "".join(f"; {b}" for b in binders)
        call = ", ".join(["t", *args, "b"])
        return [head + "): boolean;", "var t: State_t;", "var b: boolean;", "begin",
                "  t := s;", "  b := false;", f"  {name}({call});", "  return !b;", "end;", ""]

    def delivery(self, mach: ir.Machine, tr: ir.Transition, msg: ir.Message,
                 net: ir.Network, sm: str) -> list[str]:
        out: list[str] = []
        src, sb = self.static_binders(sm, "l__src")
        me, db = self.static_binders(mach.name, "l__self")
        combos = [()] if net.ordering is ir.Ordering.FIFO else self.kind_combos(msg)
        for kinds in combos:
            p = _Proc()
            binders = [*sb, *db]
            prologue: list[str] = []
            if net.ordering is ir.Ordering.FIFO:
                q = self.queue(net, src, me, "s")
                p.decls["l__m"] = f"Msg_{net.name}"
                fields: dict[str, str | _Node] = {
                    f.name: (_Node(dyn=f"l__m.f_{msg.name}_{f.name}")
                             if isinstance(f.type, ir.HNodeT) else f"l__m.f_{msg.name}_{f.name}")
                    for f in msg.fields}
                prologue.append(f"l__m := {q}.q[0];")
                for k in range(net.capacity - 1):
                    prologue.append(f"{q}.q[{k}] := {q}.q[{k + 1}];")
                prologue += [f"undefine {q}.q[{net.capacity - 1}];",
                             f"{q}.count := {q}.count - 1;"]
                qs = self.queue(net, src, me, "st")
                present = f"({qs}.count > 0 & {qs}.q[0].mtype = MT_{msg.name})"
                suffix = sm
            else:
                extra, slots, fields = self.slot_binders(msg, kinds, "l__f")
                binders += extra
                for i, (_t, f, may_undef, j) in enumerate(self.slot_dims(msg, kinds)):
                    if j >= 0 or isinstance(f.type, ir.HNodeT):
                        continue
                    local = f"l__m_{f.name}"
                    p.decls[local] = self.type(f.type)
                    fields[f.name] = local
                    if may_undef:
                        hi = _t.split("..")[1]
                        prologue.append(f"if l__f{i} = {hi} then undefine {local} else "
                                        f"{local} := l__f{i} end;")
                    else:
                        prologue.append(f"{local} := l__f{i};")
                c = self.counter(msg, src, me, kinds, slots, "s")
                prologue[:0] = [f"{c} := {c} - 1;", f"s.t_{net.name} := s.t_{net.name} - 1;"]
                present = f"({self.counter(msg, src, me, kinds, slots, 'st')} > 0)"
                suffix = "_".join([sm, *(_kname(k) for k in kinds)])
            ctx = _Ctx("s", mach, me, src, fields)
            name = f"D_{mach.name}_{tr.index}_{suffix}"
            out += self.body_proc(name, binders, prologue, self.guarded(tr, ctx, p), p, ctx)
            args = [b.split(":")[0] for b in binders]
            out += self.enabled_fn(name, binders, args)
            label = f"{mach.name} receives {msg.name} from {sm} #{tr.index}"
            self.rule_specs.append((label, binders,
                                    f"{present} & {self.states_cond(mach, me, tr.states)}",
                                    name, args))
        return out

    # ------------------------------------------------------------ the model

    def instance_loops(self, machine: str, stem: str, inner: list[str]) -> list[str]:
        _node, binders = self.static_binders(machine, stem)
        for b in reversed(binders):
            inner = [f"for {b} do", *_ind(inner), "end;"]
        return inner

    def startstate(self) -> list[str]:
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
                return [f"for l__x: {self.type(v.type.elem)} do {target}[l__x] := false end;"]
            if isinstance(v.type, ir.ArrayT):
                return [f"for l__i: {self.type(v.type.index)} do "
                        f"{target}[l__i] := {self.expr(e, ctx)} end;"]
            return [f"{target} := {self.expr(e, ctx)};"]
        for v in self.m.globals:
            body += init(f"st.g_{v.name}", v)
        for mach in self.m.machines:
            node, _ = self.static_binders(mach.name, "l__i")
            d = self.inst(mach.name, node.idx, "st")
            inner = [f"{d}.state := {self.state_const(mach.name, mach.init_state)};"]
            for v in mach.vars:
                inner += init(f"{d}.v_{v.name}", v)
            body += self.instance_loops(mach.name, "l__i", inner)
        for net in self.m.networks:
            if net.ordering is ir.Ordering.FIFO:
                for sm, dm in self.net_pairs(net):
                    src, sb = self.static_binders(sm, "l__s")
                    dst, db = self.static_binders(dm, "l__d")
                    line = [f"{self.queue(net, src, dst, 'st')}.count := 0;"]
                    for b in reversed([*sb, *db]):
                        line = [f"for {b} do", *_ind(line), "end;"]
                    body += line
            elif net.ordering is ir.Ordering.UNORDERED:
                body.append(f"st.t_{net.name} := 0;")
                for msg in self.net_messages(net):
                    for sm, dm in self.pairs[msg.name]:
                        for kinds in self.kind_combos(msg):
                            src, sb = self.static_binders(sm, "l__s")
                            dst, db = self.static_binders(dm, "l__d")
                            extra, slots, _ = self.slot_binders(msg, kinds, "l__f")
                            line = [f"{self.counter(msg, src, dst, kinds, slots, 'st')} := 0;"]
                            for b in reversed([*sb, *db, *extra]):
                                line = [f"for {b} do", *_ind(line), "end;"]
                            body += line
        return ['startstate "init"', "begin", *_ind(body), "end;", ""]

    def rules(self) -> list[str]:
        out = []
        for label, binders, cond, name, args in self.rule_specs:
            can = f"Can_{name}(" + ", ".join(["st", *args]) + ")"
            call = f"{name}(" + ", ".join(["st", *args, "b"]) + ");"
            rule = [f'rule "{label}"', f"  {cond} & {can}", "==>", "var b: boolean;", "begin",
                    "  b := false;", f"  {call}", "end;"]
            out += self.ruleset(binders, rule)
        for net in self.m.networks:  # NOTE(no-transition)
            if net.ordering is ir.Ordering.BUS:
                continue
            for msg in self.net_messages(net):
                for sm, dm in self.pairs[msg.name]:
                    mach = self.machines[dm]
                    missing = [s for i, s in enumerate(mach.state_type.members)
                               if (mach.name, msg.name, i) not in self.handlers]
                    if not missing:
                        continue
                    src, sb = self.static_binders(sm, "l__src")
                    me, db = self.static_binders(dm, "l__self")
                    combos = [()] if net.ordering is ir.Ordering.FIFO else self.kind_combos(msg)
                    for kinds in combos:
                        binders = [*sb, *db]
                        if net.ordering is ir.Ordering.FIFO:
                            q = self.queue(net, src, me, "st")
                            present = f"({q}.count > 0 & {q}.q[0].mtype = MT_{msg.name})"
                        else:
                            extra, slots, _ = self.slot_binders(msg, kinds, "l__f")
                            binders += extra
                            present = f"({self.counter(msg, src, me, kinds, slots, 'st')} > 0)"
                        rule = [f'rule "no transition for {msg.name} from {sm} to {dm}"',
                                f"  {present} & {self.states_cond(mach, me, tuple(missing))}",
                                "==>", "begin",
                                f'  error "no transition for {msg.name} in {dm}";', "end;"]
                        out += self.ruleset(binders, rule)
        out += ['rule "idle (quiescent)"', "  Quiescent(st)", "==>", "begin", "end;", ""]
        return out

    def helpers(self) -> list[str]:
        out = []
        for t in self.m.indexes:
            out += [f"function SetSize_IDX_{t.name}(x: array [IDX_{t.name}] of boolean): "
                    f"0..{t.n};", f"var n: 0..{t.n};", "begin", "  n := 0;",
                    f"  for a: IDX_{t.name} do if x[a] then n := n + 1 end end;",
                    "  return n;", "end;", ""]
        eq = ["a.k = b.k"]
        for mach in self.m.machines:
            names = self.index_names(mach.name)
            if names:
                same = " & ".join(f"a.i_{n} = b.i_{n}" for n in names)
                eq.append(f"(a.k = {self.kind_const(mach.name)} ? ({same}) : true)")
        out += ["function NodeEq(a: Node_t; b: Node_t): boolean;", "begin",
                "  return " + " & ".join(eq) + ";", "end;", ""]
        conds = []
        for net in self.m.networks:
            if net.ordering is ir.Ordering.FIFO:
                for sm, dm in self.net_pairs(net):
                    src, sb = self.static_binders(sm, "l__s")
                    dst, db = self.static_binders(dm, "l__d")
                    c = f"{self.queue(net, src, dst, 's')}.count = 0"
                    for b in reversed([*sb, *db]):
                        c = f"forall {b} do {c} end"
                    conds.append(f"({c})")
            elif net.ordering is ir.Ordering.UNORDERED:
                conds.append(f"s.t_{net.name} = 0")
        for mach in self.m.machines:
            node, binders = self.static_binders(mach.name, "l__a")
            st = self.inst(mach.name, node.idx, "s") + ".state"
            stable = [self.state_const(mach.name, x.name) for x in mach.states if x.stable]
            c = " | ".join(f"{st} = {x}" for x in stable) or "false"
            for b in reversed(binders):
                c = f"forall {b} do {c} end"
            conds.append(f"({c})")
        out += ["function Quiescent(s: State_t): boolean;", "begin",
                "  return " + (" & ".join(conds) or "true") + ";", "end;", ""]
        return out

    def export(self) -> str:
        m = self.m
        out: list[str] = [
            f"-- Generated by `coherence export --to murphi` from {m.file}",
            "-- params: " + " ".join(f"{p.name}={p.value}" for p in m.params),
            "-- a hierarchical spec: NOTE(murphi-hierarchy) in coherence/export/murphi_hier.py",
        ]
        mon = [p.name for p in m.properties if p.kind == "coherence"]
        if mon:
            out.append(f"-- NOT exported: the coherence monitor ({', '.join(mon)}); "
                       "compare with it skipped.")
        out += ["", "type"]
        out += [f"  IDX_{t.name}: scalarset({t.n});" for t in m.indexes]
        consts = ", ".join(self.kind_const(x.name) for x in m.machines)
        out.append(f"  T_Node: enum {{ {consts} }};")
        out.append("  Node_t: record k: T_Node; " + " ".join(
            f"i_{t.name}: IDX_{t.name};" for t in m.indexes) + " end;")
        out += self.common_type_decls()
        for mach in m.machines:
            fields = [f"state: T_{mach.name}_state;"] + [
                f"v_{v.name}: {self.type(v.type)};" for v in mach.vars]
            out.append(f"  R_{mach.name}: record " + " ".join(fields) + " end;")
        sfields = [f"g_{v.name}: {self.type(v.type)};" for v in m.globals]
        for mach in m.machines:
            t = f"R_{mach.name}"
            for it in reversed(self.idx_types(mach.name)):
                t = f"array [{it}] of {t}"
            sfields.append(f"m_{mach.name}: {t};")
        for net in m.networks:
            if net.ordering is ir.Ordering.FIFO:
                for sm, dm in self.net_pairs(net):
                    sfields.append(f"n_{net.name}_{sm}_{dm}: "
                                   f"{self.queue_type(net, sm, dm)};")
            elif net.ordering is ir.Ordering.UNORDERED:
                sfields.append(f"t_{net.name}: 0..{net.capacity};")
                for msg in self.net_messages(net):
                    for sm, dm in self.pairs[msg.name]:
                        for kinds in self.kind_combos(msg):
                            name = f"n_{net.name}_{msg.name}_{sm}_{dm}" + "".join(
                                f"_{_kname(k)}" for k in kinds)
                            ctype = self.counter_type(msg, sm, dm, kinds, net.capacity)
                            sfields.append(f"{name}: {ctype};")
        out.append("  State_t: record")
        out += _ind(sfields, 2)
        out += ["  end;", "", "var", "  st: State_t;", ""]
        procs = self.procedures()
        invariants = [f'invariant "{inv.name}" {self.expr(inv.expr, _Ctx("st"))};'
                      for inv in m.invariants]
        assumes = [f'assume "{a.name}" {self.expr(a.expr, _Ctx("st"))};'
                   for a in m.assumptions]  # NOTE(assume)
        start = self.startstate()
        rules = self.rules()
        out += self.helpers()
        out += [x for _, text in sorted(self.fail_fns.items()) for x in text.split("\n")]
        out += count_fn_text(self.count_fns)  # they may call the functions above
        out += procs + start + rules + invariants + assumes
        return "\n".join(out) + "\n"


def rumur_symmetry_is_ours(model: ir.Model) -> bool:
    """Whether Rumur's symmetry group on the export (one permutation per scalarset) is the
    group our symmetry reduces by (ids of a nested index type permuted within each id of its
    parent): they coincide when no nested index type has two ids under a parent with two
    (NOTE(murphi-hierarchy))."""
    sizes = {t.name: t.n for t in model.indexes}
    return all(t.parent is None or t.n <= 1 or sizes[t.parent] <= 1 for t in model.indexes)


def hier_to_murphi(model: ir.Model) -> str:
    """The Murphi text of a hierarchical ``model`` (see the module doc)."""
    return HierMurphiExporter(model).export()
