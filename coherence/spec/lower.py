"""Pass 2: resolve names and types once, check the spec, and build the IR.

Every semantic error (unknown name, type mismatch, duplicate declaration or transition, wrong
number of message fields, constant out of range, bad parameter override) is raised as a
located SpecError pointing at the offending token.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import lark
from lark import Token, Tree

from coherence import ir
from coherence.errors import NO_SPAN, Span, SpecError

BUILTIN_PARAMS = {"agents": 2, "lines": 1, "values": 2}
# The legal range of each parameter, whatever its declaration says (docs/language.md, "Limits";
# agents are further limited to 16 in apply_overrides, and the configuration's size is checked
# before a search).
PARAM_LIMITS = {"agents": (1, 1 << 16), "lines": (1, 1 << 16), "values": (1, 1 << 16)}
OTHER_PARAM_LIMITS = (0, 1 << 16)
ORDERINGS = ("bus", "fifo", "unordered")
PERFORM_KINDS = ("load", "store")
PROPERTY_KINDS = ("coherence",)
MAX_CONST = 2**31 - 1  # a constant is a 32-bit signed int, as an integer literal is
RESERVED = {"self", "home", "msg", "state", "true", "false", "undefined", "bool", "value",
            "agent", "node", "int", "set", "array"}
MAX_INDEX = 16  # ids of one index type (sets of them are bitmasks, as sets of agents are)


@attrs.define
class _Ctx:
    """Where an expression is being lowered: which machine, transition kind, bound names."""

    machine: ir.Machine | None = None
    message: ir.Message | None = None
    locals: list[dict[str, ir.Type]] = attrs.Factory(lambda: [{}])
    in_invariant: bool = False


@attrs.frozen
class _MsgBinding:
    """What a name bound by ``forall m: Msg`` stands for while lowering."""

    message: str


class _MachineRef:
    """``Cache[a]`` or ``Home`` while lowering ``.var`` / ``.state`` after it; in a
    hierarchical spec ``L1[g, s]`` or ``Mem``, with ``agent`` the instance's node."""

    def __init__(self, machine: ir.Machine, agent: ir.Expr | None) -> None:
        self.machine = machine
        self.agent = agent


@attrs.frozen
class _IndexBinding:
    """A hierarchical machine's own index name (``g`` in ``machine L2[g: gpu]``)."""

    type: ir.IndexT


@attrs.define
class _Procedure:
    """A declared procedure: its parse tree is lowered again at every call (expansion)."""

    name: str
    params: tuple[ir.Field, ...]
    node: Tree
    called: bool = False


def lower(tree: Tree, file: str, source: str, overrides: dict[str, int]) -> ir.Model:
    return _Lowerer(file, source).run(tree, overrides)


