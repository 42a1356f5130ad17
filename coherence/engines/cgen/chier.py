"""The generated C for hierarchical specs (issue 20): machines replicated over index tuples.

NOTE(compiled-hierarchy): a hierarchical spec (``ir.Model.is_hierarchical``) has no home and
no agents; every machine instance is a node (``ir.instances``: machines in declaration order,
each one's instances in lexicographic order of their index values) and each line of the
layout holds one block per node (``coherence.layout``'s NOTE(hierarchy)). The general
generator (``codegen._Gen``, ``cexpr.Frame``) is reused with the few places that assume the
two built-in kinds replaced here:

- ``HierCModel`` places the node blocks: machine ``M``'s instance ``node`` sits at
  ``line_base + moff[M] + (node - first[M]) * mstride[M]`` (its instances are consecutive);
- ``HierFrame`` translates nodes (``L1[g, s]``, ``msg.src.sm``, ``n is L1``), variables of
  other instances (checked to be instances of their machine, as ``Semantics.agent_expr``
  does), multicasts (``broadcast M to L1[g] except n``: a loop over the instances whose
  leading indices are the prefix, in node order) and ``perform`` (the monitor entry of a
  processor, ``co_proc[node]``);
- ``HierGen`` runs every machine's events and rules, dispatches a delivered message on its
  receiver's machine, tests every node for quiescence, and adds the node tables
  (``co_proc``: a node's processor or -1; ``co_nidx``: a node's value of each index type or
  -1) and the hierarchy's symmetry (``chsym.py``).

Every check keeps the reference's order and error code (``cexpr``'s module doc), so the
differential tests compare failure keys as well as successors.
"""

from __future__ import annotations

from typing import Any

import attrs

from coherence import ir
from coherence.engines.cgen.cexpr import Frame
from coherence.engines.cgen.chsym import hier_symmetry_source
from coherence.engines.cgen.cmodel import CModel, CodegenError, Shape, shape_of
from coherence.engines.cgen.codegen import _Gen
from coherence.errors import Span
from coherence.layout import Layout


@attrs.frozen
class Block:
    """Where one machine's instances sit in a line's ``v[]`` slots."""

    machine: ir.Machine
    first: int  # its first node
    count: int  # its instances
    off: int  # the first instance's block, from the line's start
    stride: int  # slots per instance (control state, then variables)
    vstart: dict[str, int]  # a variable's first slot in the block
    vshape: dict[str, Shape]
    sizes: tuple[int, ...]  # its index types' sizes, in its order

    def contains(self, node: str) -> str:
        if self.count == 1:
            return f"{node} == {self.first}"
        return f"{node} >= {self.first} && {node} < {self.first + self.count}"


class HierCModel(CModel):
    """``CModel`` with one block per machine instance instead of a home and agents."""

    def _place_nodes(self, off: int) -> None:
        model = self.model
        self.insts = ir.instances(model)
        self.blocks: dict[str, Block] = {}
        start = off
        for m in model.machines:
            nodes = [i for i in self.insts if i.machine == m.name]
            shapes = {v.name: shape_of(v.type, self.flags) for v in m.vars}
            vstart: dict[str, int] = {}
            c = 1
            for v in m.vars:
                vstart[v.name] = c
                c += shapes[v.name].size
            sizes = tuple(f.type.size() for f in m.indices)
            self.blocks[m.name] = Block(m, nodes[0].node, len(nodes), off, c, vstart, shapes,
                                        sizes)
            off += c * len(nodes)
        self.line_stride += off - start
        self.index_names = [t.name for t in model.indexes]
        event = ir.event_machine(model)
        procs = [i.node for i in self.insts if event is not None and i.machine == event.name]
        self.proc_of = {node: k for k, node in enumerate(procs)}
        if len(procs) != self.n:
            raise CodegenError(f"internal: {len(procs)} processors, the model says {self.n}")
        self.node_index: list[dict[str, int]] = []
        for inst in self.insts:
            m = model.machine(inst.machine)
            self.node_index.append({str(f.type): v for f, v in zip(m.indices, inst.values,
                                                                   strict=True)})

    def _check_positions(self) -> None:
        super()._check_positions()
        lay = self.layout
        for line in range(self.lines):
            for inst in self.insts:
                b = self.blocks[inst.machine]
                at = line * self.line_stride + b.off + (inst.node - b.first) * b.stride
                trees = lay.line_caches[line][inst.node]
                self._expect(trees[0], at)
                for v, tree in zip(b.machine.vars, trees[1:], strict=True):
                    self._expect(tree, at + b.vstart[v.name])

    def node_block(self, b: Block, line: str, node: str) -> str:
        """The C index of the first slot (control state) of ``node``, an instance of ``b``."""
        base = f"{self.line_base(line)}+{b.off}"
        if b.count == 1:
            return base
        rel = f"({node})" if b.first == 0 else f"(({node})-{b.first})"
        return f"{base}+{rel}*{b.stride}"

    def state_slot(self, machine: ir.Machine, line: str, agent: str) -> str:
        return self.node_block(self.blocks[machine.name], line, agent)

    def tables(self) -> str:
        """``co_proc`` and ``co_nidx`` (module doc)."""
        nt = max(1, len(self.index_names))
        proc = ", ".join(str(self.proc_of.get(i.node, -1)) for i in self.insts)
        nidx = ", ".join(str(self.node_index[i.node].get(t, -1)) for i in self.insts
                         for t in self.index_names) or "-1"
        return (f"#define CO_NODES {len(self.insts)}\n"
                f"#define CO_NT {nt}\n"
                f"CO_CONST int co_proc[CO_NODES] = {{{proc}}};\n"
                f"CO_CONST int co_nidx[{len(self.insts) * nt}] = {{{nidx}}};\n")


