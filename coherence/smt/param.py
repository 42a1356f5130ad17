"""Proofs for every number of agents: agents as an uninterpreted sort (EPR-style, as Ivy and
mypyvy do; Padon et al., "Ivy: safety verification by interactive generalization", PLDI 2016).

Nodes (agents, the home node and "undefined") are one uninterpreted sort ``Node`` with two
distinguished constants; per-agent variables are arrays over it, sets of agents are arrays to
Bool. FIFO networks are arrays over (src, dst) with their per-pair capacity (exact); unordered
networks keep one message per (type, src, dst) (``UNet``). Each transition becomes one action
whose acting agent, agent parameters and message source are existentially chosen constants.
Invariants are universally quantified; the inductive check is

    init ⇒ P        and        Inv(s) ∧ action(s, s') ⇒ P(s')    (one query per action and P)

with Inv the conjunction of every invariant (the spec's ``invariant aux`` lines included), no
model error and no message without a transition (see ``obligations``).

Counting (``size(s)``, ``count(a: agent :: P)``, integers whose range moves with the number of
agents) is a cardinality function with axioms (NOTE(param-count) in ``param_count``).

Outside this fragment (the atomic bus, a ``for`` that is not a multicast, ``broadcast`` on FIFO
networks, the number of agents used as a number, the coherence monitor, deadlock) the
encoder raises ``Unsupported`` with the construct's location: never a silent pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.errors import NO_SPAN, Span, SpecError
from coherence.results import Failure
from coherence.semantics import range_of
from coherence.smt import guarded, interrupt
from coherence.smt.execute import TRUE, Exec, all_of, any_of, arithmetic, b2i, truth
from coherence.smt.frame_reads import leaf_index, leaves_read, leaves_written
from coherence.smt.nodes import (
    HOME,
    NODE,
    UNDEF_N,
    exists,
    finite,
    forall,
    is_agent,
    node_constants,
)
from coherence.smt.param_count import (
    INT,
    UNDEF_INT,
    Ranges,
    bounds,
    card,
    card_terms,
    count,
    counts_anywhere,
    in_range,
    is_int,
    scaled_ranges,
    to_int,
)
from coherence.smt.proof_cache import FORMAT, CacheError, ProofCache
from coherence.smt.state import UNDEF_BV, WIDTH, Unsupported, ivar, num
from coherence.smt.tables import ModelTables
from coherence.smt.z3_owner import owns_z3
from coherence.trace import TraceReplayError

BV = z3.BitVecSort(WIDTH)


def _sort(t: ir.Type) -> Any:
    if isinstance(t, (ir.AgentT, ir.NodeT)):
        return NODE
    if isinstance(t, ir.SetT):
        return z3.ArraySort(NODE, z3.BoolSort())
    if isinstance(t, ir.ArrayT):
        raise Unsupported("arrays are not supported with --agents any", NO_SPAN)
    return BV


def _fresh(name: str, t: ir.Type) -> Any:
    s = _sort(t)
    return ivar(name) if s == BV else z3.Const(name, s)


@attrs.define
class UNet:
    """An unordered network for every N: per message type, whether one is in flight from src
    to dst (an array over (src, dst)) and its fields. One message per (type, src, dst) is an
    abstraction: every send proves that none of its kind is already there (see obligations)."""

    present: dict[int, Any]
    fields: dict[int, list[Any]]

    def leaves(self) -> list[Any]:
        return [x for t in sorted(self.present) for x in (self.present[t], *self.fields[t])]

    def copy(self) -> UNet:
        return UNet(dict(self.present), {t: list(f) for t, f in self.fields.items()})


@attrs.define
class PState:
    globals: list[Any]
    home: list[Any]
    cvars: list[Any]  # per cache variable (state first): Array(Node, sort)
    # fifo: (count, types[cap], fields[cap][nf]) arrays over (src, dst); unordered: UNet
    nets: list[Any]
    # NOTE(param-hierarchy): a hierarchical spec's singleton instances, each (state, *vars)
    # (``param_hier.Shape.singles`` order); empty for flat specs, whose home is ``home``
    rows: list[list[Any]] = attrs.Factory(list)

    def leaves(self) -> list[Any]:
        out = [*self.globals, *self.home, *self.cvars, *(x for r in self.rows for x in r)]
        for net in self.nets:
            if isinstance(net, UNet):
                out += net.leaves()
            elif net is not None:
                count, types, fields = net
                out += [count, *types, *(f for row in fields for f in row)]
        return out

    def copy(self) -> PState:
        nets = [n.copy() if isinstance(n, UNet) else (n[0], list(n[1]), [list(r) for r in n[2]])
                for n in self.nets]
        return PState(list(self.globals), list(self.home), list(self.cvars), nets,
                      [list(r) for r in self.rows])


class ParamEncoder(ModelTables):
    shape: Any = None  # NOTE(param-hierarchy): param_hier.Shape of a hierarchical spec

    def __init__(self, model: ir.Model) -> None:
        super().__init__(model)
        self.n = 0  # no concrete agent ids in this encoding
        if model.lines != 1:
            raise Unsupported("--agents any needs lines = 1", NO_SPAN)
        for p in model.properties:
            raise Unsupported(f"property {p.name} (the coherence monitor) is not supported with "
                              f"--agents any; prove the invariants with --skip {p.name}", p.span)
        for net in model.networks:
            if net.ordering is ir.Ordering.BUS:
                raise Unsupported(f"network {net.name}: the atomic bus is not supported with "
                                  "--agents any (fifo and unordered networks are)", net.span)
        for a in model.assumptions:
            raise Unsupported(f"assume {a.name}: state constraints are not supported with "
                              "--agents any (they bound the search of one configuration; "
                              "prove with --agents N)", a.span)
        # NOTE(param-count): integers whose range moves with the number of agents
        self.ranges: Ranges = scaled_ranges(model) if self.shape is None else {}
        self.queue_sorts: dict[str, list[Any]] = {}
        if self.shape is None:  # a hierarchical encoder sets them once it has its shape
            self.set_queue_sorts()

    def set_queue_sorts(self) -> None:
        self.queue_sorts = {net.name: self.queue_field_sorts(net)
                            for net in self.model.networks if net.ordering is ir.Ordering.FIFO}

    def queue_field_sorts(self, net: ir.Network) -> list[Any]:
        """The sort of each field position of a FIFO network's queue slots: a slot holds any
        of the network's message types, so the types must agree on the sort at a position
        (MSI's FwdGetS(req), FwdGetM(req) and Inv(req) all carry an agent first)."""
        sorts: list[Any] = []
        for msg in self.model.messages:
            if msg.network != net.name:
                continue
            for j, f in enumerate(msg.fields):
                fs = self.field_sort(f)
                if j == len(sorts):
                    sorts.append(fs)
                elif sorts[j] != fs:
                    raise Unsupported(f"message {msg.name}: field {f.name} is a "
                                      f"{_kind(fs)} where other messages on fifo network "
                                      f"{net.name} carry a {_kind(sorts[j])}; with "
                                      "--agents any the messages of a fifo network must agree "
                                      "on each field's kind", f.span)
        return sorts

    def is_agent(self, x: Any) -> Any:
        """Whether node ``x`` is an instance of the replicated machine (a cache)."""
        return is_agent(x)

    def nodes_apart(self) -> Any:
        """The named nodes are distinct (the home is not "undefined")."""
        return HOME != UNDEF_N

    def var_sort(self, v: ir.Var) -> Any:
        return INT if v.span in self.ranges else _sort(v.type)

    def fresh(self, prefix: str) -> PState:
        m = self.model
        g = [z3.Const(f"{prefix}|{v.name}", self.var_sort(v)) for v in m.globals]
        h: list[Any] = []
        if self.home is not None:
            h = [ivar(f"{prefix}|H.state")]
            h += [z3.Const(f"{prefix}|H.{v.name}", self.var_sort(v)) for v in self.home.vars]
        cv: list[Any] = []
        if self.cache is not None:
            cv = [z3.Array(f"{prefix}|C.state", NODE, BV)]
            cv += [z3.Array(f"{prefix}|C.{v.name}", NODE, self.var_sort(v))
                   for v in self.cache.vars]
        nets = self.fresh_nets(prefix)
        return PState(g, h, cv, nets)

    def field_sort(self, f: ir.Field) -> Any:
        """The Z3 sort of a message field: agents are nodes, everything else a number."""
        if isinstance(f.type, (ir.AgentT, ir.NodeT)):
            return NODE
        if isinstance(f.type, (ir.SetT, ir.ArrayT)):
            raise Unsupported("set- and array-valued message fields are not supported with "
                              "--agents any", f.span)
        return INT if f.span in self.ranges else BV

    def fresh_nets(self, prefix: str) -> list[Any]:
        """Fresh contents of every network: per unordered network a ``UNet``, per FIFO network
        (count, types, fields) arrays over (src, dst)."""
        m = self.model
        nets: list[Any] = []
        for net in m.networks:
            if net.ordering is ir.Ordering.UNORDERED:
                tys = [(self.msg_index[x.name], x) for x in m.messages if x.network == net.name]
                nets.append(UNet(
                    {t: z3.Array(f"{prefix}|{net.name}.{x.name}", NODE, NODE, z3.BoolSort())
                     for t, x in tys},
                    {t: [z3.Array(f"{prefix}|{net.name}.{x.name}.{f.name}", NODE, NODE,
                                  self.field_sort(f)) for f in x.fields]
                     for t, x in tys}))
                continue
            cap = net.capacity
            sorts = self.queue_sorts[net.name]
            nets.append((z3.Array(f"{prefix}|{net.name}.count", NODE, NODE, BV),
                         [z3.Array(f"{prefix}|{net.name}.type{k}", NODE, NODE, BV)
                          for k in range(cap)],
                         [[z3.Array(f"{prefix}|{net.name}.f{k}.{j}", NODE, NODE, fs)
                           for j, fs in enumerate(sorts)] for k in range(cap)]))
        return nets

    def init_formula(self, s: PState) -> Any:
        m = self.model
        parts = []

        def const(v: ir.Var) -> Any:
            if isinstance(v.type, ir.SetT):
                e = v.init
                if not (isinstance(e, ir.Lit) and e.value == 0):
                    raise Unsupported("only empty sets can be initial values with --agents any",
                                      v.span)
                return z3.K(NODE, z3.BoolVal(False))
            if isinstance(v.type, (ir.AgentT, ir.NodeT)):
                e = v.init
                if isinstance(e, ir.Lit) and e.value is None:
                    return UNDEF_N
                raise Unsupported("agent variables must start undefined with --agents any",
                                  v.span)
            value = num(self.sem.init_value(v))
            return to_int(value) if v.span in self.ranges else value

        for v, x in zip(m.globals, s.globals, strict=True):
            parts.append(x == const(v))
        if self.home is not None:
            parts.append(s.home[0] == self.home.state_index(self.home.init_state))
            for v, x in zip(self.home.vars, s.home[1:], strict=True):
                parts.append(x == const(v))
        if self.cache is not None:
            y = z3.Const("y", NODE)
            parts.append(forall([y], s.cvars[0][y] == self.cache.state_index(
                self.cache.init_state)))
            for v, arr in zip(self.cache.vars, s.cvars[1:], strict=True):
                parts.append(forall([y], arr[y] == const(v)))
        for net in s.nets:
            a, b = z3.Consts("a b", NODE)
            if isinstance(net, UNet):
                parts += [forall([a, b], z3.Not(p[a, b])) for p in net.present.values()]
            else:
                parts.append(forall([a, b], net[0][a, b] == 0))
        return all_of(parts)

    def domain(self, s: PState) -> Any:
        m = self.model
        parts = [HOME != UNDEF_N]

        def scalar(x: Any, v: ir.Var | ir.Type) -> Any:
            if isinstance(v, ir.Var) and v.span in self.ranges:
                return z3.Or(x == UNDEF_INT, in_range(x, self.ranges[v.span]))
            t = v.type if isinstance(v, ir.Var) else v
            if isinstance(t, ir.SetT):
                return TRUE
            if isinstance(t, ir.AgentT):
                return x != HOME
            if isinstance(t, ir.NodeT):
                return TRUE
            lo, hi = (t.lo, t.hi) if isinstance(t, ir.IntT) else (0, t.size() - 1)
            return z3.Or(x == num(-(1 << 31)), z3.And(x >= lo, x <= hi))

        for v, x in zip(m.globals, s.globals, strict=True):
            parts.append(scalar(x, v))
        if self.home is not None:
            parts.append(scalar(s.home[0], self.home.state_type))
            parts.append(s.home[0] != num(-(1 << 31)))
            for v, x in zip(self.home.vars, s.home[1:], strict=True):
                parts.append(scalar(x, v))
        if self.cache is not None:
            y = z3.Const("y", NODE)
            inner = [scalar(s.cvars[0][y], self.cache.state_type),
                     s.cvars[0][y] != num(-(1 << 31))]
            for v, arr in zip(self.cache.vars, s.cvars[1:], strict=True):
                inner.append(scalar(arr[y], v))
            parts.append(forall([y], all_of(inner)))
        def src_ok(t: int, a: Any) -> Any:
            kinds = self.senders[t]
            return any_of(([a == HOME] if ir.MachineKind.HOME in kinds else [])
                          + ([is_agent(a)] if ir.MachineKind.CACHE in kinds else []))

        def dst_ok(t: int, b: Any) -> list[Any]:
            # NOTE(home-sources): every send of the type names the home
            return [b == HOME] if t in self.to_home else []

        def fields_ok(t: int, xs: list[Any]) -> list[Any]:
            fok = []
            for f, x in zip(m.messages[t].fields, xs, strict=False):
                if isinstance(f.type, ir.AgentT):  # an agent or undefined, never the home
                    fok.append(x != HOME)
                    continue
                if isinstance(f.type, ir.NodeT):
                    continue
                if f.span in self.ranges:
                    fok.append(z3.Or(x == UNDEF_INT, in_range(x, self.ranges[f.span])))
                    continue
                lo, hi = (f.type.lo, f.type.hi) if isinstance(f.type, ir.IntT) else (
                    0, f.type.size() - 1)
                fok.append(z3.Or(x == num(-(1 << 31)), z3.And(x >= lo, x <= hi)))
            return fok

        for net, pnet in zip(m.networks, s.nets, strict=True):
            a, b = z3.Consts("a b", NODE)
            if isinstance(pnet, UNet):
                for t, present in pnet.present.items():
                    ok = [a != UNDEF_N, b != UNDEF_N, src_ok(t, a), *dst_ok(t, b),
                          *fields_ok(t, [f[a, b] for f in pnet.fields[t]])]
                    parts.append(forall([a, b], z3.Implies(present[a, b], all_of(ok))))
                continue
            count, types, fields = pnet
            tys = [self.msg_index[x.name] for x in m.messages if x.network == net.name]
            inner = [count[a, b] >= 0, count[a, b] <= net.capacity,
                     z3.Implies(count[a, b] > 0, z3.And(a != UNDEF_N, b != UNDEF_N))]
            for k, ty in enumerate(types):
                opts = []
                for t in tys:
                    fok = fields_ok(t, [x[a, b] for x in fields[k]])
                    opts.append(all_of([ty[a, b] == t, src_ok(t, a), *dst_ok(t, b), *fok]))
                inner.append(z3.Implies(count[a, b] > k, any_of(opts)))
            parts.append(forall([a, b], all_of(inner)))
        return all_of(parts)


_AGENTS = object()  # NOTE(message-count): an end of a message that ranges over the agents


def _fixed_end(e: ir.MsgQuant) -> tuple[str, ir.Expr] | None:
    """("dst" or "src", x) when ``e``'s body has a conjunct ``m.dst == x`` (or ``m.src``)
    whose ``x`` does not mention ``m``: the end of the messages it counts that is one node."""
    stack = [e.body]
    while stack:
        b = stack.pop()
        if isinstance(b, ir.Binary) and b.op == "&&":
            stack += [b.right, b.left]
            continue
        if isinstance(b, ir.Binary) and b.op == "==":
            for a, x in ((b.left, b.right), (b.right, b.left)):
                if (isinstance(a, ir.MsgVarAttr) and a.var == e.var and a.attr in ("src", "dst")
                        and not _mentions(x, e.var)):
                    return a.attr, x
    return None


def _mentions(x: Any, var: str) -> bool:
    return _has(x, lambda n: isinstance(n, ir.MsgVarAttr) and n.var == var)


def _has(node: Any, found: Callable[[Any], bool]) -> bool:
    """Whether ``found`` holds of ``node`` or of an IR node below it."""
    if found(node):
        return True
    if isinstance(node, (tuple, list)):
        return any(_has(x, found) for x in node)
    if attrs.has(type(node)):
        return any(_has(getattr(node, f.name), found) for f in attrs.fields(type(node))
                   if f.name not in ("span", "file", "origin", "type"))
    return False


class PExec(Exec):
    """``Exec`` with symbolic agents: agent-valued terms are of sort ``Node``."""

    def __init__(self, enc: ParamEncoder, state: PState) -> None:
        self.enc = enc
        self.n = 0
        self.line = 0
        self.pstate = state.copy()
        self.globals, self.home = self.pstate.globals, self.pstate.home
        self.cvars = self.pstate.cvars
        self.nets = self.pstate.nets
        self.agent: Any = None
        self.msg = None
        self.locals = {}
        self.path = []
        self.errs = []
        self.blocks = []
        self.pc = TRUE
        self.goto = num(-1)
        self.performs = []
        self.depth = 0
        self.bound: list[tuple[Any, Any]] = []  # quantified variables we are in, and domains
        self.dups: list[Any] = []  # a send finds one of its kind already there (UNet)
        # the sends of a ``for`` body being run for its symbolic agent: (type, fields, dst, pc)
        self.captured: list[tuple[int, list[Any], Any, Any]] | None = None

    def error(self, cond: Any, bad: Any) -> None:
        c = all_of([cond, bad])
        if z3.is_false(c):
            return
        if self.bound:  # an error for some value of the enclosing quantifiers
            c = exists([b for b, _ in self.bound], z3.And(*[d for _, d in self.bound], c))
        self.errs.append(c)

    def check(self, v: Any, cond: Any) -> Any:
        if is_int(v):
            self.error(cond, v == UNDEF_INT)
        elif z3.is_bv(v):
            self.error(cond, v == num(-(1 << 31)))
        elif v.sort() == NODE:
            self.error(cond, v == UNDEF_N)
        return v

    def expr(self, e: ir.Expr, c: Any) -> Any:
        if isinstance(e, ir.Lit) and isinstance(e.type, (ir.AgentT, ir.NodeT)):
            if e.value is None:
                return UNDEF_N
            if isinstance(e.type, ir.NodeT) and e.value == e.type.n:
                return HOME
            raise Unsupported("a literal agent id is not supported with --agents any", e.span)
        if isinstance(e, ir.Lit) and isinstance(e.type, ir.SetT):
            if e.value != 0:
                raise Unsupported("set literals other than {} are not supported with "
                                  "--agents any", e.span)
            return z3.K(NODE, z3.BoolVal(False))
        if isinstance(e, ir.SelfId):
            return self.agent if self.agent is not None else UNDEF_N
        if isinstance(e, ir.MVar) and e.agent is not None:
            a = self.agent_expr(e.agent, c)
            return self.cvars[self.enc.var_slot[(e.machine, e.name)]][a]
        if isinstance(e, ir.MState) and e.agent is not None:
            a = self.agent_expr(e.agent, c)
            return self.cvars[0][a]
        if isinstance(e, ir.SetLit) and isinstance(e.type, ir.SetT):
            out = z3.K(NODE, z3.BoolVal(False))
            for x in e.elems:
                out = z3.Store(out, self.check(self.expr(x, c), c), True)
            return out
        if isinstance(e, ir.Call) and e.func == "all_agents":
            everyone = z3.K(NODE, z3.BoolVal(True))
            return z3.Store(z3.Store(everyone, HOME, False), UNDEF_N, False)
        if isinstance(e, ir.Call) and e.func == "size":  # NOTE(param-count)
            return card(self.expr(e.args[0], c))
        if isinstance(e, ir.Count):
            return self.count(e, c)
        if isinstance(e, ir.Call):
            arg = self.expr(e.args[0], c)
            if z3.is_bv(arg):
                return b2i(arg == num(-(1 << 31)))
            if arg.sort() == NODE:
                return b2i(arg == UNDEF_N)
            if is_int(arg):
                # NOTE(param-count): an integer whose range moves with the number of agents
                # marks "undefined" with UNDEF_INT. Until session 21 this fell through to
                # "never undefined": `!isundefined(x)` held in every state of the encoding,
                # and a spec where it fails was not refuted (tests/test_param_count.py)
                return b2i(arg == UNDEF_INT)
            return num(0)  # a set is never undefined
        if isinstance(e, ir.Index):
            raise Unsupported("arrays are not supported with --agents any", e.span)
        return super().expr(e, c)

    def agent_expr(self, e: ir.Expr, c: Any) -> Any:
        a = self.expr(e, c)
        self.error(c, a == UNDEF_N)
        self.error(c, a == HOME)
        return a

    def binary(self, e: ir.Binary, c: Any) -> Any:
        op = e.op
        left, right = e.left, e.right
        if (op in ("==", "!=", ">") and isinstance(left, ir.Call) and left.func == "size"
                and isinstance(right, ir.Lit) and right.value == 0):
            s = self.expr(left.args[0], c)
            y = z3.Const("y_size", NODE)
            empty = forall([y], z3.Implies(self.enc.is_agent(y), z3.Not(s[y])))
            return b2i(empty if op == "==" else z3.Not(empty))
        if op in ("&&", "||", "->"):
            return super().binary(e, c)
        if op == "in" and isinstance(right.type, ir.SetT):
            a = self.check(self.expr(left, c), c)
            return b2i(self.expr(right, c)[a])
        if op in ("with", "without"):
            s = self.expr(left, c)
            a = self.check(self.expr(right, c), c)
            return z3.Store(s, a, op == "with")
        if self.node_typed(left.type) or self.node_typed(right.type):
            a = self.check(self.expr(left, c), c)
            b = self.check(self.expr(right, c), c)
            if op == "==":
                return b2i(a == b)
            if op == "!=":
                return b2i(a != b)
            raise Unsupported(f"agents cannot be compared with {op} with --agents any", e.span)
        if isinstance(left.type, ir.SetT):
            raise Unsupported("set comparisons are not supported with --agents any", e.span)
        if op in _ARITHMETIC:
            return self.arithmetic(op, self.expr(left, c), self.expr(right, c), c)
        return super().binary(e, c)

    def arithmetic(self, op: str, a: Any, b: Any, c: Any) -> Any:
        """``Exec.binary``'s arithmetic and comparisons, on integers when either side is one
        (NOTE(param-count)), else on bit-vectors."""
        a, b = self.check(a, c), self.check(b, c)
        if is_int(a) or is_int(b):
            a, b = to_int(a), to_int(b)
        return arithmetic(op, a, b)

    def choose(self, cv: Any, a: Any, b: Any) -> Any:
        """NOTE(param-count): a count in one branch makes the other an integer too (``if
        inflight(M) then 1 else size(s)`` was a Z3 sort error)."""
        if is_int(a) != is_int(b) and all(is_int(x) or z3.is_bv(x) for x in (a, b)):
            a, b = to_int(a), to_int(b)
        return super().choose(cv, a, b)

    def count(self, e: ir.Count, c: Any) -> Any:
        """NOTE(param-count): ``count(a: agent :: body)`` as the card of a set of agents."""
        if not isinstance(e.var_type, ir.AgentT):
            raise Unsupported("count() over anything but the agents is not supported with "
                              "--agents any", e.span)
        return count(*self.over_agent(e.var, e.body, c))

    def node_typed(self, t: ir.Type) -> bool:
        """Whether values of ``t`` are of sort ``Node`` here."""
        return isinstance(t, (ir.AgentT, ir.NodeT))

    def quant(self, e: ir.Quant, c: Any) -> Any:
        if not isinstance(e.var_type, ir.AgentT):
            return super().quant(e, c)
        return self.node_quant(e, c)

    def over_agent(self, var: str, body: ir.Expr, c: Any) -> tuple[Any, Any]:
        """(x, the truth of ``body`` with ``var`` bound to x), x a fresh agent constant: the
        body of a quantifier or a count over the agents."""
        x = self.bound_const(var)
        saved = self.locals.get(var)
        self.locals[var] = x
        self.bound.append((x, self.enc.is_agent(x)))
        out = truth(self.expr(body, c))
        self.bound.pop()
        if saved is None:
            self.locals.pop(var, None)
        else:
            self.locals[var] = saved
        return x, out

    def bound_const(self, name: str) -> Any:
        """NOTE(bound-names): the constant a quantifier, count or lambda binds, named after
        the number of variables bound around it (``i@0``): the same property of two states is
        then the same Z3 term where the states agree, down to its subterms (a count of messages
        the action leaves alone is the hypothesis's count), where fresh names (``i!1205``)
        made every encoding another term. A binder nested in another has a longer ``bound``,
        so its name never captures the outer variable; its own name is abstracted away when
        its quantifier is built, before any sibling's."""
        return z3.Const(f"{name}@{len(self.bound)}", NODE)

    def node_quant(self, e: ir.Quant, c: Any) -> Any:
        """A quantifier over the agents: over the ``Node`` sort, guarded by ``is_agent``."""
        x, body = self.over_agent(e.var, e.body, c)
        is_agent = self.enc.is_agent
        if e.kind == "forall":
            return b2i(forall([x], z3.Implies(is_agent(x), body)))
        return b2i(exists([x], z3.And(is_agent(x), body)))

    def places(self, message: str, src: Any, dst: Any) -> list[tuple[Any, list[Any]]]:
        """(present, fields) of every place a message of this type from src to dst can be:
        one per type on an unordered network, one per slot of a fifo queue (slot k is
        position k, 0 the head: ``position``)."""
        t = self.enc.msg_index[message]
        net = self.nets[self.enc.net_index[self.enc.model.message(message).network]]
        if isinstance(net, UNet):
            return [(net.present[t][src, dst], [f[src, dst] for f in net.fields[t]])]
        count, types, fields = net
        return [(z3.And(count[src, dst] > k, ty[src, dst] == t),
                 [f[src, dst] for f in fields[k]]) for k, ty in enumerate(types)]

    def placed(self, message: str, src: Any,
               dst: Any) -> list[tuple[Any, tuple[Any, Any, list[Any], Any]]]:
        """``places`` with what a message variable binds: (src, dst, fields, pos), ``pos``
        the slot (NOTE(message-position)); -1 on an unordered network, which no expression
        may read."""
        fifo = not isinstance(
            self.nets[self.enc.net_index[self.enc.model.message(message).network]], UNet)
        return [(present, (src, dst, fields, num(k if fifo else -1)))
                for k, (present, fields) in enumerate(self.places(message, src, dst))]

    def home_sent(self, message: str) -> bool:
        """NOTE(home-sources): whether only the home sends ``message``: its messages in flight
        are then the home's in every state the encoding allows (the domain's ``src_ok`` says
        so of a pre-state, and an action sends only what its machine sends), so the encoding
        names the home as their source instead of quantifying over one, whose Skolem witness
        Z3's instantiation did not reach (docs/prove.md)."""
        return self.enc.senders[self.enc.msg_index[message]] == {ir.MachineKind.HOME}

    def home_received(self, message: str) -> bool:
        """NOTE(home-sources): whether every send of ``message`` names the home (the domain's
        ``dst_ok`` says so of a pre-state): its destination is the home, not quantified (the
        requests of MSI, whose ``exists k: GetS :: k.src == i`` Z3 left unknown for minutes
        with a destination to find)."""
        return self.enc.msg_index[message] in self.enc.to_home

    def ends(self, message: str, name: str) -> tuple[Any, Any, list[Any]]:
        """(source, destination, the quantified ones): the home where only it sends or
        receives the type (NOTE(home-sources)), else a bound constant."""
        src = HOME if self.home_sent(message) else self.bound_const(f"{name}src")
        dst = HOME if self.home_received(message) else self.bound_const(f"{name}dst")
        return src, dst, [x for x in (src, dst) if not x.eq(HOME)]

    def inflight(self, e: ir.InFlight, c: Any) -> Any:
        d = self.expr(e.dst, c) if e.dst is not None else None
        src, dst, ends = self.ends(e.message, "")
        here = TRUE if d is None else dst == d
        body = z3.And(here, any_of([p for p, _f in self.places(e.message, src, dst)]))
        return b2i(exists(ends, body) if ends else body)

    def msg_count(self, e: ir.MsgQuant, c: Any) -> Any:
        """NOTE(message-count): ``count(m: T :: body)`` as a sum over the places a message
        can be (one per type on an unordered network, one per slot on a fifo queue) and over
        the classes of its two ends (the home, or some agent). A class of agents is a card:
        the agents at that end whose place holds such a message. A sum over pairs of agents
        is not a cardinality, so the body must fix one end (``m.dst == i``) where agents send
        the type to agents; types only the home sends (MSI's forwards) need nothing."""
        fixed = _fixed_end(e)
        senders = self.enc.senders[self.enc.msg_index[e.message]]
        srcs: list[Any] = ([HOME] if ir.MachineKind.HOME in senders else []) + (
            [_AGENTS] if ir.MachineKind.CACHE in senders else [])
        ends: list[tuple[Any, Any]]  # (src, dst): a node term, or _AGENTS for every agent
        if fixed is not None and fixed[0] == "src":
            pin = self.expr(fixed[1], c)
            ends = [(pin, HOME)] + ([] if self.home_received(e.message) else [(pin, _AGENTS)])
        elif fixed is not None:
            pin = self.expr(fixed[1], c)
            ends = [(src, pin) for src in srcs]
        elif _AGENTS in srcs:
            raise Unsupported(f"count({e.var}: {e.message} :: ...) counts over pairs of agents, "
                              f"which --agents any cannot encode: say which node it is sent to "
                              f"or from ({e.var}.dst == i)", e.span)
        else:
            ends = [(HOME, HOME), (HOME, _AGENTS)]
        saved = self.locals.get(e.var)
        terms = []
        for src, dst in ends:
            x = self.bound_const(f"{e.var}_end")
            over = src is _AGENTS or dst is _AGENTS
            s_, d_ = (x if src is _AGENTS else src), (x if dst is _AGENTS else dst)
            if over:
                self.bound.append((x, is_agent(x)))
            for present, binding in self.placed(e.message, s_, d_):
                self.locals[e.var] = binding
                held = z3.And(present, truth(self.expr(e.body, all_of([c, present]))))
                terms.append(count(x, held) if over else z3.If(held, z3.IntVal(1), z3.IntVal(0)))
            if over:
                self.bound.pop()
        if saved is None:
            self.locals.pop(e.var, None)
        else:
            self.locals[e.var] = saved
        return z3.Sum(terms) if terms else z3.IntVal(0)

    def msg_quant(self, e: ir.MsgQuant, c: Any) -> Any:
        if e.kind == "count":
            return self.msg_count(e, c)
        # NOTE(home-sources): a type only the home sends is quantified over its destination,
        # one sent only to the home over its source
        src, dst, ends = self.ends(e.message, f"{e.var}_")
        saved = self.locals.get(e.var)
        universal = e.kind == "forall"
        parts = []
        self.bound += [(x, x != UNDEF_N) for x in ends]
        for present, binding in self.placed(e.message, src, dst):
            self.locals[e.var] = binding
            body = truth(self.expr(e.body, all_of([c, present])))
            parts.append(z3.Implies(present, body) if universal else z3.And(present, body))
        if ends:
            del self.bound[-len(ends):]
        if saved is None:
            self.locals.pop(e.var, None)
        else:
            self.locals[e.var] = saved
        if not ends:
            return b2i(all_of(parts) if universal else any_of(parts))
        if universal:
            return b2i(forall(ends, all_of(parts)))
        return b2i(exists(ends, any_of(parts)))

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.Broadcast):
            self.refresh()
            if not z3.is_false(self.pc):
                self.broadcast(s)
            return
        if isinstance(s, ir.For):
            self.refresh()
            if not z3.is_false(self.pc):
                self.for_agents(s)
            return
        super().stmt(s)

    def for_agents(self, s: ir.For) -> None:
        """``for a: agent { if c(a) { send M(..) to a; } }``: a multicast to the agents that
        satisfy ``c``, every one at once. The body runs once for a symbolic agent and its sends
        become array updates over every destination (NOTE(param-for-multicast))."""
        _multicast_body(s)
        x = z3.FreshConst(NODE, s.var)
        saved = self.locals.get(s.var)
        self.locals[s.var] = x
        self.bound.append((x, is_agent(x)))
        self.captured = []
        try:
            self.block(s.body)
            sends = self.captured
        finally:
            self.captured = None
            self.bound.pop()
            if saved is None:
                self.locals.pop(s.var, None)
            else:
                self.locals[s.var] = saved
        for t, fields, dst, cond in sends:
            assert dst.eq(x), "_multicast_body lets sends go only to the loop's agent"
            self.multicast_send(t, fields, x, z3.And(cond, is_agent(x)))
        self.refresh()

    def multicast_send(self, t: int, fields: list[Any], x: Any, cond: Any) -> None:
        """One message of type ``t`` to every agent ``x`` with ``cond``, ``fields`` and
        ``cond`` being terms over ``x``."""
        net_i = self.enc.net_index[self.enc.model.messages[t].network]
        net = self.nets[net_i]
        src = self.agent if self.agent is not None else HOME
        a, b = z3.FreshConst(NODE, "mc_src"), z3.FreshConst(NODE, "mc_dst")
        to = z3.And(a == src, z3.substitute(cond, (x, b)))
        vals = [z3.substitute(v, (x, b)) for v in fields]
        y = z3.FreshConst(NODE, "mc_y")
        if isinstance(net, UNet):
            old = net.present[t]
            self.dups.append(exists([y], z3.And(z3.substitute(cond, (x, y)), old[src, y])))
            net.present[t] = z3.Lambda([a, b], z3.Or(to, old[a, b]))
            net.fields[t] = [z3.Lambda([a, b], z3.If(to, v, f[a, b]))
                             for f, v in zip(net.fields[t], vals, strict=False)]
            return
        count, types, nfields = net
        vals = _padded(vals, nfields[0])
        self.blocks.append(exists([y], z3.And(z3.substitute(cond, (x, y)),
                                                 count[src, y] >= len(types))))
        for k in range(len(types)):
            here = z3.And(to, count[a, b] == k)
            types[k] = z3.Lambda([a, b], z3.If(here, num(t), types[k][a, b]))
            nfields[k] = [z3.Lambda([a, b], z3.If(here, v, f[a, b]))
                          for f, v in zip(nfields[k], vals, strict=True)]
        self.nets[net_i] = (z3.Lambda([a, b], z3.If(to, count[a, b] + 1, count[a, b])), types,
                            nfields)

    def broadcast(self, s: ir.Broadcast) -> None:
        """To every agent but the excluded one, at once: a multicast (``multicast_send``)."""
        pc = self.pc
        t = self.enc.msg_index[s.message]
        if not isinstance(self.nets[self.enc.net_index[self.enc.model.messages[t].network]],
                          UNet):
            raise Unsupported("'broadcast' is supported with --agents any only on unordered "
                              "networks", s.span)
        args = [self.expr(a, pc) for a in s.args]
        skip = self.check(self.expr(s.exclude, pc), pc) if s.exclude is not None else None
        x = z3.FreshConst(NODE, "bc_dst")
        to = z3.And(is_agent(x), TRUE if skip is None else x != skip)
        # the semantics checks each delivery's fields: an error when there is a recipient
        self.bound.append((x, to))
        try:
            args = self.scaled_fields(t, args, self.fitting_args(s.message, s.args))
        finally:
            self.bound.pop()
        self.multicast_send(t, args, x, z3.And(pc, to))

    def write(self, target: ir.Expr, value: Any, cond: Any) -> None:
        if isinstance(target, ir.MVar) and target.agent is not None:
            slot = self.enc.var_slot[(target.machine, target.name)]
            a = self.agent_expr(target.agent, cond)
            arr = self.cvars[slot]
            self.cvars[slot] = z3.If(cond, z3.Store(arr, a, value), arr)
            return
        if isinstance(target, ir.Index):
            raise Unsupported("arrays are not supported with --agents any", target.span)
        super().write(target, value, cond)

    def assign(self, target: ir.Expr, value: Any, span: Span) -> None:
        scaled = self.scaled(target)
        if scaled is not None:  # NOTE(param-count)
            value = to_int(value)
            self.error(self.pc, z3.And(value != UNDEF_INT, z3.Not(in_range(value, scaled))))
            self.write(target, value, self.pc)
        elif is_int(value) and (rng := range_of(target.type)) is not None:
            # a count assigned to a variable of fixed range (a Z3 sort error until session 12)
            self.write(target, self.int_into(value, rng), self.pc)
        elif z3.is_bv(value):
            super().assign(target, value, span)
        else:
            self.write(target, value, self.pc)

    def scaled(self, target: ir.Expr) -> Any:
        """The bounds of the variable ``target`` names, when they move with the number of
        agents (NOTE(param-count)), else None."""
        ranges = self.enc.ranges
        if not ranges:
            return None
        decls: tuple[ir.Var, ...] = ()
        if isinstance(target, ir.GVar):
            decls = self.enc.model.globals
        elif isinstance(target, ir.MVar):
            decls = self.enc.model.machine(target.machine).vars
        for v in decls:
            if v.name == getattr(target, "name", None):
                return ranges.get(v.span)
        return None

    def deliver(self, t: int, fields: list[Any], dst: Any, span: Span,
                fitting: tuple[bool, ...] = ()) -> None:
        pc = self.pc
        # range-checked where the send is: in a ``for`` over the agents, for some agent of
        # the loop (``error`` quantifies over ``bound``), as the semantics checks each send
        fields = self.scaled_fields(t, fields, fitting)
        if self.captured is not None:  # in a ``for`` over the agents: see for_agents
            self.captured.append((t, fields, dst, pc))
            return
        net_i = self.enc.net_index[self.enc.model.messages[t].network]
        src = self.agent if self.agent is not None else HOME
        net = self.nets[net_i]
        if isinstance(net, UNet):
            old = net.present[t]
            self.dups.append(z3.And(pc, old[src, dst]))
            net.present[t] = z3.If(pc, z3.Store(old, src, dst, True), old)
            net.fields[t] = [z3.If(pc, z3.Store(f, src, dst, v), f)
                             for f, v in zip(net.fields[t], fields, strict=False)]
            return
        count, types, nfields = net
        fields = _padded(fields, nfields[0])
        c = count[src, dst]
        for k in range(len(types)):
            here = z3.And(pc, c == k)
            types[k] = z3.If(here, z3.Store(types[k], src, dst, num(t)), types[k])
            nfields[k] = [z3.If(here, z3.Store(f, src, dst, v), f)
                          for f, v in zip(nfields[k], fields, strict=True)]
        # a send to a full queue blocks the whole transition, as in the semantics: the
        # capacity is per (src, dst), so it is exact for every number of agents
        cap = len(types)
        self.blocks.append(z3.And(pc, c >= cap))
        self.nets[net_i] = (z3.If(pc, z3.Store(count, src, dst, c + 1), count), types, nfields)

    def scaled_fields(self, t: int, fields: list[Any],
                      fitting: tuple[bool, ...] = ()) -> list[Any]:
        """The fields whose range moves with the number of agents as integers, each checked
        against its range as ``Semantics.deliver`` does (NOTE(param-count)); the others
        checked too, but for the ``fitting`` ones (``Exec.fitting_args``)."""
        ranges = self.enc.ranges
        out = []
        for k, (f, v) in enumerate(zip(self.enc.model.messages[t].fields, fields,
                                       strict=False)):
            if f.span in ranges:
                v = to_int(v)
                self.error(self.pc, z3.And(v != UNDEF_INT, z3.Not(in_range(v, ranges[f.span]))))
            elif (rng := range_of(f.type)) is not None and is_int(v):
                v = self.int_into(v, rng)  # a count sent in a field of fixed range
            elif rng is not None and z3.is_bv(v) and not (k < len(fitting) and fitting[k]):
                # ``Semantics.deliver``'s check (a bit-vector's range does not move with N)
                self.error(self.pc, z3.And(v != num(UNDEF_BV), z3.Or(v < rng[0], v > rng[1])))
            out.append(v)
        return out

    def int_into(self, v: Any, rng: tuple[int, int]) -> Any:
        """An integer (a count, NOTE(param-count)) stored where the type has a fixed range:
        out of it is a model error, as in the semantics; in it, the range's bit-vector."""
        self.error(self.pc, z3.And(v != UNDEF_INT, z3.Or(v < rng[0], v > rng[1])))
        return z3.If(v == UNDEF_INT, num(UNDEF_BV), z3.Int2BV(v, WIDTH))

    def apply_goto(self, agent: Any) -> None:
        g = self.goto
        if z3.is_bv_value(g) and g.as_signed_long() == -1:
            return
        if agent is None:
            self.home[0] = z3.If(g == -1, self.home[0], g)
        else:
            arr = self.cvars[0]
            self.cvars[0] = z3.If(g == -1, arr, z3.Store(arr, agent, g))
        self.goto = num(-1)


