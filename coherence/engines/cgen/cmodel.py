"""Where each part of a bound model lives in the generated C's unpacked state (``co_u``).

The generated code unpacks a packed state (``coherence.layout``) once per expansion into
``co_u``: ``v[]`` holds the code of every scalar slot (values, control states, array flags,
monitor entries) in layout order, ``r[]`` every message record or fifo entry in layout order,
``uc[]`` the number of messages in each unordered network. Codes are the layout's own
(``value - lo + 1``, 0 for *undefined*; control states and monitor views raw), so packing
is shifts and masks only. Every line has the same shape, so a variable of line ``l`` sits at
``l * line_stride + offset``; every cache block too (``cache_base + agent * cache_stride``).
"""

from __future__ import annotations

from typing import Any

import attrs

from coherence import ir
from coherence.layout import Layout, NetLayout, SlotKind


class CodegenError(Exception):
    """The model uses something the compiled engine does not translate (the message says
    what); ``coherence check`` falls back to the reference engine."""


@attrs.frozen
class Shape:
    """How a variable of one type occupies consecutive ``v[]`` slots."""

    size: int  # slots in all
    type: ir.Type
    lo: int = 0  # a scalar's code offset (value = code - 1 + lo)
    flag: bool = False  # an array starts with a defined flag slot
    elem: Shape | None = None  # an array's element shape
    count: int = 0  # an array's element count
    index_lo: int = 0  # an array's first index value

    @property
    def is_array(self) -> bool:
        return self.elem is not None


def shape_of(t: ir.Type, flags: bool) -> Shape:
    if isinstance(t, ir.ArrayT):
        elem = shape_of(t.elem, flags)
        count = len(ir.domain(t.index))
        return Shape(int(flags) + count * elem.size, t, flag=flags, elem=elem, count=count,
                     index_lo=ir.index_offset(t.index))
    lo = t.lo if isinstance(t, ir.IntT) else 0
    return Shape(1, t, lo=lo)


@attrs.define
class NetInfo:
    index: int
    net: ir.Network
    lay: NetLayout
    rbase: int = 0  # unordered: first record's r-index
    uc: int = -1  # unordered: index into uc[]
    queues: list[int] = attrs.Factory(list)  # fifo: r-index of each queue's head
    pair_q: list[int] = attrs.Factory(list)  # fifo: [line][src][dst] -> queue head or -1


