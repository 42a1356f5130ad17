"""Counterexamples to induction for ``--agents any``, made concrete and replayed.

NOTE(finite-cti): Z3's model-based quantifier instantiation rarely finishes on a satisfiable
query over an unbounded sort, so a failed step query is asked again with the ``Node`` sort
limited to at most K agents (K = 1..4). A model found there is a real counterexample to
induction for every N >= its size (its agents are all there is). It is turned into the
reference semantics' state for that many agents, the step is executed by ``semantics`` and the
broken property is re-detected there; any mismatch is an encoder bug (``TraceReplayError``).
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING, Any

import attrs
import z3

from coherence import ir
from coherence.semantics import UNDEF, Action, State
from coherence.smt import interrupt
from coherence.smt.induction import Cti
from coherence.smt.param_count import UNDEF_INT, exact, is_card, is_int
from coherence.smt.state import as_int
from coherence.trace import TraceReplayError, describe

if TYPE_CHECKING:
    from coherence.smt.param import Budget

MAX_AGENTS = 4


def find_cti(model: ir.Model, query: Any, budget: Budget,
             sizes: range = range(1, MAX_AGENTS + 1)) -> Cti | None:
    """A replayed counterexample to induction of ``query`` with few agents, or None; all
    sizes together get CTI_SECONDS (with ``rlimit``: each size gets the CTI share of it)."""
    from coherence.smt.param import CTI_SECONDS, HOME, NODE, UNDEF_N
    start = time.perf_counter()
    named = [HOME] if query.shape is None else named_nodes(query.shape)
    for k in sizes:
        left = budget.seconds(CTI_SECONDS - (time.perf_counter() - start))
        if left is not None and left <= 0:
            return None
        elems = [*named, UNDEF_N, *(z3.Const(f"cti_agent{i}", NODE) for i in range(k))]
        solver = z3.Solver()
        budget.limit(solver, CTI_SECONDS, since=start)
        memo: dict[int, Any] = {}
        try:
            # NOTE(ground-deadline): unrolling is Python (MSI's 160 lines at 3-4 agents: minutes
            # past CTI_SECONDS and --timeout); it stops at the search's deadline
            deadline = None if left is None else time.perf_counter() + left
            unrolled = [expand(a, elems, NODE, memo, [MAX_UNROLLED], deadline)
                        for a in query.assertions]
        except _TooLarge:  # nested quantifiers: larger sizes only grow, so give up the search
            return None
        solver.add(*unrolled)
        solver.add(z3.Distinct(*elems))
        for x in _free_nodes(query.assertions, NODE):
            solver.add(z3.Or(*[x == e for e in elems]))
        solver.add(*_node_arrays_in(query.pre.leaves(), elems))
        if interrupt.check(solver) == z3.sat:
            if query.shape is not None:
                from coherence.smt.param_cti_hier import replay_hier
                return replay_hier(model, query, solver.model(), named,
                                   elems[len(named) + 1:])
            return _replay(model, query, solver.model(), HOME, UNDEF_N, elems[2:])
    return None


def named_nodes(shape: Any) -> list[Any]:
    """The singleton nodes' constants of a hierarchical spec (NOTE(param-hierarchy))."""
    from coherence.smt.param import NODE
    from coherence.smt.param_hier import node_name
    return [z3.Const(node_name(i), NODE) for i in shape.singles]


class _TooLarge(Exception):
    """Unrolling the quantifiers would build more than MAX_UNROLLED instances."""


# Quantifier instances one CTI search may build (nested quantifiers grow as size^depth: eight
# nested ones at 4 agents are 6^8 = 1.7 million, minutes of Python before any deadline).
MAX_UNROLLED = 200_000