_ARITHMETIC = frozenset({"+", "-", "==", "!=", "<", "<=", ">", ">="})


def _kind(sort: Any) -> str:
    return "node" if sort == NODE else "counter" if sort == INT else "number"


def _padded(fields: list[Any], slot: list[Any]) -> list[Any]:
    """A message's fields filled up to a queue slot's positions (undefined nodes, zeros)."""
    sorts = [f.sort().range() if isinstance(f.sort(), z3.ArraySortRef) else f.sort()
             for f in slot[len(fields):]]
    return fields + [UNDEF_N if s == NODE else z3.IntVal(0) if s == INT else num(0)
                     for s in sorts]


def _multicast_body(s: ir.For) -> None:
    """NOTE(param-for-multicast): a ``for`` over the agents is encoded as one multicast, which
    is the loop's meaning only when its iterations are independent: the body may only test
    (``if``) and send to the loop's agent, and read no network (the sends of earlier
    iterations would be in it). Each send's fields are range-checked where it is, for some
    agent of the loop (``PExec.deliver``); a ``broadcast``'s, when it has a recipient (until
    session 12 neither was, and two specs with a field out of range at 4 and 5 agents were
    proved: tests/test_param_multicast.py)."""
    if not isinstance(s.var_type, ir.AgentT):
        raise Unsupported("'for' is supported with --agents any only over the agents", s.span)
    for st in ir.walk_stmts(s.body):
        if isinstance(st, ir.If):
            exprs: tuple[Any, ...] = (st.cond,)
        elif isinstance(st, ir.Send) and isinstance(st.dst, ir.Local) and st.dst.name == s.var:
            exprs = st.args
        else:
            raise Unsupported("with --agents any, the body of a 'for' over the agents may only "
                              f"test and send to {s.var} (it is encoded as a multicast)",
                              getattr(st, "span", s.span))
        for e in exprs:
            where = _network_read(e)
            if where is not None:
                raise Unsupported("with --agents any, the body of a 'for' over the agents may "
                                  "not read the networks (its sends are all made at once)",
                                  where)