class CModel:
    """The model facts and slot arithmetic that every generated function needs."""

    def __init__(self, model: ir.Model, layout: Layout) -> None:
        self.model = model
        self.layout = layout
        self.n = n = model.agents
        # every node id a message may name (agents and the home; a hierarchical spec's
        # machine instances)
        self.nodes = layout.nodes
        self.lines = model.lines
        self.values = model.values
        self.home = model.home
        self.cache = model.caches[0] if model.caches else None
        if len(model.caches) > 1:
            raise CodegenError("more than one cache machine")
        self.msg_index = {m.name: i for i, m in enumerate(model.messages)}
        self.net_index = {nt.name: i for i, nt in enumerate(model.networks)}
        self.monitor = any(p.kind == "coherence" for p in model.properties)
        self.coherence_names = [p.name for p in model.properties if p.kind == "coherence"]
        self.flags = layout.array_flags
        # slot -> v or r index
        self.vidx: dict[int, int] = {}
        self.ridx: dict[int, int] = {}
        self.vslots: list[int] = []
        self.rslots: list[int] = []
        for i, s in enumerate(layout.slots):
            if s.kind in (SlotKind.RECORD, SlotKind.ENTRY):
                self.ridx[i] = len(self.rslots)
                self.rslots.append(i)
            else:
                self.vidx[i] = len(self.vslots)
                self.vslots.append(i)
        widest = max((layout.slots[i].width for i in self.vslots), default=1)
        if widest > 32:
            raise CodegenError(f"a variable needs {widest} bits; at most 32 are supported")
        self.vtype = "uint8_t" if widest <= 8 else "uint16_t" if widest <= 16 else "uint32_t"
        # message records and fifo entries: 32 bits where they all fit (half the copying)
        widest_r = max((layout.slots[i].width for i in self.rslots), default=1)
        self.rtype = "uint32_t" if widest_r <= 32 else "uint64_t"
        # per-line shapes
        self.gshape = {v.name: shape_of(v.type, self.flags) for v in model.globals}
        self.hshape = {v.name: shape_of(v.type, self.flags) for v in (
            self.home.vars if self.home else ())}
        self.cshape = {v.name: shape_of(v.type, self.flags) for v in (
            self.cache.vars if self.cache else ())}
        self.line_stride = (sum(s.size for s in self.gshape.values())
                            + ((1 + sum(s.size for s in self.hshape.values()))
                               if self.home else 0)
                            + n * ((1 + sum(s.size for s in self.cshape.values()))
                                   if self.cache else 0))
        self.gstart: dict[str, int] = {}
        off = 0
        for v in model.globals:
            self.gstart[v.name] = off
            off += self.gshape[v.name].size
        self.hstate = off
        self.hstart: dict[str, int] = {}
        if self.home:
            off += 1
            for v in self.home.vars:
                self.hstart[v.name] = off
                off += self.hshape[v.name].size
        self.cache_base = off
        self.cstart: dict[str, int] = {}
        self.cache_stride = 0
        if self.cache:
            c = 1
            for v in self.cache.vars:
                self.cstart[v.name] = c
                c += self.cshape[v.name].size
            self.cache_stride = c
        self._place_nodes(off)
        self._check_positions()
        self.mon_stride = 1 + self.values
        self.mon_base = self.lines * self.line_stride
        if self.monitor:
            first_view = layout.monitor[0][0][0]
            if self.vidx[first_view] != self.mon_base:
                raise CodegenError("internal: the monitor is not where the layout puts it")
        # networks
        self.nets: list[NetInfo] = []
        nuc = 0
        for i, (net, lay) in enumerate(zip(model.networks, layout.nets, strict=True)):
            info = NetInfo(i, net, lay)
            if net.ordering == "unordered":
                info.rbase = self.ridx[lay.slots[0]] if lay.slots else 0
                info.uc = nuc
                nuc += 1
            elif net.ordering == "fifo":
                info.queues = [self.ridx[q[0]] for q in lay.queues]
                nn = self.nodes
                table = [-1] * (self.lines * nn * nn)
                for (line, src, dst), q in zip(lay.pairs, info.queues, strict=True):
                    table[(line * nn + src) * nn + dst] = q
                info.pair_q = table
            self.nets.append(info)
        self.nuc = nuc
        self.nv = len(self.vslots)
        self.nr = len(self.rslots)
        # handlers: (machine, message, state index) -> transitions, as the semantics has them
        self.handlers: dict[tuple[str, str, int], list[ir.Transition]] = {}
        for m in model.machines:
            for t in m.transitions:
                if t.kind == "message":
                    for sname in t.states:
                        self.handlers.setdefault((m.name, t.name, m.state_index(sname)),
                                                 []).append(t)
        # failure keys
        self.keys: list[tuple[str, ...]] = []
        self._key_index: dict[tuple[str, ...], int] = {}

    def _place_nodes(self, off: int) -> None:
        """Where a hierarchical spec's machine instances sit in a line, from ``off``
        (``chier.HierCModel``); the two built-in kinds are placed above."""

    def _check_positions(self) -> None:
        """The offsets computed here must be the layout's (it is the one format)."""
        lay = self.layout
        for line in range(self.lines):
            base = line * self.line_stride
            for v, tree in zip(self.model.globals, lay.line_globals[line], strict=True):
                self._expect(tree, base + self.gstart[v.name])
            if self.home:
                self._expect(lay.line_home[line][0], base + self.hstate)
                for v, tree in zip(self.home.vars, lay.line_home[line][1:], strict=True):
                    self._expect(tree, base + self.hstart[v.name])
            if self.cache:
                for a in range(self.n):
                    cb = base + self.cache_base + a * self.cache_stride
                    trees = lay.line_caches[line][a]
                    self._expect(trees[0], cb)
                    for v, tree in zip(self.cache.vars, trees[1:], strict=True):
                        self._expect(tree, cb + self.cstart[v.name])

    def _expect(self, tree: Any, at: int) -> None:
        first = tree if isinstance(tree, int) else (
            tree[0] if tree[0] is not None else _first(tree[1]))
        if self.vidx[first] != at:
            raise CodegenError(f"internal: slot {self.layout.slots[first].name} is at "
                               f"{self.vidx[first]}, expected {at}")

    def size_of(self, t: ir.Type) -> int:
        return shape_of(t, self.flags).size

    def key(self, k: tuple[str, ...]) -> int:
        i = self._key_index.get(k)
        if i is None:
            i = self._key_index[k] = len(self.keys)
            self.keys.append(k)
        return i

    # ------------------------------------------------------------ C slot expressions

    def line_base(self, line: str) -> str:
        return f"({line})*{self.line_stride}" if self.lines > 1 else "0"

    def cache_block(self, line: str, agent: str) -> str:
        return f"{self.line_base(line)}+{self.cache_base}+({agent})*{self.cache_stride}"

    def state_slot(self, machine: ir.Machine, line: str, agent: str) -> str:
        if machine.kind == "home":
            return f"{self.line_base(line)}+{self.hstate}"
        return self.cache_block(line, agent)

    def mon_block(self, line: str, agent: str) -> str:
        return f"{self.mon_base}+(({line})*{self.n}+({agent}))*{self.mon_stride}"


def _first(elems: list[Any]) -> int:
    t = elems[0]
    if isinstance(t, int):
        return t
    return t[0] if t[0] is not None else _first(t[1])


def c_string(s: str) -> str:
    """A C comment-safe rendering of a name."""
    return s.replace("*/", "* /")
