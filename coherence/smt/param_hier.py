"""Proofs for every size of one index type of a hierarchical spec (issue 20).

NOTE(param-hierarchy): ``coherence prove SPEC --agents any --over sms --param gpus=1`` leaves
one index type free (``sm``) and binds the others as the model does. The spec must then have
exactly one machine replicated over the free type (``L1[g, s]``: the *agents*), once (every
other index of that machine has one value), and every other machine instance is one of a
finite set of singletons (``L2[0]``, ``Mem``). That is the shape ``param``'s encoding already
proves for flat specs, with the home generalised to a tuple of named nodes:

* ``Node`` holds the agents, one constant per singleton and "undefined", the constants
  distinct (``HierEncoder.nodes_apart``); an agent is a node that is none of them.
* The replicated machine's state and variables are arrays over ``Node`` (as a flat cache's);
  each singleton has its own row of scalars (``PState.rows``), as the flat home has.
* A value of the free index type is the agent that has it (the map from an ``sm`` id to
  ``L1[0, s]`` is one-to-one when the machine has no other free index), so ``var req: sm``,
  ``set<sm>`` and ``msg.src.sm`` are of sort ``Node`` and arrays over it; ``forall s: sm``
  quantifies over agents. Values of the fixed index types stay bit-vectors, unrolled as at a
  fixed size.
* ``L2[g]`` selects among that machine's singletons by ``g``; ``L1[g, s]`` is ``s`` (``g``
  has one value); ``n.sm`` is ``n`` when ``n`` is an agent (else the semantics' "no-index"
  error); ``broadcast M to L1[g]`` is one array update, as the flat ``broadcast``.

Every check the reference semantics makes on these terms (undefined node, not an instance of
the machine named, no such index, ``perform ... by`` a non-processor, a field out of range)
is an error condition, as in ``execute``. Flat specs never reach this module: their encoding
is unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.errors import NO_SPAN, Span, SpecError
from coherence.semantics import UNDEF, range_of
from coherence.smt.execute import TRUE, Exec, all_of, any_of, b2i, conc, truth
from coherence.smt.param import (
    BV,
    NODE,
    UNDEF_N,
    ParamEncoder,
    PExec,
    PState,
    UNet,
    _first_difference,
)
from coherence.smt.state import Unsupported, ivar, num


@attrs.frozen
class Shape:
    """How a hierarchical spec maps onto the encoding for every N (module docstring)."""

    index: str  # the free index type
    param: str  # the parameter that sizes it
    machine: str  # the one machine replicated over it: its instances are the agents
    free_pos: int  # the free index's position among that machine's indices
    fixed: tuple[tuple[str, int], ...]  # that machine's other index values (type, value)
    singles: tuple[ir.Instance, ...]  # every other machine instance, in node order

    def describe(self) -> str:
        others = ", ".join(f"{i.machine}{list(i.values) if i.values else ''}"
                           for i in self.singles)
        return (f"for every number of {self.index} ids ({self.param}): the agents are the "
                f"{self.machine} instances, beside the fixed nodes {others or '(none)'}")


def shape_of(model: ir.Model, over: str | None) -> Shape:
    """The free index type (``over``: its name or its parameter's; when None, the one index
    type that fits) and the spec's shape; a located SpecError naming what prevents it."""
    types = list(model.indexes)
    if not types:
        first = next(m for m in model.machines if m.kind is ir.MachineKind.MACHINE)
        raise SpecError("--agents any on a hierarchical spec proves it for every size of one "
                        "index type, and this spec declares none (`index NAME: PARAM;`)",
                        first.span)
    if over is not None:
        picked = [t for t in types if t.name == over]
        if not picked:
            picked = [t for t in types if _param_of(model, t) == over]
        if not picked:
            names = ", ".join(f"{t.name} ({_param_of(model, t) or '?'})" for t in types)
            raise SpecError(f"--over {over}: no index type or index parameter of that name "
                            f"(index types: {names})", NO_SPAN)
        why = _why_not(model, picked[0])
        if why is not None:
            raise SpecError(why[1], why[0])
        return _shape(model, picked[0])
    reasons = [(t, _why_not(model, t)) for t in types]
    fits = [t for t, why in reasons if why is None]
    if len(fits) == 1:
        return _shape(model, fits[0])
    if fits:
        raise SpecError("--agents any on a hierarchical spec: say which index type is free "
                        f"with --over ({' or '.join(_param_of(model, t) or t.name for t in fits)})",
                        NO_SPAN)
    proc = ir.event_machine(model)
    last = reasons[-1][1]
    for t, why in reasons:  # the processors' innermost index type is the likely intent
        if proc is not None and proc.indices and proc.indices[-1].type == t:
            last = why
    assert last is not None
    raise SpecError(last[1], last[0])


