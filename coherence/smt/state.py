"""The state of a model for a fixed number of agents, as Z3 terms.

Mirrors ``coherence.semantics``'s nested tuples (NOTE(values)): every scalar is a Z3 ``Int``
holding the run-time int, with ``UNDEF`` as one more value; a set of agents is a tuple of Z3
``Bool`` (one per agent); an array is a tuple of its elements. Networks are bounded slot arrays:
an unordered network is ``capacity`` slots (valid, line, src, dst, type, fields...); a FIFO
network is, per (src, dst, line), a count and ``capacity`` slots (type, fields...); the atomic
bus has no state (delivery happens inside the sending step).

NOTE(z3-hierarchy): a hierarchical spec's state has the semantics' shape too (NOTE(hierarchy) in
``coherence.semantics``): no home, one row of ``caches`` per node (``ir.instances``), each row
``(state, *vars)`` of that node's own machine; node ids 0..nodes-1 are the sources and
destinations of messages, and the monitor has one entry per processor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.errors import Span, SpecError
from coherence.semantics import UNDEF


class Unsupported(SpecError):
    """A construct the Z3 back end cannot encode (reported as bad input, exit code 2)."""


@attrs.define
class SetV:
    bits: tuple[Any, ...]  # z3 Bool per agent


@attrs.define
class ArrV:
    elems: tuple[Any, ...]


SV = Any  # z3 ArithRef | SetV | ArrV


@attrs.define
class Slot:
    """One place of an unordered network."""

    valid: Any
    line: Any
    src: Any
    dst: Any
    type: Any
    fields: list[Any]


@attrs.define
class Queue:
    """One FIFO queue (src, dst, line) of a fifo network."""

    count: Any
    types: list[Any]
    fields: list[list[Any]]


@attrs.define
class MonAgent:
    """The coherence monitor of one agent on one line: view, and per value whether it was
    written since (``written``) and which values were written after it (``after``)."""

    view: Any
    written: list[Any]
    after: list[list[Any]]


@attrs.define
class SymState:
    lines: list[tuple[list[SV], list[SV], list[list[SV]]]]
    nets: list[Any]  # list[Slot] | dict[(src, dst, line), Queue] | None
    monitor: list[list[MonAgent]]

    def copy(self) -> SymState:
        def cp(x: Any) -> Any:
            if isinstance(x, list):
                return [cp(y) for y in x]
            if isinstance(x, tuple):
                return tuple(cp(y) for y in x)
            if isinstance(x, dict):
                return {k: cp(v) for k, v in x.items()}
            if isinstance(x, Slot):
                return Slot(x.valid, x.line, x.src, x.dst, x.type, list(x.fields))
            if isinstance(x, Queue):
                return Queue(x.count, list(x.types), [list(f) for f in x.fields])
            if isinstance(x, MonAgent):
                return MonAgent(x.view, list(x.written), [list(a) for a in x.after])
            return x
        return SymState(cp(self.lines), cp(self.nets), cp(self.monitor))


def terms(x: Any) -> Iterator[Any]:
    """Every Z3 leaf term of a state (or part of one), in a fixed order."""
    if isinstance(x, SymState):
        yield from terms(x.lines)
        yield from terms(x.nets)
        yield from terms(x.monitor)
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from terms(y)
    elif isinstance(x, dict):
        for k in sorted(x):
            yield from terms(x[k])
    elif isinstance(x, SetV):
        yield from x.bits
    elif isinstance(x, ArrV):
        yield from terms(x.elems)
    elif isinstance(x, Slot):
        yield from (x.valid, x.line, x.src, x.dst, x.type, *x.fields)
    elif isinstance(x, Queue):
        yield x.count
        yield from x.types
        yield from terms(x.fields)
    elif isinstance(x, MonAgent):
        yield x.view
        yield from x.written
        yield from terms(x.after)
    elif x is not None:
        yield x


# NOTE(z3-width): scalars are signed bit-vectors of WIDTH bits (bit-blasted by Z3, much faster
# than integer arithmetic here); every spec value is small, and UNDEF_BV stands for UNDEF.
WIDTH = 16
UNDEF_BV = -(1 << (WIDTH - 1))


def num(v: int) -> Any:
    return z3.BitVecVal(UNDEF_BV if v == UNDEF else v, WIDTH)


def ivar(name: str) -> Any:
    return z3.BitVec(name, WIDTH)


def is_num(t: Any) -> bool:
    return z3.is_bv_value(t)


def as_int(t: Any) -> int:
    """A literal term's run-time value (``UNDEF`` for the undefined marker)."""
    v = t.as_signed_long()
    return UNDEF if v == UNDEF_BV else v