class HierFrame(Frame):
    """``Frame`` for hierarchical specs: nodes, other instances' variables, multicasts."""

    cm: HierCModel

    def agent(self, e: ir.Expr, span: Span, machine: str | None = None) -> str:
        """``Semantics.agent_expr`` of a hierarchy: a node, checked to be a processor
        (``machine`` None) or an instance of ``machine``."""
        a = self.ex(e)
        self.emit(f"if ({a} == CO_UNDEF) {self.fail('undefined-agent', span)}")
        if machine is None:
            self.emit(f"if ((unsigned){a} >= CO_NODES || co_proc[{a}] < 0) "
                      f"{self.fail('not-agent', span)}")
        elif not (isinstance(e, ir.NodeOf) and e.machine == machine):
            b = self.cm.blocks[machine]
            self.emit(f"if (!({b.contains(a)})) {self.fail('not-agent', span)}")
        return a

    def _block(self, machine: str, agent: ir.Expr, span: Span) -> tuple[str, Block]:
        """The first slot of the instance ``agent`` of ``machine`` (checked)."""
        b = self.cm.blocks[machine]
        a = "self" if isinstance(agent, ir.SelfId) else self.agent(agent, span, machine)
        return self.cm.node_block(b, "line", a), b

    def place(self, e: ir.Expr, span: Span | None = None) -> tuple[str, Shape]:
        if isinstance(e, ir.MVar):
            assert e.agent is not None
            at, b = self._block(e.machine, e.agent, e.span)
            return f"{at}+{b.vstart[e.name]}", b.vshape[e.name]
        return super().place(e, span)

    def _variable_slot(self, target: ir.Expr, span: Span) -> tuple[str, Shape]:
        if isinstance(target, ir.MVar):
            assert target.agent is not None
            at, b = self._block(target.machine, target.agent, span)
            return f"{at}+{b.vstart[target.name]}", b.vshape[target.name]
        return super()._variable_slot(target, span)

    def ex(self, e: ir.Expr) -> str:
        if isinstance(e, ir.MState):
            assert e.agent is not None
            at, _b = self._block(e.machine, e.agent, e.span)
            return self.let(f"u->v[{at}]")
        if isinstance(e, ir.NodeOf):
            return self._node_of(e)
        if isinstance(e, ir.NodeIndex):
            return self._node_index(e)
        if isinstance(e, ir.NodeIs):
            n = self.ex(e.node)
            self.check(n, e.span)
            return self.let(f"({self.cm.blocks[e.machine].contains(n)})")
        if isinstance(e, ir.Call) and e.func == "all_agents":
            raise CodegenError(f"{e.span}: all_agents() in a hierarchical spec")
        return super().ex(e)

    def _node_of(self, e: ir.NodeOf) -> str:
        """``Semantics._node_of``: the flat node, mixed radix over the machine's indices."""
        b = self.cm.blocks[e.machine]
        if not e.indices:
            return str(b.first)
        k = self.let("0")
        for x, size in zip(e.indices, b.sizes, strict=True):
            v = self.ex(x)
            self.check(v, e.span)
            self.emit(f"{k} = {k} * {size} + {v};")
        return self.let(f"{b.first} + {k}") if b.first else k

    def _node_index(self, e: ir.NodeIndex) -> str:
        t = self.cm.index_names.index(e.index)
        nt = max(1, len(self.cm.index_names))
        if isinstance(e.node, ir.SelfId) and self.machine is not None and any(
                str(f.type) == e.index for f in self.machine.indices):
            return self.let(f"co_nidx[self * {nt} + {t}]")
        n = self.ex(e.node)
        self.check(n, e.span)
        r = self.let(f"co_nidx[{n} * {nt} + {t}]")
        self.emit(f"if ({r} < 0) {self.fail('no-index', e.span)}")
        return r

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.Multicast):
            self._multicast(s)
        elif isinstance(s, ir.Perform):
            v = self.ex(s.value)
            self.check(v, s.span)
            a = self.agent(s.agent, s.span)
            if self.cm.monitor:
                self.emit(f"co_mon_{s.kind}(u, line, co_proc[{a}], {v});")
        elif isinstance(s, ir.Broadcast):
            raise CodegenError(f"{s.span}: a broadcast to agents in a hierarchical spec")
        else:
            super().stmt(s)

    def _multicast(self, s: ir.Multicast) -> None:
        """``Semantics._multicast``: to the instances whose leading indices are the prefix,
        in node order, but the excluded node."""
        b = self.cm.blocks[s.machine]
        args = [self.ex(a) for a in s.args]
        pre = self.let("0")
        for x, size in zip(s.prefix, b.sizes[:len(s.prefix)], strict=True):
            v = self.ex(x)
            self.check(v, s.span)
            self.emit(f"{pre} = {pre} * {size} + {v};")
        skip = self.ex(s.exclude) if s.exclude is not None else "-1"
        tail = 1
        for size in b.sizes[len(s.prefix):]:
            tail *= size
        k = self.tmp()
        self.open(f"for (int {k} = {b.first} + {pre} * {tail}; "
                  f"{k} < {b.first} + ({pre} + 1) * {tail}; {k}++)")
        self.emit(f"if ({k} == {skip}) continue;")
        self._deliver(self.cm.msg_index[s.message], args, k, s.span)
        self.close()

    def _range_check(self, v: str, t: ir.Type, span: Span) -> None:
        if isinstance(t, (ir.IndexT, ir.HNodeT)):
            self.emit(f"if ({v} != CO_UNDEF && ({v} < 0 || {v} > {t.n - 1})) "
                      f"{self.fail('range', span)}")
            return
        super()._range_check(v, t, span)