def _param_of(model: ir.Model, t: ir.IndexT) -> str | None:
    """The parameter that sizes index type ``t`` (found by binding it to another value)."""
    from coherence.spec.load import rebind
    for p in model.params:
        if p.name in ("lines", "values") or p.value != t.n:
            continue
        for probe in (p.value + 1, p.value - 1):
            if probe < 1:
                continue
            try:
                other = rebind(model, {p.name: probe})
            except SpecError:
                continue
            if other.index_type(t.name).n == probe:
                return p.name
            break
    return None


def _why_not(model: ir.Model, t: ir.IndexT) -> tuple[Span, str] | None:
    """Why ``t`` cannot be the free index type: (where, message), or None when it can."""
    param = _param_of(model, t)
    what = f"--agents any over {t.name}"
    if param is None:
        return NO_SPAN, f"{what}: no parameter sizes index type {t.name} (`index {t.name}: P;`)"
    users = [m for m in model.machines if any(f.type == t for f in m.indices)]
    if len(users) > 1:
        return (users[1].span,
                f"{what}: machines {users[0].name} and {users[1].name} are both replicated "
                f"over {t.name}; the proof for every size has one replicated machine (the "
                "agents) and fixed singletons")
    for u in model.indexes:
        if u.parent == t.name:
            where = next((m for m in model.machines if any(f.type == u for f in m.indices)),
                         users[0] if users else None)
            return (where.span if where else NO_SPAN,
                    f"{what}: index type {u.name} is nested in {t.name} (`index {u.name}: ... "
                    f"within {t.name}`), so its ids would multiply with the free size; prove "
                    f"over {u.name} with {param}=1 instead")
    if not users:
        return NO_SPAN, f"{what}: no machine is indexed by {t.name}"
    rep = users[0]
    others = [f for f in rep.indices if f.type != t]
    count = math.prod(f.type.size() for f in others)
    if count > 1:
        names = " and ".join(f"{f.type} ({_param_of(model, f.type) or '?'} = {f.type.size()})"
                             for f in others if isinstance(f.type, ir.IndexT))
        return (rep.span,
                f"{what}: machine {rep.name} is replicated over {t.name} once per value of "
                f"{names}: several replicated families; fix those sizes to 1")
    return None


def _shape(model: ir.Model, t: ir.IndexT) -> Shape:
    param = _param_of(model, t)
    assert param is not None
    rep = next(m for m in model.machines if any(f.type == t for f in m.indices))
    pos = next(i for i, f in enumerate(rep.indices) if f.type == t)
    fixed = tuple((f.type.name, 0) for f in rep.indices if f.type != t
                  if isinstance(f.type, ir.IndexT))
    singles = tuple(i for i in ir.instances(model) if i.machine != rep.name)
    return Shape(t.name, param, rep.name, pos, fixed, singles)


def check_index_free(model: ir.Model, shape: Shape) -> None:
    """The spec must not use the free size as a number: bind it again one larger and compare
    (as ``param._check_agents_free`` does for the number of agents)."""
    from coherence.spec.load import rebind
    n = model.index_type(shape.index).n
    try:
        other = rebind(model, {shape.param: n + 1})
    except SpecError as e:
        raise Unsupported(f"cannot bind the spec to {shape.param} = {n + 1} to check that it "
                          f"does not depend on that number: {e.message}", NO_SPAN) from None
    where = _first_difference(model, other, n)
    if where is not None:
        raise Unsupported(f"this depends on {shape.param} (the number of {shape.index} ids) "
                          "as a number, which a proof for every size cannot encode", where)


def node_name(inst: ir.Instance) -> str:
    return f"{inst.machine}[{','.join(map(str, inst.values))}]" if inst.values else inst.machine


