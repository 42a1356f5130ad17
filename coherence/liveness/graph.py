"""Graph algorithms for liveness, over a state graph held in flat int arrays.

The graph is stored by source in compressed rows (``first``, ``dst``, ``task``): the edges
leaving state ``s`` are ``first[s] .. first[s + 1] - 1``. A state costs one 8-byte offset and
an edge 5 to 8 bytes (its target, and its fairness task in 1, 2 or 4), never a Python
object. Every algorithm
here is iterative (explicit stacks and queues), so no graph is too deep for it.

NOTE(weak-fairness): a task is one thing a path may not neglect forever (delivering one
message, one machine's one rule with its parameters); ``task[e]`` is the task edge ``e``
performs, or ``UNFAIR``. A path that stays in a strongly connected set C forever can be weakly
fair exactly when every task enabled in *every* state of C is performed by some edge inside C:
the path then visits every state and edge of C infinitely often, so each task is either taken
infinitely often or disabled infinitely often. A task enabled throughout C but taken by no
edge inside it makes every path that stays in C unfair, and so every path that stays in a
subset of C, so no further decomposition is needed (it would be for strong fairness). A state
whose only moves are unfair may also stutter there forever: a one-state component with no
fair task enabled is fair.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable
from typing import Protocol

import attrs

UNFAIR = -1

# A flat array of ints: an ``array``, or a typed ``memoryview`` of memory the compiled engine's
# graph lives in (NOTE(graph-memory) in ``coherence.engines.compiled.graph``)
Ints = array | memoryview


@attrs.define
class Graph:
    first: Ints  # 'q': n + 1 offsets into dst and task
    dst: Ints  # 'i'
    task: Ints  # 'i' (or 'b', 'h' when the tasks are few): each edge's fairness task, or UNFAIR
    strong: set[int] = attrs.Factory(set)  # the tasks that are strongly fair

    @property
    def n(self) -> int:
        return len(self.first) - 1

    def edges(self, s: int) -> range:
        return range(self.first[s], self.first[s + 1])

    def fair_tasks(self, s: int) -> set[int]:
        """The fair tasks enabled in ``s`` (those of its outgoing edges)."""
        task = self.task
        return {task[e] for e in range(self.first[s], self.first[s + 1]) if task[e] != UNFAIR}


@attrs.define
class Reverse:
    """Predecessor edges in compressed rows: ``src[first[s] .. first[s + 1] - 1]``; or, from
    algorithms that reach backwards without them (the compiled engine's, NOTE(graph-memory)
    in ``coherence.engines.compiled.graph``), no rows and the forward ``graph``."""

    first: array
    src: array
    graph: Graph | None = None


def reverse(g: Graph) -> Reverse:
    """Predecessors of every state, by a counting sort of the edges on their targets."""
    n = g.n
    count = array("q", bytes(8 * (n + 1)))
    for d in g.dst:
        count[d + 1] += 1
    for s in range(n):
        count[s + 1] += count[s]
    pos = array("q", count)
    src = array("i", bytes(4 * len(g.dst)))
    first, dst = g.first, g.dst
    for s in range(n):
        for e in range(first[s], first[s + 1]):
            d = dst[e]
            src[pos[d]] = s
            pos[d] += 1
    return Reverse(count, src)


def backward_reachable(rev: Reverse, targets: bytearray,
                       allowed: bytearray | None = None) -> bytearray:
    """1 for every state that can reach a target along states that are all ``allowed``
    (targets themselves must be allowed to count)."""
    n = len(rev.first) - 1
    seen = bytearray(n)
    queue: deque[int] = deque()
    for s in range(n):
        if targets[s] and (allowed is None or allowed[s]):
            seen[s] = 1
            queue.append(s)
    first, src = rev.first, rev.src
    while queue:
        s = queue.popleft()
        for e in range(first[s], first[s + 1]):
            p = src[e]
            if not seen[p] and (allowed is None or allowed[p]):
                seen[p] = 1
                queue.append(p)
    return seen


def forward_reachable(g: Graph, sources: bytearray,
                      allowed: bytearray | None = None) -> bytearray:
    """1 for every state reachable from a source along states that are all ``allowed``
    (sources themselves must be allowed to count)."""
    n = g.n
    seen = bytearray(n)
    queue: deque[int] = deque()
    for s in range(n):
        if sources[s] and (allowed is None or allowed[s]):
            seen[s] = 1
            queue.append(s)
    first, dst = g.first, g.dst
    while queue:
        s = queue.popleft()
        for e in range(first[s], first[s + 1]):
            w = dst[e]
            if not seen[w] and (allowed is None or allowed[w]):
                seen[w] = 1
                queue.append(w)
    return seen


def sccs(g: Graph, allowed: bytearray | None = None, roots: Iterable[int] | None = None,
         first_only: bool = False) -> tuple[array, int]:
    """Tarjan's strongly connected components of the subgraph of ``allowed`` states, without
    recursion: ``comp[s]`` numbers the component of ``s`` (-1 outside it) in the order they
    complete, so a component's successors outside it complete before it. From one root, the
    first component completed is a bottom one; ``first_only`` stops there."""
    n = g.n
    index = array("i", [-1]) * n
    low = array("i", [0]) * n
    comp = array("i", [-1]) * n
    on_stack = bytearray(n)
    stack: list[int] = []
    counter = ncomp = 0
    first, dst = g.first, g.dst
    for root in (range(n) if roots is None else roots):
        if index[root] != -1 or (allowed is not None and not allowed[root]):
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = 1
        work = [(root, first[root])]
        while work:
            v, e = work[-1]
            end = first[v + 1]
            descended = False
            while e < end:
                w = dst[e]
                e += 1
                if allowed is not None and not allowed[w]:
                    continue
                if index[w] == -1:
                    work[-1] = (v, e)
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = 1
                    work.append((w, first[w]))
                    descended = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if descended:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = 0
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
                if first_only:
                    return comp, ncomp
    return comp, ncomp


def fair_sets(g: Graph, allowed: bytearray | None = None) -> tuple[array, int]:
    """Maximal sets of ``allowed`` states that a fair path can stay in forever, numbered in
    ``label`` (-1 elsewhere): strongly connected, every weak task enabled in all their states
    and every strong task enabled in any of them taken inside (NOTE(strong-fairness)).

    NOTE(strong-fairness): a component that fails only a strong task t (enabled somewhere in
    it, never taken inside it) can still hold a fair path that avoids the states enabling t,
    so those states are removed and the rest decomposed again (Emerson and Lei's refinement),
    with a worklist rather than recursion. A failing weak task discards the component whole.
    """
    n = g.n
    label = array("i", [-1]) * n
    count = 0
    everyone = [s for s in range(n) if allowed is None or allowed[s]]
    # each work item: a region (as flags, and as its states, so no pass costs O(n) in Python)
    work: list[tuple[bytearray | None, list[int]]] = [(allowed, everyone)]
    while work:
        region, states = work.pop()
        comp, ncomp = sccs(g, region, roots=states)
        members: list[list[int]] = [[] for _ in range(ncomp)]
        for s in states:
            if comp[s] >= 0:
                members[comp[s]].append(s)
        for c in range(ncomp):
            weak_ok, bad_strong = _fairness(g, comp, c, members[c])
            if not weak_ok:
                continue
            if not bad_strong:
                for s in members[c]:
                    label[s] = count
                count += 1
                continue
            rest_states = [s for s in members[c] if not (g.fair_tasks(s) & bad_strong)]
            if rest_states:
                rest = bytearray(n)
                for s in rest_states:
                    rest[s] = 1
                work.append((rest, rest_states))
    return label, count


def _fairness(g: Graph, comp: array, c: int, members: list[int]) -> tuple[bool, set[int]]:
    """Whether component ``c`` passes every weak task, and the strong tasks it fails."""
    always: set[int] | None = None
    anywhere: set[int] = set()
    taken: set[int] = set()
    first, dst, task = g.first, g.dst, g.task
    for s in members:
        mine: set[int] = set()
        for e in range(first[s], first[s + 1]):
            t = task[e]
            if t != UNFAIR:
                mine.add(t)
                if comp[dst[e]] == c:
                    taken.add(t)
        always = mine if always is None else always & mine
        anywhere |= mine
    strong = g.strong
    weak_always = {t for t in (always or set()) if t not in strong}
    return weak_always <= taken, {t for t in anywhere if t in strong} - taken


def path_within(g: Graph, start: int, allowed: bytearray | None,
                goal: bytearray) -> list[int] | None:
    """The edges of a shortest path from ``start`` to a ``goal`` state through ``allowed``
    states (empty when ``start`` is one), or None."""
    if goal[start]:
        return []
    parent_edge = {start: -1}
    queue = deque([start])
    first, dst = g.first, g.dst
    while queue:
        s = queue.popleft()
        for e in range(first[s], first[s + 1]):
            w = dst[e]
            if w in parent_edge or (allowed is not None and not allowed[w]):
                continue
            parent_edge[w] = e
            if goal[w]:
                return _edges_back(g, parent_edge, w)
            queue.append(w)
    return None


def _edges_back(g: Graph, parent_edge: dict[int, int], end: int) -> list[int]:
    out = []
    e = parent_edge[end]
    while e >= 0:
        out.append(e)
        e = parent_edge[source(g, e)]
    return out[::-1]


def source(g: Graph, e: int) -> int:
    """The state edge ``e`` leaves (binary search in the row offsets)."""
    lo, hi = 0, g.n - 1
    first = g.first
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if first[mid] <= e:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fair_cycle(g: Graph, comp: array, start: int) -> list[int]:
    """The edges of a cycle from ``start`` back to it inside its (fair) component that no
    weakly fair task can object to: for each fair task enabled at ``start`` the cycle takes
    it or passes a state where it is disabled. Empty when the component is ``start`` alone
    with no edge to itself (the path stutters there: nothing fair is enabled)."""
    c = comp[start]
    inside = bytearray(1 if comp[s] == c else 0 for s in range(g.n))
    if not any(g.dst[e] == start for e in g.edges(start)) and sum(inside) == 1:
        return []
    cycle: list[int] = []
    cur = start
    settled: set[int] = set()
    # a strong task enabled anywhere in the set is taken (the set is fair), so take each one
    strong = sorted({t for s in range(g.n) if inside[s] for t in g.fair_tasks(s)} & g.strong)
    for t in strong:
        if t in settled:
            continue
        leg = _leg_for_task(g, inside, cur, t, strong=True)
        for e in leg:
            settled.add(g.task[e])
        cycle += leg
        cur = g.dst[leg[-1]]
    for t in sorted(g.fair_tasks(start) - g.strong):
        if t in settled:
            continue
        leg = _leg_for_task(g, inside, cur, t)
        for e in leg:
            settled.add(g.task[e])
        cycle += leg
        cur = g.dst[leg[-1]] if leg else cur
        settled.add(t)
    # back to the start (a non-empty cycle even when no task needed a detour)
    back = _path_back(g, inside, cur, start, nonempty=not cycle)
    return cycle + back


def _leg_for_task(g: Graph, inside: bytearray, start: int, t: int,
                  strong: bool = False) -> list[int]:
    """Edges from ``start`` through an edge that performs task ``t`` or, for a weak task, to
    a state where it is disabled, whichever is nearer; the fair set guarantees one."""
    parent_edge = {start: -1}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        if not strong and t not in g.fair_tasks(s):
            return _edges_back(g, parent_edge, s)
        for e in g.edges(s):
            w = g.dst[e]
            if not inside[w]:
                continue
            if g.task[e] == t:
                return [*_edges_back(g, parent_edge, s), e]
            if w not in parent_edge:
                parent_edge[w] = e
                queue.append(w)
    raise AssertionError(f"task {t} is neither disabled nor taken in a fair component")


def _path_back(g: Graph, inside: bytearray, start: int, end: int, nonempty: bool) -> list[int]:
    if start == end and not nonempty:
        return []
    parent_edge: dict[int, int] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        s = queue.popleft()
        for e in g.edges(s):
            w = g.dst[e]
            if not inside[w]:
                continue
            if w == end:
                path = [e]
                while s != start:
                    pe = parent_edge[s]
                    path.append(pe)
                    s = source(g, pe)
                return path[::-1]
            if w not in seen:
                seen.add(w)
                parent_edge[w] = e
                queue.append(w)
    raise AssertionError("no way back inside a strongly connected component")


def first_common(a: bytearray, b: bytearray) -> int:
    """The least state where both 0/1 flag arrays are 1, or -1 (big-int AND: no Python
    loop over the states)."""
    x = int.from_bytes(a, "little") & int.from_bytes(b, "little")
    if x == 0:
        return -1
    return ((x & -x).bit_length() - 1) // 8


def fair_flags(label: array) -> bytearray:
    """1 for every state in some fair set."""
    return bytearray(1 if c >= 0 else 0 for c in label)


class Algorithms(Protocol):
    """The whole-graph algorithms, which an engine may supply in faster form (the compiled
    engine's, in C: ``coherence.engines.compiled.graph``); this module defines them.
    ``parallel``: whether they may run in several threads at once to any gain (they release
    the GIL)."""

    parallel: bool

    def reverse(self, g: Graph) -> Reverse: ...

    def backward_reachable(self, rev: Reverse, targets: bytearray,
                           allowed: bytearray | None = None) -> bytearray: ...

    def forward_reachable(self, g: Graph, sources: bytearray,
                          allowed: bytearray | None = None) -> bytearray: ...

    def fair_sets(self, g: Graph, allowed: bytearray | None = None
                  ) -> tuple[array, int, bytearray]:
        """``fair_sets`` and ``fair_flags`` of its labels."""
        ...

    def fair_region(self, g: Graph, allowed: bytearray | None = None) -> bytearray:
        """``fair_flags`` of ``fair_sets`` alone (what a verdict needs: the labels are built
        for a counterexample only)."""
        ...


class PythonAlgorithms:
    """This module's algorithms, as ``Algorithms``."""

    parallel = False

    def reverse(self, g: Graph) -> Reverse:
        return reverse(g)

    def backward_reachable(self, rev: Reverse, targets: bytearray,
                           allowed: bytearray | None = None) -> bytearray:
        return backward_reachable(rev, targets, allowed)

    def forward_reachable(self, g: Graph, sources: bytearray,
                          allowed: bytearray | None = None) -> bytearray:
        return forward_reachable(g, sources, allowed)

    def fair_sets(self, g: Graph, allowed: bytearray | None = None
                  ) -> tuple[array, int, bytearray]:
        label, count = fair_sets(g, allowed)
        return label, count, fair_flags(label)

    def fair_region(self, g: Graph, allowed: bytearray | None = None) -> bytearray:
        return fair_flags(fair_sets(g, allowed)[0])