def _network_read(e: Any) -> Span | None:
    if isinstance(e, (ir.InFlight, ir.MsgQuant)):
        return e.span
    if attrs.has(type(e)):
        for f in attrs.fields(type(e)):
            v = getattr(e, f.name)
            for x in v if isinstance(v, tuple) else (v,):
                r = _network_read(x)
                if r is not None:
                    return r
    return None


@attrs.define(frozen=True)
class UnknownGoal:
    goal: str  # the property, e.g. "invariant:inferred_84"
    machine: str  # the action's machine ("" at the initial state)
    cache: bool  # whether that machine is the replicated one
    states: tuple[str, ...]  # the action's source states
    message: str = ""  # the message type the action takes ("" for an event or a rule)


@attrs.define
class ParamResult:
    verdict: str  # holds | fails | unknown
    proved: list[str]
    ctis: list[str]
    failures: list[Failure]
    instance: int | None
    notes: list[str]
    reason: str | None
    seconds: float
    cti_details: list[Any] = attrs.Factory(list)  # induction.Cti, concrete and replayed
    settled: list[tuple[str, int, int]] = attrs.Factory(list)  # Query.key of each proved
    # NOTE(param-hierarchy): a hierarchical spec's free index type; ``instance`` counts its ids
    over: str | None = None
    jobs: int = 1  # processes that settled the obligations (NOTE(forked-shares))
    cached: int = 0  # obligations settled by an earlier run (NOTE(proof-cache))
    # NOTE(infer-repair-unknown): per obligation left unknown (no concrete counterexample to
    # induction), in query order: its property, and its action's machine and source states
    # (the initial state's: no machine, no states)
    unknown_goals: list[UnknownGoal] = attrs.Factory(list)

    @property
    def unit(self) -> str:
        """What ``instance`` and "every number of" count."""
        return "agents" if self.over is None else f"{self.over} ids"

    @property
    def exit_code(self) -> int:
        return {"holds": 0, "fails": 1, "unknown": 3}[self.verdict]