class HierEncoder(ParamEncoder):
    """``ParamEncoder`` for a hierarchical spec of shape ``shape`` (NOTE(param-hierarchy))."""

    def __init__(self, model: ir.Model, shape: Shape) -> None:
        self.shape = shape  # before ParamEncoder's, which leaves the queue sorts to us
        super().__init__(model)
        self.rep = model.machine(shape.machine)
        self.singles = [z3.Const(node_name(i), NODE) for i in shape.singles]
        self.family: dict[str, list[int]] = {}
        for j, inst in enumerate(shape.singles):
            self.family.setdefault(inst.machine, []).append(j)
        self.processor = ir.event_machine(model)
        self.sent_by: dict[int, set[str]] = {i: set() for i in range(len(model.messages))}
        # per message type, the machines its sends name as destination (None: any node)
        self.sent_to: dict[int, set[str] | None] = {i: set() for i in range(len(model.messages))}
        for m in model.machines:
            for tr in m.transitions:
                for st in ir.walk_stmts(tr.body):
                    if isinstance(st, (ir.Send, ir.Broadcast, ir.Multicast)):
                        t = self.msg_index[st.message]
                        self.sent_by[t].add(m.name)
                        to = self.sent_to[t]
                        if isinstance(st, ir.Multicast) and to is not None:
                            to.add(st.machine)
                        elif (isinstance(st, ir.Send) and isinstance(st.dst, ir.NodeOf)
                              and to is not None):
                            to.add(st.dst.machine)
                        else:
                            self.sent_to[t] = None
        for v in model.globals:
            self.sort(v.type, v.span)
        for m in model.machines:
            for v in m.vars:
                self.sort(v.type, v.span)
        for msg in model.messages:
            fifo = model.network(msg.network).ordering is not ir.Ordering.UNORDERED
            for f in msg.fields:
                if self.sort(f.type, f.span) != BV and fifo:
                    raise Unsupported(f"message {msg.name}: a node-valued field on a fifo "
                                      "network is not supported with --agents any (unordered "
                                      "networks carry them)", f.span)
        self.set_queue_sorts()

    def executor(self, s: PState) -> HExec:
        return HExec(self, s)

    # ------------------------------------------------------------ nodes and sorts

    def free(self, t: ir.Type) -> bool:
        return isinstance(t, ir.IndexT) and t.name == self.shape.index

    def node_typed(self, t: ir.Type) -> bool:
        return isinstance(t, ir.HNodeT) or self.free(t)

    def sort(self, t: ir.Type, span: Span) -> Any:
        if self.node_typed(t):
            return NODE
        if isinstance(t, ir.SetT):
            if self.free(t.elem):
                return z3.ArraySort(NODE, z3.BoolSort())
            raise Unsupported(f"a set of {t.elem} ids (not the free index type "
                              f"{self.shape.index}) is not supported with --agents any", span)
        if isinstance(t, ir.ArrayT):
            raise Unsupported("arrays are not supported with --agents any", span)
        return BV

    def leaf(self, name: str, t: ir.Type, span: Span) -> Any:
        s = self.sort(t, span)
        return ivar(name) if s == BV else z3.Const(name, s)

    def is_agent(self, x: Any) -> Any:
        return z3.And(*[x != s for s in self.singles], x != UNDEF_N)

    def nodes_apart(self) -> Any:
        return z3.Distinct(UNDEF_N, *self.singles) if self.singles else TRUE

    def index_value(self, machine: str, j: int | None, index: str) -> int | None:
        """The value of index type ``index`` of the replicated machine (``j`` None) or of
        singleton ``j``; None when that machine is not indexed by it."""
        m = self.model.machine(machine)
        if j is None:
            return dict(self.shape.fixed).get(index)
        for f, v in zip(m.indices, self.shape.singles[j].values, strict=True):
            if isinstance(f.type, ir.IndexT) and f.type.name == index:
                return v
        return None

    # ------------------------------------------------------------ the state

    def field_sort(self, f: ir.Field) -> Any:
        return self.sort(f.type, f.span)

    def fresh(self, prefix: str) -> PState:
        m = self.model
        g = [self.leaf(f"{prefix}|{v.name}", v.type, v.span) for v in m.globals]
        rep = self.rep
        cv = [z3.Array(f"{prefix}|{rep.name}.state", NODE, BV)]
        cv += [z3.Array(f"{prefix}|{rep.name}.{v.name}", NODE, self.sort(v.type, v.span))
               for v in rep.vars]
        rows = []
        for inst in self.shape.singles:
            name = node_name(inst)
            machine = m.machine(inst.machine)
            rows.append([ivar(f"{prefix}|{name}.state"),
                         *(self.leaf(f"{prefix}|{name}.{v.name}", v.type, v.span)
                           for v in machine.vars)])
        nets = self.fresh_nets(prefix)
        return PState(g, [], cv, nets, rows)

    def initial(self, v: ir.Var) -> Any:
        if isinstance(v.type, ir.SetT):
            if not (isinstance(v.init, ir.Lit) and v.init.value == 0):
                raise Unsupported("only empty sets can be initial values with --agents any",
                                  v.span)
            return z3.K(NODE, z3.BoolVal(False))
        if self.node_typed(v.type):
            if isinstance(v.init, ir.Lit) and v.init.value is None:
                return UNDEF_N
            raise Unsupported("node variables must start undefined with --agents any", v.span)
        return num(self.sem.init_value(v))

    def init_formula(self, s: PState) -> Any:
        m = self.model
        parts = [x == self.initial(v) for v, x in zip(m.globals, s.globals, strict=True)]
        for inst, row in zip(self.shape.singles, s.rows, strict=True):
            machine = m.machine(inst.machine)
            parts.append(row[0] == machine.state_index(machine.init_state))
            parts += [x == self.initial(v) for v, x in zip(machine.vars, row[1:], strict=True)]
        y = z3.Const("y", NODE)
        parts.append(z3.ForAll([y], s.cvars[0][y] == self.rep.state_index(self.rep.init_state)))
        for v, arr in zip(self.rep.vars, s.cvars[1:], strict=True):
            parts.append(z3.ForAll([y], arr[y] == self.initial(v)))
        for net in s.nets:
            a, b = z3.Consts("a b", NODE)
            if isinstance(net, UNet):
                parts += [z3.ForAll([a, b], z3.Not(p[a, b])) for p in net.present.values()]
            else:
                parts.append(z3.ForAll([a, b], net[0][a, b] == 0))
        return all_of(parts)

    def scalar_ok(self, x: Any, t: ir.Type) -> Any:
        if isinstance(t, (ir.SetT, ir.HNodeT)):
            return TRUE
        if self.free(t):
            return z3.Or(x == UNDEF_N, self.is_agent(x))
        lo, hi = (t.lo, t.hi) if isinstance(t, ir.IntT) else (0, t.size() - 1)
        return z3.Or(x == num(UNDEF), z3.And(x >= lo, x <= hi))

    def sent_from(self, t: int, a: Any) -> Any:
        """Whether node ``a`` is an instance of a machine that sends message type ``t``."""
        kinds = self.sent_by[t]
        return any_of(([self.is_agent(a)] if self.rep.name in kinds else [])
                      + [a == self.singles[j] for j, i in enumerate(self.shape.singles)
                         if i.machine in kinds])

    def sent_to_ok(self, t: int, b: Any) -> Any:
        """Whether node ``b`` is an instance of a machine that sends of message type ``t``
        name as destination (every node when some send names a computed node): true of every
        message a step adds, so of every reachable state."""
        to = self.sent_to[t]
        if to is None:
            return TRUE
        return any_of(([self.is_agent(b)] if self.rep.name in to else [])
                      + [b == self.singles[j] for j, i in enumerate(self.shape.singles)
                         if i.machine in to])

    def one_per_kind(self, s: PState) -> Any:
        """No fifo queue holds two messages of one type: a property of hierarchical specs'
        proofs (proved of every step as the others, so that it can be assumed), which
        counts what the invariants cannot (two acknowledgements in one queue)."""
        parts = []
        for pnet in s.nets:
            if isinstance(pnet, UNet):
                continue
            count, types, _fields = pnet
            a, b = z3.Consts("pk_a pk_b", NODE)
            apart = [z3.Not(z3.And(count[a, b] > j, types[i][a, b] == types[j][a, b]))
                     for j in range(len(types)) for i in range(j)]
            if apart:
                parts.append(z3.ForAll([a, b], all_of(apart)))
        return all_of(parts)

    def domain(self, s: PState) -> Any:
        m = self.model
        parts = [self.nodes_apart()]
        parts += [self.scalar_ok(x, v.type) for v, x in zip(m.globals, s.globals, strict=True)]
        for inst, row in zip(self.shape.singles, s.rows, strict=True):
            machine = m.machine(inst.machine)
            parts += [self.scalar_ok(row[0], machine.state_type), row[0] != num(UNDEF)]
            parts += [self.scalar_ok(x, v.type) for v, x in zip(machine.vars, row[1:],
                                                                   strict=True)]
        y = z3.Const("y", NODE)
        inner = [self.scalar_ok(s.cvars[0][y], self.rep.state_type), s.cvars[0][y] != num(UNDEF)]
        inner += [self.scalar_ok(arr[y], v.type) for v, arr in zip(self.rep.vars, s.cvars[1:],
                                                                   strict=True)]
        parts.append(z3.ForAll([y], all_of(inner)))

        def fields_ok(t: int, xs: list[Any]) -> list[Any]:
            return [self.scalar_ok(x, f.type)
                    for f, x in zip(m.messages[t].fields, xs, strict=False)]

        for net, pnet in zip(m.networks, s.nets, strict=True):
            a, b = z3.Consts("a b", NODE)
            if isinstance(pnet, UNet):
                for t, present in pnet.present.items():
                    ok = [a != UNDEF_N, b != UNDEF_N, self.sent_from(t, a),
                          self.sent_to_ok(t, b),
                          *fields_ok(t, [f[a, b] for f in pnet.fields[t]])]
                    parts.append(z3.ForAll([a, b], z3.Implies(present[a, b], all_of(ok))))
                continue
            count, types, fields = pnet
            tys = [self.msg_index[x.name] for x in m.messages if x.network == net.name]
            inner = [count[a, b] >= 0, count[a, b] <= net.capacity,
                     z3.Implies(count[a, b] > 0, z3.And(a != UNDEF_N, b != UNDEF_N))]
            for k, ty in enumerate(types):
                opts = [all_of([ty[a, b] == t, self.sent_from(t, a), self.sent_to_ok(t, b),
                                *fields_ok(t, [x[a, b] for x in fields[k]])]) for t in tys]
                inner.append(z3.Implies(count[a, b] > k, any_of(opts)))
            parts.append(z3.ForAll([a, b], all_of(inner)))
        return all_of(parts)