class _Lowerer:
    def __init__(self, file: str, source: str) -> None:
        self.file = file
        self.source = source
        self.params: dict[str, ir.Param] = {}
        self.enums: dict[str, ir.EnumT] = {}
        self.enum_members: dict[str, tuple[ir.EnumT, int]] = {}
        self.networks: dict[str, ir.Network] = {}
        self.messages: dict[str, ir.Message] = {}
        self.events: dict[str, ir.Event] = {}
        self.globals: dict[str, ir.Var] = {}
        self.machines: dict[str, ir.Machine] = {}
        self.decl_spans: dict[str, Span] = {}
        self.consts: dict[str, int] = {}
        self.procedures: dict[str, _Procedure] = {}
        self.expanding: list[str] = []  # the procedures being expanded, outermost first
        self.expansions = 0  # how many calls have been expanded (unique local names)
        # NOTE(hierarchy): a spec with `index` declarations or a `machine NAME` without a
        # kind is hierarchical: every machine is then general, with a flat node numbering
        self.hier = False
        self.indexes: dict[str, ir.IndexT] = {}
        self.node_count = 0
        self.event_machine: ir.Machine | None = None

    # ------------------------------------------------------------ helpers

    def span(self, node: Tree | Token | None) -> Span:
        if node is None:
            return Span(self.file, 0, 0)
        if isinstance(node, Token):
            return Span(self.file, node.line or 0, node.column or 0)
        meta = node.meta
        if getattr(meta, "empty", True):
            for child in node.children:
                if isinstance(child, (Tree, Token)):
                    return self.span(child)
            return Span(self.file, 0, 0)
        return Span(self.file, meta.line, meta.column)

    def error(self, message: str, node: Tree | Token | Span | None) -> SpecError:
        span = node if isinstance(node, Span) else self.span(node)
        return SpecError(message, span, self.source)

    def declare(self, name: Token, what: str) -> None:
        text = str(name)
        if text in RESERVED:
            raise self.error(f"'{text}' is a reserved word and cannot name a {what}", name)
        if text in self.decl_spans:
            first = self.decl_spans[text]
            raise self.error(f"duplicate name '{text}' (first declared at {first})", name)
        self.decl_spans[text] = self.span(name)

    @property
    def agents(self) -> int:
        return self.params["agents"].value if "agents" in self.params else 0

    def node_type(self) -> ir.HNodeT:
        return ir.HNodeT(self.node_count)

    def self_ref(self, machine: ir.Machine, sp: Span) -> ir.SelfId | None:
        """What a machine's own variables and state are read through: its agent (cache), its
        node (hierarchical machine), or nothing (home)."""
        if machine.kind is ir.MachineKind.CACHE:
            return ir.SelfId(ir.AgentT(self.agents), sp)
        if machine.kind is ir.MachineKind.MACHINE:
            return ir.SelfId(self.node_type(), sp)
        return None

    def node_or_agent(self) -> tuple[type, ...]:
        """The types a destination, a sender or ``by`` may have."""
        return (ir.HNodeT,) if self.hier else (ir.AgentT, ir.NodeT)

    @property
    def values(self) -> int:
        return self.params["values"].value

    # ------------------------------------------------------------ driver

    def run(self, tree: Tree, overrides: dict[str, int]) -> ir.Model:
        items = [c for c in tree.children if isinstance(c, Tree)]
        by_kind: dict[str, list[Tree]] = {}
        for item in items:
            by_kind.setdefault(item.data, []).append(item)
        machine_nodes = by_kind.get("machine_decl", [])
        self.hier = bool(by_kind.get("index_decl")) or any(
            n.children[0] is None for n in machine_nodes)
        for node in by_kind.get("param_decl", []):
            self.param_decl(node)
        self.apply_overrides(overrides)
        for node in by_kind.get("const_decl", []):
            self.const_decl(node)
        for node in by_kind.get("index_decl", []):
            self.index_decl(node)
        if self.hier:
            self.node_count = sum(self.instance_count(n) for n in machine_nodes)
        for node in by_kind.get("enum_decl", []):
            self.enum_decl(node)
        for node in by_kind.get("network_decl", []):
            self.network_decl(node)
        for node in by_kind.get("message_decl", []):
            self.message_decl(node)
        for node in by_kind.get("event_decl", []):
            self.event_decl(node)
        for node in by_kind.get("global_var", []):
            self.global_var(node)
        for node in by_kind.get("procedure_decl", []):
            self.procedure_decl(node)
        for node in machine_nodes:
            self.machine_header(node)
        if self.hier:
            self.find_event_machine(machine_nodes)
        for node in machine_nodes:
            self.machine_body(node)
        invariants = tuple(self.invariant_decl(n) for n in by_kind.get("invariant_decl", []))
        properties = tuple(self.property_decl(n) for n in by_kind.get("property_decl", []))
        liveness = tuple(self.liveness_decl(n) for n in by_kind.get("liveness_decl", []))
        assumptions = tuple(self.assume_decl(n) for n in by_kind.get("assume_decl", []))
        for proc in self.procedures.values():
            if not proc.called:
                raise self.error(f"procedure '{proc.name}' is never called (its body is "
                                 "checked where it is called)", proc.node.children[0])
        self.check_message_handlers()
        if not machine_nodes:
            # NOTE(vacuity): with no machine nothing can happen, and every property would
            # "hold" of the one initial state
            raise self.error("the spec has no machine: declare a `cache machine` and/or a "
                             "`home machine` (docs/language.md)", Span(self.file, 1, 1))
        agents = self.agents
        if self.hier:  # the processors: instances of the machine that handles events
            agents = self.instances_of(self.event_machine) if self.event_machine else 0
        return ir.Model(
            file=self.file,
            params=tuple(self.params.values()),
            agents=agents,
            lines=self.params["lines"].value,
            values=self.values,
            enums=tuple(self.enums.values()),
            networks=tuple(self.networks.values()),
            messages=tuple(self.messages.values()),
            events=tuple(self.events.values()),
            globals=tuple(self.globals.values()),
            machines=tuple(self.machines.values()),
            invariants=invariants,
            properties=properties,
            liveness=liveness,
            assumptions=assumptions,
            indexes=tuple(self.indexes.values()),
        )

    # ------------------------------------------------------------ hierarchy

    def index_decl(self, node: Tree) -> None:
        """``index gpu: gpus;`` or ``index sm: sms within gpu;``."""
        name, size_node, within = node.children
        self.declare(name, "index type")
        n = self.const(size_node)
        if not 1 <= n <= MAX_INDEX:
            raise self.error(f"index type '{name}' has {n} ids; it must have 1..{MAX_INDEX}",
                             size_node)
        parent = None
        if within is not None:
            tok = within.children[0]
            if str(tok) not in self.indexes:
                raise self.error(f"unknown index type '{tok}' (declare it before "
                                 f"'{name}')", tok)
            parent = str(tok)
        self.indexes[str(name)] = ir.IndexT(str(name), n, parent)

    def find_event_machine(self, machine_nodes: list[Tree]) -> None:
        """The one machine of a hierarchical spec that handles processor events: its
        instances are the processors (of the coherence monitor, of litmus threads)."""
        for node in machine_nodes:
            m = self.machines[str(node.children[1])]
            for member in node.children[3:]:
                if not isinstance(member, Tree) or member.data != "transition":
                    continue
                for tok in member.children[1].children:
                    if str(tok) not in self.events:
                        continue
                    if self.event_machine is None:
                        self.event_machine = m
                    elif self.event_machine.name != m.name:
                        raise self.error(f"processor event '{tok}' in machine {m.name}: "
                                         "processor events belong to one machine, and "
                                         f"{self.event_machine.name} handles them", tok)

    def machine_indices(self, node: Tree) -> tuple[ir.Field, ...]:
        """A hierarchical machine's ``[g: gpu, s: sm]``: index types, each at most once, a
        nested one after the index it is nested in."""
        _, name, indices, *_ = node.children
        if indices is None:
            return ()
        out: list[ir.Field] = []
        for binder in indices.children:
            bname, type_node = binder.children
            tname = str(type_node.children[0])
            if type_node.data != "named_type" or tname not in self.indexes:
                raise self.error(f"machine {name} is replicated over index types (declared "
                                 f"with `index`), not over '{tname}'", type_node)
            t = self.indexes[tname]
            if str(bname) in RESERVED:
                raise self.error(f"'{bname}' is a reserved word", bname)
            for f in out:
                if f.name == str(bname):
                    raise self.error(f"'{bname}' names two indices of machine {name}", bname)
                if f.type == t:
                    raise self.error(f"machine {name} is replicated over '{t}' twice", type_node)
            if t.parent is not None and not any(
                    isinstance(f.type, ir.IndexT) and f.type.name == t.parent for f in out):
                raise self.error(f"'{t}' is nested within '{t.parent}': machine {name} needs a "
                                 f"'{t.parent}' index before it, e.g. [x: {t.parent}, "
                                 f"{bname}: {t}]", type_node)
            out.append(ir.Field(str(bname), t, self.span(bname)))
        return tuple(out)

    def instance_count(self, node: Tree) -> int:
        count = 1
        for f in self.machine_indices(node):
            count *= f.type.size()
        return count

    def instances_of(self, machine: ir.Machine) -> int:
        count = 1
        for f in machine.indices:
            count *= f.type.size()
        return count

    def check_context(self, t: ir.Type, node: Tree | Token,
                      machine: ir.Machine | None, what: str) -> None:
        """NOTE(hierarchy-symmetry): a value of a nested index type (an sm id within one gpu)
        means something only with its enclosing ids, so it may be held only by a machine
        indexed by them (which are then its context); not by a global, a message field, an
        event parameter or a machine without that context."""
        for nested in _nested_indexes(t):
            assert nested.parent is not None
            have = {f.type.name for f in machine.indices
                    if isinstance(f.type, ir.IndexT)} if machine is not None else set()
            if nested.parent not in have:
                where = f"machine {machine.name}" if machine is not None else what
                raise self.error(f"{what} of type {t}: an id of '{nested}' is an id within one "
                                 f"'{nested.parent}', so only a machine indexed by "
                                 f"'{nested.parent}' can hold one ({where} is not); send a "
                                 "node instead", node)

    def machine_ref(self, m: ir.Machine, args: list[Tree], node: Tree,
                    ctx: _Ctx) -> tuple[ir.Expr, ...]:
        """The index expressions of ``L1[g, s]`` (all of them, or a prefix: the caller
        checks), each of its index's type; or one node."""
        if len(args) > len(m.indices):
            raise self.error(f"machine {m.name} has {len(m.indices)} ind"
                             f"{'ex' if len(m.indices) == 1 else 'ices'}, got {len(args)}",
                             node)
        out = []
        for f, a in zip(m.indices, args, strict=False):
            e = self.expr(a, ctx, f.type)
            if isinstance(e, ir.Lit) and isinstance(e.type, ir.IntT):
                raise self.error(f"ids of '{f.type}' are symmetric: name one with forall, for, "
                                 "a parameter of a rule or a variable, not a number", a)
            if e.type != f.type:
                raise self.error(f"machine {m.name}'s index '{f.name}' is a {f.type}, got "
                                 f"{e.type}", a)
            out.append(e)
        return tuple(out)

    # ------------------------------------------------------------ params

    def param_decl(self, node: Tree) -> None:
        name, value, rng = node.children
        self.declare(name, "parameter")
        default = int(value)
        lo, hi = limit = PARAM_LIMITS.get(str(name), OTHER_PARAM_LIMITS)
        if rng is not None:
            lo, hi = int(rng.children[0]), int(rng.children[1])
            if lo > hi:
                raise self.error(f"empty range {lo}..{hi}", rng)
            if not limit[0] <= lo <= hi <= limit[1]:
                raise self.error(f"range {lo}..{hi} of '{name}' is outside the limit "
                                 f"{limit[0]}..{limit[1]}", rng)
        if not lo <= default <= hi:
            raise self.error(f"default {default} of '{name}' is outside {lo}..{hi}", value)
        self.params[str(name)] = ir.Param(str(name), default, default, lo, hi, self.span(name))

    def apply_overrides(self, overrides: dict[str, int]) -> None:
        for name, default in BUILTIN_PARAMS.items():
            if name == "agents" and self.hier:
                continue  # a hierarchical spec's instances come from its index types
            if name not in self.params:
                lo, hi = PARAM_LIMITS[name]
                self.params[name] = ir.Param(name, default, default, lo, hi,
                                             Span(self.file, 0, 0))
        for name, value in overrides.items():
            if name not in self.params:
                known = ", ".join(sorted(self.params))
                hint = ""
                if name == "agents" and self.hier:
                    hint = ("; a hierarchical spec has no agents: it is sized by the parameters "
                            "of its index types")
                raise SpecError(f"--param {name}={value}: the spec has no parameter '{name}' "
                                f"(it has: {known}){hint}", NO_SPAN)
            p = self.params[name]
            if not p.lo <= value <= p.hi:
                raise SpecError(f"--param {name}={value}: must be in {p.lo}..{p.hi}", NO_SPAN)
            self.params[name] = attrs.evolve(p, value=value)
        if self.agents > 16:
            if "agents" in overrides:
                raise SpecError(f"--param agents={self.agents}: at most 16 agents are "
                                "supported", NO_SPAN)
            raise SpecError(f"agents = {self.agents}: at most 16 agents are supported",
                            self.params["agents"].span, self.source)

    def const(self, node: Tree | Token) -> int:
        """Evaluate a constant expression: numbers, parameters, + and -."""
        if isinstance(node, Tree):
            if node.data == "int_lit":
                return int(node.children[0])
            if node.data == "name":
                name = str(node.children[0])
                if name in self.params:
                    return self.params[name].value
                if name in self.consts:
                    return self.consts[name]
                raise self.error(f"'{name}' is not a parameter or a constant; sizes must be "
                                 "constant", node)
            if node.data == "arith":
                a, op, b = node.children
                return self.const(a) + self.const(b) if op == "+" else (
                    self.const(a) - self.const(b))
            if node.data == "neg":
                return -self.const(node.children[0])
        raise self.error("expected a constant (numbers, parameters, constants, + and -)", node)

    def const_decl(self, node: Tree) -> None:
        """``const NAME = e;``: a name for a number, substituted wherever it is used."""
        name, value = node.children
        if str(name) in self.params:
            raise self.error(f"constant '{name}' clashes with the parameter of that name",
                             name)
        self.declare(name, "constant")
        v = self.const(value)
        if not -MAX_CONST <= v <= MAX_CONST:
            raise self.error(f"constant '{name}' = {v} is outside -{MAX_CONST}..{MAX_CONST}",
                             value)
        self.consts[str(name)] = v

    # ------------------------------------------------------------ types

    def type_(self, node: Tree) -> ir.Type:
        kind = node.data
        name = str(node.children[0])
        if kind == "named_type" and self.hier:
            if name == "agent":
                raise self.error("a hierarchical spec has no 'agent' type: use an index type "
                                 f"({', '.join(self.indexes) or 'none declared'}) or 'node'",
                                 node)
            if name == "node":
                return self.node_type()
            if name in self.indexes:
                return self.indexes[name]
        if kind == "named_type":
            simple: dict[str, ir.Type] = {
                "bool": ir.BoolT(), "value": ir.ValueT(self.values),
                "agent": ir.AgentT(self.agents), "node": ir.NodeT(self.agents),
            }
            if name in simple:
                return simple[name]
            if name in self.enums:
                return self.enums[name]
            if name == "int":
                raise self.error("'int' needs bounds, e.g. int[0..3]", node)
            raise self.error(f"unknown type '{name}'", node)
        if kind == "range_type":
            if name != "int":
                raise self.error(f"only 'int' takes bounds, not '{name}'", node)
            lo, hi = self.const(node.children[1]), self.const(node.children[2])
            if lo > hi:
                raise self.error(f"empty range int[{lo}..{hi}]", node)
            if hi - lo > 1 << 16:
                raise self.error(f"range int[{lo}..{hi}] is too large for a finite model", node)
            return ir.IntT(lo, hi)
        args = [self.type_(c) for c in node.children[1:]]
        if name == "set":
            if len(args) == 1 and isinstance(args[0], ir.IndexT):
                return ir.SetT(args[0])
            if len(args) != 1 or not isinstance(args[0], ir.AgentT):
                raise self.error("only sets of agents (or of an index type) are supported: "
                                 "set<agent>", node)
            return ir.SetT(args[0])
        if name == "array":
            if len(args) != 2:
                raise self.error("array takes an index type and an element type: "
                                 "array<agent, T>", node)
            if not isinstance(args[0], ir.SCALAR_INDEX_TYPES):
                raise self.error(f"cannot index an array by {args[0]}", node)
            return ir.ArrayT(args[0], args[1])
        raise self.error(f"unknown type '{name}'", node)

    # ------------------------------------------------------------ declarations

    def enum_decl(self, node: Tree) -> None:
        name, *members = node.children
        self.declare(name, "enum")
        seen: set[str] = set()
        for m in members:
            if str(m) in seen:
                raise self.error(f"duplicate member '{m}' in enum {name}", m)
            seen.add(str(m))
        enum = ir.EnumT(str(name), tuple(str(m) for m in members))
        self.enums[str(name)] = enum
        for i, m in enumerate(members):
            self.declare(m, "enum member")
            self.enum_members[str(m)] = (enum, i)

    def network_decl(self, node: Tree) -> None:
        name, ordering, *options = node.children
        self.declare(name, "network")
        if str(ordering) not in ORDERINGS:
            raise self.error(f"unknown network ordering '{ordering}' "
                             f"(expected one of: {', '.join(ORDERINGS)})", ordering)
        capacity: int | None = None
        for opt in options:
            key, value = opt.children
            if str(key) != "capacity":
                raise self.error(f"unknown network option '{key}' (expected: capacity)", key)
            capacity = self.const(value)
            if capacity < 1:
                raise self.error(f"capacity must be at least 1, got {capacity}", value)
        if capacity is None:
            if str(ordering) != "bus":
                raise self.error(f"network '{name}' needs a capacity, e.g. "
                                 f"'network {name}: {ordering}, capacity = 4;'", name)
            capacity = 1
        self.networks[str(name)] = ir.Network(str(name), str(ordering), capacity,
                                              self.span(name))

    def fields(self, node: Tree | None, what: str) -> tuple[ir.Field, ...]:
        if node is None:
            return ()
        out: list[ir.Field] = []
        seen: set[str] = set()
        for f in node.children:
            if f is None:
                continue
            fname, ftype = f.children
            if str(fname) in seen:
                raise self.error(f"duplicate field '{fname}' in {what}", fname)
            if str(fname) in ("src", "dst"):
                raise self.error(f"'{fname}' is implicit in every message; choose another "
                                 "name", fname)
            if str(fname) == ir.POSITION and what.startswith("message "):
                raise self.error(f"'{fname}' is a message's place in its fifo queue "
                                 f"(m.{fname} in an invariant); choose another name", fname)
            seen.add(str(fname))
            t = self.type_(ftype)
            if not what.startswith("rule "):
                self.check_context(t, ftype, None, f"field '{fname}' of {what}")
            out.append(ir.Field(str(fname), t, self.span(fname)))
        return tuple(out)

    def message_decl(self, node: Tree) -> None:
        name, field_list, on_net = node.children
        self.declare(name, "message")
        if on_net is not None:
            net_name = on_net.children[0]
            if str(net_name) not in self.networks:
                raise self.error(f"unknown network '{net_name}'", net_name)
            network = str(net_name)
        elif len(self.networks) == 1:
            network = next(iter(self.networks))
        elif not self.networks:
            raise self.error(f"message '{name}' has no network to travel on: declare one, "
                             "e.g. 'network net: unordered, capacity = 4;'", name)
        else:
            raise self.error(f"message '{name}' must say which network it travels on "
                             f"('on NAME'; networks: {', '.join(self.networks)})", name)
        self.messages[str(name)] = ir.Message(
            str(name), self.fields(field_list, f"message {name}"), network, self.span(name))

    def event_decl(self, node: Tree) -> None:
        name, field_list = node.children
        self.declare(name, "event")
        self.events[str(name)] = ir.Event(str(name), self.fields(field_list, f"event {name}"),
                                          self.span(name))

    def global_var(self, node: Tree) -> None:
        ghost, name, type_node, init = node.children
        self.declare(name, "variable")
        t = self.type_(type_node)
        self.check_context(t, type_node, None, f"global variable '{name}'")
        value = self.init_expr(init, t)
        self.globals[str(name)] = ir.Var(str(name), t, value, ghost is not None, self.span(name))

    def init_expr(self, node: Tree, t: ir.Type) -> ir.Expr:
        ctx = _Ctx(in_invariant=True)
        while isinstance(t, ir.ArrayT):
            t = t.elem  # an array starts with every element equal to the initial value
        try:
            value = self.expr(node, ctx, expected=t)
        except SpecError as err:
            if err.message.startswith("unknown name"):
                raise self.error("an initial value must be a constant (numbers, parameters, "
                                 "enum members, undefined)", node) from None
            raise
        self.check_assignable(t, value, node)
        if not _is_constant(value):
            raise self.error("an initial value must be a constant", node)
        return value

    # ------------------------------------------------------------ machines

    def machine_header(self, node: Tree) -> None:
        kind_tok, name, _indices, *members = node.children
        self.declare(name, "machine")
        if self.hier and kind_tok is not None:
            raise self.error(f"a hierarchical spec (one with `index` types or a `machine` "
                             f"without a kind) declares every machine as `machine NAME[...]`; "
                             f"'{kind_tok} machine' is the two-kind form", kind_tok)
        kind = "machine" if kind_tok is None else str(kind_tok)
        if not self.hier and _indices is not None:
            raise self.error(f"machine {name} has indices, but the spec declares no index "
                             "types ('index gpu: gpus;'); a `cache machine` is replicated per "
                             "agent without them", _indices)
        indices = self.machine_indices(node) if self.hier else ()
        if kind != "machine" and any(m.kind == kind for m in self.machines.values()):
            other = next(m for m in self.machines.values() if m.kind == kind)
            raise self.error(f"only one {kind} machine is allowed (first: '{other.name}' at "
                             f"{other.span})", name)
        states: list[ir.StateDecl] = []
        init: str | None = None
        for member in members:
            if member.data == "state_decl":
                stable_tok, *names = member.children
                stable = stable_tok is None or str(stable_tok) == "stable"
                for n in names:
                    if any(s.name == str(n) for s in states):
                        first = next(s for s in states if s.name == str(n))
                        raise self.error(f"duplicate state '{n}' in machine {name} (first "
                                         f"declared at {first.span})", n)
                    if str(n) in RESERVED:
                        raise self.error(f"'{n}' is a reserved word and cannot name a state", n)
                    if str(n) in self.consts:
                        raise self.error(f"state '{n}' clashes with the constant of that name",
                                         n)
                    states.append(ir.StateDecl(str(n), stable, self.span(n)))
            elif member.data == "init_decl":
                if init is not None:
                    raise self.error(f"machine {name} has two 'init' declarations", member)
                init_tok = member.children[0]
                init = str(init_tok)
                init_node = init_tok
        if not states:
            raise self.error(f"machine {name} declares no states", name)
        if init is None:
            raise self.error(f"machine {name} has no 'init STATE;'", name)
        if init not in [s.name for s in states]:
            raise self.error(f"unknown state '{init}' in machine {name}", init_node)
        state_type = ir.StateT(str(name), tuple(s.name for s in states))
        self.machines[str(name)] = ir.Machine(str(name), kind, tuple(states), init, (), (),
                                              state_type, self.span(name), indices)

    def machine_body(self, node: Tree) -> None:
        _, name, _indices, *members = node.children
        machine = self.machines[str(name)]
        variables: list[ir.Var] = []
        for member in members:
            if member.data != "var_decl":
                continue
            ghost, vname, type_node, init = member.children
            if str(vname) in RESERVED:
                raise self.error(f"'{vname}' is a reserved word and cannot name a variable",
                                 vname)
            for v in variables:
                if v.name == str(vname):
                    raise self.error(f"duplicate variable '{vname}' in machine {name} (first "
                                     f"declared at {v.span})", vname)
            if str(vname) in self.globals:
                raise self.error(f"variable '{vname}' hides the global of that name", vname)
            if str(vname) in self.consts:
                raise self.error(f"variable '{vname}' hides the constant of that name", vname)
            if any(f.name == str(vname) for f in machine.indices):
                raise self.error(f"variable '{vname}' hides machine {name}'s index of that "
                                 "name", vname)
            t = self.type_(type_node)
            if self.hier:
                self.check_context(t, type_node, machine, f"variable '{vname}'")
            variables.append(ir.Var(str(vname), t, self.init_expr(init, t), ghost is not None,
                                    self.span(vname)))
        machine = attrs.evolve(machine, vars=tuple(variables))
        self.machines[str(name)] = machine
        transitions: list[ir.Transition] = []
        seen: dict[tuple[str, str], Span] = {}
        for member in members:
            if member.data not in ("transition", "rule_decl"):
                continue
            # ``on A, B in S { ... }`` is one transition per name, each lowered on its own
            names = self.on_names(member) if member.data == "transition" else [None]
            for on_name in names:
                tr = self.transition(machine, member, len(transitions), on_name)
                if tr.guard is None:
                    for s in tr.states:
                        key = (tr.name, s)
                        if key in seen and tr.kind is not ir.TransitionKind.RULE:
                            raise self.error(f"duplicate transition for {tr.name} in state {s} "
                                             f"(first at {seen[key]})",
                                         on_name if len(names) > 1 else member)
                        seen[key] = tr.span
                transitions.append(tr)
        self.machines[str(name)] = attrs.evolve(machine, transitions=tuple(transitions))

    def state_names(self, machine: ir.Machine, node: Tree | None) -> tuple[str, ...]:
        if node is None:
            return machine.state_type.members
        out: list[str] = []
        for tok in node.children:
            if str(tok) not in machine.state_type.members:
                raise self.error(f"unknown state '{tok}' in machine {machine.name}", tok)
            if str(tok) in out:
                raise self.error(f"state '{tok}' is listed twice", tok)
            out.append(str(tok))
        return tuple(out)

    def on_names(self, node: Tree) -> list[Token]:
        names: list[Token] = list(node.children[1].children)  # after [fair|unfair]
        for i, n in enumerate(names):
            if any(str(m) == str(n) for m in names[:i]):
                raise self.error(f"'{n}' is listed twice", n)
        return names

    def transition(self, machine: ir.Machine, node: Tree, index: int,
                   on_name: Token | None = None) -> ir.Transition:
        ctx = _Ctx(machine=machine)
        fairness, *children = node.children
        if node.data == "rule_decl":
            name, params_node, in_clause, when_clause, body = children
            params = self.fields(params_node, f"rule {name}") if params_node else ()
            for p in params:
                if not _enumerable(p.type):
                    raise self.error(f"rule parameter '{p.name}' must have a finite scalar type",
                                     p.span)
                ctx.locals[-1][p.name] = p.type
            kind, stall = "rule", False
        else:
            _, ev_params, in_clause, when_clause, tail = children
            assert on_name is not None
            name = on_name
            stall = isinstance(tail, Tree) and tail.data == "stall"
            body = None if stall else tail
            if str(name) in self.events:
                kind = "event"
                if machine.kind is ir.MachineKind.MACHINE:
                    if self.event_machine is None:
                        self.event_machine = machine
                    elif self.event_machine.name != machine.name:
                        raise self.error(f"processor event '{name}' in machine {machine.name}: "
                                         "processor events belong to one machine, and "
                                         f"{self.event_machine.name} handles them",
                                         name)
                elif machine.kind is not ir.MachineKind.CACHE:
                    raise self.error(f"processor event '{name}' can only be handled by the cache "
                                     "machine", name)
                if stall:
                    raise self.error("'stall' is for messages; a processor event with no "
                                     "transition in a state simply waits", tail)
                event = self.events[str(name)]
                got = ev_params.children if ev_params else []
                if len(got) != len(event.params):
                    raise self.error(f"event {name} has {len(event.params)} parameter(s), "
                                     f"got {len(got)}", ev_params or name)
                params = tuple(ir.Field(str(g), p.type, self.span(g))
                               for g, p in zip(got, event.params, strict=True))
                for p in params:
                    ctx.locals[-1][p.name] = p.type
            elif str(name) in self.messages:
                kind = "message"
                if ev_params is not None:
                    raise self.error("message fields are read as msg.FIELD, not bound as "
                                     "parameters", ev_params)
                ctx.message = self.messages[str(name)]
                params = ()
            else:
                raise self.error(f"'{name}' is neither a declared event nor a message", name)
        states = self.state_names(machine, in_clause)
        guard = None
        if when_clause is not None:
            guard = self.expr(when_clause.children[0], ctx)
            self.expect_bool(guard, when_clause.children[0])
        stmts = () if body is None else self.block(body, ctx)
        mark = None if fairness is None else " ".join(str(fairness).split())
        fair = None if mark is None else mark != "unfair"
        if mark is not None and stall:
            raise self.error(f"'{mark}' has no meaning on a stall: a stalled message is not "
                             "taken", fairness)
        _check_gotos(stmts, None, self)
        return ir.Transition(machine.name, kind, str(name), params, states, guard, stmts, stall,
                             index, self.span(node), fair, mark == "strong fair")

    def check_message_handlers(self) -> None:
        """Catch statically what is certainly a 'no rule' error: a message nobody handles."""
        handled = {(t.name, m.kind) for m in self.machines.values() for t in m.transitions}
        for m in self.messages.values():
            if not any(name == m.name for name, _ in handled):
                continue  # an unsent, unhandled message type is harmless
        # Sends to a machine that has no transition for the message at all.
        for machine in self.machines.values():
            for t in machine.transitions:
                for s in ir.walk_stmts(t.body):
                    if isinstance(s, (ir.Send, ir.Broadcast, ir.Multicast)):
                        self.check_receiver(s)

    def check_receiver(self, s: ir.Send | ir.Broadcast | ir.Multicast) -> None:
        if self.hier:
            if isinstance(s, ir.Multicast):
                receivers = [self.machines[s.machine]]
            elif isinstance(s, ir.Send) and isinstance(s.dst, ir.NodeOf):
                receivers = [self.machines[s.dst.machine]]
            else:
                receivers = list(self.machines.values())
            if not any(t.name == s.message for m in receivers for t in m.transitions):
                names = " or ".join(m.name for m in receivers)
                raise self.error(f"message {s.message} is sent, but {names} has no transition "
                                 "for it", s.span)
            return
        assert not isinstance(s, ir.Multicast)
        kinds: set[str] = set()
        if isinstance(s, ir.Broadcast):
            kinds.add("cache")
        elif isinstance(s.dst, ir.Lit) and s.dst.value == self.agents:
            kinds.add("home")
        elif isinstance(s.dst.type, ir.AgentT):
            kinds.add("cache")
        else:
            kinds.update(("cache", "home"))
        receivers = [m for m in self.machines.values() if m.kind in kinds]
        if not receivers:
            raise self.error(f"message {s.message} is sent to a {' or '.join(sorted(kinds))} "
                             "machine, but the spec has none", s.span)
        if not any(t.name == s.message for m in receivers for t in m.transitions):
            names = " or ".join(m.name for m in receivers)
            raise self.error(f"message {s.message} is sent, but {names} has no transition for "
                             "it", s.span)

    def invariant_decl(self, node: Tree) -> ir.Invariant:
        aux, name, expr_node = node.children
        self.declare(name, "invariant")
        ctx = _Ctx(in_invariant=True)
        e = self.expr(expr_node, ctx)
        self.expect_bool(e, expr_node)
        return ir.Invariant(str(name), e, aux is not None, self.span(name))

    def assume_decl(self, node: Tree) -> ir.Assumption:
        name_node, expr_node = node.children
        if name_node is not None:
            tok = name_node.children[0]
            self.declare(tok, "assumption")
            name = str(tok)
        else:
            name = f"assume_line{self.span(node).line}"
        e = self.expr(expr_node, _Ctx(in_invariant=True))
        self.expect_bool(e, expr_node)
        return ir.Assumption(name, e, self.span(node))

    def property_decl(self, node: Tree) -> ir.Property:
        name, kind = node.children
        self.declare(name, "property")
        if str(kind) not in PROPERTY_KINDS:
            raise self.error(f"unknown property kind '{kind}' (expected: "
                             f"{', '.join(PROPERTY_KINDS)})", kind)
        return ir.Property(str(name), str(kind), self.span(name))

    def liveness_decl(self, node: Tree) -> ir.Liveness:
        """AG EF GOAL, or PREMISE ~> GOAL where a leading ``forall`` binds both sides."""
        name, first, leads_to = node.children
        self.declare(name, "liveness property")
        ctx = _Ctx(in_invariant=True)
        if leads_to is None:
            goal = self.expr(first, ctx)
            self.expect_bool(goal, first)
            return ir.Liveness(str(name), ir.LivenessKind.REACHABLE, (), None, goal,
                               self.span(name))
        binders: list[ir.Field] = []
        premise_node = first
        with self.scope(ctx):
            while (isinstance(premise_node, Tree) and premise_node.data == "quant"
                   and str(premise_node.children[0]) == "forall"):
                *binder_nodes, premise_node = premise_node.children[1:]
                for binder in binder_nodes:
                    bname, type_node = binder.children
                    t = self.binder_type(type_node, ctx)
                    if isinstance(t, _MsgBinding):
                        raise self.error("a leads-to's variables range over agents or finite "
                                         "types, not over messages in flight (which come and "
                                         "go between P and Q)", type_node)
                    self.bind(ctx, bname, t)
                    binders.append(ir.Field(str(bname), t, self.span(bname)))
            premise = self.expr(premise_node, ctx)
            self.expect_bool(premise, premise_node)
            goal_node = leads_to.children[0]
            goal = self.expr(goal_node, ctx)
            self.expect_bool(goal, goal_node)
        return ir.Liveness(str(name), ir.LivenessKind.LEADS_TO, tuple(binders), premise, goal,
                           self.span(name))

    # ------------------------------------------------------------ statements

    def block(self, node: Tree, ctx: _Ctx) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        with self.scope(ctx):
            for s in node.children:
                if s.data == "call_stmt" and self.procedure_of(s.children[0]) is not None:
                    out += self.expand_call(s.children[0], ctx)
                else:
                    out.append(self.stmt(s, ctx))
        return tuple(out)

    # ------------------------------------------------------------ procedures

    def procedure_decl(self, node: Tree) -> None:
        name, *rest = node.children
        self.declare(name, "procedure")
        params: list[ir.Field] = []
        for f in rest[:-1]:
            if f is None:
                continue
            pname, ptype = f.children
            if str(pname) in RESERVED:
                raise self.error(f"'{pname}' is a reserved word", pname)
            if any(p.name == str(pname) for p in params):
                raise self.error(f"duplicate parameter '{pname}' in procedure {name}", pname)
            t = self.type_(ptype)
            if isinstance(t, ir.ArrayT):
                raise self.error(f"procedure parameter '{pname}' cannot be an array (pass an "
                                 "element, or read the array in the body)", ptype)
            params.append(ir.Field(str(pname), t, self.span(pname)))
        self.procedures[str(name)] = _Procedure(str(name), tuple(params), node)

    def procedure_of(self, node: Tree) -> _Procedure | None:
        if node.data != "call" or node.children[0].data != "name":
            return None
        return self.procedures.get(str(node.children[0].children[0]))

    def expand_call(self, node: Tree, ctx: _Ctx) -> list[ir.Stmt]:
        """``P(args);``: the procedure's body, lowered here (in this machine and transition)
        with each parameter a ``let`` of its argument, evaluated first (call by value). Every
        name the body binds gets a suffix unique to this call, so that it can neither capture
        nor clash with the caller's names in any back end."""
        proc = self.procedure_of(node)
        assert proc is not None
        proc.called = True
        sp = self.span(node)
        if proc.name in self.expanding:
            chain = " -> ".join([*self.expanding[self.expanding.index(proc.name):], proc.name])
            raise self.error(f"procedure '{proc.name}' calls itself ({chain}): recursion is not "
                             "supported, since procedures are expanded where they are called",
                             node)
        args = [a for a in node.children[1].children if a is not None]
        if len(args) != len(proc.params):
            raise self.error(f"procedure {proc.name} takes {len(proc.params)} argument(s), got "
                             f"{len(args)}", node)
        values = []
        bound: dict[str, ir.Type] = {}
        for p, a in zip(proc.params, args, strict=True):
            e = self.expr(a, ctx, expected=p.type)
            self.check_assignable(p.type, e, a, what=f"parameter '{p.name}' of {proc.name}")
            if (isinstance(p.type, ir.IntT) and isinstance(e.type, ir.IntT)
                    and not p.type.lo <= e.type.lo <= e.type.hi <= p.type.hi):
                raise self.error(f"argument for parameter '{p.name}' of {proc.name} may be "
                                 f"outside {p.type} (it is {e.type})", a)
            values.append(e)
            # a node passed for an agent stays a node: its uses check that it is an agent
            bound[p.name] = e.type if isinstance(e.type, ir.NodeT) else p.type
        self.expansions += 1
        suffix = f"__{proc.name}{self.expansions}"
        inner = _Ctx(machine=ctx.machine, message=ctx.message, locals=[bound])
        self.expanding.append(proc.name)
        try:
            body = self.block(proc.node.children[-1], inner)
        except SpecError as err:
            if "(in procedure " in err.message:
                raise
            raise SpecError(f"{err.message} (in procedure {proc.name}, called at {sp})",
                            err.span, self.source) from None
        finally:
            self.expanding.pop()
        # an argument that cannot change while the body runs is put in place of its parameter
        # (so `msg.src` stays `msg.src` for every back end); any other is a `let`
        # (the caller's expressions are not renamed: only names bound in the body are)
        same = {p.name + suffix: v for p, v in zip(proc.params, values, strict=True)
                if isinstance(v, _IMMUTABLE) and not (isinstance(v, ir.Lit) and v.value is None)}
        lets: list[ir.Stmt] = [ir.Let(p.name + suffix, v, sp)
                               for p, v in zip(proc.params, values, strict=True)
                               if p.name + suffix not in same]
        return [*lets, *(_substitute(_rename(s, suffix), same) for s in body)]

    @contextmanager
    def scope(self, ctx: _Ctx) -> Iterator[None]:
        ctx.locals.append({})
        try:
            yield
        finally:
            ctx.locals.pop()

    def bind(self, ctx: _Ctx, name: Token, t: ir.Type) -> None:
        if str(name) in RESERVED:
            raise self.error(f"'{name}' is a reserved word", name)
        if str(name) in self.consts:
            raise self.error(f"'{name}' is a constant and cannot be bound here", name)
        for frame in ctx.locals:
            if str(name) in frame:
                raise self.error(f"'{name}' is already bound here", name)
        ctx.locals[-1][str(name)] = t

    def stmt(self, node: Tree, ctx: _Ctx) -> ir.Stmt:
        sp = self.span(node)
        kind = node.data
        machine = ctx.machine
        assert machine is not None
        if kind == "assign":
            target_node, value_node = node.children
            target = self.lvalue(target_node, ctx)
            value = self.expr(value_node, ctx, expected=target.type)
            self.check_assignable(target.type, value, value_node)
            return ir.Assign(target, value, sp)
        if kind == "undefine":
            target = self.lvalue(node.children[0], ctx)
            return ir.Assign(target, ir.Lit(target.type, None, sp), sp)
        if kind == "let_stmt":
            name, value_node = node.children
            value = self.expr(value_node, ctx)
            self.bind(ctx, name, value.type)
            return ir.Let(str(name), value, sp)
        if kind == "call_stmt":
            return self.method_call(node.children[0], ctx)
        if kind == "if_stmt":
            cond_node, then_node, else_node = node.children
            cond = self.expr(cond_node, ctx)
            self.expect_bool(cond, cond_node)
            then = self.block(then_node, ctx)
            orelse: tuple[ir.Stmt, ...] = ()
            if else_node is not None:
                inner = else_node.children[0]
                orelse = (self.stmt(inner, ctx),) if inner.data == "if_stmt" else self.block(
                    inner, ctx)
            return ir.If(cond, then, orelse, sp)
        if kind == "for_stmt":
            name, type_node, body_node = node.children
            t = self.type_(type_node)
            if not _enumerable(t):
                raise self.error(f"cannot loop over {t}", type_node)
            with self.scope(ctx):
                self.bind(ctx, name, t)
                body = self.block(body_node, ctx)
            return ir.For(str(name), t, body, sp)
        if kind == "send":
            name, args_node, dst_node = node.children
            message = self.message_ref(name)
            args = self.message_args(message, args_node, name, ctx)
            dst = self.expr(dst_node, ctx)
            if not isinstance(dst.type, self.node_or_agent()):
                want = "a node (L2[g], Mem, msg.src, self)" if self.hier else "an agent or home"
                raise self.error(f"send destination must be {want}, got {dst.type}",
                                 dst_node)
            return ir.Send(message.name, args, dst, sp)
        if kind == "broadcast":
            name, args_node, to_node, except_node = node.children
            message = self.message_ref(name)
            args = self.message_args(message, args_node, name, ctx)
            exclude = None
            if except_node is not None:
                exclude = self.expr(except_node.children[0], ctx)
                if not isinstance(exclude.type, self.node_or_agent()):
                    want = "a node" if self.hier else "an agent"
                    raise self.error(f"'except' needs {want}, got {exclude.type}",
                                     except_node.children[0])
            if self.hier:
                if to_node is None:
                    raise self.error("say which machines receive it: 'broadcast "
                                     f"{name} to L1;' or 'to L1[g];' (the instances of gpu g)",
                                     node)
                target, prefix = self.broadcast_target(to_node.children[0], ctx)
                return ir.Multicast(message.name, args, target.name, prefix, exclude, sp)
            if to_node is not None:
                raise self.error("'broadcast ... to' names machines of a hierarchical spec; "
                                 "here a broadcast goes to every agent", to_node)
            return ir.Broadcast(message.name, args, exclude, sp)
        if kind == "goto":
            target = node.children[0]
            if str(target) not in machine.state_type.members:
                raise self.error(f"unknown state '{target}' in machine {machine.name}", target)
            return ir.Goto(str(target), sp)
        if kind == "perform":
            op, value_node, by_node = node.children
            if str(op) not in PERFORM_KINDS:
                raise self.error(f"unknown operation '{op}' (expected: load, store)", op)
            if value_node is None:
                raise self.error(f"perform {op} needs the value, e.g. perform {op}(data)", op)
            value = self.expr(value_node, ctx)
            if not isinstance(value.type, ir.ValueT):
                raise self.error(f"perform {op} takes a value, got {value.type}", value_node)
            if by_node is not None:
                agent = self.expr(by_node.children[0], ctx)
                if not isinstance(agent.type, self.node_or_agent()):
                    raise self.error(f"'by' needs {'a node' if self.hier else 'an agent'}, got "
                                     f"{agent.type}", by_node.children[0])
            elif machine.kind is ir.MachineKind.CACHE:
                agent = ir.SelfId(ir.AgentT(self.agents), sp)
            elif machine.kind is ir.MachineKind.MACHINE and (
                    self.event_machine is None or self.event_machine.name == machine.name):
                agent = ir.SelfId(self.node_type(), sp)
            else:
                raise self.error(f"perform {op} in the home machine must say for which agent "
                                 "('by msg.src')", node)
            return ir.Perform(str(op), value, agent, sp)
        if kind == "assert_stmt":
            cond_node, text = node.children
            cond = self.expr(cond_node, ctx)
            self.expect_bool(cond, cond_node)
            label = str(text)[1:-1] if text is not None else "assertion failed"
            return ir.Assert(cond, label, sp)
        raise self.error(f"unsupported statement {kind}", node)  # pragma: no cover

    def broadcast_target(self, node: Tree, ctx: _Ctx) -> tuple[ir.Machine, tuple[ir.Expr, ...]]:
        """``L2`` (every instance) or ``L1[g]`` (those whose leading indices are these)."""
        base, args = node, []
        if node.data == "index":
            base, *args = node.children
        if base.data != "name" or str(base.children[0]) not in self.machines:
            raise self.error("broadcast to a machine: 'to L2;' or 'to L1[g];'", node)
        m = self.machines[str(base.children[0])]
        return m, self.machine_ref(m, args, node, ctx)

    def message_ref(self, name: Token) -> ir.Message:
        if str(name) not in self.messages:
            raise self.error(f"unknown message '{name}'", name)
        return self.messages[str(name)]

    def message_args(self, message: ir.Message, args_node: Tree | None, at: Token,
                     ctx: _Ctx) -> tuple[ir.Expr, ...]:
        arg_nodes = [a for a in (args_node.children if args_node else []) if a is not None]
        if len(arg_nodes) != len(message.fields):
            raise self.error(f"message {message.name} has {len(message.fields)} field(s), got "
                             f"{len(arg_nodes)}", args_node or at)
        out = []
        for f, a in zip(message.fields, arg_nodes, strict=True):
            e = self.expr(a, ctx, expected=f.type)
            self.check_assignable(f.type, e, a, what=f"field '{f.name}' of {message.name}")
            out.append(e)
        return tuple(out)

    def method_call(self, node: Tree, ctx: _Ctx) -> ir.Stmt:
        if node.data != "call" or node.children[0].data != "attr":
            raise self.error("this expression has no effect; statements are assignments, "
                             "calls like s.add(a), send, goto, ...", node)
        target_node, method = node.children[0].children
        args = [a for a in node.children[1].children if a is not None]
        target = self.lvalue(target_node, ctx)
        sp = self.span(node)
        if not isinstance(target.type, ir.SetT):
            raise self.error(f"'{method}' is a set method, but the target is {target.type}",
                             method)
        if str(method) == "clear":
            if args:
                raise self.error("clear() takes no arguments", node)
            return ir.Assign(target, ir.Lit(target.type, 0, sp), sp)
        if str(method) in ("add", "remove"):
            if len(args) != 1:
                raise self.error(f"{method}() takes one agent", node)
            elem = self.expr(args[0], ctx)
            if isinstance(target.type.elem, ir.IndexT):
                if elem.type != target.type.elem:
                    raise self.error(f"{method}() takes a {target.type.elem}, got {elem.type}",
                                     args[0])
            elif not isinstance(elem.type, (ir.AgentT, ir.NodeT)):
                raise self.error(f"{method}() takes an agent, got {elem.type}", args[0])
            op = "with" if str(method) == "add" else "without"
            return ir.Assign(target, ir.Binary(op, target, elem, target.type, sp), sp)
        raise self.error(f"unknown set method '{method}' (expected: add, remove, clear)",
                         method)

    def lvalue(self, node: Tree, ctx: _Ctx) -> ir.GVar | ir.MVar | ir.Index:
        e = self.expr(node, ctx)
        if isinstance(e, (ir.GVar, ir.MVar)):
            return e
        if isinstance(e, ir.Index):
            base = e.base
            while isinstance(base, ir.Index):
                base = base.base
            if isinstance(base, (ir.GVar, ir.MVar)):
                return e
        if isinstance(e, ir.MState):
            raise self.error("the control state changes only with 'goto'", node)
        raise self.error("cannot assign to this expression", node)

    # ------------------------------------------------------------ expressions

    def expect_bool(self, e: ir.Expr, node: Tree) -> None:
        if not isinstance(e.type, ir.BoolT):
            raise self.error(f"expected a bool, got {e.type}", node)

    def check_assignable(self, to: ir.Type, value: ir.Expr, node: Tree,
                         what: str = "") -> None:
        where = f" for {what}" if what else ""
        if isinstance(value, ir.Lit) and value.value is None:
            return
        if not ir.assignable(to, value.type):
            got = str(value.type)
            if isinstance(value, ir.Lit) and isinstance(value.type, ir.IntT):
                got = f"the int {value.value}"
            raise self.error(f"type mismatch{where}: expected {to}, got {got}", node)
        if (isinstance(to, ir.IntT) and isinstance(value, ir.Lit) and value.value is not None
                and not to.lo <= value.value <= to.hi):
            raise self.error(f"constant {value.value} is outside {to}", node)

    def lookup_local(self, ctx: _Ctx, name: str) -> ir.Type | None:
        for frame in reversed(ctx.locals):
            if name in frame:
                return frame[name]
        return None

    def expr(self, node: Tree | Token, ctx: _Ctx, expected: ir.Type | None = None) -> ir.Expr:
        result = self._expr(node, ctx, expected)
        if isinstance(result, _MachineRef) and isinstance(result.agent, ir.NodeOf):
            return result.agent  # a hierarchical machine instance, as a node
        if isinstance(result, _MachineRef):
            raise self.error(f"'{result.machine.name}' is a machine; read a variable or its "
                             "state, e.g. .state", node)
        return result

    def _expr(self, node: Tree | Token, ctx: _Ctx,
              expected: ir.Type | None = None) -> ir.Expr | _MachineRef:
        sp = self.span(node)
        kind = node.data
        if kind == "int_lit":
            value = int(node.children[0])
            if isinstance(expected, ir.ValueT):
                if not 0 <= value < expected.n:
                    raise self.error(f"data value {value} is outside 0..{expected.n - 1} "
                                     f"(values = {expected.n})", node)
                return ir.Lit(expected, value, sp)
            return ir.Lit(ir.IntT(value, value), value, sp)
        if kind == "name":
            return self.name(node.children[0], ctx, expected)
        if kind == "set_lit":
            elems_nodes = [c for c in node.children if c is not None]
            if not elems_nodes:
                if isinstance(expected, ir.SetT):
                    return ir.Lit(expected, 0, sp)
                if self.hier:
                    raise self.error("the type of '{}' is not known here: assign it to a set "
                                     "variable, or clear one with s.clear()", node)
                return ir.Lit(ir.SetT(ir.AgentT(self.agents)), 0, sp)
            elem_expected = expected.elem if isinstance(expected, ir.SetT) else None
            elems = [self.expr(c, ctx, elem_expected) for c in elems_nodes]
            t0 = elems[0].type
            for e, n in zip(elems, elems_nodes, strict=True):
                if type(e.type) is not type(t0) or (
                        isinstance(t0, (ir.StateT, ir.EnumT)) and e.type != t0):
                    raise self.error(f"set elements must all have one type: {t0} and {e.type}",
                                     n)
            if isinstance(t0, ir.IndexT):
                return ir.SetLit(tuple(elems), ir.SetT(t0), sp)
            if isinstance(t0, (ir.AgentT, ir.NodeT)):
                return ir.SetLit(tuple(elems), ir.SetT(ir.AgentT(self.agents)), sp)
            return ir.SetLit(tuple(elems), t0, sp)
        if kind == "attr":
            return self.attr(node, ctx)
        if kind == "index":
            base_node, *idx_nodes = node.children
            if (self.hier and base_node.data == "name"
                    and str(base_node.children[0]) in self.machines):
                m = self.machines[str(base_node.children[0])]
                if not m.indices:
                    raise self.error(f"machine {m.name} is not replicated: write {m.name}",
                                     node)
                if len(idx_nodes) != len(m.indices):
                    names = ", ".join(f.name for f in m.indices)
                    raise self.error(f"machine {m.name} has {len(m.indices)} ind"
                                     f"{'ex' if len(m.indices) == 1 else 'ices'} ({names}), "
                                     f"got {len(idx_nodes)}", node)
                values = self.machine_ref(m, idx_nodes, node, ctx)
                return _MachineRef(m, ir.NodeOf(m.name, values, self.node_type(), sp))
            if len(idx_nodes) != 1:
                raise self.error(f"one index expected, got {len(idx_nodes)}", node)
            idx_node = idx_nodes[0]
            if base_node.data == "name" and str(base_node.children[0]) in self.machines:
                m = self.machines[str(base_node.children[0])]
                if m.kind is not ir.MachineKind.CACHE:
                    raise self.error(f"'{m.name}' is the home machine; it is not indexed by "
                                     "agent", node)
                agent = self.expr(idx_node, ctx)
                if not isinstance(agent.type, (ir.AgentT, ir.NodeT)):
                    raise self.error(f"'{m.name}' is indexed by agent, got {agent.type}",
                                     idx_node)
                return _MachineRef(m, agent)
            base = self.expr(base_node, ctx)
            if not isinstance(base.type, ir.ArrayT):
                raise self.error(f"cannot index a value of type {base.type}", base_node)
            idx = self.expr(idx_node, ctx, base.type.index)
            if not ir.assignable(base.type.index, idx.type):
                raise self.error(f"index type mismatch: expected {base.type.index}, got "
                                 f"{idx.type}", idx_node)
            return ir.Index(base, idx, base.type.elem, sp)
        if kind == "call":
            return self.call(node, ctx)
        if kind == "neg":
            arg = self.expr(node.children[0], ctx)
            if not isinstance(arg.type, ir.IntT):
                raise self.error(f"'-' needs an int, got {arg.type}", node)
            if isinstance(arg, ir.Lit) and arg.value is not None:
                return ir.Lit(ir.IntT(-arg.value, -arg.value), -arg.value, sp)
            return ir.Unary("-", arg, ir.IntT(-arg.type.hi, -arg.type.lo), sp)
        if kind == "not_op":
            arg = self.expr(node.children[0], ctx)
            self.expect_bool(arg, node.children[0])
            return ir.Unary("!", arg, ir.BoolT(), sp)
        if kind in ("and_op", "or_op", "implies"):
            a_node, b_node = node.children
            a, b = self.expr(a_node, ctx), self.expr(b_node, ctx)
            self.expect_bool(a, a_node)
            self.expect_bool(b, b_node)
            op = {"and_op": "&&", "or_op": "||", "implies": "->"}[kind]
            return ir.Binary(op, a, b, ir.BoolT(), sp)
        if kind == "arith":
            a_node, op, b_node = node.children
            a, b = self.expr(a_node, ctx), self.expr(b_node, ctx)
            for e, n in ((a, a_node), (b, b_node)):
                if not isinstance(e.type, ir.IntT):
                    raise self.error(f"'{op}' needs ints, got {e.type}", n)
            assert isinstance(a.type, ir.IntT) and isinstance(b.type, ir.IntT)
            if op == "+":
                t = ir.IntT(a.type.lo + b.type.lo, a.type.hi + b.type.hi)
            else:
                t = ir.IntT(a.type.lo - b.type.hi, a.type.hi - b.type.lo)
            return ir.Binary(str(op), a, b, t, sp)
        if kind == "compare":
            a_node, op, b_node = node.children
            a, b = self.pair(a_node, b_node, ctx)
            if str(op) in ("==", "!="):
                if not (ir.assignable(a.type, b.type) or ir.assignable(b.type, a.type)):
                    raise self.error(f"cannot compare {a.type} with {b.type}", node)
            elif not (isinstance(a.type, ir.IntT) and isinstance(b.type, ir.IntT)):
                raise self.error(f"'{op}' compares ints, got {a.type} and {b.type}", node)
            return ir.Binary(str(op), a, b, ir.BoolT(), sp)
        if kind == "not_member":
            return ir.Unary("!", self.member(node, ctx, sp), ir.BoolT(), sp)
        if kind == "cond_expr":
            return self.cond_expr(node, ctx, expected, sp)
        if kind == "member":
            return self.member(node, ctx, sp)
        if kind == "node_is":
            node_node, mname = node.children
            n = self.expr(node_node, ctx)
            if not isinstance(n.type, ir.HNodeT):
                raise self.error(f"'is' tests a node of a hierarchical spec, got {n.type}",
                                 node_node)
            if str(mname) not in self.machines:
                raise self.error(f"unknown machine '{mname}'", mname)
            return ir.NodeIs(n, str(mname), ir.BoolT(), sp)
        if kind == "quant":
            quant, *rest = node.children
            binders, body_node = rest[:-1], rest[-1]
            with self.scope(ctx):
                bound: list[tuple[str, ir.Type | _MsgBinding]] = []
                for binder in binders:
                    name, type_node = binder.children
                    t = self.binder_type(type_node, ctx)
                    self.bind(ctx, name, t)  # type: ignore[arg-type]
                    bound.append((str(name), t))
                body = self.expr(body_node, ctx)
                self.expect_bool(body, body_node)
            for name, t in reversed(bound):
                if isinstance(t, _MsgBinding):
                    body = ir.MsgQuant(str(quant), name, t.message, body, ir.BoolT(), sp)
                else:
                    body = ir.Quant(str(quant), name, t, body, ir.BoolT(), sp)
            return body
        if kind == "count_expr":
            return self.count_expr(node, ctx, sp)
        raise self.error(f"unsupported expression {kind}", node)  # pragma: no cover

    def count_expr(self, node: Tree, ctx: _Ctx, sp: Span) -> ir.Expr:
        """``count(a: T :: body)``: an ``int[0..|T|]``, binding ``a`` like ``forall`` does over
        the same finite types; or ``count(m: Msg :: body)``, how many messages of a type in
        flight make ``body`` true (invariants only, as the message quantifiers), an
        ``int[0..bound]`` with ``bound`` the most its network can hold (NOTE(message-count))."""
        _, binder, body_node = node.children
        name, type_node = binder.children
        with self.scope(ctx):
            t = self.binder_type(type_node, ctx)
            self.bind(ctx, name, t)  # type: ignore[arg-type]
            body = self.expr(body_node, ctx)
            self.expect_bool(body, body_node)
        if isinstance(t, _MsgBinding):
            bound = self.network_bound(self.messages[t.message].network)
            return ir.MsgQuant("count", str(name), t.message, body, ir.IntT(0, bound), sp)
        return ir.Count(str(name), t, body, ir.IntT(0, len(ir.domain(t))), sp)

    def network_bound(self, name: str) -> int:
        """The most messages network ``name`` can hold at once: its capacity in all
        (unordered), per ordered pair of nodes (fifo), none between steps (bus)."""
        net = self.networks[name]
        nodes = self.node_count if self.hier else self.agents + 1
        match net.ordering:
            case ir.Ordering.UNORDERED:
                return net.capacity
            case ir.Ordering.FIFO:
                return net.capacity * nodes * nodes
            case _:
                return 0

    def cond_expr(self, node: Tree, ctx: _Ctx, expected: ir.Type | None, sp: Span) -> ir.Expr:
        """``if c then a else b``: both branches have one type (ints: the union of their
        ranges; an agent and a node: a node)."""
        c_node, a_node, b_node = node.children
        cond = self.expr(c_node, ctx)
        self.expect_bool(cond, c_node)
        a = self.expr(a_node, ctx, expected)
        b = self.expr(b_node, ctx, expected or a.type)
        if isinstance(b.type, ir.ValueT) and isinstance(a, ir.Lit) and isinstance(
                a.type, ir.IntT):
            a = self.expr(a_node, ctx, b.type)  # `if c then 0 else data`
        a_undef = isinstance(a, ir.Lit) and a.value is None
        b_undef = isinstance(b, ir.Lit) and b.value is None
        t: ir.Type
        if a_undef or b_undef:
            t = b.type if a_undef else a.type
        elif a.type == b.type:
            t = a.type
        elif isinstance(a.type, ir.IntT) and isinstance(b.type, ir.IntT):
            t = ir.IntT(min(a.type.lo, b.type.lo), max(a.type.hi, b.type.hi))
        elif {type(a.type), type(b.type)} == {ir.AgentT, ir.NodeT}:
            t = ir.NodeT(self.agents)
        else:
            raise self.error(f"the branches of 'if ... then ... else' have different types: "
                             f"{a.type} and {b.type}", node)
        if isinstance(t, ir.ArrayT):
            raise self.error("a conditional expression cannot choose between whole arrays",
                             node)
        return ir.Cond(cond, a, b, t, sp)

    def member(self, node: Tree, ctx: _Ctx, sp: Span) -> ir.Expr:
        """``a in s`` (and ``a not in s``, its negation)."""
        a_node, b_node = node.children
        if b_node.data == "set_lit":
            # the set's names are states or enum members of the left side's type
            a = self.expr(a_node, ctx)
            if isinstance(a.type, (ir.AgentT, ir.NodeT, ir.IndexT)):
                b = self.expr(b_node, ctx)
                return ir.Binary("in", a, b, ir.BoolT(), sp)
            elems = tuple(self.expr(c, ctx, a.type) for c in b_node.children
                          if c is not None)
            for e, n in zip(elems, b_node.children, strict=False):
                if e.type != a.type:
                    raise self.error(f"expected {a.type}, got {e.type}", n)
            return ir.Binary("in", a, ir.SetLit(elems, a.type, self.span(b_node)),
                             ir.BoolT(), sp)
        b = self.expr(b_node, ctx)
        if isinstance(b.type, ir.SetT):
            a = self.expr(a_node, ctx)
            if isinstance(b.type.elem, ir.IndexT):
                if a.type != b.type.elem:
                    raise self.error(f"'in' tests a {b.type.elem} against a {b.type}, got "
                                     f"{a.type}", a_node)
            elif not isinstance(a.type, (ir.AgentT, ir.NodeT)):
                raise self.error(f"'in' tests an agent against a set, got {a.type}", a_node)
            return ir.Binary("in", a, b, ir.BoolT(), sp)
        if isinstance(b, ir.SetLit):
            a = self.expr(a_node, ctx)
            if a.type != b.type:
                raise self.error(f"cannot test {a.type} against a set of {b.type}", node)
            return ir.Binary("in", a, b, ir.BoolT(), sp)
        raise self.error(f"'in' needs a set on the right, got {b.type}", b_node)

    def binder_type(self, type_node: Tree, ctx: _Ctx) -> ir.Type | _MsgBinding:
        """A quantifier ranges over a finite type, or over the messages of one type in flight
        (``forall m: Inv :: ...``, invariants only)."""
        if type_node.data == "named_type" and str(type_node.children[0]) in self.messages:
            if not ctx.in_invariant:
                raise self.error("quantifiers over messages in flight are only allowed in "
                                 "invariants", type_node)
            return _MsgBinding(str(type_node.children[0]))
        t = self.type_(type_node)
        if not _enumerable(t):
            raise self.error(f"cannot quantify over {t}", type_node)
        return t

    def pair(self, a_node: Tree, b_node: Tree, ctx: _Ctx) -> tuple[ir.Expr, ir.Expr]:
        """Lower both sides of ``==``; a bare state name takes the other side's machine."""
        if a_node.data == "name" and not self.resolvable(str(a_node.children[0]), ctx):
            b = self.expr(b_node, ctx)
            return self.expr(a_node, ctx, b.type), b
        a = self.expr(a_node, ctx)
        return a, self.expr(b_node, ctx, a.type)

    def resolvable(self, name: str, ctx: _Ctx) -> bool:
        if self.lookup_local(ctx, name) is not None:
            return True
        if name in ("self", "home", "msg", "state", "true", "false"):
            return True
        if ctx.machine is not None and any(v.name == name for v in ctx.machine.vars):
            return True
        if ctx.machine is not None and any(f.name == name for f in ctx.machine.indices):
            return True
        return (name in self.globals or name in self.params or name in self.consts
                or name in self.enum_members)

    def name(self, tok: Token, ctx: _Ctx, expected: ir.Type | None) -> ir.Expr | _MachineRef:
        name = str(tok)
        sp = self.span(tok)
        local = self.lookup_local(ctx, name)
        if isinstance(local, _MsgBinding):
            raise self.error(f"'{name}' is a message in flight: read {name}.FIELD, {name}.src "
                             f"or {name}.dst", tok)
        if local is not None:
            return ir.Local(name, local, sp)
        if name in ("true", "false"):
            return ir.Lit(ir.BoolT(), int(name == "true"), sp)
        if name == "undefined":
            if expected is None:
                raise self.error("'undefined' can only be assigned; test with "
                                 "isundefined(x)", tok)
            return ir.Lit(expected, None, sp)
        if name == "self":
            if self.hier and ctx.machine is not None:
                return ir.SelfId(self.node_type(), sp)
            if ctx.machine is None or ctx.machine.kind is not ir.MachineKind.CACHE:
                raise self.error("'self' is only defined in the cache machine", tok)
            return ir.SelfId(ir.AgentT(self.agents), sp)
        if name == "home":
            if self.hier:
                raise self.error("a hierarchical spec has no 'home': name the machine instance "
                                 "(e.g. send M to Mem; or L2[g])", tok)
            return ir.Lit(ir.NodeT(self.agents), self.agents, sp)
        if name == "msg":
            raise self.error("use msg.FIELD or msg.src", tok)
        if name == "state":
            if ctx.machine is None:
                raise self.error("'state' needs a machine here, e.g. Cache[a].state", tok)
            agent = self.self_ref(ctx.machine, sp)
            return ir.MState(ctx.machine.name, agent, ctx.machine.state_type, sp)
        if isinstance(expected, ir.StateT) and name in expected.members:
            return ir.Lit(expected, expected.members.index(name), sp)
        if ctx.machine is not None:
            for v in ctx.machine.vars:
                if v.name == name:
                    agent = self.self_ref(ctx.machine, sp)
                    return ir.MVar(ctx.machine.name, agent, name, v.type, sp)
            for f in ctx.machine.indices:
                if f.name == name:
                    assert isinstance(f.type, ir.IndexT)
                    return ir.NodeIndex(ir.SelfId(self.node_type(), sp), f.type.name, f.type,
                                        sp)
        if name in self.globals:
            return ir.GVar(name, self.globals[name].type, sp)
        if name in self.params or name in self.consts:
            value = self.params[name].value if name in self.params else self.consts[name]
            return ir.Lit(ir.IntT(value, value), value, sp)
        if name in self.enum_members:
            enum, i = self.enum_members[name]
            return ir.Lit(enum, i, sp)
        if name in self.machines:
            m = self.machines[name]
            if m.kind is ir.MachineKind.HOME:
                return _MachineRef(m, None)
            if m.kind is ir.MachineKind.MACHINE:
                if not m.indices:
                    return _MachineRef(m, ir.NodeOf(m.name, (), self.node_type(), sp))
                names = ", ".join(f.name for f in m.indices)
                types = ", ".join(str(f.type) for f in m.indices)
                raise self.error(f"'{name}' is replicated over {types}: write {name}[{names}]",
                                 tok)
            raise self.error(f"'{name}' is replicated per agent: write {name}[a]", tok)
        if name in self.indexes:
            raise self.error(f"'{name}' is an index type; quantify over it (forall x: {name} "
                             ":: ...)", tok)
        if ctx.machine is not None and name in ctx.machine.state_type.members:
            return ir.Lit(ctx.machine.state_type, ctx.machine.state_index(name), sp)
        if ctx.machine is None:
            for m in self.machines.values():
                if name in m.state_type.members:
                    which = "[a]" if m.kind is ir.MachineKind.CACHE else ""
                    if m.indices:
                        which = "[" + ", ".join(f.name for f in m.indices) + "]"
                    raise self.error(f"state name '{name}' needs a machine here: compare it "
                                     f"with {m.name}{which}.state", tok)
        raise self.error(f"unknown name '{name}'", tok)

    def attr(self, node: Tree, ctx: _Ctx) -> ir.Expr | _MachineRef:
        base_node, field = node.children
        sp = self.span(node)
        if base_node.data == "name" and str(base_node.children[0]) == "msg" and (
                self.lookup_local(ctx, "msg") is None):
            if ctx.message is None:
                raise self.error("'msg' is only defined in a transition for a message", node)
            if str(field) == "src":
                return ir.MsgSrc(self.node_type() if self.hier else ir.NodeT(self.agents), sp)
            for f in ctx.message.fields:
                if f.name == str(field):
                    return ir.MsgField(f.name, f.type, sp)
            names = ", ".join(["src", *(f.name for f in ctx.message.fields)])
            raise self.error(f"message {ctx.message.name} has no field '{field}' (it has: "
                             f"{names})", field)
        if base_node.data == "name":
            bound = self.lookup_local(ctx, str(base_node.children[0]))
            if isinstance(bound, _MsgBinding):
                return self.msg_var_attr(str(base_node.children[0]), bound.message, field, sp)
        base = self._expr(base_node, ctx)
        if isinstance(base, _MachineRef):
            m = base.machine
            if str(field) == "state":
                return ir.MState(m.name, base.agent, m.state_type, sp)
            for v in m.vars:
                if v.name == str(field):
                    return ir.MVar(m.name, base.agent, v.name, v.type, sp)
            if not m.vars and m.name in self.machines and not self.machines[m.name].vars:
                pass
            raise self.error(f"machine {m.name} has no variable '{field}'", field)
        if isinstance(base.type, ir.HNodeT):
            if str(field) not in self.indexes:
                raise self.error(f"a node has no field '{field}' (read one of its index "
                                 f"types: {', '.join(self.indexes) or 'none declared'})", field)
            return ir.NodeIndex(base, str(field), self.indexes[str(field)], sp)
        raise self.error(f"a value of type {base.type} has no field '{field}'", field)

    def msg_var_attr(self, var: str, message: str, field: Token, sp: Span) -> ir.Expr:
        if str(field) in ("src", "dst"):
            t = self.node_type() if self.hier else ir.NodeT(self.agents)
            return ir.MsgVarAttr(var, str(field), message, t, sp)
        msg = self.messages[message]
        for f in msg.fields:
            if f.name == str(field):
                return ir.MsgVarAttr(var, f.name, message, f.type, sp)
        if str(field) == ir.POSITION:
            return self.msg_position(var, message, field, sp)
        names = ", ".join(["src", "dst", *(f.name for f in msg.fields)])
        raise self.error(f"message {message} has no field '{field}' (it has: {names})", field)

    def msg_position(self, var: str, message: str, field: Token, sp: Span) -> ir.Expr:
        """NOTE(message-position): ``m.pos``, the message's place in its fifo queue (0: the
        next one delivered), an ``int[0..capacity-1]``. Only a fifo queue has an order; on an
        unordered network or the bus the place means nothing, so it is an error there."""
        net = self.networks[self.messages[message].network]
        if net.ordering is not ir.Ordering.FIFO:
            raise self.error(f"{var}.{field}: message {message} travels on network "
                             f"'{net.name}', which is {net.ordering.value}; only a fifo queue "
                             f"gives its messages a place", field)
        return ir.MsgVarAttr(var, ir.POSITION, message, ir.IntT(0, net.capacity - 1), sp)

    def call(self, node: Tree, ctx: _Ctx) -> ir.Expr:
        func_node, args_node = node.children
        sp = self.span(node)
        args = [a for a in args_node.children if a is not None]
        if func_node.data != "name":
            if func_node.data == "attr":
                raise self.error("set methods like s.add(a) are statements, not expressions",
                                 node)
            raise self.error("only built-in functions can be called", node)
        func = str(func_node.children[0])
        if func == "size":
            if len(args) != 1:
                raise self.error("size() takes one set", node)
            s = self.expr(args[0], ctx)
            if not isinstance(s.type, ir.SetT):
                raise self.error(f"size() takes a set, got {s.type}", args[0])
            assert isinstance(s.type, ir.SetT)
            return ir.Call("size", (s,), ir.IntT(0, s.type.elem.n), sp)
        if func == "all_agents":
            if self.hier:
                raise self.error("a hierarchical spec has no agents: build the set with a "
                                 "for loop over an index type", node)
            if args:
                raise self.error("all_agents() takes no arguments", node)
            return ir.Call("all_agents", (), ir.SetT(ir.AgentT(self.agents)), sp)
        if func == "isundefined":
            if len(args) != 1:
                raise self.error("isundefined() takes one variable", node)
            return ir.Call("isundefined", (self.expr(args[0], ctx),), ir.BoolT(), sp)
        if func == "inflight":
            if not 1 <= len(args) <= 2:
                raise self.error("inflight() takes a message name and optionally a "
                                 "destination: inflight(Inv, a)", node)
            if args[0].data != "name" or str(args[0].children[0]) not in self.messages:
                raise self.error("inflight() needs a message name first", args[0])
            dst = None
            if len(args) == 2:
                dst = self.expr(args[1], ctx)
                if not isinstance(dst.type, self.node_or_agent()):
                    raise self.error(f"inflight() destination must be an agent or home, got "
                                     f"{dst.type}", args[1])
            return ir.InFlight(str(args[0].children[0]), dst, ir.BoolT(), sp)
        raise self.error(f"unknown function '{func}' (built-ins: size, isundefined, inflight, "
                         "all_agents)",
                         func_node)


