"""Exact symmetry reduction over agent ids (Murphi's scalarsets).

A state's canonical form is the permuted image with the smallest packed encoding, over every
permutation of the agents, so two states get one representative exactly when they are
permutations of each other. (Ip & Dill, "Better verification through symmetry", 1996.)
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise, permutations
from typing import Any

from coherence import ir
from coherence.encode import encode
from coherence.semantics import UNDEF, Semantics, State

Mapper = Callable[[Any, tuple[int, ...]], Any]


def _identity(v: Any, perm: tuple[int, ...]) -> Any:
    return v


def type_mapper(t: ir.Type, n: int) -> Mapper:
    """How a value of type ``t`` is renamed by an agent permutation."""
    if isinstance(t, ir.AgentT):
        return lambda v, p: v if v == UNDEF else p[v]
    if isinstance(t, ir.NodeT):
        return lambda v, p: v if v == UNDEF or v >= n else p[v]
    if isinstance(t, ir.SetT):
        def set_map(v: int, p: tuple[int, ...]) -> int:
            if v == UNDEF:
                return v
            out = 0
            for a in range(n):
                if (v >> a) & 1:
                    out |= 1 << p[a]
            return out
        return set_map
    if isinstance(t, ir.ArrayT):
        elem = type_mapper(t.elem, n)
        elem_sym = ir.is_symmetric(t.elem)
        if isinstance(t.index, (ir.AgentT, ir.NodeT)):
            def array_map(v: Any, p: tuple[int, ...]) -> Any:
                if v == UNDEF:
                    return v
                out = list(v)
                for i in range(n):
                    out[p[i]] = elem(v[i], p) if elem_sym else v[i]
                return tuple(out)
            return array_map
        if elem_sym:
            return lambda v, p: v if v == UNDEF else tuple(elem(x, p) for x in v)
    return _identity


class Symmetry:
    """Permutes whole states; ``canonical`` picks the orbit's representative."""

    def generators(self) -> list[tuple[int, ...]]:
        """A transposition and a rotation of the agents: together they generate every
        permutation (the symmetry audit's renamings)."""
        n = self.n
        return [(1, 0, *range(2, n)), (*range(1, n), 0)]

    def __init__(self, sem: Semantics) -> None:
        self.sem = sem
        m = sem.model
        self.n = n = m.agents
        self.perms = list(permutations(range(n)))
        self.global_maps = [type_mapper(v.type, n) for v in m.globals]
        self.home_maps = [_identity] + [type_mapper(v.type, n) for v in (
            m.home.vars if m.home else ())]
        self.cache_maps = [_identity] + [type_mapper(v.type, n) for v in (
            m.caches[0].vars if m.caches else ())]
        self.field_maps = [[type_mapper(f.type, n) for f in msg.fields] for msg in m.messages]
        self.orderings = [net.ordering for net in m.networks]
        self.cache_symmetric = [False] + [ir.is_symmetric(v.type) for v in (
            m.caches[0].vars if m.caches else ())]
        self.field_symmetric = [[ir.is_symmetric(f.type) for f in msg.fields]
                                for msg in m.messages]
        self.field_sym = [any(flags) for flags in self.field_symmetric]
        # the types of the slots whose values name agents: an agent's relations to them
        # refine its signature (see ``relations``)
        self.global_types = [v.type for v in m.globals]
        self.home_types = [None] + [v.type for v in (m.home.vars if m.home else ())]
        self.cache_types = [None] + [v.type for v in (m.caches[0].vars if m.caches else ())]
        self.field_types = [[f.type for f in msg.fields] for msg in m.messages]
        self.globals_sym = any(ir.is_symmetric(v.type) for v in m.globals)
        self.home_sym = any(ir.is_symmetric(v.type) for v in (m.home.vars if m.home else ()))
        self.cache_sym = any(self.cache_symmetric)
        self.trivial = all(not ir.is_symmetric(v.type) for v in m.globals) and all(
            not ir.is_symmetric(v.type) for mach in m.machines for v in mach.vars)

    def _node(self, v: int, p: tuple[int, ...]) -> int:
        return v if v >= self.n else p[v]

    def _fields(self, t: int, fields: tuple, p: tuple[int, ...]) -> tuple:
        if not self.field_sym[t]:
            return fields
        return tuple(f(x, p) for f, x in zip(self.field_maps[t], fields, strict=True))

    def _remap(self, maps: list[Mapper], symmetric: bool, values: tuple,
               p: tuple[int, ...]) -> tuple:
        if not symmetric:
            return values  # no agent-typed slot: nothing to rename
        return tuple(f(x, p) for f, x in zip(maps, values, strict=True))

    def permute(self, state: State, p: tuple[int, ...]) -> State:
        lines, nets, monitor = state
        new_lines = []
        for g, h, caches in lines:
            g2 = self._remap(self.global_maps, self.globals_sym, g, p)
            h2 = self._remap(self.home_maps, self.home_sym, h, p) if h else h
            c2: list[Any] = [None] * len(caches)
            for a, c in enumerate(caches):
                c2[p[a]] = self._remap(self.cache_maps, self.cache_sym, c, p)
            new_lines.append((g2, h2, tuple(c2)))
        new_nets = []
        for ordering, contents in zip(self.orderings, nets, strict=True):
            if not contents:
                new_nets.append(contents)
            elif ordering is ir.Ordering.UNORDERED:
                new_nets.append(tuple(sorted(
                    (line, self._node(src, p), self._node(dst, p), t, self._fields(t, f, p))
                    for line, src, dst, t, f in contents)))
            elif ordering is ir.Ordering.FIFO:
                new_nets.append(tuple(sorted(
                    ((self._node(src, p), self._node(dst, p), line),
                     tuple((t, self._fields(t, f, p)) for t, f in queue))
                    for (src, dst, line), queue in contents)))
            else:  # the bus holds nothing
                new_nets.append(contents)
        new_monitor = monitor
        if monitor:
            lines_mon = []
            for per_agent in monitor:
                out: list[Any] = [None] * len(per_agent)
                for a, x in enumerate(per_agent):
                    out[p[a]] = x
                lines_mon.append(tuple(out))
            new_monitor = tuple(lines_mon)
        return (tuple(new_lines), tuple(new_nets), new_monitor)

    def signature(self, state: State, a: int) -> tuple:
        """What agent ``a`` looks like, in terms that no permutation changes.

        Agent-typed slots are left out; the rest of its cache, its monitor entry and the
        messages it sends or receives are kept. Used only to narrow the permutations tried.
        """
        lines, nets, monitor = state
        cache_part = tuple(
            tuple(x for x, sym in zip(line[2][a], self.cache_symmetric, strict=True) if not sym)
            for line in lines if line[2])
        mon_part = tuple(m[a] for m in monitor) if monitor else ()
        msgs: list[tuple] = []
        # Entries start with the network's index: unordered and fifo entries differ in shape.
        for net_i, (ordering, contents) in enumerate(zip(self.orderings, nets, strict=True)):
            if ordering is ir.Ordering.UNORDERED:
                for line, src, dst, t, f in contents:
                    if src == a or dst == a:
                        msgs.append((net_i, line, t, src == a, dst == a, self._plain(t, f)))
            elif ordering is ir.Ordering.FIFO:
                for (src, dst, line), queue in contents:
                    if src == a or dst == a:
                        msgs.append((net_i, line, src == a, dst == a,
                                     tuple((t, self._plain(t, f)) for t, f in queue)))
        msgs.sort()
        return (cache_part, mon_part, tuple(msgs), self.relations(state, a))

    def relations(self, state: State, a: int) -> tuple:
        """How the slots that name agents (globals, the home's and other caches' variables,
        message fields) refer to agent ``a``, in terms no permutation changes: for each such
        slot, whether it names ``a`` (or holds it, for a set), and for the caches' slots how
        many caches name ``a`` there. Distinguishes e.g. the owner from the sharers."""
        if self.trivial and not any(self.field_sym):
            return ()
        lines, nets, _ = state
        out: list[Any] = []
        for g, h, caches in lines:
            out.append(tuple(_refers(t, v, a) for t, v in zip(self.global_types, g, strict=True)
                             if t is not None and ir.is_symmetric(t)))
            if h:
                out.append(tuple(_refers(t, v, a) for t, v in zip(self.home_types, h,
                                                                 strict=True)
                                 if t is not None and ir.is_symmetric(t)))
            if caches and self.cache_sym:
                counts = []
                for k, t in enumerate(self.cache_types):
                    if t is None or not ir.is_symmetric(t):
                        continue
                    counts.append((_refers(t, caches[a][k], a),
                                   sum(bool(_refers(t, c[k], a)) for b, c in enumerate(caches)
                                       if b != a)))
                out.append(tuple(counts))
        refs = []
        for ordering, contents in zip(self.orderings, nets, strict=True):
            if ordering is ir.Ordering.UNORDERED:
                entries = [(t, f) for _line, _s, _d, t, f in contents]
            elif ordering is ir.Ordering.FIFO:
                entries = [(t, f) for _key, queue in contents for t, f in queue]
            else:
                continue
            for t, f in entries:
                if self.field_sym[t]:
                    refs.append((t, tuple(_refers(ft, x, a) for ft, x in zip(
                        self.field_types[t], f, strict=True) if ir.is_symmetric(ft))))
        refs.sort()
        out.append(tuple(refs))
        return tuple(out)

    def _plain(self, t: int, fields: tuple) -> tuple:
        sym = self.field_symmetric[t]
        return tuple(x for x, s in zip(fields, sym, strict=True) if not s)

    def candidate_perms(self, state: State) -> list[tuple[int, ...]]:
        """Permutations that sort the agents by signature, every order among equal ones."""
        sigs = [self.signature(state, a) for a in range(self.n)]
        order = sorted(range(self.n), key=lambda a: sigs[a])
        groups: list[list[int]] = []
        for a in order:
            if groups and sigs[groups[-1][0]] == sigs[a]:
                groups[-1].append(a)
            else:
                groups.append([a])
        perms: list[list[int]] = [[]]
        for g in groups:
            # NOTE(symmetry-cost): agents of a group that the state cannot tell apart (swapping
            # any two leaves it unchanged) give one image for every order: try one order.
            orders = [tuple(g)] if self.interchangeable(state, g) else permutations(g)
            perms = [p + list(q) for p in perms for q in orders]
        out = []
        for seq in perms:  # seq[i] = the agent that gets the new name i
            p = [0] * self.n
            for new, old in enumerate(seq):
                p[old] = new
            out.append(tuple(p))
        return out

    def interchangeable(self, state: State, group: list[int]) -> bool:
        """Whether every permutation of ``group`` leaves ``state`` unchanged (adjacent
        transpositions generate them all)."""
        if len(group) < 2:
            return True
        for x, y in pairwise(group):
            p = list(range(self.n))
            p[x], p[y] = y, x
            if self.permute(state, tuple(p)) != state:
                return False
        return True

    def canonical(self, state: State) -> tuple[bytes, State]:
        """The packed key and the state of the orbit's representative (exact)."""
        perms = self.perms if self.n <= 2 else self.candidate_perms(state)
        best = min(self.permute(state, p) for p in perms)
        return encode(best), best

    def canonical_full(self, state: State) -> tuple[bytes, State]:
        """The same representative's definition, by brute force over all n! permutations.

        Not the same state as ``canonical`` (it minimises over more permutations), but it
        defines the same partition into orbits; kept for tests.
        """
        best = min(self.permute(state, p) for p in self.perms)
        return encode(best), best


