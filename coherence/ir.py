"""The intermediate representation: the only input of every back end.

Small frozen attrs classes, lowered once from the parse tree by ``coherence.spec.lower``.
Everything is finite and instantiated: parameters are already substituted, every type knows its
size, every channel its capacity. No Python callables live here, so a back end can translate
every rule (to Z3 terms, Murphi, Promela) rather than only call it.

NOTE(values): at run time a value of each type is a Python int (bools are 0/1, enums and states
are indices, sets of agents are bitmasks, arrays are tuples) or ``None`` for "undefined".
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

import attrs

from coherence.errors import NO_SPAN, Span, SpecError


def _span() -> Span:
    return attrs.field(default=NO_SPAN, eq=False, repr=False)


# ---------------------------------------------------------------- kinds
# NOTE(enums): string-valued so that ``--json``, f-strings and the front end's keywords read
# them as before; the package compares them only with their members (``Ordering.BUS``).


class _Kind(enum.StrEnum):
    """A string-valued enum whose repr is its value, so that printed IR (the lowering's golden
    files) reads as the spec wrote it."""

    def __repr__(self) -> str:
        return repr(self.value)


class Ordering(_Kind):
    """How a network delivers: see ``semantics.Semantics.deliverable`` for what each means."""

    BUS = "bus"  # delivered within the sending step (never in flight)
    FIFO = "fifo"  # per (src, dst, line) queue: only the head of each queue may arrive
    UNORDERED = "unordered"  # a multiset: any message may arrive next


class MachineKind(_Kind):
    """CACHE: one per agent and line; HOME: one per line; MACHINE: a machine of a
    hierarchical spec, one per line and per tuple of its index values (``Machine.indices``;
    none: one per line). NOTE(hierarchy): a spec's machines are either the two built-in kinds
    or all MACHINE (``Model.is_hierarchical``)."""

    CACHE = "cache"
    HOME = "home"
    MACHINE = "machine"


class TransitionKind(_Kind):
    """EVENT: a processor request; MESSAGE: an arrival; RULE: an internal action."""

    EVENT = "event"
    MESSAGE = "message"
    RULE = "rule"


# ---------------------------------------------------------------- types


@attrs.frozen
class BoolT:
    def size(self) -> int:
        return 2

    def __str__(self) -> str:
        return "bool"


@attrs.frozen
class IntT:
    lo: int
    hi: int

    def size(self) -> int:
        return self.hi - self.lo + 1

    def __str__(self) -> str:
        return f"int[{self.lo}..{self.hi}]"


@attrs.frozen
class ValueT:
    """Data values 0..n-1 (the ``values`` parameter)."""

    n: int

    def size(self) -> int:
        return self.n

    def __str__(self) -> str:
        return "value"


@attrs.frozen
class AgentT:
    """Agent (cache) ids 0..n-1: a symmetric type, like Murphi's scalarset."""

    n: int

    def size(self) -> int:
        return self.n

    def __str__(self) -> str:
        return "agent"


@attrs.frozen
class NodeT:
    """Any endpoint of the network: an agent 0..n-1, or the home node n."""

    n: int

    def size(self) -> int:
        return self.n + 1

    def __str__(self) -> str:
        return "node"


@attrs.frozen
class IndexT:
    """A symmetric index type of a hierarchical spec (``index gpu: gpus;``), ids 0..n-1.
    ``parent`` names the index type it is nested in (``index sm: sms within gpu;``): a value
    is then an id within one instance of the parent, and symmetry permutes the ids within
    each parent id separately (NOTE(hierarchy-symmetry) in ``coherence.symmetry``)."""

    name: str
    n: int
    parent: str | None = None

    def size(self) -> int:
        return self.n

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class HNodeT:
    """A node of a hierarchical spec: any machine instance, by its flat id 0..n-1
    (``instances``). The type of ``msg.src``, ``self`` and send destinations there."""

    n: int

    def size(self) -> int:
        return self.n

    def __str__(self) -> str:
        return "node"


