"""The packed layout of a state: one bit format shared by every engine.

Computed once per bound model (parameters and number of agents fixed), as Rumur computes
``Model::size_bits()`` in librumur. The reference engine stores visited states in it, the
compiled engine's generated C packs and unpacks it with the same offsets, and the GPU and
distributed engines move states around in it, so a state found by one engine can be decoded
by any other (and replayed through the reference semantics).

The format (bit ``k`` of a state is bit ``k % 64`` of 64-bit word ``k // 64``; slots are laid
out from bit 0 upwards in this order):

1. for each line: the globals, the home's control state then its variables, then for each
   agent the cache's control state then its variables;
2. for each network, in declaration order:
   - bus: nothing (delivered within the sending step);
   - unordered, capacity C: C record slots. A record is, from its most significant bits down,
     ``line | src | dst | type + 1 | fields``; the messages in flight sit in slots 0..k-1 in
     ascending order of their record's integer value, and the other slots are 0. That order
     is the semantics' own order of its sorted message tuples, so the multiset has one form;
   - fifo, capacity C: for each (line, src, dst) pair that can occur (``pairs``), C entry
     slots ``type + 1 | fields``, head first, empty slots 0 at the end;
3. the coherence monitor, per line and agent: the view, then one slot per value.

A scalar value is stored as ``value - lo + 1``, with 0 for *undefined*, in
``bit_length(size)`` bits; control states (never undefined) as their index. Arrays are
stored element by element (with a one-bit *defined* flag each when the model can make a
whole array undefined). Message fields follow each other, first field highest, inside a
union as wide as the widest message of the network.

NOTE(layout-agents): ``agent_slots`` says which slots belong to which agent (its cache
variables and its monitor entries); symmetry permutes those blocks and renames the values of
slots whose ``renames`` flag is set.

NOTE(hierarchy): a hierarchical spec (``ir.Model.is_hierarchical``) has no home block: each
line holds one block per node (``ir.instances``: every machine instance, numbered flat), each
with its own machine's control state and variables, in node order; message records name
nodes (``bits_for(nodes - 1)`` bits), FIFO queues exist for the (sender machine, receiver
machine) pairs the sends allow, and the monitor has one entry per processor. Its node
blocks belong to no agent (``agent_slots`` is per processor's monitor entry only): the
hierarchical symmetry (``coherence.symmetry.HierarchySymmetry``) permutes whole states.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

import attrs

from coherence import ir
from coherence.semantics import UNDEF, State


class LayoutError(Exception):
    """The configuration cannot be packed (e.g. a message record wider than 64 bits)."""


class SlotKind(enum.Enum):
    VALUE = "value"  # a scalar (code 0 = undefined)
    STATE = "state"  # a control state index
    DEFINED = "defined"  # 1 when the array that follows is defined
    RECORD = "record"  # one message of an unordered network (0 = empty)
    ENTRY = "entry"  # one queue position of a fifo network (0 = empty)
    VIEW = "view"  # monitor: the value of the write an agent last observed
    AFTER = "after"  # monitor: values written after a value's first write (+1; 0 = none)


@attrs.frozen
class Slot:
    name: str
    offset: int
    width: int
    kind: SlotKind
    lo: int = 0
    type: ir.Type | None = None
    agent: int | None = None  # whose block holds it (symmetry)

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    @property
    def renames(self) -> bool:
        """Its value names agents, so a permutation renames it."""
        return self.type is not None and isinstance(self.type, (
            ir.AgentT, ir.NodeT, ir.SetT, ir.IndexT, ir.HNodeT))


@attrs.frozen
class MessageFormat:
    """How one message type sits in its network's record or entry."""

    type_code: int  # stored type: local index + 1
    fields: tuple[tuple[int, int, ir.Type], ...]  # (shift inside the union, width, type)