def undef() -> Any:
    return num(UNDEF)


class Layout:
    """Names and builds the state variables of one model at a fixed number of agents."""

    def __init__(self, model: ir.Model) -> None:
        self.model = model
        self.n = model.agents
        self.home_id = model.agents
        self.hier = model.is_hierarchical
        # NOTE(z3-hierarchy): the machine of each row of ``caches`` (legacy: the cache, once
        # per agent), and how many nodes messages name (legacy: the agents and the home)
        self.rows: list[ir.Machine] = (
            [model.machine(i.machine) for i in ir.instances(model)] if self.hier
            else [model.caches[0]] * self.n if model.caches else [])
        self.nodes = len(self.rows) if self.hier else self.n + 1
        self.pairs = fifo_pairs(model) if self.hier else {}
        self.max_fields = max((len(m.fields) for m in model.messages), default=0)
        for v in self._all_vars():
            _check_type(v.type, v.span)

    def _all_vars(self) -> Iterator[ir.Var]:
        yield from self.model.globals
        for m in self.model.machines:
            yield from m.vars

    def fifo_keys(self, net: str | None = None) -> list[tuple[int, int, int]]:
        """The (src, dst, line) queues of a FIFO network: every pair of nodes, or in a
        hierarchical spec the pairs its sends can connect (``fifo_pairs``)."""
        nodes = range(self.nodes)
        pairs = self.pairs.get(net) if net is not None else None
        return [(s, d, ln) for s in nodes for d in nodes for ln in range(self.model.lines)
                if pairs is None or (s, d) in pairs]

    def fresh(self, prefix: str) -> SymState:
        """A state whose every leaf is a fresh Z3 constant named after ``prefix``."""
        counter = iter(range(1 << 30))

        def i(name: str) -> Any:
            return ivar(f"{prefix}|{name}|{next(counter)}")

        def b(name: str) -> Any:
            return z3.Bool(f"{prefix}|{name}|{next(counter)}")

        return self._build(i, b)

    def _build(self, i: Callable[[str], Any], b: Callable[[str], Any]) -> SymState:
        m = self.model

        def value(t: ir.Type, name: str) -> SV:
            if isinstance(t, ir.SetT):
                return SetV(tuple(b(f"{name}.{a}") for a in range(t.elem.n)))
            if isinstance(t, ir.ArrayT):
                return ArrV(tuple(value(t.elem, f"{name}[{k}]") for k in ir.domain(t.index)))
            return i(name)

        lines = []
        for ln in range(m.lines):
            g = [value(v.type, f"L{ln}.{v.name}") for v in m.globals]
            h: list[SV] = []
            if m.home is not None:
                h = [i(f"L{ln}.{m.home.name}.state")]
                h += [value(v.type, f"L{ln}.{m.home.name}.{v.name}") for v in m.home.vars]
            cs: list[list[SV]] = []
            for a, c in enumerate(self.rows):
                one = [i(f"L{ln}.{c.name}[{a}].state")]
                one += [value(v.type, f"L{ln}.{c.name}[{a}].{v.name}") for v in c.vars]
                cs.append(one)
            lines.append((g, h, cs))
        nets: list[Any] = []
        for net in m.networks:
            if net.ordering is ir.Ordering.UNORDERED:
                nets.append([Slot(b(f"{net.name}{k}.valid"), i(f"{net.name}{k}.line"),
                                  i(f"{net.name}{k}.src"), i(f"{net.name}{k}.dst"),
                                  i(f"{net.name}{k}.type"),
                                  [i(f"{net.name}{k}.f{j}") for j in range(self.max_fields)])
                             for k in range(net.capacity)])
            elif net.ordering is ir.Ordering.FIFO:
                nets.append({key: Queue(i(f"{net.name}{key}.count"),
                                        [i(f"{net.name}{key}.type{k}")
                                         for k in range(net.capacity)],
                                        [[i(f"{net.name}{key}.f{k}.{j}")
                                          for j in range(self.max_fields)]
                                         for k in range(net.capacity)])
                             for key in self.fifo_keys(net.name)})
            else:
                nets.append(None)
        monitor: list[list[MonAgent]] = []
        if any(p.kind == "coherence" for p in m.properties):
            nv = m.values
            for ln in range(m.lines):
                monitor.append([MonAgent(i(f"mon{ln}.{a}.view"),
                                         [b(f"mon{ln}.{a}.w{v}") for v in range(nv)],
                                         [[b(f"mon{ln}.{a}.a{v}.{u}") for u in range(nv)]
                                          for v in range(nv)])
                                for a in range(self.n)])
        return SymState(lines, nets, monitor)

    def initial(self, init_value: Callable[[ir.Var], int | tuple]) -> SymState:
        """The (single) initial state, as constants; ``init_value`` gives each var's value."""
        m = self.model

        def const(t: ir.Type, v: Any) -> SV:
            if isinstance(t, ir.SetT):
                return SetV(tuple(z3.BoolVal(bool((v >> a) & 1)) for a in range(t.elem.n)))
            if isinstance(t, ir.ArrayT):
                return ArrV(tuple(const(t.elem, x) for x in v))
            return num(v)

        def var(v: ir.Var) -> SV:
            x = init_value(v)
            if isinstance(v.type, ir.SetT) and x == UNDEF:
                raise Unsupported("the Z3 back end cannot encode an undefined set", v.span)
            return const(v.type, x)

        lines = []
        for _ in range(m.lines):
            g = [var(v) for v in m.globals]
            h: list[SV] = []
            if m.home is not None:
                h = [num(m.home.state_index(m.home.init_state))]
                h += [var(v) for v in m.home.vars]
            cs = [[num(c.state_index(c.init_state)), *(var(v) for v in c.vars)]
                  for c in self.rows]
            lines.append((g, h, cs))
        f, zero = z3.BoolVal(False), num(0)
        nets: list[Any] = []
        for net in m.networks:
            if net.ordering is ir.Ordering.UNORDERED:
                nets.append([Slot(f, zero, zero, zero, zero, [zero] * self.max_fields)
                             for _ in range(net.capacity)])
            elif net.ordering is ir.Ordering.FIFO:
                nets.append({key: Queue(zero, [zero] * net.capacity,
                                        [[zero] * self.max_fields for _ in range(net.capacity)])
                             for key in self.fifo_keys(net.name)})
            else:
                nets.append(None)
        monitor = []
        if any(p.kind == "coherence" for p in m.properties):
            nv = m.values
            for _ in range(m.lines):
                monitor.append([MonAgent(zero, [f] * nv, [[f] * nv for _ in range(nv)])
                                for _ in range(self.n)])
        return SymState(lines, nets, monitor)


    def of_state(self, state: tuple) -> SymState:
        """A concrete semantics state as Z3 constants (inverse of ``extract.state_of``): an
        unordered network's messages fill its first slots in stored order, the rest invalid."""
        m = self.model

        def const(t: ir.Type, v: Any) -> SV:
            if isinstance(t, ir.SetT):
                return SetV(tuple(z3.BoolVal(bool((v >> a) & 1)) for a in range(t.elem.n)))
            if isinstance(t, ir.ArrayT):
                return ArrV(tuple(const(t.elem, x) for x in v))
            return num(v)

        def machine(mach: ir.Machine | None, x: tuple) -> list[SV]:
            if mach is None:
                return []
            return [num(x[0]), *(const(v.type, y) for v, y in zip(mach.vars, x[1:], strict=True))]

        lines = [([const(v.type, x) for v, x in zip(m.globals, g, strict=True)],
                  machine(m.home, h),
                  [machine(r, c) for r, c in zip(self.rows, cs, strict=True)])
                 for g, h, cs in state[0]]
        f, zero = z3.BoolVal(False), num(0)

        def fields(fs: tuple) -> list[Any]:
            return [num(x) for x in fs] + [zero] * (self.max_fields - len(fs))

        nets: list[Any] = []
        for net, contents in zip(m.networks, state[1], strict=True):
            if net.ordering is ir.Ordering.UNORDERED:
                slots = [Slot(z3.BoolVal(True), num(ln), num(src), num(dst), num(t), fields(fs))
                         for ln, src, dst, t, fs in contents]
                slots += [Slot(f, zero, zero, zero, zero, [zero] * self.max_fields)
                          for _ in range(net.capacity - len(contents))]
                nets.append(slots)
            elif net.ordering is ir.Ordering.FIFO:
                queues = dict(contents)
                out = {}
                keys = self.fifo_keys(net.name)
                if not set(queues) <= set(keys):
                    raise ValueError(f"a message on {net.name} between nodes no send connects")
                for key in keys:
                    q = queues.get(key, ())
                    pad = net.capacity - len(q)
                    out[key] = Queue(num(len(q)), [num(t) for t, _ in q] + [zero] * pad,
                                     [fields(fs) for _, fs in q]
                                     + [[zero] * self.max_fields for _ in range(pad)])
                nets.append(out)
            else:
                nets.append(None)
        nv = m.values
        monitor = [[MonAgent(num(view), [z3.BoolVal(fa[v] >= 0) for v in range(nv)],
                             [[z3.BoolVal(fa[v] >= 0 and bool((fa[v] >> u) & 1))
                               for u in range(nv)] for v in range(nv)])
                    for view, fa in line] for line in state[2]]
        return SymState(lines, nets, monitor)