class HierGen(_Gen):
    """``_Gen`` for hierarchical specs (module doc)."""

    frame_class = HierFrame
    cm: HierCModel

    def _helpers(self) -> str:
        return self.cm.tables() + super()._helpers()

    def _symmetry(self) -> str:
        return hier_symmetry_source(self.cm)

    def _spontaneous(self) -> list[str]:
        body: list[str] = []
        for b in self.cm.blocks.values():
            if not any(t.kind != "message" for t in b.machine.transitions):
                continue
            if b.count == 1:
                body.append(f"        {{ const int nd = {b.first};")
            else:
                body.append(f"        for (int nd = {b.first}; nd < {b.first + b.count}; "
                            "nd++) {")
            at = self.cm.node_block(b, "line", "nd")
            body.append(f"            const unsigned st = u.v[{at}];")
            body += self._instances(b.machine, "nd", "            ")
            body.append("        }")
        return body

    def _receivers(self) -> list[tuple[ir.Machine | None, str, str]]:
        return [(b.machine, b.contains("dst"), "dst") for b in self.cm.blocks.values()]

    def _stable_tests(self) -> list[str]:
        out = []
        for b in self.cm.blocks.values():
            stable = sum(1 << i for i, s in enumerate(b.machine.states) if s.stable)
            if stable == (1 << len(b.machine.states)) - 1:
                continue
            test = (f"if (!((0x{stable:x}u >> u.v[{self.cm.node_block(b, 'line', 'nd')}]) & 1)) "
                    "return 0;")
            out.append(f"        for (int nd = {b.first}; nd < {b.first + b.count}; nd++) "
                       f"{test}")
        return out


def hier_generator(model: ir.Model, layout: Layout, liveness: bool = False) -> Any:
    """The generator of a hierarchical spec's C (``codegen.generate``)."""
    return HierGen(HierCModel(model, layout), liveness)