def expand(t: Any, elems: list[Any], sort: Any, memo: dict[int, Any],
           left: list[int] | None = None, deadline: float | None = None) -> Any:
    """``t`` with every quantifier over ``sort`` unrolled over ``elems``: quantifier-free, so
    Z3 decides it at once (the universe is exactly ``elems``). ``left``: a countdown of the
    instances that may still be built (_TooLarge when it runs out, or when ``deadline``, a
    ``time.perf_counter()``, has passed)."""
    key = t.get_id()
    if key in memo:  # the term is kept alive beside its result: Z3 ids are reused otherwise
        return memo[key][1]
    if z3.is_quantifier(t) and not t.is_lambda():
        sorts = [t.var_sort(i) for i in range(t.num_vars())]
        if any(s != sort for s in sorts):
            raise ValueError("a quantifier over another sort")
        body = t.body()
        if left is not None:
            left[0] -= len(elems) ** len(sorts)
            if left[0] < 0:
                raise _TooLarge
        if deadline is not None and time.perf_counter() > deadline:
            raise _TooLarge
        cases = []
        for values in itertools.product(elems, repeat=len(sorts)):
            cases.append(expand(z3.substitute_vars(body, *reversed(values)), elems, sort, memo,
                                left, deadline))
        out = z3.And(*cases) if t.is_forall() else z3.Or(*cases)
    elif is_card(t):  # NOTE(param-count): exact over the finite universe
        out = exact(t, elems, lambda x: expand(x, elems, sort, memo, left, deadline))
    elif z3.is_app(t) and t.num_args() > 0:
        out = t.decl()(*[expand(c, elems, sort, memo, left, deadline) for c in t.children()])
    else:
        out = t
    memo[key] = (t, out)
    return out


def _node_arrays_in(leaves: list[Any], elems: list[Any]) -> list[Any]:
    """Node-valued arrays (an agent variable per cache, an agent field of a message) take
    their values among ``elems`` at every point of ``elems``: the finite universe."""
    from itertools import product

    from coherence.smt.param import NODE
    out = []
    for x in leaves:
        if not z3.is_array(x) or x.sort().range() != NODE:
            continue
        arity = z3.Z3_get_array_arity(x.ctx_ref(), x.sort().ast)
        for at in product(elems, repeat=arity):
            v = x[at] if arity > 1 else x[at[0]]
            out.append(z3.Or(*[v == e for e in elems]))
    return out


def _free_nodes(terms: list[Any], sort: Any) -> list[Any]:
    seen: dict[int, Any] = {}
    todo = list(terms)
    out = {}
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen[t.get_id()] = t
        if z3.is_quantifier(t):
            todo.append(t.body())
        elif z3.is_const(t) and t.sort() == sort and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out[t.get_id()] = t
        elif z3.is_app(t):
            todo.extend(t.children())
    return list(out.values())


class _Concrete:
    """Z3's finite model read as the semantics' values for ``n`` agents."""

    def __init__(self, m: z3.ModelRef, home: Any, undef: Any, agents: list[Any]) -> None:
        self.m = m
        self.home = m.eval(home, model_completion=True)
        self.undef = m.eval(undef, model_completion=True)
        self.agents = [m.eval(a, model_completion=True) for a in agents]
        self.n = len(self.agents)

    def node(self, t: Any) -> int:
        from coherence.semantics import UNDEF
        v = self.m.eval(t, model_completion=True)
        if v.eq(self.home):
            return self.n
        if v.eq(self.undef):
            return UNDEF
        for i, e in enumerate(self.agents):
            if v.eq(e):
                return i
        raise TraceReplayError("Z3's counterexample names a node outside its universe")

    def scalar(self, t: Any) -> int:
        v = self.m.eval(t, model_completion=True)
        if is_int(v):  # NOTE(param-count)
            return UNDEF if v.eq(UNDEF_INT) else v.as_long()
        return as_int(v)

    def value(self, t: Any, typ: ir.Type) -> int:
        if isinstance(typ, (ir.AgentT, ir.NodeT)):
            return self.node(t)
        if isinstance(typ, ir.SetT):
            return sum(1 << i for i, e in enumerate(self.agents)
                       if z3.is_true(self.m.eval(t[e], model_completion=True)))
        return self.scalar(t)


def replay(model: ir.Model, query: Any, m: z3.ModelRef, home: Any, undef: Any,
           agents: list[Any]) -> Cti | None:
    """The counterexample to induction a model of ``query`` at the nodes ``agents`` describes,
    checked in the reference semantics (``TraceReplayError`` where its pre-state breaks an
    invariant there), or None where it has no agent or the spec allows no such size."""
    return _replay(model, query, m, home, undef, agents)


