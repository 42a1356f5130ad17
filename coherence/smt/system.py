"""The transition system of a model at a fixed number of agents, as Z3 formulas.

Actions are enumerated concretely, as ``Semantics.action_instances`` enumerates them (event and
rule firings per agent, line and parameter value; message receipts per network slot or FIFO
queue and handler), so that each action's agent, line and handler are constants and only the
state is symbolic. The whole step is built once over a template state and instantiated per
depth with ``z3.substitute``.

A state is *bad* for one of the checker's failure groups (``bad_groups``): an invariant is false
or cannot be evaluated, a message has no transition, deadlock, or some enabled action raises a
model error or a coherence violation (those are one step longer, as in the checker's traces).

NOTE(z3-hierarchy): a hierarchical spec's actions are the semantics' per node (``agent`` is the
node), its receivers the instances of the handling machine, and a message's source one of the
instances of the machines that send it.
"""

from __future__ import annotations

from typing import Any, NamedTuple, assert_never

import z3

from coherence import ir
from coherence.semantics import param_values, spontaneous
from coherence.smt.execute import (
    FALSE,
    TRUE,
    Exec,
    all_of,
    any_of,
    ite,
    pop_queue,
    remove_slot,
    select,
    truth,
)
from coherence.smt.state import Layout, MonAgent, SymState, ivar, num, rebuild, terms, undef
from coherence.smt.tables import ModelTables


class ActionSpec(NamedTuple):
    """One concrete action; ``where`` is the slot index (unordered) or queue key (fifo)."""

    kind: ir.TransitionKind
    machine: str
    agent: int | None
    line: int
    transition: int
    params: tuple[int, ...]
    net: int = -1
    where: Any = None


class StepResult(NamedTuple):
    ok: Any
    error: Any  # a model error (kind "error")
    coherence: Any  # the coherence monitor rejects a load
    state: SymState
    sent_twice: Any = None  # a keyed slot's message sent while one is there (keyed only)


# Failure groups, named as the checker names failures: (kind, name).
Group = tuple[str, str]