def _check_gotos(stmts: tuple[ir.Stmt, ...], done: ir.Goto | None,
                 low: _Lowerer) -> ir.Goto | None:
    """Reject a second ``goto`` on one path through a body (the first would be silently
    overridden); return a ``goto`` that may have run by the end of ``stmts``. A ``goto`` in a
    ``for`` body counts once: which iterations run it depends on the values."""
    for s in stmts:
        if isinstance(s, ir.Goto):
            if done is not None:
                raise low.error(f"a second 'goto' in one transition: 'goto {done.state}' (at "
                                f"{done.span}) may already have run on this path", s.span)
            done = s
        elif isinstance(s, ir.If):
            then = _check_gotos(s.then, done, low)
            orelse = _check_gotos(s.orelse, done, low)
            done = then if then is not None else orelse
        elif isinstance(s, ir.For):
            done = _check_gotos(s.body, done, low)
    return done


# the IR nodes that bind a name, and the field holding it
_BINDERS = {ir.Local: "name", ir.Let: "var", ir.For: "var", ir.Quant: "var",
            ir.Count: "var", ir.MsgQuant: "var", ir.MsgVarAttr: "var"}
_TYPES = (ir.BoolT, ir.IntT, ir.ValueT, ir.AgentT, ir.NodeT, ir.EnumT, ir.StateT, ir.SetT,
          ir.ArrayT, ir.IndexT, ir.HNodeT, Span)


