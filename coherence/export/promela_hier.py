"""Hierarchical specs (``machine L1[g: gpu, s: sm]``) -> Promela, for Spin.

NOTE(promela-hierarchy): the encoding of ``coherence.export.promela`` (NOTE(promela-encoding))
with the semantics' flat node numbering (NOTE(hierarchy-nodes)) in place of agents and home:

* a node is an int 0..N-1, machines in declaration order, each one's instances in
  lexicographic order of their index values; ``L1[g, s]`` is ``base + g * sms + s`` and
  ``n.gpu`` is read back by division (checked: a node of a machine without that index is the
  semantics' model error);
* every node's control state is ``k_state[node]``; a variable ``v`` of machine ``M`` is
  ``m_M_v``, one entry per instance of ``M`` (``node - base``);
* fifo queues are per (source node, destination node), unordered networks a sorted multiset
  of (source, destination, type, fields), both exactly as for flat specs;
* ``broadcast M to L1[g] except n`` is a loop over ``L1``'s nodes in node order (the
  semantics' order, which matters on the atomic bus).

Spin has no symmetry reduction: the count relation ``(READY + 1) * ours + 1`` holds with our
symmetry off, as for flat specs.
"""

from __future__ import annotations

import math

from coherence import ir
from coherence.errors import Span
from coherence.export.promela import (
    ExportError,
    PromelaExporter,
    _args,
    _cells,
    _Ctx,
    _ind,
    _Instance,
    _tag,
)
from coherence.semantics import BUS_NESTING_LIMIT, param_values, spontaneous