class Encoder(ModelTables):
    def __init__(self, model: ir.Model) -> None:
        super().__init__(model)
        self.n = model.agents
        self.layout = Layout(model)
        self.hier = self.layout.hier
        # NOTE(z3-hierarchy): per machine its first node and number of instances (they are
        # numbered consecutively), the processors' machine, and per message the machines
        # that send it
        self.instances = ir.instances(model) if self.hier else ()
        self.machine_nodes: dict[str, tuple[int, int]] = {}
        for inst in self.instances:
            base, count = self.machine_nodes.get(inst.machine, (inst.node, 0))
            self.machine_nodes[inst.machine] = (base, count + 1)
        proc = ir.event_machine(model) if self.hier else None
        self.processor = proc.name if proc is not None else None
        self.sending_machines: dict[int, set[str]] = {t: set() for t in self.msg_index.values()}
        for machine in model.machines:
            for tr in machine.transitions:
                for st in ir.walk_stmts(tr.body):
                    if isinstance(st, (ir.Send, ir.Broadcast, ir.Multicast)):
                        self.sending_machines[self.msg_index[st.message]].add(machine.name)
        self.coherence_names = [p.name for p in model.properties if p.kind == "coherence"]
        # NOTE(infer-keyed-slots): per unordered network, (type, src, dst) -> its one slot,
        # where a send goes (a second message of one key is ``StepResult.sent_twice``);
        # empty: a send takes the first free slot, as the semantics does
        self.keyed: dict[int, dict[tuple[int, int, int], int]] = {}
        self.actions = self._actions()

    def node_index_values(self, index: str) -> list[int | None]:
        """Per node, its value of index type ``index`` (None: its machine has no such index),
        as ``Semantics.node_indices``."""
        return [self.sem.node_indices[k].get(index) for k in range(len(self.instances))]

    def src_ok(self, t: int, src: Any) -> Any:
        if self.hier:
            return any_of([z3.And(src >= base, src < base + count)
                           for name, (base, count) in self.machine_nodes.items()
                           if name in self.sending_machines[t]])
        kinds = self.senders[t]
        parts = []
        if ir.MachineKind.HOME in kinds:
            parts.append(src == self.n)
        if ir.MachineKind.CACHE in kinds:
            parts.append(z3.And(src >= 0, src < self.n))
        return any_of(parts)

    # ------------------------------------------------------------ actions

    def _actions(self) -> list[ActionSpec]:
        """Every action, as ``Semantics.action_instances`` lists them (NOTE(actions)), for a
        symbolic state: the spontaneous transitions' instances are those of the semantics'
        tables (``spontaneous``, ``param_values``) for every line and agent, each guarded by
        its source states in ``step``; a message receipt is one per network place (unordered
        slot or FIFO queue), non-stalling handler and receiver. tests/test_semantic_decisions
        checks that the enabled ones are exactly the semantics' enabled actions."""
        m = self.model
        out: list[ActionSpec] = []
        for line in range(m.lines):
            if self.hier:
                for node, mach in enumerate(self.layout.rows):
                    for tr in spontaneous(mach):
                        out += [ActionSpec(tr.kind, mach.name, node, line, tr.index, ps)
                                for ps in param_values(tr)]
                continue
            if self.cache is not None:
                for agent in range(self.n):
                    for tr in spontaneous(self.cache):
                        out += [ActionSpec(tr.kind, self.cache.name, agent, line, tr.index, ps)
                                for ps in param_values(tr)]
            if self.home is not None:
                for tr in spontaneous(self.home):
                    out += [ActionSpec(tr.kind, self.home.name, None, line, tr.index, ps)
                            for ps in param_values(tr)]
        for net_i, net in enumerate(m.networks):
            places: Any
            match net.ordering:
                case ir.Ordering.BUS:
                    continue
                case ir.Ordering.UNORDERED:
                    places = range(net.capacity)
                case ir.Ordering.FIFO:
                    places = self.layout.fifo_keys(net.name)
                case _:
                    assert_never(net.ordering)
            for where in places:
                for machine in m.machines:
                    for tr in machine.transitions:
                        if (tr.kind is not ir.TransitionKind.MESSAGE or tr.stall
                                or m.message(tr.name).network != net.name):
                            continue
                        for ln, receiver in self._receivers(machine, where):
                            out.append(ActionSpec(ir.TransitionKind.MESSAGE, machine.name,
                                                  receiver, ln, tr.index, (), net_i, where))
        return out

    def _receivers(self, machine: ir.Machine, where: Any) -> list[tuple[int, int | None]]:
        if self.hier:
            base, count = self.machine_nodes[machine.name]
            if isinstance(where, tuple):
                _, dst, line = where
                return [(line, dst)] if base <= dst < base + count else []
            return [(ln, a) for ln in range(self.model.lines)
                    for a in range(base, base + count)]
        if isinstance(where, tuple):  # fifo queue key: (src, dst, line)
            _, dst, line = where
            if machine.kind is ir.MachineKind.HOME:
                return [(line, None)] if dst == self.n else []
            return [(line, dst)] if dst < self.n else []
        lines = range(self.model.lines)
        if machine.kind is ir.MachineKind.HOME:
            return [(ln, None) for ln in lines]
        return [(ln, a) for ln in lines for a in range(self.n)]

    def machine_state(self, s: SymState, line: int, agent: int | None) -> Any:
        _g, h, cs = s.lines[line]
        return h[0] if agent is None else cs[agent][0]

    def in_states(self, s: SymState, line: int, agent: int | None, machine: ir.Machine,
                  names: tuple[str, ...]) -> Any:
        st = self.machine_state(s, line, agent)
        return any_of([st == machine.state_index(x) for x in names])

    def step(self, s: SymState, act: ActionSpec) -> StepResult:
        """Mirrors ``Semantics.execute``."""
        machine = self.model.machine(act.machine)
        tr = machine.transitions[act.transition]
        ex = Exec(self, s, act.line)
        ex.agent = act.agent
        for p, v in zip(tr.params, act.params, strict=True):
            ex.locals[p.name] = num(v)
        pre = [self.in_states(s, act.line, act.agent, machine, tr.states)]
        if act.kind == ir.TransitionKind.MESSAGE:
            t = self.msg_index[tr.name]
            dst = self.n if act.agent is None else act.agent
            if isinstance(act.where, int):
                slot = ex.nets[act.net][act.where]
                pre += [slot.valid, slot.line == act.line, slot.dst == dst, slot.type == t]
                ex.msg = (slot.src, list(slot.fields), t)
                remove_slot(slot)
            else:
                q = ex.nets[act.net][act.where]
                pre += [q.count > 0, q.types[0] == t]
                ex.msg = (num(act.where[0]), list(q.fields[0]), t)
                pop_queue(q)
        ex.path = [all_of(pre)]
        ex.refresh()
        g = truth(ex.check(ex.guard(tr, ex.pc), ex.pc))
        ex.path.append(g)
        ex.block(tr.body)
        ex.refresh()
        ex.apply_goto(act.agent)
        ok = ex.alive()
        error = any_of(ex.errs)
        coh = FALSE
        if ex.performs and self.coherence_names:
            coh = self.observe(ex.state, act.line, ex.performs, ok)
            ok = all_of([ok, z3.Not(coh)])
        return StepResult(ok, error, coh, ex.state, any_of(ex.sent_twice))

    # ------------------------------------------------------------ coherence monitor

    def observe(self, s: SymState, line: int, performs: list[tuple[Any, Any, str, Any]],
                ok: Any) -> Any:
        """Mirrors ``Semantics._observe``; returns the violation condition."""
        mon = s.monitor[line]
        nv = self.model.values
        bad: list[Any] = []
        for cond, agent, kind, value in performs:
            if kind == "store":
                for b, ma in enumerate(mon):
                    cb = all_of([cond, agent != b])
                    after = [[ite(all_of([cb, ma.written[v], value == u]), TRUE, ma.after[v][u])
                              for u in range(nv)] for v in range(nv)]
                    fresh = [all_of([cb, value == v, z3.Not(ma.written[v])]) for v in range(nv)]
                    written = [z3.Or(ma.written[v], fresh[v]) for v in range(nv)]
                    after = [[ite(fresh[v], FALSE, after[v][u]) for u in range(nv)]
                             for v in range(nv)]
                    own = all_of([cond, agent == b])
                    mon[b] = MonAgent(ite(own, value, ma.view),
                                      [ite(own, FALSE, w) for w in written], after)
                continue
            for b, ma in enumerate(mon):
                cb = all_of([cond, agent == b, value != ma.view])
                was_written = select(ma.written, value, 0)
                bad.append(all_of([ok, cb, z3.Not(was_written)]))
                after_sel = [select([ma.after[v][u] for v in range(nv)], value, 0)
                             for u in range(nv)]
                mon[b] = MonAgent(ite(cb, value, ma.view),
                                  [ite(cb, z3.And(after_sel[u], ma.written[u]), ma.written[u])
                                   for u in range(nv)], ma.after)
        return any_of(bad)

    # ------------------------------------------------------------ state predicates

    def invariants(self, s: SymState) -> list[tuple[ir.Invariant, Any, Any]]:
        """Per invariant: (violated, cannot be evaluated), over every line."""
        out = []
        for inv in self.model.invariants:
            viol, err = [], []
            for line in range(self.model.lines):
                ex = Exec(self, s, line)
                v = truth(ex.expr(inv.expr, TRUE))
                e = any_of(ex.errs)
                viol.append(all_of([z3.Not(e), z3.Not(v)]))
                err.append(e)
            out.append((inv, any_of(viol), any_of(err)))
        return out

    def assumed(self, s: SymState) -> Any:
        """``Semantics.assumed``: every ``assume`` holds on every line (one that cannot be
        evaluated counts as false). NOTE(assume): each state of a path is constrained by it,
        and the deadlock group is unchanged, since a move to a discarded state is a move."""
        out = []
        for a in self.model.assumptions:
            for line in range(self.model.lines):
                ex = Exec(self, s, line)
                v = truth(ex.expr(a.expr, TRUE))
                out.append(all_of([z3.Not(any_of(ex.errs)), v]))
        return all_of(out)

    def no_transition(self, s: SymState) -> Any:
        """A deliverable message that its receiver has no transition for (stall or not):
        NOTE(no-transition), with the semantics' own handler table."""
        m = self.model
        out = []
        for net_i, net in enumerate(m.networks):
            if net.ordering is ir.Ordering.BUS:
                continue
            for msg in m.messages:
                if msg.network != net.name:
                    continue
                t = self.msg_index[msg.name]
                for machine in m.machines:
                    missing = [i for i in range(machine.state_type.size())
                               if not self.sem.handlers.get((machine.name, msg.name, i))]
                    if not missing:
                        continue
                    if net.ordering is ir.Ordering.UNORDERED:
                        for slot in s.nets[net_i]:
                            for line, agent in self._receivers(machine, 0):
                                dst = self.n if agent is None else agent
                                st = self.machine_state(s, line, agent)
                                out.append(all_of([slot.valid, slot.line == line,
                                                   slot.dst == dst, slot.type == t,
                                                   any_of([st == i for i in missing])]))
                    else:
                        for key, q in s.nets[net_i].items():
                            for line, agent in self._receivers(machine, key):
                                st = self.machine_state(s, line, agent)
                                out.append(all_of([q.count > 0, q.types[0] == t,
                                                   any_of([st == i for i in missing])]))
        return any_of(out)

    def quiescent(self, s: SymState) -> Any:
        parts = []
        for net in s.nets:
            if isinstance(net, list):
                parts += [z3.Not(slot.valid) for slot in net]
            elif isinstance(net, dict):
                parts += [q.count == 0 for q in net.values()]
        for _g, h, cs in s.lines:
            if self.hier:
                parts += [any_of([c[0] == i for i, d in enumerate(mach.states) if d.stable])
                          for mach, c in zip(self.layout.rows, cs, strict=True)]
                continue
            if self.home is not None:
                parts.append(any_of([h[0] == i for i, d in enumerate(self.home.states)
                                     if d.stable]))
            if self.cache is not None:
                stable = [i for i, d in enumerate(self.cache.states) if d.stable]
                parts += [any_of([c[0] == i for i in stable]) for c in cs]
        return all_of(parts)

    # ------------------------------------------------------------ the system

    def system(self, deadlock: bool = True) -> System:
        return System(self, deadlock)

    def initial_state(self) -> SymState:
        return self.layout.initial(self.sem.init_value)