def _actions(enc: ParamEncoder) -> list[tuple[ir.Machine, ir.Transition]]:
    return actions_of(enc.model)


def actions_of(model: ir.Model) -> list[tuple[ir.Machine, ir.Transition]]:
    """The actions of the inductive check, in the order of its groups (``Query.key[1]``)."""
    out = []
    for m in model.machines:
        for tr in m.transitions:
            if tr.kind is ir.TransitionKind.MESSAGE and tr.stall:
                continue
            if tr.kind is ir.TransitionKind.EVENT and m.kind is ir.MachineKind.HOME:
                continue
            out.append((m, tr))
    return out


def _step(enc: ParamEncoder, s: PState, machine: ir.Machine, tr: ir.Transition,
          tag: str) -> tuple[Any, Any, PState, list[Any], Any]:
    """(ok, error, successor, existential constants, duplicate send) of one transition; a
    duplicate send puts a message where one of its kind already is (see UNet)."""
    consts: list[Any] = []
    pre: list[Any] = []
    if enc.shape is not None:  # NOTE(param-hierarchy)
        from coherence.smt.param_hier import actor
        ex, st = actor(enc, s, machine, tag, consts, pre)
    elif machine.kind is ir.MachineKind.CACHE:
        ex = PExec(enc, s)
        ex.agent = z3.Const(f"{tag}|self", NODE)
        consts.append(ex.agent)
        pre.append(is_agent(ex.agent))
        st = s.cvars[0][ex.agent]
    else:
        ex = PExec(enc, s)
        st = s.home[0]
    pre.append(any_of([st == machine.state_index(x) for x in tr.states]))
    for p in tr.params:
        if isinstance(p.type, ir.AgentT) if enc.shape is None else ex.node_typed(p.type):
            v = z3.Const(f"{tag}|{p.name}", NODE)
            consts.append(v)
            pre.append(enc.is_agent(v))
        else:
            v = ivar(f"{tag}|{p.name}")
            consts.append(v)
            pre.append(z3.And(v >= min(ir.domain(p.type)), v <= max(ir.domain(p.type))))
        ex.locals[p.name] = v
    if tr.kind is ir.TransitionKind.MESSAGE:
        t = enc.msg_index[tr.name]
        net_i = enc.net_index[enc.model.message(tr.name).network]
        src = z3.Const(f"{tag}|src", NODE)
        consts.append(src)
        dst = ex.agent if ex.agent is not None else HOME
        pre.append(src != UNDEF_N)
    if tr.kind is ir.TransitionKind.MESSAGE and isinstance(ex.nets[net_i], UNet):
        unet = ex.nets[net_i]
        pre.append(unet.present[t][src, dst])
        ex.msg = (src, [f[src, dst] for f in unet.fields[t]], t)
        unet.present[t] = z3.Store(unet.present[t], src, dst, False)
    elif tr.kind is ir.TransitionKind.MESSAGE:
        count, types, fields = ex.nets[net_i]
        pre += [count[src, dst] > 0, types[0][src, dst] == t]
        ex.msg = (src, [f[src, dst] for f in fields[0]], t)
        cap = len(types)
        new_types = [z3.Store(types[k], src, dst, types[k + 1][src, dst]) if k + 1 < cap
                     else types[k] for k in range(cap)]
        new_fields = [[z3.Store(fields[k][j], src, dst, fields[k + 1][j][src, dst])
                       if k + 1 < cap else fields[k][j] for j in range(len(fields[k]))]
                      for k in range(cap)]
        ex.nets[net_i] = (z3.Store(count, src, dst, count[src, dst] - 1), new_types,
                          new_fields)
    ex.path = [all_of(pre)]
    ex.refresh()
    g = truth(ex.check(ex.guard(tr, ex.pc), ex.pc))
    ex.path.append(g)
    ex.block(tr.body)
    ex.refresh()
    ex.apply_goto(ex.agent)
    return ex.alive(), any_of(ex.errs), ex.pstate, consts, any_of(ex.dups)