@attrs.frozen
class EnumT:
    name: str
    members: tuple[str, ...]

    def size(self) -> int:
        return len(self.members)

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class StateT:
    """The control state of one machine; members in declaration order."""

    machine: str
    members: tuple[str, ...]

    def size(self) -> int:
        return len(self.members)

    def __str__(self) -> str:
        return f"{self.machine}.state"


@attrs.frozen
class SetT:
    """A set of agents, held as a bitmask."""

    elem: AgentT | IndexT

    def size(self) -> int:
        return 1 << self.elem.n

    def __str__(self) -> str:
        return f"set<{self.elem}>"


@attrs.frozen
class ArrayT:
    index: Type
    elem: Type

    def size(self) -> int:
        return (self.elem.size() + 1) ** self.index.size()

    def __str__(self) -> str:
        return f"array<{self.index}, {self.elem}>"


Type = (BoolT | IntT | ValueT | AgentT | NodeT | EnumT | StateT | SetT | ArrayT | IndexT
        | HNodeT)
SCALAR_INDEX_TYPES = (BoolT, IntT, ValueT, AgentT, NodeT, EnumT, IndexT, HNodeT)


def domain(t: Type) -> range:
    """The run-time values of a finite scalar type, in order."""
    if isinstance(t, IntT):
        return range(t.lo, t.hi + 1)
    if isinstance(t, (BoolT, ValueT, AgentT, NodeT, EnumT, StateT, IndexT, HNodeT)):
        return range(t.size())
    raise TypeError(f"no enumerable domain for {t}")


def index_offset(t: Type) -> int:
    """Arrays are stored as tuples; element ``i`` sits at ``i - index_offset``."""
    return t.lo if isinstance(t, IntT) else 0


def is_symmetric(t: Type) -> bool:
    """Whether values of ``t`` are renamed when agents are permuted."""
    if isinstance(t, (AgentT, NodeT, SetT, IndexT, HNodeT)):
        return True
    if isinstance(t, ArrayT):
        return is_symmetric(t.index) or is_symmetric(t.elem)
    return False


def assignable(to: Type, frm: Type) -> bool:
    if to == frm:
        return True
    if isinstance(to, IntT) and isinstance(frm, IntT):
        return True  # range checked at run time
    if isinstance(to, NodeT) and isinstance(frm, AgentT):
        return to.n == frm.n
    if isinstance(to, AgentT) and isinstance(frm, NodeT):
        return to.n == frm.n  # checked at run time: the home node is not an agent
    return False


# ---------------------------------------------------------------- expressions


@attrs.frozen
class Lit:
    type: Type
    value: int | None
    span: Span = _span()


@attrs.frozen
class Local:
    """A bound name: quantifier/loop variable, event or rule parameter, ``let``."""

    name: str
    type: Type
    span: Span = _span()


@attrs.frozen
class SelfId:
    """The agent id of the cache machine running the transition."""

    type: Type
    span: Span = _span()


@attrs.frozen
class GVar:
    """A variable declared at top level (one per line)."""

    name: str
    type: Type
    span: Span = _span()


@attrs.frozen
class MVar:
    """A variable of a machine; ``agent`` is None for the home machine."""

    machine: str
    agent: Expr | None
    name: str
    type: Type
    span: Span = _span()


@attrs.frozen
class MState:
    """The control state of a machine (``state`` or ``Cache[a].state``)."""

    machine: str
    agent: Expr | None
    type: StateT
    span: Span = _span()


@attrs.frozen
class MsgField:
    name: str
    type: Type
    span: Span = _span()


@attrs.frozen
class MsgSrc:
    type: Type
    span: Span = _span()


@attrs.frozen
class Index:
    base: Expr
    index: Expr
    type: Type
    span: Span = _span()


@attrs.frozen
class Unary:
    op: str  # "!" or "-"
    arg: Expr
    type: Type
    span: Span = _span()