def _refers(t: Any, v: Any, a: int) -> Any:
    """How a value of a symmetric type refers to agent ``a`` (no agent names in the result)."""
    if v == UNDEF:
        return -1
    if isinstance(t, (ir.AgentT, ir.NodeT)):
        return int(v == a)
    if isinstance(t, ir.SetT):
        return (v >> a) & 1
    if isinstance(t, ir.ArrayT):
        if isinstance(t.index, (ir.AgentT, ir.NodeT)):
            elem = v[a]
            return ("at", elem if not ir.is_symmetric(t.elem) else _refers(t.elem, elem, a),
                    tuple(sorted(_refers(t.elem, x, a) for i, x in enumerate(v) if i != a))
                    if ir.is_symmetric(t.elem) else ())
        return tuple(_refers(t.elem, x, a) for x in v)
    return 0


AnySymmetry = Symmetry


def has_symmetry(model: ir.Model) -> bool:
    """Whether some renaming can relate two states: two agents, or an index type with two
    ids."""
    if model.is_hierarchical:
        return any(t.n > 1 for t in model.indexes)
    return model.agents > 1


def make_symmetry(sem: Semantics) -> AnySymmetry | None:
    """The symmetry of ``sem``'s model; None where none is implemented (hierarchical specs,
    for now)."""
    if sem.model.is_hierarchical:
        return None
    return Symmetry(sem)
