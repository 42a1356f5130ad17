"""The meaning of an IR model: initial states, enabled actions, successors, properties.

Every engine (the reference checker, the Hypothesis state machine, litmus exploration, trace
replay for Z3 and exporters' cross-checks) goes through this one module, as Stateright reduces
every model to ``init_states``/``actions``/``next_state``/``properties``.

States are nested tuples of ints, hashable and cheap to compare:

    State = (lines, nets, monitor)
    lines[l] = (globals, home, caches)       home = (state, *vars) or ()
                                             caches[a] = (state, *vars)
    nets[n]  = unordered: sorted tuple of messages (line, src, dst, type, fields)
               fifo:      sorted tuple of ((src, dst, line), queue of (type, fields))
               bus:       ()  (delivered within the sending step)
    monitor  = per line, per agent (view, first_after) for the `coherence` property, else ()

NOTE(values): ``UNDEF`` is the run-time "undefined"; any operation on it but copying is an
error, as in Murphi, so clearing a field never changes behaviour, only the state count.
The home node's id is ``model.agents``.

NOTE(hierarchy): a hierarchical spec's state has the same shape, with no home and one entry
of ``caches`` per node (``ir.instances``: every machine instance, numbered flat), each
``(state, *vars)`` of its own machine; an action's ``agent`` is the node, messages name
nodes, and the monitor has one entry per processor (an instance of ``ir.event_machine``).

Each semantic decision is defined once here, and every consumer calls it: which actions can be
tried (``action_instances``, from ``spontaneous`` and ``param_values``), which messages may
arrive under each ordering (``deliverable``), what is in flight (``in_flight``,
``messages_in_flight``), 'no transition' (``no_transitions``, ``handler_table``), deadlock
(``is_deadlock``) and the bus nesting limit (``BUS_NESTING_LIMIT``). The Z3 encoder and the
Murphi and Promela exporters re-encode them (as formulas, as rules), taking their tables from
here; tests/test_semantic_decisions.py checks each re-encoding against these definitions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set
from typing import Any, NamedTuple, assert_never

from coherence import ir
from coherence.errors import Span, SpecError

UNDEF = -(1 << 31)

State = tuple[Any, ...]
Message = tuple[Any, ...]  # (line, src, dst, type, fields), as stored in a network

BUS_NESTING_LIMIT = 8
"""NOTE(bus-nesting): a bus message is handled inside the step that sends it, and its handler
may send on the bus in turn; a delivery made inside more than this many enclosing deliveries
is the model error "bus-nesting" (messages that keep triggering each other). The Z3 encoder
and the Promela export use this constant."""

DEADLOCK_MESSAGE = "deadlock: nothing can move, but a request or message is pending"


class ModelError(Exception):
    """A run-time error of the model (read of undefined, range overflow, no transition...)."""

    def __init__(self, message: str, span: Span | None = None, code: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        # NOTE(failure-keys): what kind of error this is, without the values in the message:
        # with the span it identifies the failure in every engine (results.FailureKey).
        self.code = code


# every ModelError code, in the order that breaks ties between errors at one position
ERROR_CODES = ("assert", "bus-ambiguous", "bus-nesting", "bus-no-transition", "bus-stall",
               "coherence", "error", "index", "no-index", "no-machine", "not-agent", "range",
               "undefined", "undefined-agent", "undefined-array", "undefined-dst")


def error_rank(code: str, span: Span | None) -> int:
    """The order among model errors that a quantifier reports the least of
    (NOTE(quantifier-errors)): by source position, then code. One integer, so that the C
    engines compare the same numbers."""
    line, col = (span.line, span.col) if span is not None else (0, 0)
    kind = ERROR_CODES.index(code) if code in ERROR_CODES else len(ERROR_CODES)
    return (line << 40) | (col << 16) | kind


def least_error(old: ModelError | None, new: ModelError) -> ModelError:
    """The one of two model errors a quantifier reports (the first on a tie)."""
    if old is None or error_rank(new.code, new.span) < error_rank(old.code, old.span):
        return new
    return old


class CoherenceViolation(ModelError):
    """The coherence monitor saw a load that no coherence order explains."""

    def __init__(self, message: str, properties: list[str]) -> None:
        super().__init__(message, code="coherence")
        self.properties = properties


class Blocked(Exception):
    """A send would exceed a network's capacity: the transition is not enabled now."""


class Action(NamedTuple):
    """One instance of a transition: see ``Semantics.action_instances``."""

    kind: ir.TransitionKind
    machine: str
    agent: int | None  # the cache's agent id (hierarchical: the node); None for the home
    line: int
    transition: int  # index into the machine's transitions
    params: tuple[int, ...]
    net: int = -1
    msg: Any = None  # the message as stored in the network


class Perform(NamedTuple):
    agent: int
    line: int
    kind: str  # "load" | "store"
    value: int


class Outcome(NamedTuple):
    action: Action
    state: State | None  # None when the action raised a model error
    performs: tuple[Perform, ...]
    error: ModelError | None = None
    # the atomic bus's deliveries within the step, (src, dst, type, fields) in order: they never
    # enter a network, so a trace's message chart learns of them only here
    bus: tuple[tuple[int, int, int, tuple[int, ...]], ...] = ()


class Violation(NamedTuple):
    kind: str  # "invariant" | "coherence" | "error" | "deadlock" | "no-transition"
    name: str
    message: str
    line: int = 0
    key: tuple[str, ...] = ()  # NOTE(failure-keys): the engine-neutral identity (results.py)


# ---------------------------------------------------------------- execution environment


def _quantifier(forall: bool, name: str, values: Callable[[_Env], Iterable[Any]],
                body: Compiled) -> Compiled:
    """forall/exists of ``body`` with the local ``name`` bound to each of ``values(env)``.

    NOTE(quantifier-errors): an instance that decides the quantifier (a false one for
    ``forall``, a true one for ``exists``) decides it even when another instance raises a
    model error; only when none decides is the result an error, the least of the instances'
    errors by ``error_rank``. So neither the verdict nor the failure key depends on the order
    of the values: symmetry reduction renames agents and re-sorts messages, and must not turn
    a violation into an error (Kleene's strong three-valued logic, with errors as unknown).
    ``&&``, ``||`` and ``if`` keep their left-to-right order: that order is in the text.
    Every engine (the C and CUDA code of ``engines.cgen``, the Z3 step of ``smt.execute``)
    makes the same choice.
    """

    def quant(env: _Env) -> int:
        saved = env.locals.get(name, None)
        error: ModelError | None = None
        try:
            for v in values(env):
                env.locals[name] = v
                try:
                    if bool(body(env)) != forall:
                        return int(not forall)
                except ModelError as err:
                    error = least_error(error, err)
            if error is not None:
                raise error
            return int(forall)
        finally:
            if saved is None:
                env.locals.pop(name, None)
            else:
                env.locals[name] = saved
    return quant