def _properties(enc: ParamEncoder, s: PState,
                reuse: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each property of a single state as a formula over ``s`` (True when it holds); "no
    action errs" is built per action by ``obligations``. ``reuse``: formulas known already
    (NOTE(frame-unread)), taken instead of encoded, in their place in the order."""
    reuse = reuse or {}
    props: dict[str, Any] = {}
    for inv in enc.model.invariants:
        if f"invariant:{inv.name}" in reuse:
            props[f"invariant:{inv.name}"] = reuse[f"invariant:{inv.name}"]
            continue
        ex = PExec(enc, s) if enc.shape is None else enc.executor(s)
        v = truth(ex.expr(inv.expr, TRUE))
        props[f"invariant:{inv.name}"] = z3.And(z3.Not(any_of(ex.errs)), v)
    # no message waits in a state with no transition for it
    nt = []
    for net_i, net in enumerate(enc.model.networks if NO_TRANSITION not in reuse else ()):
        for msg in enc.model.messages:
            if msg.network != net.name:
                continue
            t = enc.msg_index[msg.name]
            for machine in enc.model.machines if enc.shape is None else ():
                missing = [i for i in range(machine.state_type.size())
                           if not enc.sem.handlers.get((machine.name, msg.name, i))]
                if not missing:
                    continue
                a, b = z3.Consts("nt_a nt_b", NODE)
                st = s.cvars[0][b] if machine.kind is ir.MachineKind.CACHE else s.home[0]
                where = is_agent(b) if machine.kind is ir.MachineKind.CACHE else b == HOME
                pnet = s.nets[net_i]
                first = (pnet.present[t][a, b] if isinstance(pnet, UNet) else
                         z3.And(pnet[0][a, b] > 0, pnet[1][0][a, b] == t))
                nt.append(exists([a, b], z3.And(where, first,
                                                   any_of([st == i for i in missing]))))
    if enc.shape is not None:  # NOTE(param-hierarchy)
        from coherence.smt.param_hier import no_transition
        if NO_TRANSITION not in reuse:
            nt = no_transition(enc, s)
        once = reuse[ONE_PER_KIND] if ONE_PER_KIND in reuse else enc.one_per_kind(s)
        if not z3.is_true(once):
            props[ONE_PER_KIND] = once
    props[NO_TRANSITION] = reuse[NO_TRANSITION] if NO_TRANSITION in reuse else z3.Not(any_of(nt))
    return props


@owns_z3
def prove_all(model: ir.Model, timeout: float | None = None,
              refute_depth: int = 10, rlimit: int | None = None,
              progress: Callable[[int, int, str], None] | None = None,
              over: str | None = None,
              reuse: Collection[tuple[str, int, int]] = (), jobs: int = 1,
              cache: str | None = None) -> ParamResult:
    """Prove every invariant for every number of agents, or refute at a concrete size.

    ``timeout`` caps the whole run in seconds. ``rlimit`` bounds each Z3 check by Z3's
    deterministic resource count instead of the per-phase wall-clock caps (QUICK_SECONDS, ...),
    so that the verdict does not depend on how loaded the machine is (tests use it).
    ``progress(done, total, what)`` is told of each proof obligation as it starts, and of the
    search for a concrete counterexample. A hierarchical spec is proved for every size of one
    index type, ``over`` (its name or its parameter's; inferred when None), the others fixed
    as ``model`` binds them (NOTE(param-hierarchy) in ``param_hier``).
    ``reuse``: the ``settled`` obligations of an earlier run on this spec with a subset of
    its invariants (``--infer``'s repair rounds, which only add lines): skipped, as more
    hypotheses keep an obligation proved. Keys of any other spec make an unsound proof.
    ``jobs``: processes that settle the obligations (NOTE(forked-shares); Linux only).
    ``cache``: a file of settled obligations (NOTE(proof-cache)): those whose formula is
    recorded there by an earlier run are skipped, and each one settled is appended.
    """
    shape = None
    if model.is_hierarchical:
        from coherence.smt.param_hier import shape_of
        shape = shape_of(model, over)
    elif over is not None:
        raise SpecError(f"--over {over}: {model.file} is not hierarchical (a proof for every "
                        "number of agents needs no --over)", NO_SPAN)
    start = time.perf_counter()
    budget = Budget(timeout, rlimit, start)
    notes = [NOTE_DEADLOCK]
    if shape is not None:
        notes.append(shape.describe())
    try:
        if shape is None:
            _check_agents_free(model)
        else:
            from coherence.smt.param_hier import check_index_free
            check_index_free(model, shape)
        kept = None
        if cache is not None:
            try:
                kept = ProofCache(cache)
            except CacheError as e:
                raise SpecError(str(e), NO_SPAN) from None
            notes.extend(f"{cache}:{n}: not a proof-cache record (ignored)"
                         for n in kept.skipped)
            if kept.other_format:
                notes.append(f"{cache}: {kept.other_format} record(s) of a format other than "
                             f"{FORMAT} (ignored)")
        with interrupt.noting_sigint():  # NOTE(prove-interrupt)
            try:
                result = _prove(model, budget, refute_depth, notes, progress, shape,
                                frozenset(reuse), jobs, kept)
            except (interrupt.Interrupted, z3.Z3Exception) as e:
                if not interrupt.stopped(e):
                    raise
                # NOTE(prove-interrupt): a partial result claims nothing proved
                result = interrupted_result(notes, time.perf_counter() - start)
        result.over = None if shape is None else shape.index
        return result
    except Unsupported as unsupported:
        if progress is not None:
            progress(0, 1, "no proof (unsupported); looking for a counterexample at 2-3 "
                     f"{_units(shape)}")
        refuted = _refute(model, refute_depth, budget, shape)
        if refuted is not None:
            refuted.notes = [f"no proof attempted: {unsupported.message}", *notes]
            refuted.over = None if shape is None else shape.index
            return refuted
        raise


# the obligation that keeps the unordered-network abstraction exact (see UNet)
ONE_PER_KIND = "abstraction:one-message-per-kind"
NO_TRANSITION = "no-transition:*"  # no message waits in a state with no transition for it


@attrs.define
class Query:
    """One proof obligation: ``assertions`` must be unsatisfiable."""

    goal: str  # the property (checker failure name) it proves
    what: str  # "init", "action NAME" or "errors of NAME"
    assertions: list[Any]
    pre: PState
    action: tuple[ir.Machine, ir.Transition] | None = None
    consts: list[Any] = attrs.Factory(list)  # the action's agent, parameters, message source
    shape: Any = None  # NOTE(param-hierarchy): param_hier.Shape of a hierarchical spec
    counts: bool = False  # NOTE(param-count): the spec counts (its models may be spurious)
    reads_counts: bool = False  # NOTE(message-count): it counts messages in flight
    # (goal, action index, index of the action that errs after it; -1 where none): one per
    # query, and the same in a spec with more invariants (``prove_all``'s ``reuse``)
    key: tuple[str, int, int] = ("", -1, -1)
    # NOTE(frame-unchanged): the goal's property after the action is its hypothesis (the
    # action writes none of the leaves it reads, NOTE(frame-unread)): settled without Z3
    unchanged: bool = False
    # NOTE(count-set-names): what the quantified solvers are given, where it differs from
    # ``assertions`` (a spec that counts): its counted sets named, their definitions among
    # the hypotheses; the same hypotheses (the same terms) for every query of the group
    named: list[Any] | None = None
    # NOTE(goal-split): the goal's property before the action (a hypothesis), and the
    # hypotheses that are not properties (the state's domain, the action); None where the
    # goal is not a property of the pre-state
    before: Any = None
    frame: list[Any] | None = None
    # NOTE(proof-cache-subsets): the assertions that name the query's fresh symbols (the
    # domain, the action); the others are read as a set after them
    anchor: list[Any] | None = None

    @property
    def quantified(self) -> list[Any]:
        """The assertions as the quantified solvers see them (the ground try and the CTI
        search read ``assertions``)."""
        return self.assertions if self.named is None else self.named


class Obligations:
    """The queries of the inductive check, in groups built on demand: group 0 is the initial
    state's, group ``i + 1`` action ``i``'s (its queries share all assertions but the last).
    What every group uses (the properties of the pre-state, each action's error) is built
    first, so a forked worker builds only its own groups (NOTE(forked-shares)); built in group
    order, the terms are made in the order ``obligations`` always made them."""

    def __init__(self, model: ir.Model, shape: Any = None,
                 reads_of: Obligations | None = None) -> None:
        """``reads_of``: the same spec's obligations, whose leaves read (NOTE(frame-unread))
        these take rather than walk their own formulas (``finite_core``'s, where each
        quantifier is expanded over the nodes and the walk took minutes on MSI)."""
        if shape is None:
            self.enc: ParamEncoder = ParamEncoder(model)
        else:
            from coherence.smt.param_hier import HierEncoder
            self.enc = HierEncoder(model, shape)
        enc = self.enc
        self.shape = shape
        self.counts = _counts(model) and finite() is None  # NOTE(finite-core): sums there
        self.reads_counts = _message_counts(model)
        self.cur = cur = enc.fresh("s")
        self.acts = _actions(enc)
        self.props = props = _properties(enc, cur)
        # NOTE(frame-unread): the leaves of ``cur`` each property and each error reads
        self.cur_leaves = cur.leaves()
        index = leaf_index(self.cur_leaves)
        self.reads: dict[str, frozenset[int]] = dict(reads_of.reads) if reads_of else {
            name: leaves_read(p, index) for name, p in props.items()}
        self.errs: list[tuple[int, Any]] = []  # (action index, its error condition in ``cur``)
        self.err_reads: dict[int, frozenset[int]] = {}
        # NOTE(error-split): each erring action's condition with its witnesses (agent,
        # parameters, message source), by action index
        self.err_at: dict[int, tuple[Any, list[Any]]] = {}
        for i, (machine, tr) in enumerate(self.acts):
            _ok, err, _succ, err_consts, _dup = _step(enc, cur, machine, tr, f"e{i}")
            if not z3.is_false(err):
                self.errs.append((i, err))
                self.err_at[i] = (err, err_consts)
                self.err_reads[i] = reads_of.err_reads[i] if reads_of is not None else \
                    leaves_read(err, index)
        no_error = z3.Not(any_of([e for _, e in self.errs]))
        self.inv = [*props.values(), no_error]
        # made before the initial state's terms, as they always were: Z3's answers depend on
        # the order terms are made in
        enc.nodes_apart(), enc.domain(cur)
        init = [enc.nodes_apart(), enc.init_formula(cur), enc.domain(cur)]
        first = [Query(name, "init", [*init, z3.Not(p)], cur, shape=shape, key=(name, -1, -1),
                       anchor=init) for name, p in props.items()]
        first += [Query("error:error", "init", [*init, err], cur, shape=shape,
                        key=("error:error", -1, j), anchor=init) for j, err in self.errs]
        self._built: dict[int, list[Query]] = {0: self._marked(first)}
        self._steps: dict[int, tuple[Any, PState, list[Any], Any, list[Any], list[Any]]] = {}
        self._finite_cores: dict[int, Any] = {}

    @property
    def groups(self) -> int:
        return 1 + len(self.acts)

    def finite_core(self, agents: int | None = None) -> Any:
        """NOTE(finite-core): these obligations at a fixed size (``finite_core.AGENTS``
        unless ``agents``), made on first use."""
        from coherence.smt.finite_core import AGENTS, FiniteCore
        n = AGENTS if agents is None else agents
        if n not in self._finite_cores:
            self._finite_cores[n] = FiniteCore(self, n)
        return self._finite_cores[n]

    def label(self, g: int) -> str:
        """Group ``g``'s action as the proof's lines name it (``Machine.label``; g >= 1)."""
        machine, tr = self.acts[g - 1]
        return f"{machine.name}.{_label(tr)}"

    def groups_of(self, action: str) -> list[int]:
        """The groups of the action labelled ``action`` (``label``'s form)."""
        return [g for g in range(1, self.groups) if self.label(g) == action]

    def group(self, g: int) -> list[Query]:
        if g not in self._built:
            self._built[g] = self._marked(self._action(g - 1))
        return self._built[g]

    def _marked(self, qs: list[Query]) -> list[Query]:
        for q in qs:
            q.counts = self.counts
            q.reads_counts = self.reads_counts
        if self.counts and self.shape is None:
            _name_counted_sets(qs)
        return qs

    def query(self, g: int, key: tuple[str, int, int]) -> Query | None:
        """Group ``g``'s query of ``key`` alone, built anew (``finite_core`` asks for one
        goal of an action, where building all of them at a fixed size took 40 s on MSI)."""
        if g == 0:
            return next((q for q in self.group(0) if q.key == key), None)
        if g not in self._steps:  # the step of the last action asked, kept for its goals
            self._steps = {g: self._stepped(g - 1)}
        return next(iter(self._one(g - 1, key, *self._steps[g])), None)

    def _stepped(self, i: int) -> tuple[Any, PState, list[Any], Any, list[Any], list[Any]]:
        """Action ``i``'s step from ``cur``: (ok, successor, its constants, duplicate send,
        the hypotheses that are not properties, the anchor)."""
        machine, tr = self.acts[i]
        ok, _err, succ, consts, dup = _step(self.enc, self.cur, machine, tr, f"a{i}")
        # NOTE(finite-core): no card at a fixed size (sums), and the walk is long there
        counted = [] if finite() is not None else card_terms([*self.inv, ok])
        base = [self.enc.nodes_apart(), self.enc.domain(self.cur), *bounds(counted)]
        anchor = [*base[:2], ok]  # the bounds depend on the hypotheses: among them
        return ok, succ, consts, dup, base, anchor

    def _action(self, i: int) -> list[Query]:
        cur, shape, inv = self.cur, self.shape, self.inv
        machine, tr = self.acts[i]
        ok, succ, consts, dup, base, anchor = self._stepped(i)
        label = self.label(i + 1)
        enc = self.enc
        out = []
        if not z3.is_false(dup):
            out.append(Query(ONE_PER_KIND, f"action {label}", [*base, *inv, ok, dup], cur,
                             (machine, tr), consts, shape, key=(ONE_PER_KIND, i, -1),
                             anchor=anchor))
        written = leaves_written(self.cur_leaves, succ.leaves())
        unread = {} if written is None else {
            name: p for name, p in self.props.items() if not self.reads[name] & written}
        post = _properties(enc, succ, unread)  # NOTE(frame-unread)
        for name, p in post.items():
            before = self.props.get(name)
            out.append(Query(name, f"action {label}", [*base, *inv, ok, z3.Not(p)], cur,
                             (machine, tr), consts, shape, key=(name, i, -1),
                             unchanged=name in unread,
                             before=before, frame=[*base, ok] if before is not None else None,
                             anchor=anchor))
        for j, err in self.errs:
            m2, tr2 = self.acts[j]
            what = f"action {label} (then {m2.name}.{_label(tr2)} errs)"
            if written is not None and not self.err_reads[j] & written:
                # NOTE(frame-unread): action j errs after this one as it would before it
                out.append(Query("error:error", what, [*base, *inv, ok, err], cur,
                                 (machine, tr), consts, shape, key=("error:error", i, j),
                                 unchanged=True, anchor=anchor))
                continue
            _ok2, err2, _succ2, err2_consts, _dup2 = _step(enc, succ, m2, tr2, f"a{i}b{j}")
            out.append(Query("error:error", what, [*base, *inv, ok, err2], cur,
                             (machine, tr), consts, shape, key=("error:error", i, j),
                             anchor=anchor, before=self._error_before(j, err2_consts),
                             frame=[*base, ok]))
        return out

    def _error_before(self, j: int, witnesses: list[Any]) -> Any:
        """NOTE(error-split): "action ``j`` does not err" before the action, at the witnesses
        (agent, parameters, message source) of the error asked after it."""
        err, mine = self.err_at[j]
        if len(mine) != len(witnesses):  # not the same transition's: no instance to take
            return None
        return z3.Not(z3.substitute(err, *zip(mine, witnesses, strict=True)))

    def _one(self, i: int, key: tuple[str, int, int], ok: Any, succ: PState,
             consts: list[Any], dup: Any, base: list[Any], anchor: list[Any]) -> list[Query]:
        """``_action``'s query of ``key`` alone, as ``_action`` builds it (not marked as a
        frame: the caller asks it)."""
        enc, inv = self.enc, self.inv
        machine, tr = self.acts[i]
        what = f"action {self.label(i + 1)}"
        goal, _i, j = key
        if goal == ONE_PER_KIND:
            last = dup
        elif goal == "error:error":
            m2, tr2 = self.acts[j]
            what += f" (then {m2.name}.{_label(tr2)} errs)"
            last = _step(enc, succ, m2, tr2, f"a{i}b{j}")[1]
        elif goal in self.props:
            others = {name: p for name, p in self.props.items() if name != goal}
            last = z3.Not(_properties(enc, succ, others)[goal])
        else:
            return []
        if z3.is_false(last):
            return []
        return [Query(goal, what, [*base, *inv, ok, last], self.cur, (machine, tr), consts,
                      self.shape, key=key, anchor=anchor)]


def _name_counted_sets(qs: list[Query]) -> None:
    """NOTE(count-set-names): ``Query.named`` for a group: one name per counted set across
    the group, every definition with the hypotheses (an unused one is harmless), so that the
    queries of an action still share all their assertions but the last; the congruences of
    the goal's sets that the hypotheses do not have go with the goal."""
    from coherence.smt.lambda_names import LambdaNames
    names = LambdaNames()  # memoized: a hypothesis shared by the queries is one named term
    rows = [[names.name(a) for a in q.assertions] for q in qs]
    definitions = names.definitions()
    hypothesis_sets: dict[tuple[int, ...], dict[int, Any]] = {}
    for q, row in zip(qs, rows, strict=True):
        context = tuple(a.get_id() for a in row[:-1])
        if context not in hypothesis_sets:
            hypothesis_sets[context] = names.sets_in(row[:-1])
        old = hypothesis_sets[context]
        new = [f for k, f in names.sets_in([row[-1]]).items() if k not in old]
        goal = row[-1]
        congruences = names.congruences(new, list(old.values()))
        if congruences:
            goal = z3.And(goal, *congruences)
        q.named = [*row[:-1], *definitions, goal]


@owns_z3
def obligations(model: ir.Model, shape: Any = None) -> tuple[ParamEncoder, PState, list[Query]]:
    """Every query of the inductive check, small ones (Ivy-style): init ⇒ P for each property;
    Inv ∧ one action ⇒ P' for each (action, property). "No action errs" is one of the
    properties: it is assumed of the pre-state, and proved of the post-state action by action.
    ``shape``: a hierarchical spec's (``param_hier.shape_of``)."""
    ob = Obligations(model, shape)
    return ob.enc, ob.cur, [q for g in range(ob.groups) for q in ob.group(g)]


def _message_counts(node: Any) -> bool:
    """Whether the IR ``node`` counts messages in flight (NOTE(message-count))."""
    return _has(node, lambda n: isinstance(n, ir.MsgQuant) and n.kind == "count")


def _counts(node: Any) -> bool:
    """Whether the IR ``node`` counts: ``count(...)``, or ``size()`` other than compared with
    0 (which is emptiness, NOTE(param-count))."""
    if isinstance(node, ir.Count) or (isinstance(node, ir.Call) and node.func == "size"):
        return True
    if isinstance(node, ir.MsgQuant) and node.kind == "count":  # NOTE(message-count)
        return True
    if (isinstance(node, ir.Binary) and isinstance(node.left, ir.Call)
            and node.left.func == "size" and isinstance(node.right, ir.Lit)
            and node.right.value == 0 and node.op in ("==", "!=", ">")):
        return _counts(node.left.args[0])
    if isinstance(node, (tuple, list)):
        return any(_counts(x) for x in node)
    if attrs.has(type(node)):
        return any(_counts(getattr(node, f.name)) for f in attrs.fields(type(node))
                   if f.name not in ("span", "file", "origin", "type"))
    return False


def _label(tr: ir.Transition) -> str:
    where = f" in {','.join(tr.states)}" if tr.states else ""
    return f"{tr.kind} {tr.name}{where}"


QUICK_SECONDS = 5.0  # per obligation, before looking for a small counterexample
# the quick try's wall-clock cap (its --rlimit share stays QUICK_SECONDS'): every quick try
# that proved its obligation in the bundled proofs took under 0.7 s, and one that gets stuck
# on the action's incremental solver (acked's, about one run in three) cost the whole 5 s
# before the fresh solver proved it in under 1.5 s
QUICK_WALL_SECONDS = 1.0
COUNT_QUICK_SECONDS = 1.0  # the same, before the ground try, in a spec that counts
# NOTE(count-fresh-first): 2 s, and 12 s in an action where it has proved a goal: since the
# counted sets are named (NOTE(count-set-names)), goals of MSI's `GetM in I` and `PutS in I`
# that reached the ground try after 2 s (61-134 s each) take a fresh solver 0.9-4.1 s; in the
# bundled counting proofs no fresh try wins, and 5 s each made message_count_aux 24 -> 39 s.
# 12 s, not 5: in the first 1,273 obligations of MSI's final proof (session 19), the 9 that
# took over 80 s (57% of the time) were each proved by a fresh solver in 5.7-8.2 s (two other
# jobs on the 2 cores), after the 5 s try, a ground try that ran to its 60 s and a CTI search
FRESH_FIRST_WALL_SECONDS = 2.0
FRESH_FIRST_WON_WALL_SECONDS = 12.0
WITNESSED_WALL_SECONDS = 2.0  # NOTE(count-skolem-venn)
# NOTE(incremental-reset): in a spec that counts, the action's incremental solver is made anew
# after a goal it did not prove or took longer than this on (without --rlimit; with it, only
# the former, so that the answers stay deterministic). Its checks grow slower as it goes: on
# MSI's `GetM in S` the first goals take 0.03-0.1 s, the fifth 0.9 s, then most give up at
# their 1 s, where a fresh solver takes 0.1-0.2 s; its first 60 changed goals took 74 s
# with one solver and 39 s with a new one after each slow or failed goal (two other jobs on
# the 2 cores; the same as with a new solver for every goal)
INCREMENTAL_SLOW_SECONDS = 0.3
FRESH_FIRST_MISSES = 4
# NOTE(goal-split): each part's check from the small context, then from every hypothesis, and
# the whole split try. On MSI's `Dir.message GetM in S` it proved every one of 62 changed
# goals the first time it ran (session 20), most in about 3 s (a part the small context
# proves takes it under 0.6 s; one it cannot, its whole cap)
SPLIT_SMALL_SECONDS = 1.0
SPLIT_FULL_SECONDS = 5.0
SPLIT_SECONDS = 30.0
SPLIT_FIRST_MISSES = 4  # NOTE(split-first-won)
# NOTE(ground-deadline): the ground try of one obligation in a spec that counts (its contexts'
# Python and its checks); MSI's `inferred_150` at `GetS in I` spent over 5 minutes there,
# past --timeout. A context whose building passes the deadline is kept as too large, for the
# action's later goals too (MSI's action contexts take 3-27 s)
GROUND_SECONDS = 60.0
# NOTE(finite-core): the fixed size's check (Z3 units; with --rlimit, this share of it) and
# the wall-clock cap of the quantified try with its core's hypotheses (on MSI's
# `FwdGetS in M` those it proved took 0.04-0.3 s)
CORE_RLIMIT = 200_000_000
CORE_SHARE = 0.05
CORE_WALL_SECONDS = 3.0
CTI_SECONDS = 20.0  # for that search (param_cti)
QUERY_SECONDS = 60.0  # per obligation in all, when no small counterexample exists
REFUTE_SECONDS = 20.0  # default budget for looking for a concrete counterexample


NOTE_DEADLOCK = "deadlock freedom is not part of a proof for every N (check it at fixed sizes)"


@attrs.define
class Budget:
    """How long each Z3 check may run. By default each phase has a wall-clock cap (the
    ``*_SECONDS`` above) within the overall ``timeout``. With ``rlimit``, the longest check
    (a QUERY_SECONDS phase) gets that many of Z3's resource units and each other phase its
    share (QUICK_SECONDS / QUERY_SECONDS of it, ...): deterministic, the same answers on a
    loaded machine; only an explicit ``timeout`` then adds a wall-clock limit."""

    timeout: float | None
    rlimit: int | None
    start: float

    def seconds(self, cap: float) -> float | None:
        """The wall-clock limit of a check whose phase allows ``cap`` s (None: no limit)."""
        rest = None if self.timeout is None else self.timeout - (time.perf_counter() - self.start)
        if self.rlimit is not None:
            return rest
        return cap if rest is None else min(cap, rest)

    def deadline(self, cap: float) -> float | None:
        """When a phase allowed ``cap`` s from now must end (None: no wall-clock limit)."""
        seconds = self.seconds(cap)
        return None if seconds is None else time.perf_counter() + seconds

    def expired(self) -> bool:
        return self.timeout is not None and time.perf_counter() - self.start >= self.timeout

    def limit(self, solver: Any, cap: float, since: float | None = None,
              wall: float | None = None) -> None:
        """Bound the solver's next checks as a phase allowed ``cap`` seconds, counted from
        ``since`` (a ``time.perf_counter()``) when given; with ``rlimit``, its share of it.
        ``wall``: a wall-clock cap other than ``cap`` (without ``rlimit``)."""
        spent = 0.0 if since is None else time.perf_counter() - since
        seconds = self.seconds((cap if wall is None else wall) - spent)
        if seconds is not None:
            interrupt.cap(solver, max(0.001, seconds))
        if self.rlimit is not None:
            solver.set("rlimit", max(1, int(self.rlimit * cap / QUERY_SECONDS)))


def interrupted_result(notes: list[str], seconds: float) -> ParamResult:
    """What a proof (or ``--infer``) stopped by SIGINT reports (NOTE(prove-interrupt))."""
    return ParamResult("unknown", [], [], [], None, notes, interrupt.REASON, seconds)


def _units(shape: Any) -> str:
    """What the concrete sizes count: agents, or the free index type's ids."""
    return "agents" if shape is None else f"{shape.index} ids"


@attrs.define
class Outcome:
    """What one query came to, in a share of the obligations (NOTE(forked-shares)); ``_prove``
    reads every share's outcomes in query order, as one process would have met them."""

    at: tuple[int, int]  # (group, index in the group)
    goal: str
    key: tuple[str, int, int]
    kind: str  # settled | cti | unknown | interrupted (NOTE(prove-interrupt))
    message: str = ""  # a cti's or an unknown's line
    cti: Any = None  # induction.Cti, concrete and replayed, where one was found
    cached: bool = False  # settled by an earlier run (NOTE(proof-cache))


def _share(model: ir.Model, ob: Obligations, groups: Iterable[int], budget: Budget,
           reuse: frozenset[tuple[str, int, int]], share: int, tally: Any,
           progress: Callable[[int, int, str], None] | None,
           cache: ProofCache | None = None) -> list[Outcome]:
    """Settle the queries of ``groups`` (increasing), in order; after a query of a property
    fails, that property's later queries are skipped (one counterexample per property is
    enough). A list is built first (the total is known); any other iterable (``Claims``)
    group by group, as it is handed out. NOTE(quick-first): a query the quick tries do not
    settle waits for its long tries until every query of the share has had its quick ones."""
    status: dict[str, str] = {}  # goal -> proved | cti | unknown
    out: list[Outcome] = []
    shared_context: tuple[int, ...] = ()
    shared = z3.Solver()
    grounded: Grounded | None = None  # the current action's
    total = 0
    if isinstance(groups, list):
        # NOTE(group-deadline): here too, checked as each group is built
        built = [(g, None if budget.expired() else ob.group(g)) for g in groups]
        total = sum(len(qs) for _g, qs in built if qs is not None)
        pending: Iterable[tuple[int, list[Query] | None]] = built
    else:
        # NOTE(group-deadline): past --timeout an action handed out is not built
        pending = ((g, None if budget.expired() else ob.group(g)) for g in groups)
    waiting: list[tuple[tuple[int, int], Query, Any, float, Deferred]] = []

    def settle(at: tuple[int, int], q: Query, look: Any, spent: float,
               late: Deferred | None) -> bool:
        """Ask ``q`` (its long tries, with ``late``) and record its outcome; False when the
        proof was interrupted."""
        nonlocal shared, shared_context, grounded
        if budget.expired():
            out.append(Outcome(at, q.goal, q.key, "unknown",
                               f"--timeout {budget.timeout:g} s reached"))
            status[q.goal] = "unknown"
            return True
        began = time.perf_counter() - spent
        try:
            settled = _settled(model, q, ob, shared, shared_context, grounded, budget, late)
        except (interrupt.Interrupted, z3.Z3Exception) as e:
            if not interrupt.stopped(e):
                raise
            # NOTE(prove-interrupt): the rest is not asked
            out.append(Outcome(at, q.goal, q.key, "interrupted", interrupt.REASON))
            return False
        except TraceReplayError as e:
            # NOTE(replay-internal): Z3's counterexample to induction does not replay in the
            # reference semantics: the encoding is wrong somewhere (it once proved a false
            # `isundefined` line), so the obligation is neither proved nor refuted, and the
            # user is told so rather than shown a traceback
            status[q.goal] = "unknown"
            shared_context, grounded = (), None  # the action's solvers are made anew
            out.append(Outcome(at, q.goal, q.key, "unknown",
                               f"internal error on {q.goal}, {q.what}: {e} (the encoding for "
                               "every N and the reference semantics disagree: a bug in "
                               "coherence; please report it with the spec)"))
            return True
        shared, shared_context, grounded, (answer, cti, why) = settled
        if isinstance(answer, Deferred):
            waiting.append((at, q, look, time.perf_counter() - began, answer))
            return True
        if answer == z3.unsat:
            out.append(Outcome(at, q.goal, q.key, "settled"))
            if cache is not None and look is not None:
                cache.record(look, q.goal, q.what, time.perf_counter() - began, model.file)
            return True
        where = ("the initial state" if q.what == "init"
                 else f"{q.what} (for some number of {_units(ob.shape)})")
        if answer == z3.sat or cti is not None:
            status[q.goal] = "cti"
            verb = "implied by" if q.what == "init" else "preserved by"
            out.append(Outcome(at, q.goal, q.key, "cti", f"{q.goal} is not {verb} {where}",
                               cti))
        else:
            status[q.goal] = "unknown"
            out.append(Outcome(at, q.goal, q.key, "unknown",
                               f"Z3 answered unknown on {q.goal}, {q.what} ({why})"))
        return True

    n = 0
    stopped = False  # NOTE(prove-interrupt): the rest is not asked
    for at, q, size in _queries(pending):
        if q is None:
            out += _unbuilt(ob, at[0], budget)
            continue
        if at[1] == 0 and not isinstance(groups, list):
            total += size
        tally.set(share, n, total)
        n += 1
        if progress is not None:
            all_done, all_total = tally.sums()  # every process's
            progress(all_done, all_total, f"obligation {q.goal}: {q.what}")
        if status.setdefault(q.goal, "proved") != "proved":
            continue
        if q.key in reuse:
            out.append(Outcome(at, q.goal, q.key, "settled"))
            continue
        if q.unchanged:  # NOTE(frame-unchanged): settled without Z3, so without the cache
            out.append(Outcome(at, q.goal, q.key, "settled"))
            continue
        look = None
        if cache is not None:
            look = cache.look(q.assertions, q.anchor)
            if look.found:
                cache.record(look, q.goal, q.what, 0.0, model.file)  # a format-3 hit, upgraded
                out.append(Outcome(at, q.goal, q.key, "settled", cached=True))
                continue
        if not settle(at, q, look, 0.0, None):
            stopped = True
            break
    for at, q, look, spent, late in [] if stopped else waiting:  # NOTE(quick-first)
        if progress is not None:
            all_done, all_total = tally.sums()
            progress(all_done, all_total, f"obligation {q.goal}: {q.what}, the long tries")
        if status[q.goal] == "proved" and not settle(at, q, look, spent, late):
            break
    tally.set(share, total, total)
    return out


def _queries(pending: Iterable[tuple[int, list[Query] | None]]
             ) -> Iterator[tuple[tuple[int, int], Query | None, int]]:
    """((group, index), query, the group's size) of each built group; (group, -1), None, 0
    for one left unbuilt (NOTE(group-deadline))."""
    for g, qs in pending:
        if qs is None:
            yield (g, -1), None, 0
            continue
        for j, q in enumerate(qs):
            yield (g, j), q, len(qs)


def _unbuilt(ob: Obligations, g: int, budget: Budget) -> list[Outcome]:
    """NOTE(group-deadline): an action's outcomes when --timeout had passed before it was
    built: every goal it would have asked is unknown (building MSI's queries of one action
    takes seconds to minutes of Python, and the device runs' 16 workers built the rest of
    the actions past --timeout until an outer `timeout` cut them, result and all). A goal
    left out here would read as proved."""
    i = g - 1
    why = f"--timeout {budget.timeout:g} s reached"
    names = [*ob.props, *([] if ONE_PER_KIND in ob.props or g == 0 else [ONE_PER_KIND])]
    out = [Outcome((g, j), name, (name, i, -1), "unknown", why)
           for j, name in enumerate(names)]
    out += [Outcome((g, len(names) + k), "error:error", ("error:error", i, j), "unknown", why)
            for k, (j, _err) in enumerate(ob.errs)]
    return out


def _settled(model: ir.Model, q: Query, ob: Obligations, shared: Any,
             shared_context: tuple[int, ...], grounded: Grounded | None, budget: Budget,
             late: Deferred | None = None
             ) -> tuple[Any, tuple[int, ...], Grounded | None, tuple[Any, Any, str]]:
    """``_settle`` on the action's solver, made anew when the query starts another action:
    (solver, its context, the action's ground try, (answer, CTI, why)); its quick tries
    only, or (``late``) its long tries (NOTE(quick-first))."""
    context = tuple(a.get_id() for a in q.quantified[:-1])
    if ob.shape is not None:  # NOTE(param-hierarchy): a fresh solver per query is faster
        shared, shared_context = z3.Solver(), ()
        shared.add(*q.assertions)
    elif context != shared_context:  # queries of one action share all but their last
        shared, shared_context = z3.Solver(), context
        shared.add(*q.quantified[:-1])
        grounded = Grounded(q) if q.what != "init" else None
    elif grounded is not None and grounded.stale:  # NOTE(incremental-reset)
        shared = z3.Solver()
        shared.add(*q.quantified[:-1])
        grounded.stale = False
    core = ob.finite_core if ob.shape is None else None
    if late is not None:
        return shared, shared_context, grounded, _settle_late(model, q, budget, grounded, late,
                                                              core)
    # NOTE(quick-first): only under --timeout, where the order decides what is settled by
    # then; without one every query gets every try anyway, and asking each whole finds a
    # refuted property's counterexample before its later queries are asked (CI's prove
    # tests: 398 s -> 472 s with the long tries always deferred)
    return shared, shared_context, grounded, _settle(model, q, shared, budget, grounded, core,
                                                     defer=budget.timeout is not None)


def _prove(model: ir.Model, budget: Budget, refute_depth: int, notes: list[str],
           progress: Callable[[int, int, str], None] | None = None,
           shape: Any = None, reuse: frozenset[tuple[str, int, int]] = frozenset(),
           jobs: int = 1, cache: ProofCache | None = None) -> ParamResult:
    # NOTE(forked-shares): with ``jobs`` > 1, that many processes, forked once what every
    # action's queries share is built; each builds and settles the actions it takes. The
    # outcomes are then read in query order, so the verdict, the lines and the settled keys
    # are what one process would give from the same answers (an answer itself may differ:
    # Z3's depend on the terms a process made before).
    from coherence.smt.forked import Claims, Shares, Tally, affordable
    ob = Obligations(model, shape)
    count = affordable(max(1, min(jobs, ob.groups)))
    tally = Tally(count)
    # with --rlimit (the deterministic mode) each process's actions are fixed, round-robin;
    # else each takes the next action when it is free (German's final proof: 1.5-1.8 ->
    # 1.3-1.5 s), so which process makes which terms, and an answer near its wall-clock cap,
    # may vary from run to run
    claims = Claims(ob.groups) if budget.rlimit is None and count > 1 else None

    def deal(k: int) -> Iterable[int]:
        return claims.of(k) if claims is not None else list(range(k, ob.groups, count))
    shares = Shares(count, lambda k: _share(model, ob, deal(k), budget, reuse, k, tally,
                                            progress if k == 0 else None, cache))
    results = shares.results(stop=lambda mine: any(o.kind == "interrupted" for o in mine))
    outcomes = sorted((o for share in results for o in share), key=lambda o: o.at)
    notes += [f"a worker's share was settled again in the main process ({why})"
              for why in shares.failures]
    result = _read(outcomes, model, refute_depth, budget, notes, progress, shape, tally)
    result.jobs = count if shares.fork else 1
    result.cached = sum(o.cached for o in outcomes)
    return result


def _read(outcomes: list[Outcome], model: ir.Model, refute_depth: int, budget: Budget,
          notes: list[str], progress: Callable[[int, int, str], None] | None, shape: Any,
          tally: Any) -> ParamResult:
    """The verdict of the outcomes read in query order (then, when a property is not proved,
    the search for a concrete counterexample)."""
    if any(o.kind == "interrupted" for o in outcomes):
        raise interrupt.Interrupted(interrupt.REASON)  # prove_all reports it
    settled: list[tuple[str, int, int]] = []
    status: dict[str, str] = {}
    ctis: list[str] = []
    details: list[Any] = []
    unknown: list[str] = []
    unknown_goals: list[UnknownGoal] = []
    for o in outcomes:
        if status.setdefault(o.goal, "proved") != "proved":
            continue  # a later query of a property that already failed
        if o.kind == "settled":
            settled.append(o.key)
            continue
        status[o.goal] = o.kind
        (ctis if o.kind == "cti" else unknown).append(o.message)
        if o.kind == "unknown":
            unknown_goals.append(_unknown_goal(model, o.key, shape))
        if o.cti is not None:
            details.append(o.cti)
    done = [name for name, st in status.items() if st == "proved"]
    start = budget.start
    seconds = time.perf_counter() - start
    if not unknown and not ctis:
        return ParamResult("holds", done, [], [], None, notes, None, seconds, settled=settled)
    if progress is not None:
        total = tally.sums()[1]
        progress(total, total, f"looking for a counterexample at 2-3 {_units(shape)}")
    # NOTE(refute-deadline): past --timeout no search starts (its BMC encoding alone, MSI's
    # at depth 10, ran minutes past it, and an outer `timeout` then lost the whole result)
    if budget.expired():
        notes = [*notes, f"no counterexample searched at 2-3 {_units(shape)}: --timeout "
                 f"{budget.timeout:g} s reached"]
    refuted = _refute(model, refute_depth, budget, shape)
    if refuted is not None:
        refuted.proved, refuted.ctis, refuted.notes = done, ctis, notes
        refuted.cti_details = details
        refuted.seconds = time.perf_counter() - start
        refuted.settled = settled
        return refuted
    reason = unknown[0] if unknown else ("not inductive for every N: add `invariant aux` "
                                         "lines (see above)")
    return ParamResult("unknown", done, ctis, [], None, notes, reason,
                       time.perf_counter() - start, details, settled=settled,
                       unknown_goals=unknown_goals)


def _unknown_goal(model: ir.Model, key: tuple[str, int, int], shape: Any) -> UnknownGoal:
    if key[1] < 0 or shape is not None:  # the initial state's, or a hierarchy's
        return UnknownGoal(key[0], "", False, ())
    machine, tr = actions_of(model)[key[1]]
    return UnknownGoal(key[0], machine.name, machine.kind is ir.MachineKind.CACHE, tr.states,
                       tr.name if tr.kind is ir.TransitionKind.MESSAGE else "")


GROUND_RLIMIT = 30_000_000  # Z3 units per quantifier-free try (deterministic)
GROUND_INSTANCES = 200_000  # quantifier instances one action's ground context may build


class Grounded:
    """NOTE(param-ground-fallback): an action's hypotheses with every universal quantifier over
    nodes instantiated at the nodes the step touches (its agent, parameters and message
    source, the state's node variables, two witnesses shared by every goal; ``infer_ground``),
    in one solver, built on the first ``proves`` (most actions never need it). Instances are
    consequences of the hypotheses and the goal's existentials are Skolemized, so an
    unsatisfiable answer proves the obligation; any other answer only sends it on to the
    quantified solver. Z3 decides these in milliseconds where the quantified form can take
    a minute. Formulas are first rewritten by destructive equality resolution
    (``infer_ground.resolved``: a message quantifier that names its ends builds no
    instance), and a goal that the action's context does not refute is tried again with the
    hypotheses also instantiated at the goal's own nodes and witnesses (the source of a
    message it says is in flight), a context per set of them."""

    def __init__(self, q: Query) -> None:
        self.query = q
        self.pool = list(z3.Consts("ground_k1 ground_k2 ground_k3", NODE))
        self.built = False  # the action's context, on the first ``proves``
        self.goals: dict[int, tuple[Any, Any]] = {}  # goal id -> (goal, resolved)
        self.refuted: dict[int, bool] = {}  # goal id -> the action's context refutes it
        # NOTE(ground-deadline): past it, grounding gives up (TooLarge) and no check starts
        self.deadline: float | None = None
        # NOTE(count-fresh-first): the fresh tries before this action's ground try
        self.fresh_wins = self.fresh_misses = 0
        # NOTE(split-first-won): goals without a count the split proved in this action, and
        # those it did not prove when tried first
        self.split_wins = self.split_first_misses = 0
        # NOTE(incremental-reset): the action's incremental solver is to be made anew
        self.stale = False

    def skolemized(self, goal: Any) -> Any:
        """``goal`` with its outer existentials witnessed and its universals instantiated at
        the action's node terms (weaker than ``goal``: an unsat answer with it proves the
        obligation), without building the action's context; None when too large."""
        from coherence.smt.infer_ground import Grounder, TooLarge
        q = self.query
        nodes = [x for x in q.pre.leaves() if x.sort() == NODE]
        consts = [c for c in q.consts if c.sort() == NODE]
        grounder = Grounder(NODE, [HOME, *consts, *nodes, *self.pool[:2]],
                            budget=GROUND_INSTANCES)
        try:
            return grounder.goal(self._resolved(goal), self.pool)
        except TooLarge:
            return None

    @property
    def ready(self) -> bool:
        """Whether the action's context is built (and was not too large)."""
        return self.built and self.main is not None

    def proves(self, goal: Any, wider: bool = True) -> bool:
        """Whether the ground hypotheses refute ``goal``; with ``wider``, also instantiated
        at the nodes the goal adds (a context per set of them, built on demand)."""
        if not self.built:
            self.built = True
            q = self.query
            nodes = [x for x in q.pre.leaves() if x.sort() == NODE]
            consts = [c for c in q.consts if c.sort() == NODE]
            self.terms = [HOME, *consts, *nodes, *self.pool[:2]]
            self.main = self._context(self.terms)
            self.wider: dict[tuple[Any, ...], tuple[Any, Any, list[Any]] | None] = {}
        if self.main is not None:
            # asked again (first without ``wider``, then with it): decided once
            if goal.get_id() not in self.refuted:
                self.refuted[goal.get_id()] = self._proves(*self.main, goal)
            if self.refuted[goal.get_id()]:
                return True
        if not wider:
            return False
        # a goal about a second action ("then B errs") names B's agents, and the witnesses
        # of its existentials (a message's source) are nodes too: the hypotheses
        # instantiated at them as well (witnesses are named after their formula, so the
        # wider grounder makes the same ones)
        known = {t.get_id() for t in self.terms}
        extra = [c for c in self._goal_nodes(goal) if c.get_id() not in known]
        if not extra:
            return False
        key = tuple(sorted(c.get_id() for c in extra))
        if key not in self.wider:
            self.wider[key] = self._context([*self.terms, *extra])
        context = self.wider[key]
        return context is not None and self._proves(*context, goal)

    def _resolved(self, goal: Any) -> Any:
        """``goal`` after ``resolved``, one term per goal (kept alive: witnesses are named
        after its quantifiers' ids)."""
        from coherence.smt.infer_ground import resolved
        hit = self.goals.get(goal.get_id())
        if hit is None:
            hit = self.goals[goal.get_id()] = (goal, resolved(goal))
        return hit[1]

    def _goal_nodes(self, goal: Any) -> list[Any]:
        """The node constants of ``goal`` grounded: its own and its witnesses."""
        from coherence.smt.infer_ground import Grounder, TooLarge
        grounder = self.main[0] if self.main is not None else Grounder(NODE, self.terms)
        grounder.left = GROUND_INSTANCES
        try:
            return node_constants(grounder.goal(self._resolved(goal), self.pool))
        except TooLarge:
            return node_constants(goal)

    def _context(self, terms: list[Any]) -> tuple[Any, Any, list[Any]] | None:
        """(grounder, solver, (card terms, node terms) of the hypotheses) at ``terms``; None
        when the instances would exceed GROUND_INSTANCES (MSI's count invariants, whose
        message quantifiers range over (source, destination) pairs: minutes of Python)."""
        from coherence.smt.infer_ground import Grounder, TooLarge, resolved
        from coherence.smt.param_count import ground_nodes
        grounder = Grounder(NODE, terms, budget=GROUND_INSTANCES)
        grounder.deadline = self.deadline
        solver = z3.Solver()
        solver.set("rlimit", GROUND_RLIMIT)
        try:
            hypotheses = [grounder.ground(resolved(a), True)
                          for a in self.query.assertions[:-1]]
        except TooLarge:
            return None
        solver.add(*hypotheses)
        counting = [card_terms(hypotheses), ground_nodes(hypotheses)] if self.query.counts \
            else [[], []]
        return grounder, solver, counting

    def _proves(self, grounder: Any, solver: Any, counting: list[Any], goal: Any) -> bool:
        from coherence.smt.infer_ground import TooLarge
        grounder.left = GROUND_INSTANCES  # each goal its own budget
        grounder.deadline = self.deadline
        try:
            return self._decide(grounder, solver, counting, goal)
        except TooLarge:
            return False

    def _decide(self, grounder: Any, solver: Any, counting: list[Any], goal: Any) -> bool:
        grounded = grounder.goal(self._resolved(goal), self.pool)
        if not self.query.counts:
            return self._unsat(solver, grounded)
        # NOTE(param-count): the cardinality axioms of the card terms this goal brings
        from coherence.smt.param_count import ground_nodes, venn_axioms
        cards, nodes = counting
        counted = list({t.get_id(): t for t in [*cards, *card_terms([grounded])]}.values())
        pool = list({t.get_id(): t for t in [*grounder.terms, *ground_nodes([grounded]),
                                             *nodes]}.values())
        axioms = venn_axioms(counted, pool)
        solver.push()
        try:
            solver.add(grounded, *[grounder.ground(a, True) for a in axioms])
            if self._unsat(solver):
                return True
        finally:
            solver.pop()
        return self.query.reads_counts and self._with_witnesses(grounder, goal, axioms)

    def _with_witnesses(self, grounder: Any, goal: Any, axioms: list[Any]) -> bool:
        """NOTE(message-count): a card of messages in flight is a set of agents whose queue
        holds one, which only the hypotheses about the networks (quantified over nodes)
        constrain: they are instantiated at the Venn regions' witnesses too (a context per
        goal: one kept for the action's other goals left some of them unproved)."""
        known = {t.get_id() for t in grounder.terms}
        witnesses = [c for c in node_constants(z3.And(axioms)) if c.get_id() not in known]
        context = self._context([*grounder.terms, *witnesses])
        if context is None:
            return False
        wide, solver, _counting = context
        wide.left = GROUND_INSTANCES
        solver.add(wide.goal(self._resolved(goal), self.pool),
                   *[wide.ground(a, True) for a in axioms])
        return self._unsat(solver)

    def _unsat(self, solver: Any, *assumptions: Any) -> bool:
        """An unsat answer within GROUND_RLIMIT units, and before the deadline when there is
        one (NOTE(ground-deadline))."""
        if self.deadline is not None:
            left = self.deadline - time.perf_counter()
            if left <= 0:
                return False
            interrupt.cap(solver, left)
        return bool(interrupt.check(solver, *assumptions) == z3.unsat)


@attrs.frozen
class Deferred:
    """NOTE(quick-first): a query whose quick tries gave up, its long ones left for later;
    ``tried``: the answer of a quick check they start from, where one was made."""

    tried: tuple[Any, str] | None

    def __str__(self) -> str:
        return "deferred"


def _settle(model: ir.Model, q: Query, shared: Any, budget: Budget,
            grounded: Grounded | None = None,
            core: Callable[[], Any] | None = None,
            defer: bool = False) -> tuple[Any, Any, str]:
    """(answer, concrete CTI or None, why unknown) of one query: a quick try on the action's
    incremental solver (about 3x faster than a fresh solver per query), when it gives up the
    quantifier-free try (``grounded``: the action's), a counterexample
    with 1-2 agents, a fresh solver, a counterexample with 3-4 agents, then the long try.
    ``core``: the spec's ``FiniteCore`` (NOTE(finite-core)), made when first needed.
    ``defer``: stop where the long tries would start, the answer a ``Deferred``
    (NOTE(quick-first); ``_settle_late`` goes on from there)."""
    if q.unchanged:  # NOTE(frame-unchanged): its hypothesis, which ``inv`` asserts
        return z3.unsat, None, ""
    step = q.what != "init"
    # NOTE(param-count): with cardinalities uninterpreted, the quantified solver proves only
    # the queries of a spec that counts that need no counting (most of them, at once), and
    # its models may be spurious: after a short try, the ground try, which has their axioms
    counts = q.counts
    tried: tuple[Any, str] | None = None  # a fresh solver's quick try, when made
    if counts:
        from coherence.smt.param_count import venn_axioms
        # the axioms of the query's ground card terms, quantified per node, on a solver of
        # their own (on the action's incremental one, Z3 5.4 crashed or gave up the push
        # after a resource limit)
        # NOTE(message-count): not where the cards are sets of queues: Z3's quantifier
        # instantiation on them ran past its timeout for minutes (the ground try settles
        # them in about a second)
        if not q.reads_counts:
            quick = z3.Solver()
            budget.limit(quick, COUNT_QUICK_SECONDS)
            quick.add(*q.quantified, *venn_axioms(card_terms(q.quantified), None))
            if _check(quick)[0] == z3.unsat:
                return z3.unsat, None, ""
        flat_step = step and q.shape is None
        counting_goal = False  # a count anywhere in the goal (asked once the quick try fails)
        # NOTE(error-split): an error after the action, place by place, from the action and
        # the same error before it at the same witnesses: about 0.01 s a place where the
        # tries below stay unknown for minutes (MSI's errors after `Evict in S`)
        if flat_step and q.goal == "error:error" and _split(q, budget, small_only=True):
            return z3.unsat, None, ""
        if flat_step:
            # NOTE(count-quick-first): the action's incremental solver, cards uninterpreted,
            # before the ground try: it proves most of MSI's goals within 1 s each, where the
            # ground try takes 1.3-5 s (building the Venn axioms) and 27-55 s on a goal it
            # cannot prove
            budget.limit(shared, QUICK_SECONDS, wall=QUICK_WALL_SECONDS)
            began = time.perf_counter()
            incremental = _check(shared, [q.quantified[-1]])[0]
            slow = budget.rlimit is None and \
                time.perf_counter() - began > INCREMENTAL_SLOW_SECONDS
            if grounded is not None and (incremental != z3.unsat or slow):
                grounded.stale = True  # NOTE(incremental-reset)
            if incremental == z3.unsat:
                return z3.unsat, None, ""
            counting_goal = counts_anywhere(q.assertions[-1])
        grounded = grounded if grounded is not None else Grounded(q)
        # NOTE(split-first-won): once the split has proved a goal without a count in this
        # action, it comes before the fresh try on the next ones: on MSI's `Inv in S` it
        # proves 12 of them in 0.04 s each, after a fresh try that gave up at 12-19 s; not
        # once it has failed there SPLIT_FIRST_MISSES times and more often than it won
        split_first = flat_step and not counting_goal and grounded.split_wins > 0 and (
            grounded.split_first_misses < max(SPLIT_FIRST_MISSES, grounded.split_wins))
        if split_first:
            if _split(q, budget):
                grounded.split_wins += 1
                return z3.unsat, None, ""
            grounded.split_first_misses += 1
        # NOTE(core-early): then the hypotheses the goal's instance at 4 agents uses
        # (NOTE(finite-core)): on MSI's `FwdGetS in MI_A` it proved `inferred_31` in 3.5 s
        # after the split (46 s) and the fresh try (12 s) had given up, and `inferred_15` in
        # 0.9 s after a fresh try of 13 s
        if flat_step and _core_try(q, core, budget):
            return z3.unsat, None, ""
        # NOTE(goal-split): for a goal that counts only; on the others the fresh try
        # below is as quick, and a split that fails costs its queries (CI's default tier
        # took 25 min with the split on every goal, 16.5 min on the commit before it)
        # NOTE(split-quantified-counts): a count under the goal's quantifier counts too
        # (``card_terms`` sees only ground ones): MSI's `inferred_30` at `Inv in S` went
        # to the ground try and the long tries (unknown after 182 s) where the split
        # proves it in 1.3 s
        if counting_goal and _split(q, budget):
            return z3.unsat, None, ""
        # NOTE(count-fresh-first): then a fresh solver, still before the ground try: on MSI's
        # inferred lines it proves 96 of the 106 goals of `GetM in S` that the incremental
        # one gives up on, most within 2 s, where a ground try that fails costs 1-2 minutes
        # (building its contexts) before the same fresh solver proves the goal in 1.6 s; not
        # for a goal that counts itself, which needs the cards' axioms (on message_count_aux
        # every such try failed: 28 s -> 75 s), nor in an action where it failed
        # FRESH_FIRST_MISSES times without proving a goal
        # A goal that counts gets it too once the action's fresh try has proved a goal (no
        # bundled counting proof gets there): MSI's `inferred_30` (`acks == count(...)`) took
        # 104-164 s in five actions through the ground try, and a fresh solver 4.5-6.2 s
        # (with the congruences of NOTE(count-set-names))
        counted_goal = bool(card_terms([q.assertions[-1]]))
        if flat_step and (not counted_goal or grounded.fresh_wins) and (
                grounded.fresh_wins or grounded.fresh_misses < FRESH_FIRST_MISSES):
            fresh_first = z3.Solver()
            fresh_first.add(*q.quantified)
            budget.limit(fresh_first, QUICK_SECONDS, wall=FRESH_FIRST_WON_WALL_SECONDS
                         if grounded.fresh_wins else FRESH_FIRST_WALL_SECONDS)
            tried = _check_guarded(fresh_first)  # NOTE(check-guard)
            if tried[0] == z3.unsat:
                grounded.fresh_wins += 1
                return z3.unsat, None, ""
            grounded.fresh_misses += 1
        # NOTE(split-late): a goal that does not count, part by part, once the quick tries
        # gave up on it (MSI's `inferred_58` at `Evict in M`: 0.3 s, unknown after 168 s of
        # the tries below)
        if flat_step and not counting_goal and not split_first and _split(q, budget):
            grounded.split_wins += 1
            return z3.unsat, None, ""
        late = Deferred(tried)
        if defer:
            return late, None, ""
        return _settle_late(model, q, budget, grounded, late, core)
    if step and not counts and grounded is not None and grounded.ready \
            and grounded.proves(q.assertions[-1], wider=False):
        # once an action's quick try has given up on one goal, the rest of its goals go to
        # its ground context first: milliseconds each there, where the quick try would
        # take its 5 s before giving up on most of them (msi_home_acks' inferred lines)
        return z3.unsat, None, ""
    if tried is not None:  # NOTE(count-fresh-first): this fresh try is done
        answer, why = tried
    else:
        budget.limit(shared, QUICK_SECONDS, wall=QUICK_WALL_SECONDS)
        answer, why = _check(shared, [] if q.shape is not None else [q.quantified[-1]])
        if answer == z3.unsat:
            return answer, None, why
    if answer == z3.unknown and step and grounded is not None \
            and grounded.proves(q.assertions[-1]):
        return z3.unsat, None, ""
    if answer == z3.unknown and q.shape is None:
        # a quick try that gave up on the action's incremental solver: a fresh solver often
        # proves it at once (acked's inferred lines: 0.03-0.2 s), before the CTI search
        fresh = z3.Solver()
        fresh.add(*q.quantified)
        budget.limit(fresh, QUICK_SECONDS, wall=QUICK_WALL_SECONDS)
        if _check(fresh)[0] == z3.unsat:
            return z3.unsat, None, ""
    if answer == z3.unknown and step and q.shape is None and _core_try(q, core, budget):
        return z3.unsat, None, ""
    if defer and answer == z3.unknown:  # a sat answer is a counterexample: it is built now
        return Deferred((answer, why)), None, ""
    return _long_tries(model, q, budget, answer, why, core)


def _settle_late(model: ir.Model, q: Query, budget: Budget, grounded: Grounded | None,
                 late: Deferred, core: Callable[..., Any] | None = None
                 ) -> tuple[Any, Any, str]:
    """NOTE(quick-first): ``_settle``'s long tries on a query it deferred (``grounded``: the
    action's ground try, made anew when None)."""
    if not q.counts:
        assert late.tried is not None  # a flat spec's deferral follows its quick check
        return _long_tries(model, q, budget, *late.tried, core)
    grounded = grounded if grounded is not None else Grounded(q)
    # NOTE(count-skolem-venn): the quantified solver with the goal's witnesses and the
    # Venn axioms quantified per node (after the fresh try since the counted sets are
    # named, NOTE(count-set-names): on MSI's `GetS in I` the fresh try proves every
    # changed goal the incremental one leaves but one, the witnessed try 4 fewer)
    if _skolem_venn(q, grounded, budget):
        return z3.unsat, None, ""
    grounded.deadline = budget.deadline(GROUND_SECONDS)
    if grounded.proves(q.assertions[-1]):
        return z3.unsat, None, ""
    if late.tried is not None:  # NOTE(count-fresh-first): this fresh try is done
        answer, why = late.tried
    else:  # a solver of its own: the action's incremental one is not used (see _settle)
        shared = z3.Solver()
        shared.add(*q.quantified)
        budget.limit(shared, QUICK_SECONDS, wall=QUICK_WALL_SECONDS)
        answer, why = _check(shared, [])
        if answer == z3.unsat:
            return answer, None, why
    return _long_tries(model, q, budget, *_trusted(True, answer, why), core)


def _long_tries(model: ir.Model, q: Query, budget: Budget, answer: Any, why: str,
                core: Callable[..., Any] | None = None) -> tuple[Any, Any, str]:
    """The tries after the quick ones: a counterexample with 1-2 agents, the split (in a
    spec that does not count), a fresh solver, a counterexample with 3-4 agents, one with 5
    from the fixed-size encoding (``core``: ``Obligations.finite_core``), then the long
    try."""
    from coherence.smt.param_cti import MAX_AGENTS, find_cti
    step = q.what != "init"
    counts = q.counts
    fresh = z3.Solver()
    fresh.add(*q.quantified)
    cti = find_cti(model, q, budget, range(1, 3)) if step else None
    if cti is not None:
        return answer, cti, why
    # NOTE(split-late): as above, in a spec that does not count
    if answer == z3.unknown and step and not counts and q.shape is None and _split(q, budget):
        return z3.unsat, None, ""
    if answer == z3.unknown:
        budget.limit(fresh, 2 * QUICK_SECONDS)
        answer, why = _check_guarded(fresh)  # NOTE(check-guard)
        if answer == z3.unsat:
            return answer, None, why
        answer, why = _trusted(counts, answer, why)
    if step:
        cti = find_cti(model, q, budget, range(3, MAX_AGENTS + 1))
    if cti is None and answer != z3.unsat and step and core is not None:
        cti = _finite_cti(q, core, budget)
    left = budget.seconds(QUERY_SECONDS)
    if cti is None and answer == z3.unknown and (left is None or left > 2 * QUICK_SECONDS):
        budget.limit(fresh, QUERY_SECONDS)
        answer, why = _check_guarded(fresh)
        answer, why = _trusted(counts, answer, why)
    return answer, cti, why


def _finite_cti(q: Query, core: Callable[..., Any], budget: Budget) -> Any:
    """NOTE(finite-cti): a counterexample to induction at ``finite_core.CTI_AGENTS`` agents,
    where the quantified tries gave up: lines inductive at the size Houdini chose them at
    (4 agents) can break at 5, and only a fixed size says so (the unrolled search of
    ``find_cti`` stops at 4: minutes of Python at 5 for MSI)."""
    from coherence.smt.finite_core import CTI_AGENTS
    if budget.expired():
        return None
    return core(CTI_AGENTS).counterexample(q, _core_rlimit(budget), budget.seconds(CTI_SECONDS))


def _core_rlimit(budget: Budget) -> int:
    """Z3 units of one fixed-size check (NOTE(finite-core)): its own, or the rlimit's share."""
    return CORE_RLIMIT if budget.rlimit is None else max(1, int(budget.rlimit * CORE_SHARE))


def _core_try(q: Query, core: Callable[[], Any] | None, budget: Budget) -> bool:
    """NOTE(finite-core): the query with only the hypotheses its instance at a fixed size
    uses, a fresh solver then part by part (``_split``)."""
    if core is None or budget.expired():
        return False
    finite = core()
    keep = finite.hypotheses(q, _core_rlimit(budget))
    if keep is None:
        return False
    small = finite.restricted(q, keep)
    solver = z3.Solver()
    budget.limit(solver, QUICK_SECONDS, wall=CORE_WALL_SECONDS)
    solver.add(*small.quantified)
    if _check_guarded(solver)[0] == z3.unsat:  # NOTE(check-guard)
        return True
    return _split(small, budget)


def _split(q: Query, budget: Budget, small_only: bool = False) -> bool:
    """NOTE(goal-split): the goal part by part, each from the action and its own hypothesis
    first (``goal_split``); an error goal's parts are its places (NOTE(error-split)).
    ``small_only``: no part is asked of every hypothesis."""
    from coherence.smt.goal_split import proves
    last = q.assertions[-1]
    if q.before is None or q.frame is None:
        return False
    if q.goal == "error:error":
        after = z3.Not(last)  # "no error after", as a property
    elif z3.is_not(last):
        after = last.arg(0)
    else:
        return False

    def decide(solver: Any, cap: float) -> bool:
        budget.limit(solver, cap)
        return _check(solver)[0] == z3.unsat

    return proves(q.frame, q.assertions[:-1], after, q.before, decide,
                  SPLIT_SMALL_SECONDS, SPLIT_FULL_SECONDS, budget.deadline(SPLIT_SECONDS),
                  small_only=small_only, whole=q.goal == "error:error")


def _skolem_venn(q: Query, grounded: Grounded, budget: Budget) -> bool:
    """NOTE(count-skolem-venn): the quantified hypotheses, the goal with its existentials
    witnessed (``Grounded.skolemized``: its card terms become ground) and the Venn axioms of
    every ground card term, quantified per node: an unsat answer proves the obligation. The
    cards of a goal under its quantifier had no axioms before (MSI's ``inferred_38`` at init,
    `acks == count(...)` for every agent: a spurious model with a count of 1 where no message
    is in flight); this proves it in 0.01 s, and 90 of the 98 changed goals of MSI's
    `GetS in I` within 5 s each."""
    from coherence.smt.param_count import venn_axioms
    goal = grounded.skolemized(q.assertions[-1])
    if goal is None:
        return False
    hypotheses = q.assertions[:-1]
    solver = z3.Solver()
    budget.limit(solver, QUICK_SECONDS, wall=WITNESSED_WALL_SECONDS)
    solver.add(*hypotheses, goal, *venn_axioms(card_terms([goal, *hypotheses]), None))
    return bool(_check_guarded(solver)[0] == z3.unsat)  # NOTE(check-guard)


def _check(solver: Any, assumptions: list[Any] | None = None) -> tuple[Any, str]:
    """(answer, why unknown) of ``solver.check`` here (``guarded.answer``)."""
    return guarded.answer(solver, assumptions or [])


def _check_guarded(solver: Any) -> tuple[Any, str]:
    """``_check`` of a fresh solver in a child process killed past its cap
    (NOTE(check-guard))."""
    return guarded.check(solver)


def _trusted(counts: bool, answer: Any, why: str) -> tuple[Any, str]:
    """A model of a query that counts is no counterexample: ``card`` is uninterpreted there
    (NOTE(param-count)); only the CTI search's models, with exact counts, are."""
    if counts and answer == z3.sat:
        return z3.unknown, "a model with the cardinalities uninterpreted, maybe spurious"
    return answer, why



def _refute(model: ir.Model, depth: int, budget: Budget,
            shape: Any = None) -> ParamResult | None:
    """Look for a concrete counterexample at 2 and 3 agents (BMC, replayed), in at most
    REFUTE_SECONDS from now (with ``rlimit``: its REFUTE share of units for both sizes); a
    hierarchical spec at 2 and 3 ids of its free index type (``shape``)."""
    from coherence.smt.bmc import bmc
    from coherence.spec.load import rebind
    start = time.perf_counter()
    units = None if budget.rlimit is None else int(budget.rlimit * REFUTE_SECONDS / QUERY_SECONDS)
    for n in (2, 3):
        if budget.expired():  # NOTE(refute-deadline)
            return None
        left = budget.seconds(REFUTE_SECONDS - (time.perf_counter() - start))
        try:
            instance = rebind(model, {"agents" if shape is None else shape.param: n})
        except SpecError:  # the spec's agents range may exclude n
            continue
        result = bmc(instance, depth, deadlock=False,
                     timeout=None if left is None else max(0.1, left), rlimit=budget.rlimit,
                     rlimit_total=units)
        if units is not None:
            units = max(1, units - result.resources)
        if result.verdict == "fails":
            return ParamResult("fails", [], [], result.failures, n, [], None,
                               time.perf_counter() - budget.start)
    return None


def _check_agents_free(model: ir.Model) -> None:
    """The spec must not use the number of agents as a number: bind it again to another agent
    count (keeping every other parameter) and compare; a differing literal is reported where
    it is."""
    from coherence.spec.load import rebind
    try:
        other = rebind(model, {"agents": model.agents + 1})
    except SpecError as e:
        raise Unsupported(f"cannot bind the spec to {model.agents + 1} agents to check that "
                          f"it does not depend on their number: {e.message}", NO_SPAN) from None
    # integer types may move with it (NOTE(param-count): the encoding keeps their bounds in
    # terms of N; scaled_ranges refuses a bound that is not linear)
    scaled_ranges(model)
    where = _first_difference(model, other, model.agents, int_types=True)
    if where is not None:
        raise Unsupported("this depends on the number of agents as a number, which a proof "
                          "for every N cannot encode", where)


def _first_difference(a: Any, b: Any, agents: int = -1, int_types: bool = False) -> Span | None:
    """Where ``a`` and ``b`` (a spec bound to two sizes) first differ; ``int_types``: integer
    types may differ (the flat encoding's NOTE(param-count))."""
    if isinstance(a, (ir.AgentT, ir.NodeT, ir.SetT)) and type(a) is type(b):
        return None
    if isinstance(a, ir.Lit) and isinstance(b, ir.Lit):
        if isinstance(a.type, ir.NodeT) and isinstance(b.type, ir.NodeT):
            return None if (a.value == a.type.n) == (b.value == b.type.n) else a.span
        if a.value != b.value:
            return a.span
        return _first_difference(a.type, b.type, agents)
    if isinstance(a, ir.Param) and isinstance(b, ir.Param):
        return None
    if attrs.has(type(a)) and type(a) is type(b):
        for f in attrs.fields(type(a)):
            if f.name in ("span", "file") or not f.eq:
                continue
            if (f.name == "capacity" and isinstance(a, ir.Network)
                    and a.ordering is ir.Ordering.UNORDERED):
                continue  # ignored by the encoding (``UNet``): a send there never blocks
            if (int_types and f.name == "type" and isinstance(getattr(a, f.name), ir.IntT)
                    and isinstance(getattr(b, f.name), ir.IntT)):
                continue
            if f.name in ("agents", "n", "hi") and isinstance(getattr(a, f.name), int) and (
                    f.name != "hi" or getattr(a, f.name) == agents):
                continue
            r = _first_difference(getattr(a, f.name), getattr(b, f.name), agents, int_types)
            if r is not None:  # a plain field (a network's capacity) is where its owner is
                return a.span if r == NO_SPAN and isinstance(getattr(a, "span", None), Span) \
                    else r
        return None
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            return getattr(a[0], "span", NO_SPAN) if a else NO_SPAN
        for x, y in zip(a, b, strict=True):
            r = _first_difference(x, y, agents, int_types)
            if r is not None:
                return r
        return None
    return None if a == b else getattr(a, "span", NO_SPAN)