def fifo_pairs(model: ir.Model) -> dict[str, set[tuple[int, int]]]:
    """NOTE(z3-fifo-pairs): per FIFO network of a hierarchical spec, the (src, dst) node pairs
    that a send can connect, over-approximated statically: a send by node s to ``L2[g]``
    where ``g`` is s's own index reaches the one L2 of s's gpu, ``broadcast ... to L1[g]`` the
    L1s of that gpu, a send to ``self`` s itself, and any other destination (``msg.src``, a
    variable, a loop variable) every node. The other queues are always empty and are left out
    of the encoding (the deliveries check it: ``Exec.deliver``)."""
    inst = ir.instances(model)
    own: list[dict[str, int]] = []
    for i in inst:
        mach = model.machine(i.machine)
        own.append({f.type.name: v for f, v in zip(mach.indices, i.values, strict=True)
                    if isinstance(f.type, ir.IndexT)})
    nodes_of: dict[str, list[int]] = {}
    for i in inst:
        nodes_of.setdefault(i.machine, []).append(i.node)

    def known(x: ir.Expr, src: int) -> int | None:
        if isinstance(x, ir.NodeIndex) and isinstance(x.node, ir.SelfId):
            return own[src].get(x.index)
        return None

    def matching(machine: str, values: tuple[ir.Expr, ...], src: int) -> list[int]:
        want = [known(x, src) for x in values]
        return [d for d in nodes_of[machine]
                if all(w is None or w == v
                       for w, v in zip(want, inst[d].values, strict=False))]

    out: dict[str, set[tuple[int, int]]] = {
        n.name: set() for n in model.networks if n.ordering is ir.Ordering.FIFO}
    everyone = range(len(inst))
    for mach in model.machines:
        for tr in mach.transitions:
            for st in ir.walk_stmts(tr.body):
                if not isinstance(st, (ir.Send, ir.Multicast, ir.Broadcast)):
                    continue
                net = model.message(st.message).network
                if net not in out:
                    continue
                for src in nodes_of.get(mach.name, []):
                    if isinstance(st, ir.Multicast):
                        dsts: Any = matching(st.machine, st.prefix, src)
                    elif isinstance(st, ir.Send) and isinstance(st.dst, ir.NodeOf):
                        dsts = matching(st.dst.machine, st.dst.indices, src)
                    elif isinstance(st, ir.Send) and isinstance(st.dst, ir.SelfId):
                        dsts = [src]
                    else:
                        dsts = everyone
                    out[net] |= {(src, d) for d in dsts}
    return out