_IMMUTABLE = (ir.Lit, ir.SelfId, ir.MsgSrc, ir.MsgField, ir.Local, ir.NodeIndex)


def _substitute(node: Any, values: dict[str, ir.Expr]) -> Any:
    """``node`` with each ``Local`` named in ``values`` replaced by its value."""
    if not values:
        return node
    if isinstance(node, ir.Local) and node.name in values:
        return values[node.name]
    if isinstance(node, tuple):
        return tuple(_substitute(x, values) for x in node)
    if not attrs.has(type(node)) or isinstance(node, _TYPES):
        return node
    changes = {}
    for f in attrs.fields(type(node)):
        value = getattr(node, f.name)
        new = _substitute(value, values)
        if new is not value:
            changes[f.name] = new
    return attrs.evolve(node, **changes) if changes else node


def _rename(node: Any, suffix: str) -> Any:
    """``node`` (IR statements or expressions) with every bound name given ``suffix``."""
    if isinstance(node, tuple):
        return tuple(_rename(x, suffix) for x in node)
    if not attrs.has(type(node)) or isinstance(node, _TYPES):
        return node
    changes: dict[str, Any] = {}
    binder = _BINDERS.get(type(node))
    for f in attrs.fields(type(node)):
        value = getattr(node, f.name)
        new = value + suffix if f.name == binder else _rename(value, suffix)
        if new is not value:
            changes[f.name] = new
    return attrs.evolve(node, **changes) if changes else node


def _enumerable(t: ir.Type) -> bool:
    return isinstance(t, (ir.BoolT, ir.IntT, ir.ValueT, ir.AgentT, ir.NodeT, ir.EnumT,
                          ir.IndexT, ir.HNodeT))


def _nested_indexes(t: ir.Type) -> list[ir.IndexT]:
    """The nested index types (``sm within gpu``) that values of ``t`` hold."""
    if isinstance(t, ir.IndexT):
        return [t] if t.parent is not None else []
    if isinstance(t, ir.SetT):
        return _nested_indexes(t.elem)
    if isinstance(t, ir.ArrayT):
        return _nested_indexes(t.index) + _nested_indexes(t.elem)
    return []


def _is_constant(e: ir.Expr) -> bool:
    if isinstance(e, ir.Lit):
        return True
    if isinstance(e, ir.SetLit):
        return all(_is_constant(x) for x in e.elems)
    return False


_ = (Any, lark)