def _counter(name: str, values: list[int] | Callable[[_Env], Iterable[Any]],
             body: Compiled) -> Compiled:
    """``count(name: T :: body)``: how many of ``values`` make ``body`` true (``body`` is
    evaluated for each; when some raise model errors, the count raises the least of them,
    NOTE(quantifier-errors))."""

    def count(env: _Env) -> int:
        saved = env.locals.get(name, None)
        error: ModelError | None = None
        try:
            n = 0
            for v in (values(env) if callable(values) else values):
                env.locals[name] = v
                try:
                    if body(env):
                        n += 1
                except ModelError as err:
                    error = least_error(error, err)
            if error is not None:
                raise error
            return n
        finally:
            if saved is None:
                env.locals.pop(name, None)
            else:
                env.locals[name] = saved
    return count


class _Env:
    __slots__ = (
        "agent",
        "bus",
        "caches",
        "depth",
        "globals",
        "goto",
        "home",
        "line",
        "locals",
        "msg",
        "nets",
        "performs",
        "sem",
        "sends",
    )

    def __init__(self, sem: Semantics, line: int, lstate: tuple, nets: Any) -> None:
        # Read-only until thaw(): guards and invariants read the state's tuples directly.
        self.sem = sem
        self.line = line
        self.globals: Any = lstate[0]
        self.home: Any = lstate[1]
        self.caches: Any = lstate[2]
        self.nets = nets
        self.agent: int | None = None
        self.msg: tuple[int, tuple[int, ...], int] | None = None  # (src, fields, type)
        # ints, and (src, dst, fields, pos) for a message quantifier's variable
        self.locals: dict[str, Any] = {}
        self.performs: list[Perform] = []
        self.bus: list[tuple[int, int, int, tuple[int, ...]]] = []
        self.goto: str | None = None
        self.depth = 0

    def thaw(self) -> None:
        """Make the line and the networks writable, before a transition's body runs."""
        self.globals = list(self.globals)
        self.home = list(self.home)
        self.caches = [list(c) for c in self.caches]
        self.nets = list(self.nets)

    def frozen_line(self) -> tuple:
        return (tuple(self.globals), tuple(self.home), tuple(tuple(c) for c in self.caches))


Compiled = Callable[[_Env], Any]


def _msg_src(env: _Env) -> int:
    assert env.msg is not None, "msg.src outside a message transition"
    return env.msg[0]


def _array_type(t: ir.Type) -> ir.ArrayT:
    assert isinstance(t, ir.ArrayT), f"indexing a {t}"
    return t


def _check(v: int, what: str, span: Span) -> int:
    if v == UNDEF:
        raise ModelError(f"read of undefined value ({what})", span, "undefined")
    return v