def _replay(model: ir.Model, query: Any, m: z3.ModelRef, home: Any, undef: Any,
            agents: list[Any]) -> Cti | None:
    from coherence.errors import SpecError
    from coherence.spec.load import rebind
    from coherence.spec.select import drop_properties
    c = _Concrete(m, home, undef, agents)
    if c.n == 0:
        return None
    try:
        inst = rebind(model, {"agents": c.n})
    except SpecError:  # the spec's parameters may not allow this many agents
        return None
    inst = drop_properties(inst, [p.name for p in inst.properties])
    from coherence.smt.system import Encoder
    enc = Encoder(inst)
    sem = enc.sem
    pre = _state(inst, query.pre, c)
    if sem.invariant_violations(pre) or sem.enabled(pre)[1]:
        raise TraceReplayError("the pre-state of a counterexample to induction breaks an "
                               "invariant in the reference semantics")
    act = _action(inst, enc, query, c, pre)
    return conclude(enc, inst, query, pre, act, f"{c.n} agent(s)")


UNCAPPED = (" (with the unordered networks' capacities not enforced: a proof for every N does "
            "not keep them)")


def _uncapped(inst: ir.Model, pre: State) -> Any:
    """The semantics of ``inst`` with room for every message ``pre``'s nodes could send on
    its unordered networks."""
    from coherence.semantics import Semantics
    big = len(inst.messages) * (len(pre[0][0][2]) + 1) ** 2
    return Semantics(attrs.evolve(inst, networks=tuple(
        attrs.evolve(n, capacity=max(n.capacity, big))
        if n.ordering is ir.Ordering.UNORDERED else n for n in inst.networks)))


def _errors_after(sem: Any, state: State) -> list[str]:
    return [f"then {o.error.message}" for o in sem.enabled(state)[0] if o.error is not None]


def conclude(enc: Any, inst: ir.Model, query: Any, pre: State, act: Action,
             size: str) -> Cti:
    """Execute the step of a counterexample to induction in the semantics and find the
    broken property there (else ``TraceReplayError``); ``size``: "2 agent(s)"."""
    from coherence.smt.extract import describe_state
    sem = enc.sem
    out = sem.execute(pre, act)
    unbounded = ""
    unordered = any(n.ordering is ir.Ordering.UNORDERED for n in inst.networks)
    if out is None and unordered:
        # the step may be blocked only by a full unordered network, whose capacity the
        # encoding does not keep (a send there never blocks: an over-approximation)
        sem = _uncapped(inst, pre)
        out = sem.execute(pre, act)
        unbounded = UNCAPPED
    if out is None:
        raise TraceReplayError("the step of a counterexample to induction is not enabled")
    step = describe(sem, 1, pre, out)
    kind, _, name = query.goal.partition(":")
    if out.error is not None:
        message = out.error.message
    else:
        assert out.state is not None
        broken = [v.message for v in sem.invariant_violations(out.state) if v.name == name]
        if kind == "no-transition":
            broken = [v.message for v in sem.enabled(out.state)[1]]
        if kind == "abstraction":
            nets = [x for n, x in zip(inst.networks, out.state[1], strict=True)
                    if n.ordering is ir.Ordering.UNORDERED]
            keys = [m[:4] for contents in nets for m in contents]
            broken = [f"two {inst.messages[k[3]].name} messages from node {k[1]} to node "
                      f"{k[2]} in flight: --agents any keeps one per (type, source, "
                      "destination)" for k in set(keys) if keys.count(k) > 1]
            fifo = [x for n, x in zip(inst.networks, out.state[1], strict=True)
                    if n.ordering is ir.Ordering.FIFO]
            broken += [f"two {inst.messages[t].name} messages in the queue from "
                       f"{sem.node_name(src)} to {sem.node_name(dst)}: a hierarchical spec's "
                       "proof for every size proves at most one per type"
                       for queues in fifo for (src, dst, _ln), items in queues
                       for t in {i[0] for i in items} if [i[0] for i in items].count(t) > 1]
        if kind == "error":  # some action of the successor errs
            broken = _errors_after(sem, out.state)
            if not broken and unordered and not unbounded:  # one a full network blocks
                broken = _errors_after(_uncapped(inst, pre), out.state)
                unbounded = UNCAPPED if broken else ""
        if not broken:
            raise TraceReplayError(f"the step of a counterexample to induction does not "
                                   f"break {query.goal} in the reference semantics")
        message = broken[0]
    return Cti(f"{query.goal} can break with {size}{unbounded}: {message}", [query.goal],
               describe_state(enc, pre), step, pre, inst)