@attrs.frozen
class Binary:
    """Arithmetic, comparison, boolean and set operators.

    ops: + - == != < <= > >= && || -> in with without
    ("with"/"without" add or remove an agent from a set.)
    """

    op: str
    left: Expr
    right: Expr
    type: Type
    span: Span = _span()


@attrs.frozen
class SetLit:
    """A set literal: of agents (a bitmask) or of states/enum members (for ``in``)."""

    elems: tuple[Expr, ...]
    type: Type
    span: Span = _span()


@attrs.frozen
class Call:
    """Built-in functions: size(set), isundefined(x)."""

    func: str
    args: tuple[Expr, ...]
    type: Type
    span: Span = _span()


@attrs.frozen
class Quant:
    kind: str  # "forall" | "exists"
    var: str
    var_type: Type
    body: Expr
    type: Type
    span: Span = _span()


@attrs.frozen
class Count:
    """``count(a: agent :: body)``: how many values of ``var_type`` make ``body`` true, an
    integer of type ``int[0..size]``. Invariants about counters need it (an ack counter equals
    the number of agents that still owe an ack); a proof for every number of agents encodes it
    as a cardinality (NOTE(param-count) in ``smt.param``)."""

    var: str
    var_type: Type
    body: Expr
    type: Type
    span: Span = _span()


@attrs.frozen
class InFlight:
    """Whether a message of type ``message`` (to ``dst``, if given) is in the network."""

    message: str
    dst: Expr | None
    type: Type
    span: Span = _span()


@attrs.frozen
class MsgQuant:
    """``forall m: Msg :: body`` / ``exists`` / ``count``: over every message of type
    ``message`` now in flight (on this line). Auxiliary invariants about messages need it: a
    proof for every number of agents must say what the messages in the network carry, and
    ``count(m: Msg :: m.dst == i) <= 1`` how many a queue holds (NOTE(message-count)): a
    ``count`` is an ``int[0..bound]``, ``bound`` the most messages the network can hold."""

    kind: str  # "forall" | "exists" | "count"
    var: str
    message: str
    body: Expr
    type: Type
    span: Span = _span()


POSITION = "pos"  # NOTE(message-position): ``m.pos``, a message's place in its fifo queue


@attrs.frozen
class MsgVarAttr:
    """``m.FIELD``, ``m.src``, ``m.dst`` or ``m.pos`` of a message bound by ``MsgQuant``
    (NOTE(message-position): ``pos`` is its place in its fifo queue, 0 the head)."""

    var: str
    attr: str  # a field name, "src", "dst" or POSITION
    message: str
    type: Type
    span: Span = _span()


@attrs.frozen
class Cond:
    """``if cond then then else orelse``: only the chosen branch is evaluated."""

    cond: Expr
    then: Expr
    orelse: Expr
    type: Type
    span: Span = _span()


@attrs.frozen
class NodeOf:
    """The node of one instance of a hierarchical spec's machine: ``L1[g, s]``, ``Mem``.
    ``indices`` are the instance's index values in the machine's order, or one node-typed
    expression (checked at run time to be an instance of ``machine``)."""

    machine: str
    indices: tuple[Expr, ...]
    type: HNodeT
    span: Span = _span()


@attrs.frozen
class NodeIndex:
    """The value of index type ``index`` of a node (``msg.src.gpu``; a machine's own index
    names, ``g`` in ``machine L2[g: gpu]``, are this of ``self``); a model error when the
    node's machine is not indexed by it."""

    node: Expr
    index: str
    type: IndexT
    span: Span = _span()


@attrs.frozen
class NodeIs:
    """``n is L1``: whether node ``n`` is an instance of ``machine``."""

    node: Expr
    machine: str
    type: BoolT
    span: Span = _span()


Expr = (Lit | Local | SelfId | GVar | MVar | MState | MsgField | MsgSrc | Index | Unary | Binary
        | SetLit | Call | Quant | Count | InFlight | MsgQuant | MsgVarAttr | Cond | NodeOf
        | NodeIndex | NodeIs)