@attrs.frozen
class NetLayout:
    name: str
    ordering: str
    capacity: int
    slots: tuple[int, ...] = ()  # unordered: the record slots
    pairs: tuple[tuple[int, int, int], ...] = ()  # fifo: (line, src, dst) per queue
    queues: tuple[tuple[int, ...], ...] = ()  # fifo: the entry slots of each queue
    formats: dict[int, MessageFormat] = attrs.field(factory=dict)  # global type -> format
    union_bits: int = 0
    type_bits: int = 0
    node_bits: int = 0
    line_bits: int = 0

    @property
    def record_bits(self) -> int:
        if self.ordering == "unordered":
            return self.line_bits + 2 * self.node_bits + self.type_bits + self.union_bits
        return self.type_bits + self.union_bits


def bits_for(n: int) -> int:
    """Bits to hold codes 0..n."""
    return max(n, 0).bit_length()


def scalar_size(t: ir.Type) -> tuple[int, int]:
    """(lo, number of values) of a scalar type."""
    match t:
        case ir.IntT():
            return t.lo, t.hi - t.lo + 1
        case (ir.BoolT() | ir.ValueT() | ir.AgentT() | ir.NodeT() | ir.EnumT() | ir.SetT()
              | ir.IndexT() | ir.HNodeT()):
            return 0, t.size()
        case ir.StateT():
            return 0, t.size()
        case _:
            raise LayoutError(f"{t} is not a scalar type")


def _walk_stmts(stmts: tuple[ir.Stmt, ...]) -> Iterator[ir.Stmt]:
    stack = list(reversed(stmts))
    while stack:
        s = stack.pop()
        yield s
        if isinstance(s, ir.If):
            stack.extend(reversed(s.orelse))
            stack.extend(reversed(s.then))
        elif isinstance(s, ir.For):
            stack.extend(reversed(s.body))


def _all_stmts(model: ir.Model) -> Iterator[tuple[ir.Machine, ir.Stmt]]:
    for m in model.machines:
        for t in m.transitions:
            for s in _walk_stmts(t.body):
                yield m, s


def arrays_can_be_undefined(model: ir.Model) -> bool:
    """Whether some statement assigns *undefined* to a whole array (``undefine arr``)."""
    return any(isinstance(s, ir.Assign) and isinstance(s.value.type, ir.ArrayT)
               for _m, s in _all_stmts(model)
               if isinstance(s, ir.Assign) and isinstance(s.value, ir.Lit)
               and s.value.value is None)


def fifo_endpoints(model: ir.Model) -> dict[str, set[tuple[str, str]]]:
    """Per network, the (sender kind, receiver kind) pairs its messages can travel between,
    from the sends in the spec: a queue that no send can fill takes no bits. (Hierarchical
    specs: the (sender machine, receiver machine) names.)"""
    home_id = model.agents
    out: dict[str, set[tuple[str, str]]] = {n.name: set() for n in model.networks}
    if model.is_hierarchical:
        every = [m.name for m in model.machines]
        for machine, s in _all_stmts(model):
            if isinstance(s, ir.Multicast):
                out[model.message(s.message).network].add((machine.name, s.machine))
            elif isinstance(s, ir.Send):
                net = model.message(s.message).network
                targets = [s.dst.machine] if isinstance(s.dst, ir.NodeOf) else every
                out[net].update((machine.name, t) for t in targets)
        return out
    for machine, s in _all_stmts(model):
        if isinstance(s, ir.Broadcast):
            out[model.message(s.message).network].add((machine.kind, "cache"))
        elif isinstance(s, ir.Send):
            net = model.message(s.message).network
            dst = s.dst
            if isinstance(dst, ir.Lit) and dst.value is not None:
                kinds = ["home" if dst.value == home_id else "cache"]
            elif isinstance(dst.type, ir.AgentT):
                kinds = ["cache"]
            else:
                kinds = ["cache", "home"]
            for k in kinds:
                out[net].add((machine.kind, k))
    return out