class System:
    """The step relation and the bad-state predicates over one template (cur, nxt, sel)."""

    def __init__(self, enc: Encoder, deadlock: bool) -> None:
        self.enc = enc
        lay = enc.layout
        self.cur = lay.fresh("s")
        self.nxt = lay.fresh("t")
        self.sel = ivar("sel")
        self.cur_leaves = list(terms(self.cur))
        self.nxt_leaves = list(terms(self.nxt))
        results = [enc.step(self.cur, a) for a in enc.actions]
        self.results = results
        # next value of each leaf: an If-chain over the actions that change it
        choose = []
        for i, r in enumerate(results):
            if not z3.is_false(r.ok):
                choose.append(z3.And(self.sel == i, r.ok))
        eqs = []
        per_action = [list(terms(r.state)) for r in results]
        for j, (c, x) in enumerate(zip(self.cur_leaves, self.nxt_leaves, strict=True)):
            value = c
            for i in range(len(results) - 1, -1, -1):
                new = per_action[i][j]
                if not new.eq(c):
                    value = z3.If(self.sel == i, new, value)
            eqs.append(x == value)
        self.trans = z3.And(any_of(choose), *eqs)
        self.domain = self.domain_of(self.cur)
        self.assumed = enc.assumed(self.cur)
        # bad-state groups, each with the extra trace length (0 or 1 step)
        groups: dict[tuple[str, str], tuple[Any, int]] = {}
        for inv, viol, err in enc.invariants(self.cur):
            groups[("invariant", inv.name)] = (viol, 0)
            if not z3.is_false(err):
                groups[("error", inv.name)] = (err, 0)
        groups[("no-transition", "*")] = (enc.no_transition(self.cur), 0)
        groups[("error", "error")] = (any_of([r.error for r in results]), 1)
        for name in enc.coherence_names:
            groups[("coherence", name)] = (any_of([r.coherence for r in results]), 1)
        if deadlock:  # NOTE(deadlock): Semantics.is_deadlock, over the symbolic state
            fires = any_of([z3.Or(r.ok, r.error, r.coherence) for r in results])
            groups[("deadlock", "deadlock")] = (
                all_of([z3.Not(fires), z3.Not(groups[("no-transition", "*")][0]),
                        z3.Not(enc.quiescent(self.cur))]), 0)
        self.groups = groups

    def domain_of(self, s: SymState) -> Any:
        """Every leaf holds a value of its type (or undefined): the state space of induction."""
        enc = self.enc
        m = enc.model
        parts: list[Any] = []

        def scalar(x: Any, t: ir.Type) -> None:
            if isinstance(t, ir.ArrayT):
                for e in x.elems:
                    scalar(e, t.elem)
                return
            if isinstance(t, ir.SetT):
                return
            lo, hi = (t.lo, t.hi) if isinstance(t, ir.IntT) else (0, t.size() - 1)
            parts.append(z3.Or(x == undef(), z3.And(x >= lo, x <= hi)))

        for g, h, cs in s.lines:
            for v, x in zip(m.globals, g, strict=True):
                scalar(x, v.type)
            if enc.home is not None:
                scalar(h[0], enc.home.state_type)
                parts.append(h[0] != undef())
                for v, x in zip(enc.home.vars, h[1:], strict=True):
                    scalar(x, v.type)
            for mach, c in zip(enc.layout.rows, cs, strict=True):
                scalar(c[0], mach.state_type)
                parts.append(c[0] != undef())
                for v, x in zip(mach.vars, c[1:], strict=True):
                    scalar(x, v.type)
        for net_i, net in enumerate(m.networks):
            contents = s.nets[net_i]
            types = [enc.msg_index[x.name] for x in m.messages if x.network == net.name]
            if net.ordering is ir.Ordering.UNORDERED:
                last = enc.layout.nodes - 1
                for slot in contents:
                    ok = [slot.line >= 0, slot.line < m.lines, slot.src >= 0, slot.src <= last,
                          slot.dst >= 0, slot.dst <= last, any_of([slot.type == t for t in types])]
                    ok += self._fields_ok(slot.type, slot.fields, types)
                    ok += [z3.Implies(slot.type == t, enc.src_ok(t, slot.src)) for t in types]
                    parts.append(z3.Implies(slot.valid, all_of(ok)))
            elif net.ordering is ir.Ordering.FIFO:
                for key, q in contents.items():
                    parts += [q.count >= 0, q.count <= net.capacity]
                    src = num(key[0])
                    for k, (ty, fs) in enumerate(zip(q.types, q.fields, strict=True)):
                        ok = [any_of([z3.And(ty == t, enc.src_ok(t, src)) for t in types]),
                              *self._fields_ok(ty, fs, types)]
                        parts.append(z3.Implies(q.count > k, all_of(ok)))
        for line in s.monitor:
            for ma in line:
                parts.append(z3.And(ma.view >= 0, ma.view < m.values))
        return all_of(parts)

    def _fields_ok(self, ty: Any, fields: list[Any], types: list[int]) -> list[Any]:
        out = []
        for t in types:
            msg = self.enc.model.messages[t]
            for f, x in zip(msg.fields, fields, strict=False):
                ft = f.type
                lo, hi = (ft.lo, ft.hi) if isinstance(ft, ir.IntT) else (0, ft.size() - 1)
                out.append(z3.Implies(ty == t, z3.Or(x == undef(), z3.And(x >= lo, x <= hi))))
        return out

    def at(self, formula: Any, s: SymState, nxt: SymState | None = None,
           sel: Any = None) -> Any:
        pairs = list(zip(self.cur_leaves, terms(s), strict=True))
        if nxt is not None:
            pairs += list(zip(self.nxt_leaves, terms(nxt), strict=True))
        if sel is not None:
            pairs.append((self.sel, sel))
        return z3.substitute(formula, *pairs)

    def equal(self, a: SymState, b: SymState) -> Any:
        return all_of([x == y for x, y in zip(terms(a), terms(b), strict=True)])


_ = rebuild