LValue = GVar | MVar | Index

# ---------------------------------------------------------------- statements


@attrs.frozen
class Assign:
    target: LValue
    value: Expr  # Lit(type, None) assigns "undefined"
    span: Span = _span()


@attrs.frozen
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span = _span()


@attrs.frozen
class For:
    var: str
    var_type: Type
    body: tuple[Stmt, ...]
    span: Span = _span()


@attrs.frozen
class Let:
    var: str
    value: Expr
    span: Span = _span()


@attrs.frozen
class Send:
    message: str
    args: tuple[Expr, ...]
    dst: Expr  # NodeT/AgentT-typed
    span: Span = _span()


@attrs.frozen
class Broadcast:
    """Send to every agent, except ``exclude`` when given."""

    message: str
    args: tuple[Expr, ...]
    exclude: Expr | None
    span: Span = _span()


@attrs.frozen
class Multicast:
    """``broadcast M to L1[g] except n;``: send to every instance of ``machine`` whose leading
    index values equal ``prefix`` (all of them when it is empty), but node ``exclude``."""

    message: str
    args: tuple[Expr, ...]
    machine: str
    prefix: tuple[Expr, ...]
    exclude: Expr | None
    span: Span = _span()


@attrs.frozen
class Goto:
    state: str
    span: Span = _span()


@attrs.frozen
class Perform:
    """A processor-visible operation: ``kind`` is "load" or "store"; ``agent`` whose it is."""

    kind: str
    value: Expr
    agent: Expr
    span: Span = _span()


@attrs.frozen
class Assert:
    cond: Expr
    text: str
    span: Span = _span()


Stmt = Assign | If | For | Let | Send | Broadcast | Multicast | Goto | Perform | Assert