def _check_type(t: ir.Type, span: Span) -> None:
    if isinstance(t, ir.ArrayT):
        if isinstance(t.index, (ir.SetT, ir.ArrayT, ir.StateT)):
            raise Unsupported(f"the Z3 back end cannot encode arrays indexed by {t.index}", span)
        _check_type(t.elem, span)


def rebuild(template: SymState, leaves: list[Any]) -> SymState:
    """A state shaped like ``template`` whose leaves are ``leaves`` (in ``terms`` order)."""
    it = iter(leaves)

    def go(x: Any) -> Any:
        if isinstance(x, list):
            return [go(y) for y in x]
        if isinstance(x, tuple):
            return tuple(go(y) for y in x)
        if isinstance(x, dict):
            return {k: go(x[k]) for k in sorted(x)}
        if isinstance(x, SetV):
            return SetV(tuple(next(it) for _ in x.bits))
        if isinstance(x, ArrV):
            return ArrV(tuple(go(e) for e in x.elems))
        if isinstance(x, Slot):
            return Slot(next(it), next(it), next(it), next(it), next(it),
                        [next(it) for _ in x.fields])
        if isinstance(x, Queue):
            c = next(it)
            return Queue(c, [next(it) for _ in x.types], [[next(it) for _ in f] for f in x.fields])
        if isinstance(x, MonAgent):
            v = next(it)
            return MonAgent(v, [next(it) for _ in x.written],
                            [[next(it) for _ in a] for a in x.after])
        if x is None:
            return None
        return next(it)

    return SymState(go(template.lines), go(template.nets), go(template.monitor))