class HExec(PExec):
    """``PExec`` for a hierarchical spec: the acting node is an agent or a singleton."""

    enc: HierEncoder

    def __init__(self, enc: HierEncoder, state: PState) -> None:
        super().__init__(enc, state)
        self.rows = self.pstate.rows
        self.machine: ir.Machine = enc.rep
        self.me: int | None = None  # the acting singleton, when it is one constant

    def node_typed(self, t: ir.Type) -> bool:
        return self.enc.node_typed(t)

    def msg_count(self, e: ir.MsgQuant, c: Any) -> Any:
        """NOTE(message-count): the ends of a message here are agents or singletons of
        several machines, not the flat spec's home and agents: not encoded yet."""
        raise Unsupported(f"count({e.var}: {e.message} :: ...) (messages in flight) is not "
                          "supported in a proof for every size of a hierarchical spec", e.span)

    def current_machine(self) -> ir.Machine:
        return self.machine

    # ------------------------------------------------------------ nodes

    def single(self, a: Any) -> int | None:
        """The singleton that term ``a`` is syntactically, or None."""
        for j, s in enumerate(self.enc.singles):
            if a.eq(s):
                return j
        return None

    def member(self, a: Any, machine: str) -> Any:
        """Whether node ``a`` is an instance of ``machine``."""
        enc = self.enc
        if machine == enc.rep.name:
            return FALSE_ if self.single(a) is not None else enc.is_agent(a)
        fam = enc.family.get(machine, [])
        j = self.single(a)
        if j is not None:
            return z3.BoolVal(j in fam)
        return any_of([a == enc.singles[k] for k in fam])

    def node_expr(self, e: ir.Expr, c: Any, machine: str | None) -> Any:
        """A defined node, an instance of ``machine`` (of the processors' when None)."""
        a = self.expr(e, c)
        want = machine if machine is not None else (
            self.enc.processor.name if self.enc.processor is not None else None)
        if self.single(a) is None:
            self.error(c, a == UNDEF_N)
        self.error(c, TRUE if want is None else z3.Not(self.member(a, want)))
        return a

    def pick(self, a: Any, fam: list[int], slot: int) -> Any:
        """Variable ``slot`` of the singleton of ``fam`` that node ``a`` is."""
        rows, singles = self.rows, self.enc.singles
        j = self.single(a)
        if j is not None and j in fam:
            return rows[j][slot]
        out = rows[fam[-1]][slot]
        for k in reversed(fam[:-1]):
            out = z3.If(a == singles[k], rows[k][slot], out)
        return out

    def own(self, e: ir.Expr, machine: str) -> bool:
        return isinstance(e, ir.SelfId) and machine == self.machine.name

    def read(self, e: ir.Expr, machine: str, c: Any, slot: int) -> Any:
        if machine == self.enc.rep.name:
            a = self.agent if self.own(e, machine) else self.node_expr(e, c, machine)
            return self.cvars[slot][a]
        if self.own(e, machine) and self.me is not None:
            return self.rows[self.me][slot]
        a = self.agent if self.own(e, machine) else self.node_expr(e, c, machine)
        return self.pick(a, self.enc.family[machine], slot)

    def expr(self, e: ir.Expr, c: Any) -> Any:
        enc = self.enc
        if isinstance(e, ir.Lit) and self.node_typed(e.type):
            if e.value is None:
                return UNDEF_N
            raise Unsupported("a literal node is not supported with --agents any", e.span)
        if isinstance(e, ir.Lit) and isinstance(e.type, ir.SetT):
            enc.sort(e.type, e.span)
            if e.value != 0:
                raise Unsupported("set literals other than {} are not supported with "
                                  "--agents any", e.span)
            return z3.K(NODE, z3.BoolVal(False))
        if isinstance(e, ir.SelfId):
            return self.agent
        if isinstance(e, (ir.MVar, ir.MState)):
            if e.agent is None:
                raise Unsupported("a variable of no instance", e.span)
            slot = 0 if isinstance(e, ir.MState) else enc.var_slot[(e.machine, e.name)]
            return self.read(e.agent, e.machine, c, slot)
        if isinstance(e, ir.NodeOf):
            return self.node_of(e, c)
        if isinstance(e, ir.NodeIndex):
            return self.node_index(e, c)
        if isinstance(e, ir.NodeIs):
            node = self.check(self.expr(e.node, c), c)
            return b2i(self.member(node, e.machine))
        if isinstance(e, ir.SetLit) and isinstance(e.type, ir.SetT):
            enc.sort(e.type, e.span)
        return super().expr(e, c)

    def node_of(self, e: ir.NodeOf, c: Any) -> Any:
        enc = self.enc
        machine = enc.model.machine(e.machine)
        values = [self.check(self.expr(x, c), c) for x in e.indices]
        if e.machine == enc.rep.name:
            return values[enc.shape.free_pos]
        fam = enc.family[e.machine]
        k: Any = num(0)
        for v, f in zip(values, machine.indices, strict=True):
            k = k * f.type.size() + v
        fixed = conc(k) if values else 0
        if fixed is not None:
            return enc.singles[fam[fixed]] if 0 <= fixed < len(fam) else UNDEF_N
        out = enc.singles[fam[-1]]
        for i in range(len(fam) - 2, -1, -1):
            out = z3.If(k == i, enc.singles[fam[i]], out)
        return out

    def node_index(self, e: ir.NodeIndex, c: Any) -> Any:
        enc = self.enc
        free = e.index == enc.shape.index
        if isinstance(e.node, ir.SelfId) and (self.machine is enc.rep or self.me is not None):
            j = None if self.machine is enc.rep else self.me
            if free and j is None:
                return self.agent
            v = None if free else enc.index_value(self.machine.name, j, e.index)
            if v is None:
                self.error(c, TRUE)
                return num(UNDEF)
            return num(v)
        node = self.check(self.expr(e.node, c), c)
        if free:
            self.error(c, z3.Not(enc.is_agent(node)))
            return node
        table = [(j, enc.index_value(i.machine, j, e.index))
                 for j, i in enumerate(enc.shape.singles)]
        mine = enc.index_value(enc.rep.name, None, e.index)
        bad = [enc.singles[j] == node for j, v in table if v is None]
        self.error(c, any_of([*bad, *([enc.is_agent(node)] if mine is None else [])]))
        out = num(UNDEF)
        for j, v in reversed(table):
            out = z3.If(node == enc.singles[j], num(UNDEF if v is None else v), out)
        return z3.If(enc.is_agent(node), num(UNDEF if mine is None else mine), out)

    def quant(self, e: ir.Quant, c: Any) -> Any:
        if self.enc.free(e.var_type):
            return self.node_quant(e, c)
        if isinstance(e.var_type, (ir.HNodeT, ir.AgentT, ir.NodeT)):
            raise Unsupported("a quantifier over nodes is not supported with --agents any",
                              e.span)
        return Exec.quant(self, e, c)

    def count(self, e: ir.Count, c: Any) -> Any:
        """A count over a fixed-size type is the fixed-size sum; over the free index (or
        nodes) it is the cardinality of an unbounded family, which this encoding has no term
        for."""
        if self.enc.free(e.var_type) or isinstance(e.var_type, (ir.HNodeT, ir.AgentT,
                                                                 ir.NodeT)):
            raise Unsupported("count() over the free index or nodes is not supported in "
                              "hierarchical proofs", e.span)
        return Exec.count(self, e, c)

    # ------------------------------------------------------------ statements

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.For):
            if self.enc.free(s.var_type):
                self.refresh()
                if not z3.is_false(self.pc):
                    self.for_free(s, s.body, [])
                return
            Exec.stmt(self, s)
            return
        if isinstance(s, ir.Multicast):
            self.refresh()
            if not z3.is_false(self.pc):
                self.multicast(s, self.pc)
            return
        if isinstance(s, ir.Perform):
            self.refresh()
            pc = self.pc
            if z3.is_false(pc):
                return
            value = self.check(self.expr(s.value, pc), pc)
            agent = self.node_expr(s.agent, pc, None)
            self.performs.append((pc, agent, s.kind, value))
            return
        super().stmt(s)

    def for_free(self, loop: ir.For, body: tuple[ir.Stmt, ...], path: list[Any]) -> None:
        """``for t: sm { if C(t) { send M(A(t)) to L1[g, t]; } }``: every iteration sends to
        its own agent, so the loop is one multicast over (src, dst) filtered by ``C`` (as
        ``broadcast``); ``path`` holds the conditions of the enclosing ``if``s as ir
        expressions (negated ones as ``("not", e)``). Other bodies are not supported."""
        for st in body:
            if isinstance(st, ir.If):
                self.for_free(loop, st.then, [*path, st.cond])
                self.for_free(loop, st.orelse, [*path, ("not", st.cond)])
                continue
            rep = self.enc.rep.name
            if not (isinstance(st, ir.Send) and isinstance(st.dst, ir.NodeOf)
                    and st.dst.machine == rep
                    and st.dst.indices[self.enc.shape.free_pos] == ir.Local(
                        loop.var, loop.var_type)):
                raise Unsupported(f"in a `for` over the free index type "
                                  f"{self.enc.shape.index}, only `if`s and sends to "
                                  f"{rep}[..., {loop.var}] are supported with --agents any",
                                  getattr(st, "span", loop.span))
            self.send_each(loop, st, path)

    def send_each(self, loop: ir.For, st: ir.Send, path: list[Any]) -> None:
        is_agent = self.enc.is_agent
        pc = self.pc
        b = z3.FreshConst(NODE, loop.var)
        saved = self.locals.get(loop.var)
        self.locals[loop.var] = b
        self.bound.append((b, is_agent(b)))
        conds: list[Any] = []
        for e in path:
            neg = isinstance(e, tuple)
            x = e[1] if neg else e
            v = truth(self.check(self.expr(x, all_of([pc, *conds])), all_of([pc, *conds])))
            conds.append(z3.Not(v) if neg else v)
        here_c = all_of([pc, *conds])
        for i, x in enumerate(st.dst.indices):
            if i != self.enc.shape.free_pos:
                self.check(self.expr(x, here_c), here_c)
        args = [self.expr(x, here_c) for x in st.args]
        t = self.enc.msg_index[st.message]
        for f, v in zip(self.enc.model.messages[t].fields, args, strict=True):
            rng = range_of(f.type)
            if rng is not None and z3.is_bv(v):
                self.error(here_c, z3.And(v != num(UNDEF), z3.Or(v < rng[0], v > rng[1])))
        self.bound.pop()
        if saved is None:
            self.locals.pop(loop.var, None)
        else:
            self.locals[loop.var] = saved
        self.refresh()
        net = self.nets[self.enc.net_index[self.enc.model.messages[t].network]]
        if not isinstance(net, UNet):
            raise Unsupported("a `for` that sends over the free index type is supported with "
                              "--agents any only on unordered networks", st.span)
        src = self.agent
        cond = all_of([is_agent(b), *conds])
        self.dups.append(z3.And(self.pc, z3.Exists([b], z3.And(cond, net.present[t][src, b]))))
        a = z3.FreshConst(NODE, "for_src")
        here = z3.And(a == src, cond)
        old = net.present[t]
        live = self.pc
        net.present[t] = z3.If(live, z3.Lambda([a, b], z3.Or(here, old[a, b])), old)
        net.fields[t] = [z3.If(live, z3.Lambda([a, b], z3.If(here, v, f[a, b])), f)
                         for f, v in zip(net.fields[t], args, strict=True)]

    def multicast(self, s: ir.Multicast, pc: Any) -> None:
        enc = self.enc
        args = [self.expr(a, pc) for a in s.args]
        want = [self.check(self.expr(x, pc), pc) for x in s.prefix]
        skip = self.expr(s.exclude, pc) if s.exclude is not None else None
        t = enc.msg_index[s.message]
        if s.machine == enc.rep.name:
            if len(want) > enc.shape.free_pos:  # one instance: its free index is given
                self.refresh()
                self.deliver_one(t, args, want[enc.shape.free_pos], skip, s.span)
                return
            self.to_agents(t, args, skip, s.span)
            return
        for j in enc.family[s.machine]:
            values = enc.shape.singles[j].values
            node = enc.singles[j]
            self.path.append(all_of([*(w == v for w, v in zip(want, values, strict=False)),
                                     *([] if skip is None else [skip != node])]))
            self.refresh()
            self.deliver(t, args, node, s.span)
            self.path.pop()
        self.refresh()

    def deliver_one(self, t: int, args: list[Any], node: Any, skip: Any, span: Span) -> None:
        self.path.append(TRUE if skip is None else skip != node)
        self.refresh()
        self.deliver(t, args, node, span)
        self.path.pop()
        self.refresh()

    def to_agents(self, t: int, args: list[Any], skip: Any, span: Span) -> None:
        """To every agent but ``skip`` at once: one array update over (src, dst)."""
        self.field_ranges(t, args)
        self.refresh()
        pc = self.pc
        if z3.is_false(pc):
            return
        net = self.nets[self.enc.net_index[self.enc.model.messages[t].network]]
        if not isinstance(net, UNet):
            raise Unsupported("a broadcast to the replicated machine is supported with "
                              "--agents any only on unordered networks", span)
        is_agent = self.enc.is_agent
        src = self.agent
        a, b = z3.Consts("bc_src bc_dst", NODE)
        to = z3.And(is_agent(b), TRUE if skip is None else b != skip)
        y = z3.FreshConst(NODE, "bc_y")
        self.dups.append(z3.And(pc, z3.Exists([y], z3.And(
            is_agent(y), TRUE if skip is None else y != skip, net.present[t][src, y]))))
        here = z3.And(a == src, to)
        old = net.present[t]
        net.present[t] = z3.If(pc, z3.Lambda([a, b], z3.Or(here, old[a, b])), old)
        net.fields[t] = [z3.If(pc, z3.Lambda([a, b], z3.If(here, v, f[a, b])), f)
                         for f, v in zip(net.fields[t], args, strict=True)]

    def field_ranges(self, t: int, fields: list[Any]) -> None:
        """``Semantics.deliver``: a field value outside its type's range is a model error."""
        for f, v in zip(self.enc.model.messages[t].fields, fields, strict=True):
            rng = range_of(f.type)
            if rng is None or not z3.is_bv(v):
                continue
            self.error(self.pc, z3.And(v != num(UNDEF), z3.Or(v < rng[0], v > rng[1])))

    def deliver(self, t: int, fields: list[Any], dst: Any, span: Span,
                fitting: tuple[bool, ...] = ()) -> None:
        self.field_ranges(t, fields)
        self.refresh()
        if z3.is_false(self.pc):
            return
        # checked here already (sends captured in a ``for`` too): ``PExec`` need not again
        super().deliver(t, fields, dst, span, tuple(True for _ in fields))

    def write(self, target: ir.Expr, value: Any, cond: Any) -> None:
        if not (isinstance(target, ir.MVar) and target.agent is not None):
            super().write(target, value, cond)
            return
        enc = self.enc
        slot = enc.var_slot[(target.machine, target.name)]
        if target.machine == enc.rep.name:
            a = (self.agent if self.own(target.agent, target.machine)
                 else self.node_expr(target.agent, cond, target.machine))
            arr = self.cvars[slot]
            self.cvars[slot] = z3.If(cond, z3.Store(arr, a, value), arr)
            return
        if self.own(target.agent, target.machine) and self.me is not None:
            row = self.rows[self.me]
            row[slot] = z3.If(cond, value, row[slot])
            return
        a = (self.agent if self.own(target.agent, target.machine)
             else self.node_expr(target.agent, cond, target.machine))
        j = self.single(a)
        for k in enc.family[target.machine]:
            if j is not None and j != k:
                continue
            ck = cond if j is not None else all_of([cond, a == enc.singles[k]])
            self.rows[k][slot] = z3.If(ck, value, self.rows[k][slot])

    def apply_goto(self, agent: Any) -> None:
        g = self.goto
        if z3.is_bv_value(g) and g.as_signed_long() == -1:
            return
        if self.machine is self.enc.rep:
            arr = self.cvars[0]
            self.cvars[0] = z3.If(g == -1, arr, z3.Store(arr, agent, g))
        elif self.me is not None:
            self.rows[self.me][0] = z3.If(g == -1, self.rows[self.me][0], g)
        else:
            for k in self.enc.family[self.machine.name]:
                here = z3.And(g != -1, agent == self.enc.singles[k])
                self.rows[k][0] = z3.If(here, g, self.rows[k][0])
        self.goto = num(-1)