def _state(inst: ir.Model, s: Any, c: _Concrete) -> State:
    g = tuple(c.value(x, v.type) for v, x in zip(inst.globals, s.globals, strict=True))
    home: tuple = ()
    if inst.home is not None:
        home = (c.scalar(s.home[0]), *(c.value(x, v.type) for v, x in
                                       zip(inst.home.vars, s.home[1:], strict=True)))
    caches: tuple = ()
    if inst.caches:
        cache = inst.caches[0]
        caches = tuple((c.scalar(s.cvars[0][e]), *(c.value(arr[e], v.type) for v, arr in
                                                   zip(cache.vars, s.cvars[1:], strict=True)))
                       for e in c.agents)
    nodes = [*c.agents, c.home]
    from coherence.smt.param import UNet
    nets: list[tuple] = []
    for net, pnet in zip(inst.networks, s.nets, strict=True):
        if isinstance(pnet, UNet):
            msgs = []
            for t, present in pnet.present.items():
                for si, src in enumerate(nodes):
                    for di, dst in enumerate(nodes):
                        if z3.is_true(c.m.eval(present[src, dst], model_completion=True)):
                            ftypes = [f.type for f in inst.messages[t].fields]
                            fs = tuple(c.value(f[src, dst], ft) for f, ft in
                                       zip(pnet.fields[t], ftypes, strict=True))
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
                    items.append((t, tuple(c.value(f[src, dst], ft) for f, ft in
                                           zip(fields[j], ftypes, strict=False))))
                if items:
                    queues.append(((si, di, 0), tuple(items)))
        nets.append(tuple(sorted(queues)) if net.ordering is ir.Ordering.FIFO else ())
    return (((g, home, caches),), tuple(nets), ())


def _action(inst: ir.Model, enc: Any, query: Any, c: _Concrete, pre: State) -> Action:
    machine, tr = query.action
    consts = {str(x).split("|", 1)[1]: x for x in query.consts}
    agent = c.node(consts["self"]) if machine.kind is ir.MachineKind.CACHE else None
    params = tuple(c.node(consts[p.name]) if isinstance(p.type, ir.AgentT)
                   else c.scalar(consts[p.name]) for p in tr.params)
    index = machine.transitions.index(tr)
    msg, net_i = None, -1
    if tr.kind is ir.TransitionKind.MESSAGE:
        dst = c.n if agent is None else agent
        msg, net_i = received(inst, enc, tr, pre, c.node(consts["src"]), dst)
    return Action(tr.kind, machine.name, agent, 0, index, params, net_i, msg)


def received(inst: ir.Model, enc: Any, tr: ir.Transition, pre: State, src: int, dst: int
             ) -> tuple[Any, int]:
    """The message a receipt of ``tr`` takes from ``src`` to ``dst`` in the concrete
    pre-state, and its network (flat and hierarchical counterexamples to induction alike)."""
    net_i = enc.net_index[inst.message(tr.name).network]
    if inst.networks[net_i].ordering is ir.Ordering.UNORDERED:
        t = enc.msg_index[tr.name]
        found = [x for x in pre[1][net_i] if x[1:4] == (src, dst, t)]
        if not found:
            raise TraceReplayError("Z3's counterexample to induction receives a message "
                                   "that is not there")
        return found[0], net_i
    queue = dict(pre[1][net_i]).get((src, dst, 0), ())
    if not queue:
        raise TraceReplayError("Z3's counterexample to induction receives from an empty queue")
    return (0, src, dst, queue[0][0], queue[0][1]), net_i
