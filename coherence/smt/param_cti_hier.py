"""Counterexamples to induction of a hierarchical spec's proof for every size of one index
type (NOTE(param-hierarchy) in ``param_hier``), made concrete and replayed.

As ``param_cti`` does for flat specs (NOTE(finite-cti)): Z3's model over a universe of the
named singleton nodes, "undefined" and K agents is read as the reference semantics' state of
the spec bound to K ids of the free index type (agent i is the replicated machine's i-th
instance, whose free index value is i), the step is executed by ``semantics`` and the
broken property is found there; any mismatch is an encoder bug (``TraceReplayError``).
"""

from __future__ import annotations

from typing import Any

import z3

from coherence import ir
from coherence.semantics import UNDEF, Action, State
from coherence.smt.induction import Cti
from coherence.smt.state import as_int
from coherence.trace import TraceReplayError


class _Nodes:
    """Z3's finite model read as the semantics' values of the spec bound to K agents."""

    def __init__(self, m: z3.ModelRef, inst: ir.Model, shape: Any, named: list[Any],
                 agents: list[Any]) -> None:
        from coherence.smt.param import UNDEF_N
        self.m = m
        self.shape = shape
        self.named = [m.eval(x, model_completion=True) for x in named]
        self.agents = [m.eval(a, model_completion=True) for a in agents]
        self.undef = m.eval(UNDEF_N, model_completion=True)
        insts = ir.instances(inst)
        self.agent_ids = [i.node for i in insts if i.machine == shape.machine]
        where = {(i.machine, i.values): i.node for i in insts}
        self.named_ids = [where[(i.machine, i.values)] for i in shape.singles]
        self.count = len(insts)
        # per flat node id: ("agent", i) or ("single", j)
        self.rows: list[tuple[str, int]] = [("", 0)] * self.count
        for i, node in enumerate(self.agent_ids):
            self.rows[node] = ("agent", i)
        for j, node in enumerate(self.named_ids):
            self.rows[node] = ("single", j)
        self.terms = [self.agents[k] if kind == "agent" else self.named[k]
                      for kind, k in self.rows]

    def ev(self, t: Any) -> Any:
        return self.m.eval(t, model_completion=True)

    def which(self, t: Any) -> tuple[str, int] | None:
        v = self.ev(t)
        if v.eq(self.undef):
            return None
        for i, e in enumerate(self.agents):
            if v.eq(e):
                return ("agent", i)
        for j, e in enumerate(self.named):
            if v.eq(e):
                return ("single", j)
        raise TraceReplayError("Z3's counterexample names a node outside its universe")

    def node(self, t: Any) -> int:
        w = self.which(t)
        if w is None:
            return UNDEF
        return self.agent_ids[w[1]] if w[0] == "agent" else self.named_ids[w[1]]

    def scalar(self, t: Any) -> int:
        return as_int(self.ev(t))

    def value(self, t: Any, typ: ir.Type) -> int:
        if isinstance(typ, ir.HNodeT):
            return self.node(t)
        if isinstance(typ, ir.IndexT) and typ.name == self.shape.index:
            w = self.which(t)
            if w is not None and w[0] != "agent":
                raise TraceReplayError(f"Z3's counterexample gives a {typ.name} id that is "
                                       "not an agent")
            return UNDEF if w is None else w[1]
        if isinstance(typ, ir.SetT):
            return sum(1 << i for i, e in enumerate(self.agents)
                       if z3.is_true(self.ev(t[e])))
        return self.scalar(t)


def replay_hier(model: ir.Model, query: Any, m: z3.ModelRef, named: list[Any],
                agents: list[Any]) -> Cti | None:
    from coherence.errors import SpecError
    from coherence.smt.param_cti import conclude
    from coherence.smt.system import Encoder
    from coherence.spec.load import rebind
    from coherence.spec.select import drop_properties
    shape = query.shape
    if not agents:
        return None
    try:
        inst = rebind(model, {shape.param: len(agents)})
    except SpecError:  # the parameter's range may exclude this size
        return None
    inst = drop_properties(inst, [p.name for p in inst.properties])
    c = _Nodes(m, inst, shape, named, agents)
    enc = Encoder(inst)
    sem = enc.sem
    pre = _state(inst, query.pre, c)
    if sem.invariant_violations(pre) or sem.enabled(pre)[1]:
        raise TraceReplayError("the pre-state of a counterexample to induction breaks an "
                               "invariant in the reference semantics")
    act = _action(inst, enc, query, c, pre)
    return conclude(enc, inst, query, pre, act, f"{len(agents)} {shape.index} id(s)")


def _state(inst: ir.Model, s: Any, c: _Nodes) -> State:
    from coherence.smt.param import UNet
    g = tuple(c.value(x, v.type) for v, x in zip(inst.globals, s.globals, strict=True))
    rep = inst.machine(c.shape.machine)
    rows = []
    for kind, k in c.rows:
        if kind == "agent":
            e = c.agents[k]
            rows.append((c.scalar(s.cvars[0][e]),
                         *(c.value(arr[e], v.type)
                           for v, arr in zip(rep.vars, s.cvars[1:], strict=True))))
            continue
        machine = inst.machine(c.shape.singles[k].machine)
        row = s.rows[k]
        rows.append((c.scalar(row[0]),
                     *(c.value(x, v.type) for v, x in zip(machine.vars, row[1:], strict=True))))
    nodes = c.terms
    nets: list[tuple] = []
    for net, pnet in zip(inst.networks, s.nets, strict=True):
        if isinstance(pnet, UNet):
            msgs = []
            for t, present in pnet.present.items():
                ftypes = [f.type for f in inst.messages[t].fields]
                for si, src in enumerate(nodes):
                    for di, dst in enumerate(nodes):
                        if z3.is_true(c.ev(present[src, dst])):
                            fs = tuple(c.value(f[src, dst], ft)
                                       for f, ft in zip(pnet.fields[t], ftypes, strict=True))
                            msgs.append((0, si, di, t, fs))
            nets.append(tuple(sorted(msgs)))
            continue
        count, types, fields = pnet
        queues = []
        for si, src in enumerate(nodes):
            for di, dst in enumerate(nodes):
                k = c.scalar(count[src, dst])
                items = []
                for j in range(k):
                    t = c.scalar(types[j][src, dst])
                    ftypes = [f.type for f in inst.messages[t].fields]
                    items.append((t, tuple(c.value(f[src, dst], ft)
                                           for f, ft in zip(fields[j], ftypes, strict=False))))
                if items:
                    queues.append(((si, di, 0), tuple(items)))
        nets.append(tuple(sorted(queues)) if net.ordering is ir.Ordering.FIFO else ())
    return (((g, (), tuple(rows)),), tuple(nets), ())


def _action(inst: ir.Model, enc: Any, query: Any, c: _Nodes, pre: State) -> Action:
    machine, tr = query.action
    consts = {str(x).split("|", 1)[1]: x for x in query.consts}
    if "self" in consts:
        agent = c.node(consts["self"])
    else:  # the one instance of a singleton machine
        agent = c.named_ids[next(j for j, i in enumerate(c.shape.singles)
                                 if i.machine == machine.name)]
    params = tuple(c.value(consts[p.name], p.type) for p in tr.params)
    index = machine.transitions.index(tr)
    msg, net_i = None, -1
    if tr.kind is ir.TransitionKind.MESSAGE:
        from coherence.smt.param_cti import received
        msg, net_i = received(inst, enc, tr, pre, c.node(consts["src"]), agent)
    return Action(tr.kind, machine.name, agent, 0, index, params, net_i, msg)