class Layout:
    """The packed layout of one bound model, with ``pack``/``unpack`` for the nested-tuple
    states of ``coherence.semantics``."""

    def __init__(self, model: ir.Model) -> None:
        self.model = model
        self.n = n = model.agents
        # every node id a message may name: agents and the home, or a hierarchical spec's
        # machine instances
        self.nodes = len(ir.instances(model)) if model.is_hierarchical else n + 1
        self.slots: list[Slot] = []
        self._offset = 0
        self.array_flags = arrays_can_be_undefined(model)
        home = model.home
        cache = model.caches[0] if model.caches else None
        # per line: list of slot-trees for globals, home, each cache (see _var_tree)
        self.line_globals: list[list[Any]] = []
        self.line_home: list[list[Any]] = []
        self.line_caches: list[list[list[Any]]] = []
        for line in range(model.lines):
            self.line_globals.append([self._var_tree(f"line{line}.{v.name}", v.type, None)
                                      for v in model.globals])
            home_slots: list[Any] = []
            if home is not None:
                home_slots.append(self._add(f"line{line}.{home.name}.state", SlotKind.STATE,
                                            bits_for(home.state_type.size() - 1),
                                            type=home.state_type))
                home_slots += [self._var_tree(f"line{line}.{home.name}.{v.name}", v.type, None)
                               for v in home.vars]
            self.line_home.append(home_slots)
            caches: list[list[Any]] = []
            if model.is_hierarchical:
                for inst in ir.instances(model):
                    mach = model.machine(inst.machine)
                    base = f"line{line}.{inst.machine}" + (
                        f"[{','.join(map(str, inst.values))}]" if inst.values else "")
                    node_slots: list[Any] = [self._add(
                        f"{base}.state", SlotKind.STATE, bits_for(mach.state_type.size() - 1),
                        type=mach.state_type)]
                    node_slots += [self._var_tree(f"{base}.{v.name}", v.type, None)
                                   for v in mach.vars]
                    caches.append(node_slots)
            elif cache is not None:
                for a in range(n):
                    base = f"line{line}.{cache.name}[{a}]"
                    one: list[Any] = [self._add(f"{base}.state", SlotKind.STATE,
                                                bits_for(cache.state_type.size() - 1),
                                                type=cache.state_type, agent=a)]
                    one += [self._var_tree(f"{base}.{v.name}", v.type, a) for v in cache.vars]
                    caches.append(one)
            self.line_caches.append(caches)
        endpoints = fifo_endpoints(model)
        self.nets: list[NetLayout] = []
        for net in model.networks:
            self.nets.append(self._net(net, endpoints[net.name]))
        self.monitor: list[list[tuple[int, list[int]]]] = []
        if any(p.kind == "coherence" for p in model.properties):
            for line in range(model.lines):
                per_agent = []
                for a in range(n):
                    view = self._add(f"monitor.line{line}[{a}].view", SlotKind.VIEW,
                                     bits_for(model.values - 1), agent=a)
                    after = [self._add(f"monitor.line{line}[{a}].after{v}", SlotKind.AFTER,
                                       bits_for(1 << model.values), agent=a)
                             for v in range(model.values)]
                    per_agent.append((view, after))
                self.monitor.append(per_agent)
        self._pair_index = {net.name: {p: i for i, p in enumerate(net.pairs)}
                            for net in self.nets}
        self.bits = self._offset
        self.words = max(1, (self.bits + 63) // 64)
        self.bytes = self.words * 8
        self.agent_slots: list[list[int]] = [
            [i for i, s in enumerate(self.slots) if s.agent == a] for a in range(n)]
        self._slot_shift = [s.offset for s in self.slots]
        self._slot_mask = [s.mask for s in self.slots]
        # NOTE(layout-speed): without arrays every variable is one slot; pack then walks flat
        # (shift, lo) lists (a control state is stored as v - 1 + 1, so lo = 1 there)
        self._flat = all(isinstance(t, int) for trees in (
            *self.line_globals, *self.line_home, *(c for cs in self.line_caches for c in cs))
            for t in trees)
        self._line_specs: list[tuple[list[tuple[int, int]], list[tuple[int, int]],
                                     list[list[tuple[int, int]]]]] = []
        if self._flat:
            def spec(trees: list[Any]) -> list[tuple[int, int]]:
                return [(self.slots[t].offset, 1 if self.slots[t].kind is SlotKind.STATE
                         else self.slots[t].lo) for t in trees]
            for line in range(model.lines):
                self._line_specs.append((spec(self.line_globals[line]),
                                         spec(self.line_home[line]),
                                         [spec(c) for c in self.line_caches[line]]))

    # ------------------------------------------------------------ building

    def _add(self, name: str, kind: SlotKind, width: int, lo: int = 0,
             type: ir.Type | None = None, agent: int | None = None) -> int:
        self.slots.append(Slot(name, self._offset, width, kind, lo, type, agent))
        self._offset += width
        return len(self.slots) - 1

    def _var_tree(self, name: str, t: ir.Type, agent: int | None) -> Any:
        """A slot index for a scalar; for an array (flag slot or None, [element trees])."""
        if isinstance(t, ir.ArrayT):
            flag = self._add(f"{name}.defined", SlotKind.DEFINED, 1, agent=agent) if (
                self.array_flags) else None
            elems = [self._var_tree(f"{name}[{i}]", t.elem, agent) for i in ir.domain(t.index)]
            return (flag, elems)
        lo, size = scalar_size(t)
        return self._add(name, SlotKind.VALUE, bits_for(size), lo, t, agent)

    def _net(self, net: ir.Network, ends: set[tuple[str, str]]) -> NetLayout:
        m = self.model
        if net.ordering == "bus":
            return NetLayout(net.name, net.ordering, net.capacity)
        types = [i for i, msg in enumerate(m.messages) if msg.network == net.name]
        formats: dict[int, MessageFormat] = {}
        union = 0
        widths: dict[int, list[tuple[int, ir.Type]]] = {}
        for t in types:
            fields: list[tuple[int, ir.Type]] = []
            for f in m.messages[t].fields:
                if isinstance(f.type, ir.ArrayT):
                    raise LayoutError(f"message field {m.messages[t].name}.{f.name}: arrays "
                                      "in messages cannot be packed")
                fields.append((bits_for(scalar_size(f.type)[1]), f.type))
            widths[t] = fields
            union = max(union, sum(w for w, _ in fields))
        for local, t in enumerate(types):
            shift = union
            placed = []
            for w, ft in widths[t]:
                shift -= w
                placed.append((shift, w, ft))
            formats[t] = MessageFormat(local + 1, tuple(placed))
        type_bits = bits_for(len(types))
        node_bits = bits_for(self.nodes - 1)
        line_bits = bits_for(m.lines - 1)
        layout = NetLayout(net.name, net.ordering, net.capacity, formats=formats,
                           union_bits=union, type_bits=type_bits, node_bits=node_bits,
                           line_bits=line_bits)
        width = layout.record_bits
        if width > 64:
            raise LayoutError(f"network {net.name}: a message takes {width} bits; at most 64 "
                              "can be packed")
        if net.ordering == "unordered":
            slots = tuple(self._add(f"net.{net.name}[{i}]", SlotKind.RECORD, width)
                          for i in range(net.capacity))
            return attrs.evolve(layout, slots=slots)
        hier = ir.instances(m)

        def kind_of(node: int) -> str:
            if m.is_hierarchical:
                return hier[node].machine
            return "home" if node == self.n else "cache"

        pairs = []
        queues = []
        for line in range(m.lines):
            for src in range(self.nodes):
                for dst in range(self.nodes):
                    if (kind_of(src), kind_of(dst)) not in ends:
                        continue
                    pairs.append((line, src, dst))
                    queues.append(tuple(
                        self._add(f"net.{net.name}.line{line}[{src}->{dst}][{i}]",
                                  SlotKind.ENTRY, width)
                        for i in range(net.capacity)))
        return attrs.evolve(layout, pairs=tuple(pairs), queues=tuple(queues))

    # ------------------------------------------------------------ values

    def _enc(self, slot: int, v: int) -> int:
        s = self.slots[slot]
        if s.kind is SlotKind.STATE:
            return v
        return 0 if v == UNDEF else v - s.lo + 1

    def _dec(self, slot: int, c: int) -> int:
        s = self.slots[slot]
        if s.kind is SlotKind.STATE:
            return c
        return UNDEF if c == 0 else c - 1 + s.lo

    @staticmethod
    def _field_code(t: ir.Type, v: int) -> int:
        return 0 if v == UNDEF else v - scalar_size(t)[0] + 1

    @staticmethod
    def _field_value(t: ir.Type, c: int) -> int:
        return UNDEF if c == 0 else c - 1 + scalar_size(t)[0]

    def message_code(self, net: NetLayout, t: int, fields: tuple[int, ...]) -> int:
        """The ``type + 1 | fields`` part of a record or entry."""
        fmt = net.formats[t]
        code = fmt.type_code << net.union_bits
        for (shift, _w, ft), v in zip(fmt.fields, fields, strict=True):
            code |= self._field_code(ft, v) << shift
        return code

    def record_code(self, net: NetLayout, line: int, src: int, dst: int, t: int,
                    fields: tuple[int, ...]) -> int:
        head = (line << net.node_bits | src) << net.node_bits | dst
        return head << (net.type_bits + net.union_bits) | self.message_code(net, t, fields)

    def _message_of(self, net: NetLayout, code: int) -> tuple[int, tuple[int, ...]]:
        type_code = code >> net.union_bits
        for t, fmt in net.formats.items():
            if fmt.type_code == type_code:
                fields = tuple(self._field_value(ft, (code >> shift) & ((1 << w) - 1))
                               for shift, w, ft in fmt.fields)
                return t, fields
        raise LayoutError(f"network {net.name}: no message type has code {type_code}")

    # ------------------------------------------------------------ pack / unpack

    def pack(self, state: State) -> int:
        """The state's packed form, as one integer of ``bits`` bits."""
        lines, nets, monitor = state
        codes: list[tuple[int, int]] = []  # (slot, code)
        if self._flat:
            out = 0
            for (gspec, hspec, cspecs), (g, h, caches) in zip(self._line_specs, lines,
                                                               strict=True):
                for (shift, lo), v in zip(gspec, g, strict=True):
                    if v != UNDEF:
                        out |= (v - lo + 1) << shift
                for (shift, lo), v in zip(hspec, h, strict=True):
                    if v != UNDEF:
                        out |= (v - lo + 1) << shift
                for cspec, c in zip(cspecs, caches, strict=True):
                    for (shift, lo), v in zip(cspec, c, strict=True):
                        if v != UNDEF:
                            out |= (v - lo + 1) << shift
            return out | self._pack_rest(nets, monitor)
        for line, (g, h, caches) in enumerate(lines):
            for tree, v in zip(self.line_globals[line], g, strict=True):
                self._pack_tree(tree, v, codes)
            for tree, v in zip(self.line_home[line], h, strict=True):
                self._pack_tree(tree, v, codes)
            for trees, c in zip(self.line_caches[line], caches, strict=True):
                for tree, v in zip(trees, c, strict=True):
                    self._pack_tree(tree, v, codes)
        out = self._pack_rest(nets, monitor)
        shifts = self._slot_shift
        for slot, code in codes:
            out |= code << shifts[slot]
        return out

    def _pack_rest(self, nets: tuple, monitor: tuple) -> int:
        """The networks and the monitor, packed."""
        codes: list[tuple[int, int]] = []
        for net, contents in zip(self.nets, nets, strict=True):
            if net.ordering == "unordered":
                if len(contents) > net.capacity:
                    raise LayoutError(f"network {net.name} holds more than its capacity")
                records = sorted(self.record_code(net, *msg) for msg in contents)
                codes.extend(zip(net.slots, records, strict=False))
            elif net.ordering == "fifo":
                index = self._pair_index[net.name]
                for (src, dst, line), queue in contents:
                    slots = net.queues[index[(line, src, dst)]]
                    if len(queue) > len(slots):
                        raise LayoutError(f"network {net.name} holds more than its capacity")
                    codes.extend((s, self.message_code(net, t, f))
                                 for s, (t, f) in zip(slots, queue, strict=False))
        for line, per_agent in enumerate(monitor):
            for a, (view, after) in enumerate(per_agent):
                view_slot, after_slots = self.monitor[line][a]
                codes.append((view_slot, view))
                codes.extend((s, x + 1) for s, x in zip(after_slots, after, strict=True))
        out = 0
        shift = self._slot_shift
        for slot, code in codes:
            out |= code << shift[slot]
        return out

    def _pack_tree(self, tree: Any, v: Any, codes: list[tuple[int, int]]) -> None:
        if isinstance(tree, int):
            codes.append((tree, self._enc(tree, v)))
            return
        flag, elems = tree
        if v == UNDEF:
            if flag is None:
                raise LayoutError("an undefined array where the layout has no flag for it")
            return  # flag 0, elements 0
        if flag is not None:
            codes.append((flag, 1))
        for sub, x in zip(elems, v, strict=True):
            self._pack_tree(sub, x, codes)

    def _get(self, code: int, slot: int) -> int:
        return (code >> self._slot_shift[slot]) & self._slot_mask[slot]

    def _unpack_tree(self, tree: Any, code: int) -> Any:
        if isinstance(tree, int):
            return self._dec(tree, self._get(code, tree))
        flag, elems = tree
        if flag is not None and not self._get(code, flag):
            return UNDEF
        return tuple(self._unpack_tree(sub, code) for sub in elems)

    def unpack(self, code: int) -> State:
        """The semantics' nested-tuple state of a packed one."""
        lines = []
        for line in range(self.model.lines):
            g = tuple(self._unpack_tree(t, code) for t in self.line_globals[line])
            h = tuple(self._unpack_tree(t, code) for t in self.line_home[line])
            caches = tuple(tuple(self._unpack_tree(t, code) for t in trees)
                           for trees in self.line_caches[line])
            lines.append((g, h, caches))
        nets: list[tuple] = []
        for net in self.nets:
            if net.ordering == "unordered":
                msgs = []
                low = net.type_bits + net.union_bits
                for s in net.slots:
                    rec = self._get(code, s)
                    if rec == 0:
                        break
                    head = rec >> low
                    dst = head & ((1 << net.node_bits) - 1)
                    src = (head >> net.node_bits) & ((1 << net.node_bits) - 1)
                    line = head >> (2 * net.node_bits)
                    t, fields = self._message_of(net, rec & ((1 << low) - 1))
                    msgs.append((line, src, dst, t, fields))
                nets.append(tuple(sorted(msgs)))
            elif net.ordering == "fifo":
                queues = []
                for (line, src, dst), slots in zip(net.pairs, net.queues, strict=True):
                    queue = []
                    for s in slots:
                        entry = self._get(code, s)
                        if entry == 0:
                            break
                        queue.append(self._message_of(net, entry))
                    if queue:
                        queues.append(((src, dst, line), tuple(queue)))
                nets.append(tuple(sorted(queues)))
            else:
                nets.append(())
        monitor: tuple = ()
        if self.monitor:
            monitor = tuple(
                tuple((self._get(code, view), tuple(self._get(code, s) - 1 for s in after))
                      for view, after in per_agent)
                for per_agent in self.monitor)
        return (tuple(lines), tuple(nets), monitor)

    # ------------------------------------------------------------ bytes

    def to_bytes(self, code: int) -> bytes:
        return code.to_bytes(self.bytes, "little")

    def from_bytes(self, data: bytes) -> int:
        return int.from_bytes(data, "little")

    def describe(self) -> str:
        """One line per slot: offset, width, name (for ``coherence check --layout``-style
        inspection and for tests)."""
        return "\n".join(f"{s.offset:>6} {s.width:>3} {s.kind.value:<8} {s.name}"
                         for s in self.slots)