class Semantics:
    """Compiles an IR model once into closures, then answers questions about states."""

    def __init__(self, model: ir.Model) -> None:
        self.model = model
        self.n = model.agents
        self.home_id = model.agents
        self.home = model.home
        self.cache = model.caches[0] if model.caches else None
        self.msg_index = {m.name: i for i, m in enumerate(model.messages)}
        self.net_index = {n.name: i for i, n in enumerate(model.networks)}
        # per message name: (type index, network index, the network's ordering)
        self._msg_net = {m.name: (i, self.net_index[m.network],
                                  model.networks[self.net_index[m.network]].ordering)
                         for i, m in enumerate(model.messages)}
        self.global_slot = {v.name: i for i, v in enumerate(model.globals)}
        self.field_pos = {(t, f.name): i for t, m in enumerate(model.messages)
                          for i, f in enumerate(m.fields)}
        self.var_slot: dict[tuple[str, str], int] = {}
        for m in model.machines:
            for i, v in enumerate(m.vars):
                self.var_slot[(m.name, v.name)] = i + 1
        # per machine: its transitions that fire without a message, with their parameter values
        self._spontaneous = {m.name: [(t, param_values(t)) for t in spontaneous(m)]
                             for m in model.machines}
        self.monitor = any(p.kind == "coherence" for p in model.properties)
        self.coherence_names = [p.name for p in model.properties if p.kind == "coherence"]
        self._full_mask = (1 << model.values) - 1
        self.hier = model.is_hierarchical
        # NOTE(hierarchy-nodes): per node its machine and index values by index type; per
        # machine its nodes with their index values; the processors' monitor entries
        self.instances = ir.instances(model) if self.hier else ()
        self.node_machine = [model.machine(inst.machine) for inst in self.instances]
        self.node_indices: list[dict[str, int]] = [
            {f.type.name: v for f, v in zip(model.machine(inst.machine).indices, inst.values,
                                             strict=True) if isinstance(f.type, ir.IndexT)}
            for inst in self.instances]
        self.machine_nodes: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for inst in self.instances:
            self.machine_nodes.setdefault(inst.machine, []).append((inst.node, inst.values))
        processor = ir.event_machine(model) if self.hier else None
        self.proc_of: dict[int, int] = {
            node: k for k, (node, _v) in enumerate(
                self.machine_nodes.get(processor.name, []) if processor else [])}
        self._guards: dict[tuple[str, int], Compiled | None] = {}
        self._bodies: dict[tuple[str, int], Callable[[_Env], None]] = {}
        for m in model.machines:
            for t in m.transitions:
                self._guards[(m.name, t.index)] = self.expr(t.guard) if t.guard else None
                self._bodies[(m.name, t.index)] = self.block(t.body)
        self._invariants = [(inv, self.expr(inv.expr)) for inv in model.invariants]
        self._assumptions = [self.expr(a.expr) for a in model.assumptions]
        self.handlers = handler_table(model)

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> Compiled:
        """A closure computing ``e`` in an environment (exhaustive over ``ir.Expr``)."""
        match e:
            case ir.Lit():
                v = UNDEF if e.value is None else e.value
                return lambda env: v
            case ir.Local():
                name = e.name
                return lambda env: env.locals[name]
            case ir.SelfId():
                return lambda env: env.agent
            case ir.NodeOf():
                return self._node_of(e)
            case ir.NodeIndex():
                return self._node_index(e)
            case ir.NodeIs():
                node = self.expr(e.node)
                machine, span = e.machine, e.span
                names = [m.name for m in self.node_machine]

                def node_is(env: _Env) -> int:
                    return int(names[_check(node(env), "node", span)] == machine)
                return node_is
            case ir.GVar():
                slot = self.global_slot[e.name]
                return lambda env: env.globals[slot]
            case ir.MVar():
                slot = self.var_slot[(e.machine, e.name)]
                if e.agent is None:
                    return lambda env: env.home[slot]
                if isinstance(e.agent, ir.SelfId):
                    return lambda env: env.caches[env.agent][slot]
                agent = self.agent_expr(e.agent, e.span, e.machine)
                return lambda env: env.caches[agent(env)][slot]
            case ir.MState():
                if e.agent is None:
                    return lambda env: env.home[0]
                if isinstance(e.agent, ir.SelfId):
                    return lambda env: env.caches[env.agent][0]
                agent = self.agent_expr(e.agent, e.span, e.machine)
                return lambda env: env.caches[agent(env)][0]
            case ir.MsgField():
                return self._msg_field(e)
            case ir.MsgSrc():
                return _msg_src
            case ir.Index():
                return self._index(e)
            case ir.Unary():
                arg = self.expr(e.arg)
                span = e.span
                if e.op == "!":
                    return lambda env: 1 - _check(arg(env), "operand of !", span)
                return lambda env: -_check(arg(env), "operand of -", span)
            case ir.Binary():
                return self._binary(e)
            case ir.SetLit():
                return self._set_lit(e)
            case ir.Call():
                return self._call(e)
            case ir.Quant():
                body = self.expr(e.body)
                dom = list(ir.domain(e.var_type))
                return _quantifier(e.kind == "forall", e.var, lambda env: dom, body)
            case ir.Count():
                return _counter(e.var, list(ir.domain(e.var_type)), self.expr(e.body))
            case ir.InFlight():
                return self._inflight(e)
            case ir.MsgQuant():
                return self._msg_quant(e)
            case ir.MsgVarAttr():
                return self._msg_var_attr(e)
            case ir.Cond():
                c, a, b = self.expr(e.cond), self.expr(e.then), self.expr(e.orelse)
                span = e.span
                return lambda env: a(env) if _check(c(env), "condition of if", span) else b(env)
            case _:
                assert_never(e)

    def _index(self, e: ir.Index) -> Compiled:
        base, idx = self.expr(e.base), self.expr(e.index)
        off = ir.index_offset(_array_type(e.base.type).index)
        span = e.span

        def index(env: _Env) -> int:
            arr = base(env)
            if arr == UNDEF:
                raise ModelError("read of undefined array", span, "undefined-array")
            return arr[_check(idx(env), "array index", span) - off]
        return index

    def _set_lit(self, e: ir.SetLit) -> Compiled:
        elems = [self.expr(x) for x in e.elems]
        span = e.span
        if isinstance(e.type, ir.SetT):
            def agent_set(env: _Env) -> int:
                mask = 0
                for f in elems:
                    mask |= 1 << _check(f(env), "set element", span)
                return mask
            return agent_set
        return lambda env: frozenset(f(env) for f in elems)

    def _call(self, e: ir.Call) -> Compiled:
        if e.func == "all_agents":
            everyone = (1 << self.n) - 1
            return lambda env: everyone
        arg = self.expr(e.args[0])
        span = e.span
        if e.func == "size":
            return lambda env: _check(arg(env), "set", span).bit_count()
        return lambda env: int(arg(env) == UNDEF)

    def _msg_var_attr(self, e: ir.MsgVarAttr) -> Compiled:
        name, attr = e.var, e.attr
        if attr == "src":
            return lambda env: env.locals[name][0]
        if attr == "dst":
            return lambda env: env.locals[name][1]
        if attr == ir.POSITION:  # NOTE(message-position)
            return lambda env: env.locals[name][3]
        pos = self.field_pos[(self.msg_index[e.message], attr)]
        return lambda env: env.locals[name][2][pos]

    def _node_of(self, e: ir.NodeOf) -> Compiled:
        """The flat node of ``machine[indices]`` (NOTE(hierarchy-nodes): mixed radix)."""
        nodes = self.machine_nodes[e.machine]
        base = nodes[0][0]
        sizes = [f.type.size() for f in self.model.machine(e.machine).indices]
        values = [self.expr(x) for x in e.indices]
        span = e.span
        if not values:
            return lambda env: base

        def node_of(env: _Env) -> int:
            k = 0
            for f, size in zip(values, sizes, strict=True):
                k = k * size + _check(f(env), "machine index", span)
            return base + k
        return node_of

    def _node_index(self, e: ir.NodeIndex) -> Compiled:
        node = self.expr(e.node)
        name, span = e.index, e.span
        table = self.node_indices

        def node_index(env: _Env) -> int:
            n = _check(node(env), "node", span)
            v = table[n].get(name)
            if v is None:
                raise ModelError(f"{self.node_name(n)} has no {name} index", span, "no-index")
            return v
        return node_index

    def agent_expr(self, e: ir.Expr, span: Span, machine: str | None = None) -> Compiled:
        f = self.expr(e)
        n = self.n
        if self.hier:
            names = [m.name for m in self.node_machine]
            procs = self.proc_of

            def node(env: _Env) -> int:
                a = f(env)
                if a == UNDEF:
                    raise ModelError("node is undefined", span, "undefined-agent")
                if machine is None and a not in procs:
                    raise ModelError(f"{self.node_name(a)} is not a processor", span,
                                     "not-agent")
                if machine is not None and names[a] != machine:
                    raise ModelError(f"{self.node_name(a)} is not an instance of {machine}",
                                     span, "not-agent")
                return a
            return node

        def agent(env: _Env) -> int:
            a = f(env)
            if a == UNDEF:
                raise ModelError("agent index is undefined", span, "undefined-agent")
            if a >= n:
                raise ModelError("the home node is not an agent", span, "not-agent")
            return a
        return agent

    def _msg_field(self, e: ir.MsgField) -> Compiled:
        name, pos = e.name, self.field_pos

        def field(env: _Env) -> int:
            assert env.msg is not None
            return env.msg[1][pos[(env.msg[2], name)]]
        return field

    def _binary(self, e: ir.Binary) -> Compiled:
        a, b = self.expr(e.left), self.expr(e.right)
        op, span = e.op, e.span
        if op == "&&":
            return lambda env: int(bool(_check(a(env), "operand of &&", span)) and bool(
                _check(b(env), "operand of &&", span)))
        if op == "||":
            return lambda env: int(bool(_check(a(env), "operand of ||", span)) or bool(
                _check(b(env), "operand of ||", span)))
        if op == "->":
            return lambda env: int((not _check(a(env), "operand of ->", span)) or bool(
                _check(b(env), "operand of ->", span)))
        if op == "in":
            if isinstance(e.right, ir.SetLit) and not isinstance(e.right.type, ir.SetT):
                return lambda env: int(_check(a(env), "operand of in", span) in b(env))
            return lambda env: (_check(b(env), "set", span) >> _check(
                a(env), "operand of in", span)) & 1
        if op == "with":
            return lambda env: _check(a(env), "set", span) | (1 << _check(
                b(env), "set element", span))
        if op == "without":
            return lambda env: _check(a(env), "set", span) & ~(1 << _check(
                b(env), "set element", span))
        import operator
        fn = {"+": operator.add, "-": operator.sub, "==": operator.eq, "!=": operator.ne,
              "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]
        what = f"operand of {op}"
        if op in ("+", "-"):
            return lambda env: fn(_check(a(env), what, span), _check(b(env), what, span))
        return lambda env: int(fn(_check(a(env), what, span), _check(b(env), what, span)))

    def in_flight(self, nets: tuple, line: int, message: str) -> list[tuple[int, int, tuple]]:
        """(src, dst, fields) of every message of type ``message`` in flight on ``line``.

        NOTE(in-flight): this is what ``InFlight`` (``inflight(M)``) and message quantifiers
        (``forall m: M``) range over: every message stored in an unordered or FIFO network,
        queued behind others or not; never one on the atomic bus, which is delivered within
        the step that sends it. The Z3 encoders and exporters re-encode exactly this.
        """
        return [m[:3] for m in self.placed(nets, line, message)]

    def placed(self, nets: tuple, line: int, message: str) -> list[tuple[int, int, tuple, int]]:
        """``in_flight`` with each message's place: (src, dst, fields, pos), ``pos`` its index
        in its fifo queue, 0 the head (NOTE(message-position)); -1 on an unordered network,
        where the front end lets no expression read it."""
        t, net_i, ordering = self._msg_net[message]
        contents = nets[net_i]
        match ordering:
            case ir.Ordering.UNORDERED:
                return [(m[1], m[2], m[4], -1) for m in contents if m[0] == line and m[3] == t]
            case ir.Ordering.FIFO:
                return [(k[0], k[1], q[1], pos) for k, queue in contents if k[2] == line
                        for pos, q in enumerate(queue) if q[0] == t]
            case ir.Ordering.BUS:
                return []
            case _:
                assert_never(ordering)

    def _messages(self, message: str) -> Callable[[_Env], list[tuple[int, int, tuple, int]]]:
        """``placed`` on the environment's line and networks: what message quantifiers bind."""
        return lambda env: self.placed(env.nets, env.line, message)

    def _inflight(self, e: ir.InFlight) -> Compiled:
        messages = self._messages(e.message)
        dst = self.expr(e.dst) if e.dst is not None else None

        def inflight(env: _Env) -> int:
            d = dst(env) if dst is not None else None
            return int(any(d is None or m[1] == d for m in messages(env)))
        return inflight

    def _msg_quant(self, e: ir.MsgQuant) -> Compiled:
        """Binds the variable to (src, dst, fields, pos) of each message of the type in flight
        (NOTE(message-count): ``count`` counts them, duplicates included)."""
        if e.kind == "count":
            return _counter(e.var, self._messages(e.message), self.expr(e.body))
        return _quantifier(e.kind == "forall", e.var, self._messages(e.message),
                           self.expr(e.body))

    # ------------------------------------------------------------ statements

    def block(self, stmts: Iterable[ir.Stmt]) -> Callable[[_Env], None]:
        compiled = [self.stmt(s) for s in stmts]

        def run(env: _Env) -> None:
            for c in compiled:
                c(env)
        return run

    def stmt(self, s: ir.Stmt) -> Callable[[_Env], None]:
        """A closure running ``s`` (exhaustive over ``ir.Stmt``)."""
        match s:
            case ir.Assign():
                return self._assign(s.target, self.expr(s.value), s.span)
            case ir.If():
                return self._if(s)
            case ir.For():
                return self._for(s)
            case ir.Let():
                value = self.expr(s.value)
                name = s.var

                def let(env: _Env) -> None:
                    env.locals[name] = value(env)
                return let
            case ir.Send():
                return self._send(s)
            case ir.Broadcast():
                return self._broadcast(s)
            case ir.Multicast():
                return self._multicast(s)
            case ir.Goto():
                target = s.state

                def goto(env: _Env) -> None:
                    env.goto = target
                return goto
            case ir.Perform():
                return self._perform(s)
            case ir.Assert():
                return self._assert(s)
            case _:
                assert_never(s)

    def _if(self, s: ir.If) -> Callable[[_Env], None]:
        cond, then, orelse = self.expr(s.cond), self.block(s.then), self.block(s.orelse)
        span = s.span

        def if_(env: _Env) -> None:
            if _check(cond(env), "if condition", span):
                then(env)
            else:
                orelse(env)
        return if_

    def _for(self, s: ir.For) -> Callable[[_Env], None]:
        body = self.block(s.body)
        dom = list(ir.domain(s.var_type))
        name = s.var

        def for_(env: _Env) -> None:
            for v in dom:
                env.locals[name] = v
                body(env)
            env.locals.pop(name, None)
        return for_

    def _send(self, s: ir.Send) -> Callable[[_Env], None]:
        args = [self.expr(a) for a in s.args]
        dst = self.expr(s.dst)
        t = self.msg_index[s.message]
        span = s.span

        def send(env: _Env) -> None:
            d = dst(env)
            if d == UNDEF:
                raise ModelError("send to an undefined destination", span, "undefined-dst")
            self.deliver(env, t, tuple(f(env) for f in args), d, span)
        return send

    def _broadcast(self, s: ir.Broadcast) -> Callable[[_Env], None]:
        args = [self.expr(a) for a in s.args]
        exclude = self.expr(s.exclude) if s.exclude is not None else None
        t = self.msg_index[s.message]
        span = s.span

        def broadcast(env: _Env) -> None:
            values = tuple(f(env) for f in args)
            skip = exclude(env) if exclude is not None else None
            for a in range(self.n):
                if a != skip:
                    self.deliver(env, t, values, a, span)
        return broadcast

    def _multicast(self, s: ir.Multicast) -> Callable[[_Env], None]:
        """To every instance of the machine whose leading indices are the prefix's values, in
        node order (the order matters only on the atomic bus)."""
        args = [self.expr(a) for a in s.args]
        prefix = [self.expr(x) for x in s.prefix]
        exclude = self.expr(s.exclude) if s.exclude is not None else None
        t = self.msg_index[s.message]
        span = s.span
        nodes = self.machine_nodes[s.machine]
        k = len(prefix)

        def multicast(env: _Env) -> None:
            values = tuple(f(env) for f in args)
            want = tuple(_check(f(env), "machine index", span) for f in prefix)
            skip = exclude(env) if exclude is not None else None
            for node, idx in nodes:
                if node != skip and idx[:k] == want:
                    self.deliver(env, t, values, node, span)
        return multicast

    def _perform(self, s: ir.Perform) -> Callable[[_Env], None]:
        value = self.expr(s.value)
        agent = self.agent_expr(s.agent, s.span)
        kind, span = s.kind, s.span

        def perform(env: _Env) -> None:
            v = _check(value(env), f"value of perform {kind}", span)
            env.performs.append(Perform(agent(env), env.line, kind, v))
        return perform

    def _assert(self, s: ir.Assert) -> Callable[[_Env], None]:
        cond = self.expr(s.cond)
        text, span = s.text, s.span

        def assert_(env: _Env) -> None:
            if not _check(cond(env), "assert condition", span):
                raise ModelError(f"assertion failed: {text}", span, "assert")
        return assert_

    def _assign(self, target: ir.Expr, value: Compiled, span: Span) -> Callable[[_Env], None]:
        rng = range_of(target.type)

        def checked(env: _Env) -> int:
            v = value(env)
            if rng is not None and v != UNDEF and not rng[0] <= v <= rng[1]:
                raise ModelError(f"value {v} is out of range {target.type}", span, "range")
            return v

        if isinstance(target, ir.GVar):
            slot = self.global_slot[target.name]

            def set_global(env: _Env) -> None:
                env.globals[slot] = checked(env)
            return set_global
        if isinstance(target, ir.MVar):
            slot = self.var_slot[(target.machine, target.name)]
            if target.agent is None:
                def set_home(env: _Env) -> None:
                    env.home[slot] = checked(env)
                return set_home
            if isinstance(target.agent, ir.SelfId):
                def set_own(env: _Env) -> None:
                    env.caches[env.agent][slot] = checked(env)
                return set_own
            agent = self.agent_expr(target.agent, span, target.machine)

            def set_cache(env: _Env) -> None:
                env.caches[agent(env)][slot] = checked(env)
            return set_cache
        assert isinstance(target, ir.Index)
        # arrays are tuples: rebuild the element path from the innermost index outwards
        base_get = self.expr(target.base)
        idx = self.expr(target.index)
        off = ir.index_offset(_array_type(target.base.type).index)

        def new_value(env: _Env) -> tuple:
            arr = base_get(env)
            if arr == UNDEF:
                raise ModelError("assignment into an undefined array", span,
                                     "undefined-array")
            i = _check(idx(env), "array index", span) - off
            lst = list(arr)
            lst[i] = checked(env)
            return tuple(lst)
        return self._assign(target.base, new_value, span)

    # ------------------------------------------------------------ networks

    def deliver(self, env: _Env, t: int, fields: tuple[int, ...], dst: int, span: Span) -> None:
        message = self.model.messages[t]
        for f, v in zip(message.fields, fields, strict=True):
            rng = range_of(f.type)
            if rng is not None and v != UNDEF and not rng[0] <= v <= rng[1]:
                raise ModelError(f"value {v} of {message.name}.{f.name} is out of range "
                                 f"{f.type}", span, "range")
        net_i = self.net_index[message.network]
        net = self.model.networks[net_i]
        src = env.agent if env.agent is not None else self.home_id
        if net.ordering is ir.Ordering.BUS:
            self._deliver_now(env, t, fields, src, dst, span)
            return
        contents = env.nets[net_i]
        if net.ordering is ir.Ordering.UNORDERED:
            if len(contents) >= net.capacity:
                raise Blocked()
            env.nets[net_i] = tuple(sorted((*contents, (env.line, src, dst, t, fields))))
            return
        key = (src, dst, env.line)
        queues = dict(contents)
        queue = queues.get(key, ())
        if len(queue) >= net.capacity:
            raise Blocked()
        queues[key] = (*queue, (t, fields))
        env.nets[net_i] = tuple(sorted(queues.items()))

    def _deliver_now(self, env: _Env, t: int, fields: tuple[int, ...], src: int, dst: int,
                     span: Span) -> None:
        """Atomic bus: the receiver's transition runs inside the sender's step."""
        env.bus.append((src, dst, t, fields))
        if env.depth > BUS_NESTING_LIMIT:
            raise ModelError("messages on the atomic bus keep triggering each other "
                             f"(more than {BUS_NESTING_LIMIT} nested deliveries)", span,
                             "bus-nesting")
        machine, agent = self.receiver(dst)
        name = self.model.messages[t].name
        if machine is None:
            raise ModelError(f"{name} sent to a machine the spec does not have", span,
                             "no-machine")
        state = env.home[0] if agent is None else env.caches[agent][0]
        saved = (env.agent, env.msg, env.locals, env.goto)
        env.agent, env.msg, env.goto = agent, (src, fields, t), None
        env.locals = {}
        try:
            candidates = self.handlers.get((machine.name, name, state), [])
            enabled = [tr for tr in candidates if not tr.stall and self._guard_ok(env, tr)]
            if not candidates:
                raise ModelError(f"no transition for {name} in state "
                                 f"{machine.state_type.members[state]} of "
                                 f"{self.label(machine, agent)}", span, "bus-no-transition")
            if any(tr.stall for tr in candidates):
                raise ModelError(f"{name} cannot stall on the atomic bus", span, "bus-stall")
            if len(enabled) != 1:
                raise ModelError(f"{len(enabled)} transitions of {machine.name} can take {name} "
                                 "on the atomic bus; exactly one must", span,
                                 "bus-ambiguous")
            env.depth += 1
            self._bodies[(machine.name, enabled[0].index)](env)
            env.depth -= 1
            self._apply_goto(env, machine, agent)
        finally:
            env.agent, env.msg, env.locals, env.goto = saved

    def _guard_ok(self, env: _Env, tr: ir.Transition) -> bool:
        g = self._guards[(tr.machine, tr.index)]
        return g is None or bool(_check(g(env), "guard", tr.span))

    def _apply_goto(self, env: _Env, machine: ir.Machine, agent: int | None) -> None:
        if env.goto is not None:
            idx = machine.state_index(env.goto)
            if agent is None:
                env.home[0] = idx
            else:
                env.caches[agent][0] = idx
            env.goto = None

    # ------------------------------------------------------------ states

    def init_value(self, v: ir.Var) -> Any:
        """The initial value of a variable (every array element set to its initializer)."""
        init = self.expr(v.init)
        dummy = _Env(self, 0, ((), (), ()), [])
        value = init(dummy)
        return _fill(v.type, value)

    def initial_states(self) -> list[State]:
        m = self.model
        globals_ = tuple(self.init_value(v) for v in m.globals)
        home: tuple = ()
        if self.home is not None:
            home = (self.home.state_index(self.home.init_state),
                    *(self.init_value(v) for v in self.home.vars))
        caches: tuple = ()
        if self.hier:
            first = {mach.name: (mach.state_index(mach.init_state),
                                 *(self.init_value(v) for v in mach.vars))
                     for mach in m.machines}
            caches = tuple(first[mach.name] for mach in self.node_machine)
        elif self.cache is not None:
            one = (self.cache.state_index(self.cache.init_state),
                   *(self.init_value(v) for v in self.cache.vars))
            caches = tuple(one for _ in range(self.n))
        lines = tuple((globals_, home, caches) for _ in range(m.lines))
        nets = tuple(() for _ in m.networks)
        monitor: tuple = ()
        if self.monitor:
            empty = tuple(-1 for _ in range(m.values))
            monitor = tuple(tuple((0, empty) for _ in range(self.n)) for _ in range(m.lines))
        state = (lines, nets, monitor)
        broken = self.violated_assumptions(state)
        if broken:
            # certainly a mistake in the spec: there would be nothing at all to explore
            raise SpecError(f"the initial state violates the assumption '{broken[0].name}', so "
                            "there is nothing to explore", broken[0].span)
        return [state]

    def violated_assumptions(self, state: State) -> list[ir.Assumption]:
        """The assumptions false (or not evaluable) on some line of ``state``."""
        lines, nets, _ = state
        out = []
        for a, f in zip(self.model.assumptions, self._assumptions, strict=True):
            for line in range(self.model.lines):
                try:
                    ok = f(_Env(self, line, lines[line], nets))
                except ModelError:
                    ok = False
                if not ok:
                    out.append(a)
                    break
        return out

    def assumed(self, state: State) -> bool:
        """NOTE(assume): whether ``state`` satisfies every ``assume`` on every line. A state
        that does not is discarded where it arises: ``initial_states`` leaves it out and
        ``execute`` returns None for an action that reaches it, so it is never stored,
        counted, checked or expanded; but that action still counts as a move for
        ``is_deadlock``. An assumption that reads an undefined value counts as false. An
        initial state that violates one is a SpecError (``initial_states``)."""
        if not self._assumptions:
            return True
        lines, nets, _ = state
        for line in range(self.model.lines):
            env = _Env(self, line, lines[line], nets)
            for f in self._assumptions:
                try:
                    if not f(env):
                        return False
                except ModelError:
                    return False
        return True

    # ------------------------------------------------------------ actions

    def action_instances(self, state: State,
                         transition: ir.Transition | None = None) -> list[Action]:
        """Every action that may be tried in ``state`` (of ``transition`` only, when given).

        NOTE(actions): the one enumeration of actions, in the order ``enabled`` tries them:
        per line, each agent's cache events and rules, then the home's rules (``spontaneous``),
        each with every parameter value (``param_values``), when the machine is in one of the
        transition's source states; then, per network, each ``deliverable`` message with every
        non-stalling handler that its receiver has in its current state. Guards are not
        evaluated and sends not tried: ``execute`` does that, and returns None when the
        action is not enabled. The Z3 encoder and the exporters enumerate the same
        (machine, transition, parameter) instances, symbolically (tests check it).
        """
        lines = state[0]
        out: list[Action] = []
        only = None if transition is None else (transition.machine, transition.index)
        if self.hier and (transition is None
                          or transition.kind is not ir.TransitionKind.MESSAGE):
            for line in range(self.model.lines):
                nodes = lines[line][2]
                for node, mach in enumerate(self.node_machine):
                    sname = mach.state_type.members[nodes[node][0]]
                    for tr, values in self._spontaneous[mach.name]:
                        if sname not in tr.states or (
                                only is not None and only != (tr.machine, tr.index)):
                            continue
                        out += [Action(tr.kind, mach.name, node, line, tr.index, ps)
                                for ps in values]
        elif transition is None or transition.kind is not ir.TransitionKind.MESSAGE:
            cache, home = self.cache, self.home
            for line in range(self.model.lines):
                lstate = lines[line]
                if cache is not None:
                    for agent in range(self.n):
                        cname = cache.state_type.members[lstate[2][agent][0]]
                        for tr, values in self._spontaneous[cache.name]:
                            if cname not in tr.states or (
                                    only is not None and only != (tr.machine, tr.index)):
                                continue
                            out += [Action(tr.kind, cache.name, agent, line, tr.index, ps)
                                    for ps in values]
                if home is not None:
                    hname = home.state_type.members[lstate[1][0]]
                    for tr, values in self._spontaneous[home.name]:
                        if hname not in tr.states or (
                                only is not None and only != (tr.machine, tr.index)):
                            continue
                        out += [Action(tr.kind, home.name, None, line, tr.index, ps)
                                for ps in values]
        if transition is None or transition.kind is ir.TransitionKind.MESSAGE:
            for net_i, msg in self.deliverable(state):
                for tr in self.handlers_of(state, msg):
                    if tr.stall or (only is not None and only != (tr.machine, tr.index)):
                        continue
                    out.append(Action(ir.TransitionKind.MESSAGE, tr.machine,
                                      self.receiver(msg[2])[1], msg[0], tr.index, (), net_i,
                                      msg))
        return out

    def enabled(self, state: State) -> tuple[list[Outcome], list[Violation]]:
        """Every enabled action with its outcome (``execute`` of each ``action_instances``),
        and the state's 'no transition' errors (``no_transitions``)."""
        outcomes: list[Outcome] = []
        for act in self.action_instances(state):
            out = self.execute(state, act)
            if out is not None:
                outcomes.append(out)
        return outcomes, self.no_transitions(state)

    def deliverable(self, state: State) -> list[tuple[int, Message]]:
        """The messages that may arrive next, as (network index, message as stored).

        NOTE(orderings): what each network ordering means. UNORDERED: any message in the
        multiset (each distinct one once); FIFO: the head of each (src, dst, line) queue;
        BUS: none, since a bus message is handled within the step that sends it (``deliver``).
        A message is ``(line, src, dst, type, fields)`` in every ordering.
        """
        nets = state[1]
        out: list[tuple[int, Message]] = []
        for net_i, net in enumerate(self.model.networks):
            match net.ordering:
                case ir.Ordering.UNORDERED:
                    out += [(net_i, m) for m in sorted(set(nets[net_i]))]
                case ir.Ordering.FIFO:
                    out += [(net_i, (k[2], k[0], k[1], q[0][0], q[0][1]))
                            for k, q in nets[net_i]]
                case ir.Ordering.BUS:
                    pass
                case _:
                    assert_never(net.ordering)
        return out

    def messages_in_flight(self, state: State) -> list[tuple[int, Message]]:
        """Every message in flight, as (network index, message), per network in storage
        order (a FIFO queue front to back); a message sent twice is listed twice."""
        nets = state[1]
        out: list[tuple[int, Message]] = []
        for net_i, net in enumerate(self.model.networks):
            match net.ordering:
                case ir.Ordering.UNORDERED:
                    out += [(net_i, m) for m in nets[net_i]]
                case ir.Ordering.FIFO:
                    out += [(net_i, (line, src, dst, t, f))
                            for (src, dst, line), queue in nets[net_i] for t, f in queue]
                case ir.Ordering.BUS:
                    pass
                case _:
                    assert_never(net.ordering)
        return out

    def receiver(self, dst: int) -> tuple[ir.Machine | None, int | None]:
        """The machine a message to node ``dst`` arrives at, and its agent (None: home)."""
        if self.hier:
            return self.node_machine[dst], dst
        if dst == self.home_id:
            return self.home, None
        return self.cache, dst

    def handlers_of(self, state: State, msg: Message) -> list[ir.Transition]:
        """The transitions (stalling ones included) that the receiver of ``msg`` has for it
        in its current state; [] when it has none, or the spec lacks the receiver."""
        line, _src, dst, t, _fields = msg
        machine, agent = self.receiver(dst)
        if machine is None:
            return []
        lstate = state[0][line]
        sidx = lstate[1][0] if agent is None else lstate[2][agent][0]
        return self.handlers.get((machine.name, self.model.messages[t].name, sidx), [])

    def no_transitions(self, state: State) -> list[Violation]:
        """NOTE(no-transition): a deliverable message whose receiver has no transition for it
        (not even a stalling one) in its current state is an error of the spec, reported
        once per such message; so is a message to a machine the spec lacks."""
        out: list[Violation] = []
        for _net_i, msg in self.deliverable(state):
            line, src, dst, t, _fields = msg
            name = self.model.messages[t].name
            machine, agent = self.receiver(dst)
            if machine is None:
                out.append(Violation("no-transition", name,
                                     f"{name} sent to a machine the spec lacks", line,
                                     ("no-transition", "", name, "")))
                continue
            if self.handlers_of(state, msg):
                continue
            lstate = state[0][line]
            sidx = lstate[1][0] if agent is None else lstate[2][agent][0]
            out.append(Violation(
                "no-transition", name,
                f"no transition for {name} (from {self.node_name(src)}) in state "
                f"{machine.state_type.members[sidx]} of {self.label(machine, agent)}",
                line, ("no-transition", machine.name, name, machine.state_type.members[sidx])))
        return out

    def is_deadlock(self, state: State, outcomes: Iterable[Outcome],
                    problems: Sequence[Violation]) -> bool:
        """NOTE(deadlock): ``state`` deadlocks when no action yields a successor, no action
        errs (``outcomes`` of ``enabled``, possibly a lazy iterable: it is read until the
        first one), no message lacks a transition (``problems``), and yet the state is not
        ``quiescent``: a request or a message is pending. Every engine reports this."""
        if problems:
            return False
        if any(o.state is not None or o.error is not None for o in outcomes):
            return False
        if self._assumptions and any(
                (o := self.execute(state, a, prune=False)) is not None and o.state is not None
                for a in self.action_instances(state)):
            return False  # every move leads to a state the assumptions discard
        return not self.quiescent(state)

    def execute(self, state: State, act: Action, prune: bool = True) -> Outcome | None:
        """Run one action. None when it is not enabled (guard false, or a send would block),
        or when (``prune``) its successor violates an assumption (NOTE(assume))."""
        lines, nets, monitor = state
        machine = self.model.machine(act.machine)
        tr = machine.transitions[act.transition]
        if not self._can_take(lines[act.line], nets, machine, tr, act):
            return None
        env = _Env(self, act.line, lines[act.line], nets)
        env.agent = act.agent
        for p, v in zip(tr.params, act.params, strict=True):
            env.locals[p.name] = v
        if act.kind == ir.TransitionKind.MESSAGE:
            _line, src, _dst, t, fields = act.msg
            env.msg = (src, fields, t)
        try:
            if not self._guard_ok(env, tr):
                return None
            env.thaw()
            if act.kind == ir.TransitionKind.MESSAGE:
                self._remove_message(env, act.net, act.msg)
            self._bodies[(machine.name, tr.index)](env)
            self._apply_goto(env, machine, act.agent)
        except Blocked:
            return None
        except ModelError as err:
            return Outcome(act, None, tuple(env.performs), err, tuple(env.bus))
        new_lines = (*lines[:act.line], env.frozen_line(), *lines[act.line + 1:])
        new_monitor = monitor
        if self.monitor and env.performs:
            try:
                new_monitor = self._observe(monitor, env.performs)
            except ModelError as err:
                return Outcome(act, None, tuple(env.performs), err, tuple(env.bus))
        new_state = (new_lines, tuple(env.nets), new_monitor)
        if prune and not self.assumed(new_state):
            return None
        return Outcome(act, new_state, tuple(env.performs), None, tuple(env.bus))

    def _can_take(self, line: tuple, nets: tuple, machine: ir.Machine, tr: ir.Transition,
                  act: Action) -> bool:
        """Whether the machine is in one of the transition's states and the message is at
        the head of its queue (or in the unordered network): an action replayed from outside
        (a Z3 model, a saved trace) is checked like one found by ``enabled``."""
        if act.agent is None:
            current = line[1][0] if line[1] else None
        elif self.hier and not (0 <= act.agent < len(line[2])
                                and self.node_machine[act.agent] is machine):
            return False
        elif 0 <= act.agent < len(line[2]):
            current = line[2][act.agent][0]
        else:
            return False
        if current is None or machine.state_type.members[current] not in tr.states:
            return False
        if act.kind != ir.TransitionKind.MESSAGE:
            return True
        if act.msg is None or not 0 <= act.net < len(nets):
            return False
        contents = nets[act.net]
        if self.model.networks[act.net].ordering is ir.Ordering.UNORDERED:
            return act.msg in contents
        line_i, src, dst, t, fields = act.msg
        queue = dict(contents).get((src, dst, line_i), ())
        return bool(queue) and queue[0] == (t, fields)

    def _remove_message(self, env: _Env, net_i: int, msg: tuple) -> None:
        net = self.model.networks[net_i]
        contents = env.nets[net_i]
        if net.ordering is ir.Ordering.UNORDERED:
            i = contents.index(msg)
            env.nets[net_i] = contents[:i] + contents[i + 1:]
        else:
            line, src, dst = msg[0], msg[1], msg[2]
            key = (src, dst, line)
            queues = dict(contents)
            rest = queues[key][1:]
            if rest:
                queues[key] = rest
            else:
                del queues[key]
            env.nets[net_i] = tuple(sorted(queues.items()))

    # ------------------------------------------------------------ coherence monitor

    def _observe(self, monitor: tuple, performs: list[Perform]) -> tuple:
        """Per-location coherence of performed operations, as a finite monitor.

        Coherence order is the order in which stores are performed; every line starts at 0.
        Per agent the monitor keeps the value of the write it last observed (``view``) and,
        for each value written since, the set of values written after that value's first
        write (``first_after``, a bitmask, -1 when not written). A load may return its view's
        value or any value written since; it then moves its view to the earliest such write,
        keeping supersets where writes are ambiguous. So the monitor never reports a false
        violation, and is exact when writes have distinct values.
        """
        mon = [list(line) for line in monitor]
        for p in performs:
            agents = mon[p.line]
            bit = 1 << p.value
            me = self.proc_of[p.agent] if self.hier else p.agent  # its monitor entry
            if p.kind == "store":
                for b in range(self.n):
                    if b == me:
                        continue
                    view, fa = agents[b]
                    fa = tuple(m | bit if m >= 0 else m for m in fa)
                    if fa[p.value] < 0:
                        fa = (*fa[:p.value], 0, *fa[p.value + 1:])
                    agents[b] = self._normal(view, fa)
                agents[me] = (p.value, tuple(-1 for _ in range(self.model.values)))
                continue
            view, fa = agents[me]
            if p.value == view:
                continue
            if fa[p.value] < 0:
                written = [str(v) for v in range(self.model.values) if fa[v] >= 0]
                since = f"only {', '.join(written)} written since" if written else (
                    "nothing written since")
                raise CoherenceViolation(
                    f"per-location coherence violated ({', '.join(self.coherence_names)}): "
                    f"{self.node_name(p.agent)} read {p.value} on line {p.line} after observing "
                    f"{view} ({since})", self.coherence_names)
            after = fa[p.value]
            new_fa = tuple(fa[v] if (after >> v) & 1 else -1 for v in range(self.model.values))
            agents[me] = self._normal(p.value, new_fa)
        return tuple(tuple(line) for line in mon)

    def _normal(self, view: int, fa: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        """Once every value has been written after every value's first write, any load is
        admissible forever (until the agent's own next store): the view no longer matters."""
        if all(m == self._full_mask for m in fa):
            return (0, fa)
        return (view, fa)

    # ------------------------------------------------------------ properties

    def predicate(self, e: ir.Expr,
                  names: Sequence[str] = ()) -> Callable[[State, int, Sequence[int]], bool]:
        """``e`` as a test of one line of a state, with ``names`` bound to the values given
        (a liveness property's P or Q); a model error in ``e`` is raised."""
        f = self.expr(e)

        def test(state: State, line: int, values: Sequence[int]) -> bool:
            env = _Env(self, line, state[0][line], state[1])
            env.locals.update(zip(names, values, strict=True))
            return bool(f(env))
        return test

    def invariant_violations(self, state: State,
                             skip: Set[str] = frozenset()) -> list[Violation]:
        """The invariants false (or raising a model error) in ``state``; those named in
        ``skip`` are not evaluated (an engine that has all it needs of them)."""
        lines, nets, _ = state
        out = []
        for line in range(self.model.lines):
            env = _Env(self, line, lines[line], nets)
            for inv, f in self._invariants:
                if inv.name in skip:
                    continue
                try:
                    ok = f(env)
                except ModelError as err:
                    out.append(Violation("error", inv.name,
                                         f"invariant {inv.name}: {err.message}", line,
                                         ("error", inv.name)))
                    continue
                if not ok:
                    out.append(Violation("invariant", inv.name, f"invariant {inv.name} is "
                                         f"violated on cache line {line}", line,
                                         ("invariant", inv.name)))
        return out

    def quiescent(self, state: State) -> bool:
        """Nothing is pending: no message in flight and every machine in a stable state."""
        lines, nets, _ = state
        if any(nets):
            return False
        if self.hier:
            return all(mach.states[c[0]].stable for lstate in lines
                       for mach, c in zip(self.node_machine, lstate[2], strict=True))
        for lstate in lines:
            if self.home is not None and not self.home.states[lstate[1][0]].stable:
                return False
            if self.cache is not None and any(
                    not self.cache.states[c[0]].stable for c in lstate[2]):
                return False
        return True

    # ------------------------------------------------------------ naming

    def label(self, machine: ir.Machine, agent: int | None) -> str:
        """A machine instance's name: ``Cache[1]``, ``Home``, ``L1[0, 1]``."""
        if self.hier and agent is not None:
            return self.node_name(agent)
        return machine.name if agent is None else f"{machine.name}[{agent}]"

    def node_name(self, node: int) -> str:
        if self.hier:
            if not 0 <= node < len(self.instances):
                return f"node {node}"
            inst = self.instances[node]
            if not inst.values:
                return inst.machine
            return f"{inst.machine}[{', '.join(str(v) for v in inst.values)}]"
        if node == self.home_id:
            return self.home.name if self.home is not None else "home"
        return f"{self.cache.name if self.cache else 'agent'}[{node}]"


def _fill(t: ir.Type, value: Any) -> Any:
    """An array's initial value: every element (of every nesting level) set to ``value``."""
    if isinstance(t, ir.ArrayT):
        return tuple(_fill(t.elem, value) for _ in ir.domain(t.index))
    return value




def handler_table(model: ir.Model) -> dict[tuple[str, str, int], list[ir.Transition]]:
    """The message handlers (stalling ones included) by (machine, message name, state index):
    a deliverable message with no entry here is a 'no transition' error (NOTE(no-transition))."""
    out: dict[tuple[str, str, int], list[ir.Transition]] = {}
    for m in model.machines:
        for t in m.transitions:
            if t.kind is ir.TransitionKind.MESSAGE:
                for s in t.states:
                    out.setdefault((m.name, t.name, m.state_index(s)), []).append(t)
    return out


def spontaneous(machine: ir.Machine) -> list[ir.Transition]:
    """The transitions of ``machine`` that fire without a message arriving: processor events
    (which the front end allows only on caches) and rules, in declaration order."""
    return [t for t in machine.transitions if t.kind is not ir.TransitionKind.MESSAGE]


def param_values(tr: ir.Transition) -> list[tuple[int, ...]]:
    """Every tuple of parameter values ``tr`` fires with (one instance each), in order."""
    combos: list[tuple[int, ...]] = [()]
    for p in tr.params:
        combos = [(*c, v) for c in combos for v in ir.domain(p.type)]
    return combos


def fits(inner: ir.Type, outer: ir.Type) -> bool:
    """Every value of type ``inner`` is in ``outer``'s range, so a range check of one can
    never fail (the Z3 encoders leave it out: a check that cannot fail still costs a
    proof its conditions)."""
    outer_range = range_of(outer)
    if outer_range is None:
        return True
    inner_range = range_of(inner)
    return inner_range is not None and outer_range[0] <= inner_range[0] \
        and inner_range[1] <= outer_range[1]


def range_of(t: ir.Type) -> tuple[int, int] | None:
    """The values an assignment to a variable of type ``t`` may store (checked at run time,
    "range" errors); None when every value of the type fits by construction."""
    if isinstance(t, ir.IntT):
        return (t.lo, t.hi)
    if isinstance(t, (ir.ValueT, ir.AgentT, ir.EnumT)):
        return (0, t.size() - 1)
    if isinstance(t, ir.NodeT):
        return (0, t.n)
    if isinstance(t, (ir.IndexT, ir.HNodeT)):
        return (0, t.n - 1)
    return None