FALSE_ = z3.BoolVal(False)


def actor(enc: HierEncoder, s: PState, machine: ir.Machine, tag: str, consts: list[Any],
          pre: list[Any]) -> tuple[HExec, Any]:
    """The executor of one action of ``machine`` and the actor's control state; the actor's
    node constant (an agent, or one of several singletons) goes to ``consts``."""
    ex = HExec(enc, s)
    ex.machine = machine
    if machine is enc.rep:
        ex.agent = z3.Const(f"{tag}|self", NODE)
        consts.append(ex.agent)
        pre.append(enc.is_agent(ex.agent))
        return ex, s.cvars[0][ex.agent]
    fam = enc.family[machine.name]
    if len(fam) == 1:
        ex.me = fam[0]
        ex.agent = enc.singles[fam[0]]
        return ex, s.rows[fam[0]][0]
    ex.agent = z3.Const(f"{tag}|self", NODE)
    consts.append(ex.agent)
    pre.append(any_of([ex.agent == enc.singles[k] for k in fam]))
    return ex, ex.pick(ex.agent, fam, 0)


def no_transition(enc: HierEncoder, s: PState) -> list[Any]:
    """"A message waits at a node whose machine has no transition for it in its state", per
    machine: the replicated one over every agent, each singleton at its node."""
    nt = []
    for net_i, net in enumerate(enc.model.networks):
        pnet = s.nets[net_i]
        for msg in enc.model.messages:
            if msg.network != net.name:
                continue
            t = enc.msg_index[msg.name]
            for machine in enc.model.machines:
                missing = [i for i in range(machine.state_type.size())
                           if not enc.sem.handlers.get((machine.name, msg.name, i))]
                if not missing:
                    continue
                a, b = z3.Consts("nt_a nt_b", NODE)

                def first(x: Any, y: Any, pnet: Any = pnet, t: int = t) -> Any:
                    return (pnet.present[t][x, y] if isinstance(pnet, UNet) else
                            z3.And(pnet[0][x, y] > 0, pnet[1][0][x, y] == t))

                if machine is enc.rep:
                    st = s.cvars[0][b]
                    nt.append(z3.Exists([a, b], z3.And(enc.is_agent(b), first(a, b),
                                                       any_of([st == i for i in missing]))))
                    continue
                for k in enc.family[machine.name]:
                    st = s.rows[k][0]
                    nt.append(z3.Exists([a], z3.And(first(a, enc.singles[k]),
                                                    any_of([st == i for i in missing]))))
    return nt