def walk_stmts(stmts: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of a body, nested ones (in ``if`` and ``for``) included."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk_stmts(s.then)
            yield from walk_stmts(s.orelse)
        elif isinstance(s, For):
            yield from walk_stmts(s.body)


def free_names(e: Expr) -> tuple[dict[str, Type], list[str]]:
    """The locals (name -> type) and the messages bound by ``forall m: Msg`` that ``e`` reads
    but does not bind itself, in order of first use: what a message count's Murphi function
    needs as parameters (NOTE(message-count)), and what a count built once per binding is
    keyed by (NOTE(infer-endpoint-atoms))."""
    local_types: dict[str, Type] = {}
    mvars: list[str] = []

    def go(node: Any, bound: frozenset[str]) -> None:
        if isinstance(node, Local):
            if node.name not in bound:
                local_types.setdefault(node.name, node.type)
        elif isinstance(node, MsgVarAttr):
            if node.var not in bound and node.var not in mvars:
                mvars.append(node.var)
        elif isinstance(node, (Quant, Count, MsgQuant)):
            go(node.body, bound | {node.var})
        elif isinstance(node, tuple):
            for x in node:
                go(x, bound)
        elif attrs.has(type(node)) and not isinstance(node, Span):
            for f in attrs.fields(type(node)):
                go(getattr(node, f.name), bound)
    go(e, frozenset())
    return local_types, mvars


# ---------------------------------------------------------------- declarations


@attrs.frozen
class Param:
    name: str
    value: int
    default: int
    lo: int
    hi: int
    span: Span = _span()


@attrs.frozen
class Field:
    name: str
    type: Type
    span: Span = _span()


@attrs.frozen
class Network:
    """ordering: BUS (delivered in the same step), FIFO (per src/dst pair) or UNORDERED.

    capacity bounds the messages in flight: in all for "unordered", per pair for "fifo".
    A send that would exceed it blocks the sending transition.
    """

    name: str
    ordering: Ordering = attrs.field(converter=Ordering)
    capacity: int
    span: Span = _span()


@attrs.frozen
class Message:
    name: str
    fields: tuple[Field, ...]
    network: str
    span: Span = _span()


@attrs.frozen
class Event:
    """A processor request (load, store, evict, ...), with its parameters."""

    name: str
    params: tuple[Field, ...]
    span: Span = _span()


@attrs.frozen
class Var:
    name: str
    type: Type
    init: Expr
    ghost: bool
    span: Span = _span()


@attrs.frozen
class StateDecl:
    name: str
    stable: bool
    span: Span = _span()


@attrs.frozen
class Transition:
    """``on EVENT in STATES when GUARD { body }`` or a spontaneous ``rule``.

    kind: EVENT (processor request), MESSAGE (arrival) or RULE (internal action).
    params: event parameters, or a rule's quantified parameters (each fires for every value).
    states: the source states (all states when the spec names none).
    stall: the message waits in the network instead of being consumed.
    """

    machine: str
    kind: TransitionKind = attrs.field(converter=TransitionKind)
    name: str
    params: tuple[Field, ...]
    states: tuple[str, ...]
    guard: Expr | None
    body: tuple[Stmt, ...]
    stall: bool
    index: int
    span: Span = _span()
    # NOTE(fairness): weak fairness for liveness checking; None means the default by kind
    # (message arrivals and rules are fair, processor events are not: a processor may stop
    # issuing requests). See ``weakly_fair``.
    fair: bool | None = None
    strong: bool = False  # ``strong fair``: taken if enabled infinitely often

    @property
    def weakly_fair(self) -> bool:
        """Whether a path may not leave this transition enabled forever without taking it."""
        if self.fair is not None:
            return self.fair
        return self.kind is not TransitionKind.EVENT


@attrs.frozen
class Machine:
    """kind: CACHE (one per agent and line) or HOME (one per line)."""

    name: str
    kind: MachineKind = attrs.field(converter=MachineKind)
    states: tuple[StateDecl, ...]
    init_state: str
    vars: tuple[Var, ...]
    transitions: tuple[Transition, ...]
    state_type: StateT
    span: Span = _span()
    # NOTE(hierarchy): a MACHINE of a hierarchical spec is replicated over these (binder
    # name, IndexT); empty for every other machine
    indices: tuple[Field, ...] = ()

    def state_index(self, name: str) -> int:
        return self.state_type.members.index(name)

    def var(self, name: str) -> Var:
        for v in self.vars:
            if v.name == name:
                return v
        raise KeyError(name)


@attrs.frozen
class Invariant:
    name: str
    expr: Expr
    aux: bool
    span: Span = _span()


@attrs.frozen
class Assumption:
    """``assume NAME: e;``, a state constraint (Murphi's and Rumur's ``assume``, TLC's
    CONSTRAINT). NOTE(assume): a state where ``e`` is false on some line is discarded when
    an action reaches it (or it is initial): it is not stored, not counted, not checked and
    not expanded; the action that reached it still counts as a move, so its source state is
    not a deadlock. See ``Semantics.assumed``."""

    name: str
    expr: Expr
    span: Span = _span()


@attrs.frozen
class Property:
    """A history property checked by a monitor. kind: "coherence" (per-location coherence)."""

    name: str
    kind: str
    span: Span = _span()


class LivenessKind(_Kind):
    """REACHABLE: AG EF goal (Rumur's ``liveness``); LEADS_TO: premise ~> goal under weak
    fairness."""

    REACHABLE = "reachable"
    LEADS_TO = "leads-to"


@attrs.frozen
class Liveness:
    """``liveness NAME: GOAL;`` or ``liveness NAME: forall a: agent :: PREMISE ~> GOAL;``.

    Checked on every line, as invariants are, and for every value of ``binders`` (the leading
    ``forall`` of a leads-to, whose variables both sides read as ``Local``s).
    """

    name: str
    kind: LivenessKind = attrs.field(converter=LivenessKind)
    binders: tuple[Field, ...]
    premise: Expr | None  # None for REACHABLE
    goal: Expr
    span: Span = _span()


@attrs.frozen
class Model:
    file: str
    params: tuple[Param, ...]
    agents: int
    lines: int
    values: int
    enums: tuple[EnumT, ...]
    networks: tuple[Network, ...]
    messages: tuple[Message, ...]
    events: tuple[Event, ...]
    globals: tuple[Var, ...]
    machines: tuple[Machine, ...]
    invariants: tuple[Invariant, ...]
    properties: tuple[Property, ...]
    assumptions: tuple[Assumption, ...] = ()
    # the front end's record of the parsed spec, so that ``coherence.spec.load.rebind`` can
    # bind it to other parameter values in memory; opaque here and not part of the IR's value
    origin: object = attrs.field(default=None, eq=False, repr=False)
    liveness: tuple[Liveness, ...] = ()
    # NOTE(hierarchy): the index types of a hierarchical spec, parents before children
    indexes: tuple[IndexT, ...] = ()

    @property
    def is_hierarchical(self) -> bool:
        """Whether the spec uses the general machines (``machine L1[g: gpu, s: sm]``) rather
        than the two built-in kinds; back ends that do not support them yet refuse it
        (``refuse_hierarchical``)."""
        return any(m.kind is MachineKind.MACHINE for m in self.machines)

    def index_type(self, name: str) -> IndexT:
        for t in self.indexes:
            if t.name == name:
                return t
        raise KeyError(name)

    def machine(self, name: str) -> Machine:
        for m in self.machines:
            if m.name == name:
                return m
        raise KeyError(name)

    def message(self, name: str) -> Message:
        for m in self.messages:
            if m.name == name:
                return m
        raise KeyError(name)

    def network(self, name: str) -> Network:
        for n in self.networks:
            if n.name == name:
                return n
        raise KeyError(name)

    def param(self, name: str) -> int:
        for p in self.params:
            if p.name == name:
                return p.value
        raise KeyError(name)

    @property
    def home(self) -> Machine | None:
        for m in self.machines:
            if m.kind is MachineKind.HOME:
                return m
        return None

    @property
    def caches(self) -> tuple[Machine, ...]:
        return tuple(m for m in self.machines if m.kind is MachineKind.CACHE)

    @property
    def home_id(self) -> int:
        return self.agents


# ---------------------------------------------------------------- hierarchy


@attrs.frozen
class Instance:
    """One machine instance of a hierarchical spec (per line): its flat node id, machine and
    index values (in the machine's order)."""

    node: int
    machine: str
    values: tuple[int, ...]


def instances(model: Model) -> tuple[Instance, ...]:
    """NOTE(hierarchy-nodes): the flat numbering of a hierarchical spec's nodes: machines in
    declaration order, each one's instances in lexicographic order of their index values. A
    nested index's values are ids within the enclosing index's value, so ``L1[g, s]`` is one
    instance per (g, s). (Legacy specs number agents 0..n-1 and the home n.)"""
    out: list[Instance] = []
    for m in model.machines:
        combos: list[tuple[int, ...]] = [()]
        for f in m.indices:
            combos = [(*c, v) for c in combos for v in domain(f.type)]
        out += [Instance(len(out) + i, m.name, c) for i, c in enumerate(combos)]
    return tuple(out)


def event_machine(model: Model) -> Machine | None:
    """The machine that handles processor events (the processors: the coherence monitor's
    agents); None when no machine does."""
    for m in model.machines:
        if any(t.kind is TransitionKind.EVENT for t in m.transitions):
            return m
    return None


def refuse_hierarchical(model: Model, what: str) -> None:
    """NOTE(hierarchy-refusal): the one guard of every back end that does not support
    hierarchical specs yet: a located error (exit code 2), never a wrong answer."""
    if not model.is_hierarchical:
        return
    first = next(m for m in model.machines if m.kind is MachineKind.MACHINE)
    raise SpecError(f"{what}: hierarchical specs are not supported yet (machine {first.name}, "
                    "the `machine NAME[...]` form); `coherence check` runs them on the "
                    "reference engine", first.span)