class HierPromelaExporter(PromelaExporter):
    def __init__(self, model: ir.Model) -> None:
        super().__init__(model)
        self.insts = ir.instances(model)
        self.nodes = len(self.insts)
        # per machine: (first node, number of instances, index sizes, index type names)
        self.block: dict[str, tuple[int, int, list[int], list[str]]] = {}
        for mach in model.machines:
            nodes = [i.node for i in self.insts if i.machine == mach.name]
            sizes = [f.type.size() for f in mach.indices]
            names = [f.type.name for f in mach.indices if isinstance(f.type, ir.IndexT)]
            self.block[mach.name] = (nodes[0], len(nodes), sizes, names)
        proc = ir.event_machine(model)
        self.processor = proc.name if proc is not None else None

    # ------------------------------------------------------------ nodes

    def in_machine(self, x: str, machine: str) -> str:
        base, count, _, _ = self.block[machine]
        return f"(({x}) >= {base} && ({x}) < {base + count})"

    def node_of(self, e: ir.Expr, machine: str | None, ctx: _Ctx, pre: list[str],
                span: Span) -> str:
        """A node-valued expression, checked defined and (``machine``) an instance of it, or
        (None) a processor: what ``Semantics.agent_expr`` checks."""
        if isinstance(e, ir.SelfId):
            assert ctx.me is not None
            return ctx.me
        v = self.defined(pre, self.expr(e, ctx, pre), "node", span)
        want = machine or self.processor
        if want is None:
            self.check(pre, "false", "no machine handles processor events", span)
        else:
            self.check(pre, self.in_machine(v, want),
                       f"the node is not an instance of {want}" if machine else
                       "the node is not a processor", span)
        return v

    def index_value(self, x: str, index: str, ctx: _Ctx, pre: list[str], span: Span) -> str:
        """The value of index type ``index`` of node ``x`` (NodeIndex)."""
        options = []
        for mach in self.m.machines:
            base, _count, sizes, names = self.block[mach.name]
            if index not in names:
                continue
            j = names.index(index)
            stride = math.prod(sizes[j + 1:])
            options.append((self.in_machine(x, mach.name),
                            f"((({x}) - {base}) / {stride}) % {sizes[j]}"))
        self.check(pre, " || ".join(c for c, _ in options) or "false",
                   f"the node has no {index} index", span)
        out = "0"
        for cond, val in reversed(options):
            out = f"({cond} -> ({val}) : {out})"
        return out

    # ------------------------------------------------------------ storage

    def arrays(self) -> list[tuple[str, int]]:
        flat = super().arrays()  # globals and networks: no home, no cache here
        k = len(self.m.globals)
        mine: list[tuple[str, int]] = [("k_state", self.nodes)]
        for mach in self.m.machines:
            count = self.block[mach.name][1]
            mine += [(f"m_{mach.name}_{v.name}", count * _cells(v.type)) for v in mach.vars]
        return [*flat[:k], *mine, *flat[k:]]

    def loc(self, e: ir.Expr, ctx: _Ctx, pre: list[str]) -> tuple[str, str | None]:
        if isinstance(e, ir.MVar):
            assert e.agent is not None
            node = self.node_of(e.agent, e.machine, ctx, pre, e.span)
            base = self.block[e.machine][0]
            return f"m_{e.machine}_{e.name}", f"(({node}) - {base}) * {_cells(e.type)}"
        return super().loc(e, ctx, pre)

    def state_var(self, mach: ir.Machine, agent: str | None) -> str:
        return f"k_state[{agent}]"

    def source(self, ctx: _Ctx) -> str:
        assert ctx.me is not None
        return ctx.me

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr, ctx: _Ctx, pre: list[str]) -> tuple[str, bool]:
        match e:
            case ir.MState():
                assert e.agent is not None
                return f"k_state[{self.node_of(e.agent, e.machine, ctx, pre, e.span)}]", False
            case ir.NodeOf():
                return self.node_expr(e, ctx, pre), False
            case ir.NodeIndex():
                x = self.defined(pre, self.expr(e.node, ctx, pre), "node", e.span)
                return self.index_value(x, e.index, ctx, pre, e.span), False
            case ir.NodeIs():
                x = self.defined(pre, self.expr(e.node, ctx, pre), "node", e.span)
                return self.in_machine(x, e.machine), False
        return super().expr(e, ctx, pre)

    def node_expr(self, e: ir.NodeOf, ctx: _Ctx, pre: list[str]) -> str:
        base, _, sizes, _ = self.block[e.machine]
        if len(e.indices) == 1 and isinstance(e.indices[0].type, ir.HNodeT):
            return self.node_of(e.indices[0], e.machine, ctx, pre, e.span)
        k = "0"
        for x, size in zip(e.indices, sizes, strict=True):
            v = self.defined(pre, self.expr(x, ctx, pre), "machine index", e.span)
            k = f"({k}) * {size} + ({v})" if k != "0" else f"({v})"
        return str(base) if not e.indices else f"({base} + {k})"

    def call(self, e: ir.Call, ctx: _Ctx, pre: list[str]) -> str:
        if e.func == "size":
            t = e.args[0].type
            assert isinstance(t, ir.SetT)
            s = self.defined(pre, self.expr(e.args[0], ctx, pre), "set", e.span)
            bits = " + ".join(f"(({s} >> {i}) & 1)" for i in range(t.elem.n))
            return f"({bits or '0'})"
        return super().call(e, ctx, pre)

    # ------------------------------------------------------------ statements

    def stmt(self, s: ir.Stmt, ctx: _Ctx) -> list[str]:
        pre: list[str] = []
        if isinstance(s, ir.Multicast):
            return self.multicast(s, ctx)
        if isinstance(s, ir.Perform):
            self.defined(pre, self.expr(s.value, ctx, pre), f"value of perform {s.kind}",
                         s.span)
            self.node_of(s.agent, None, ctx, pre, s.span)
            return pre or ["skip;"]
        if isinstance(s, ir.Broadcast):
            raise ExportError("broadcast without `to` in a hierarchical spec", s.span)
        return super().stmt(s, ctx)

    def multicast(self, s: ir.Multicast, ctx: _Ctx) -> list[str]:
        """To every instance of the machine whose leading indices are the prefix's values,
        in node order (NOTE(hierarchy-nodes))."""
        pre: list[str] = []
        args = self.args(s.args, ctx, pre)
        base, count, sizes, _ = self.block[s.machine]
        want = [self.defined(pre, self.expr(x, ctx, pre), "machine index", s.span)
                for x in s.prefix]
        skip = "-1"
        if s.exclude is not None:
            skip = self.temp("ex")
            pre.append(f"{skip} = {self.expr(s.exclude, ctx, pre)[0]};")
        x = self.temp("mc")
        conds = [f"{x} != {skip}"]
        for j, w in enumerate(want):
            conds.append(f"(({x} - {base}) / {math.prod(sizes[j + 1:])}) % {sizes[j]} == {w}")
        inner = self.deliver(s.message, args, x, ctx, s.span)
        stop = " && blk == 0" if self.stmt_may_block(s) else ""
        return [*pre, f"{x} = {base};", f"do :: {x} < {base + count}{stop} ->",
                f"  if :: {' && '.join(conds)} ->", *_ind(inner, 2), "  :: else -> skip fi;",
                f"  {x}++", ":: else -> break", "od;"]

    def bus(self, msg: ir.Message, args: list[str], src: str, dst: str, ctx: _Ctx,
            span: Span) -> list[str]:
        d = ctx.depth + 1
        if ctx.depth > BUS_NESTING_LIMIT:
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
        for mach in self.m.machines:
            hctx = _Ctx(d, mach, me, msrc, fields)
            branches += [f":: {self.in_machine(me, mach.name)} ->",
                         *_ind(self.bus_handler(msg, mach, hctx, span), 2)]
        return [*out, "if", *branches, "fi;"]

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
                    found.add(f"m_{root.machine}_{root.name}")
            elif isinstance(s, ir.If):
                self.written_in(s.then, mach, found, seen)
                self.written_in(s.orelse, mach, found, seen)
            elif isinstance(s, ir.For):
                self.written_in(s.body, mach, found, seen)
            elif isinstance(s, (ir.Send, ir.Multicast)):
                net = self.m.network(self.m.message(s.message).network)
                if net.ordering is not ir.Ordering.BUS:
                    found.update(self.net_arrays(net))
                elif s.message not in seen:
                    seen.add(s.message)
                    for other in self.m.machines:
                        for t in other.transitions:
                            if t.kind is ir.TransitionKind.MESSAGE and t.name == s.message:
                                found.add("k_state")
                                self.written_in(t.body, other, found, seen)

    # ------------------------------------------------------------ instances

    def label(self, node: int) -> str:
        inst = self.insts[node]
        if not inst.values:
            return inst.machine
        return f"{inst.machine}[{', '.join(map(str, inst.values))}]"

    def machine_nodes(self, mach: ir.Machine) -> range:
        base, count, _, _ = self.block[mach.name]
        return range(base, base + count)

    def instances(self) -> list[_Instance]:
        """As ``Semantics.action_instances`` (NOTE(actions)), per node."""
        out: list[_Instance] = []
        for mach in self.m.machines:
            for tr in spontaneous(mach):
                for a in self.machine_nodes(mach):
                    for ps in param_values(tr):
                        out.append(_Instance(f"{self.label(a)} {tr.kind} {tr.name}{_args(ps)}",
                                             mach, tr, a, ps))
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
                    for d in self.machine_nodes(mach):
                        for s in range(self.nodes):
                            out.append(_Instance(
                                f"{self.label(d)} receives {tr.name} from {self.label(s)} "
                                f"#{tr.index}", mach, tr, d, (), net, s * self.nodes + d, s))
        return out

    def setup(self, inst: _Instance) -> tuple[str, _Ctx, list[str]]:
        net = inst.net
        if net is None or net.ordering is not ir.Ordering.UNORDERED:
            return super().setup(inst)
        mach, tr = inst.machine, inst.tr
        msg = self.m.message(tr.name)
        u, i = f"u_{net.name}", inst.where
        ctx = _Ctx(0, mach, self.fixed("self_0"))
        st = f"k_state[{u}_dst[{i}]]"
        cond = (f"{i} < {u}_cnt && {u}_t[{i}] == {self.msg_index[msg.name]} && "
                f"{self.in_machine(f'{u}_dst[{i}]', mach.name)} && ("
                + " || ".join(f"{st} == {self.state_const(mach, x)}" for x in tr.states) + ")")
        ctx.src = self.fixed("msrc_0")
        bind = [f"msrc_0 = {u}_src[{i}];", f"self_0 = {u}_dst[{i}];"]
        for f in msg.fields:
            ctx.fields[f.name] = self.fixed(f"mf_0_{f.name}")
            bind.append(f"mf_0_{f.name} = {u}_{msg.name}_{f.name}[{i}];")
        return cond, ctx, bind

    # ------------------------------------------------------------ checks in every state

    def problems(self) -> list[str]:
        out: list[str] = []
        for net in self.m.networks:
            msgs = self.net_msgs(net)
            if net.ordering is ir.Ordering.BUS or not msgs:
                continue
            for mach in self.m.machines:
                if net.ordering is ir.Ordering.FIFO:
                    c = net.capacity
                    for d in self.machine_nodes(mach):
                        for s in range(self.nodes):
                            q = s * self.nodes + d
                            head = (f"f_{net.name}_len[{q}] > 0", f"f_{net.name}_t[{q * c}]")
                            out += self.no_handler(mach, msgs, head, f"k_state[{d}]")
                else:
                    u = f"u_{net.name}"
                    for i in range(net.capacity):
                        head = (f"{i} < {u}_cnt && {self.in_machine(f'{u}_dst[{i}]', mach.name)}",
                                f"{u}_t[{i}]")
                        out += self.no_handler(mach, msgs, head, f"k_state[{u}_dst[{i}]]")
        return out

    def invariants(self) -> list[list[str]]:
        out: list[list[str]] = []
        for inv in self.m.invariants:
            ctx = _Ctx(0, self.m.machines[0], None)
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
            for a in self.machine_nodes(mach):
                conds.append("(" + (" || ".join(f"k_state[{a}] == {x}" for x in stable)
                                    or "false") + ")")
        return " && ".join(conds) or "true"

    def initial(self) -> list[str]:
        out: list[str] = []
        ctx = _Ctx(0, self.m.machines[0], None)
        self.fixed("t_init")

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
        for v in self.m.globals:
            init(f"g_{v.name}", v, _cells(v.type) if isinstance(v.type, ir.ArrayT) else 0, 1)
        for mach in self.m.machines:
            base, count, _, _ = self.block[mach.name]
            out.append(f"t_init = {base}; do :: t_init < {base + count} -> k_state[t_init] = "
                       f"{mach.state_index(mach.init_state)}; t_init++ :: else -> break od;")
            for v in mach.vars:
                init(f"m_{mach.name}_{v.name}", v, _cells(v.type), count)
        return out


def hier_to_promela(model: ir.Model) -> str:
    """The Promela text of a hierarchical ``model`` (see the module doc)."""
    return HierPromelaExporter(model).export()

