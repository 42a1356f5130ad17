"""Breadth-first exploration: the one search loop of the tools built on ``Semantics``.

The state diagrams (``diagrams.states``) and litmus exploration (``litmus.model``) search
graphs whose nodes are semantics states, or semantics states with more beside them (a litmus
run's program counters and registers), so the loop is generic in the node: the caller's
``expand(i, node, add)`` visits node ``i`` in breadth-first order and calls ``add(successor)``
for each successor, which returns the successor's index (a new one when first seen).
Parents and depths are kept, so a shortest path to any node can be read back.

``reachable(sem)`` is the plain search over a ``Semantics`` (states and labelled edges), for
tests and small tools. The reference checker (``coherence.engines``) has its own loop: it
stores states packed and checks properties on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

import attrs

from coherence.semantics import Action, Semantics, State

N = TypeVar("N")

Expand = Callable[[int, N, Callable[[N], int]], None]


class StateLimit(Exception):
    """A search met more than ``limit`` distinct nodes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} reachable states")
        self.limit = limit


@attrs.define
class Search(Generic[N]):
    """The nodes met, in breadth-first order, each with its parent (-1: a start node) and
    depth; ``index`` maps a node's key to its position."""

    nodes: list[N] = attrs.Factory(list)
    parent: list[int] = attrs.Factory(list)
    depth: list[int] = attrs.Factory(list)
    index: dict[Hashable, int] = attrs.Factory(dict)

    def path_to(self, i: int) -> list[int]:
        """The node indices from a start node to node ``i``, both included."""
        path = []
        while i >= 0:
            path.append(i)
            i = self.parent[i]
        return path[::-1]


def bfs(start: Iterable[N], expand: Expand[N], key: Callable[[N], Hashable] | None = None,
        max_nodes: int | None = None, search: Search[N] | None = None) -> Search[N]:
    """Breadth-first search from ``start``; nodes are the same when their ``key`` is (the
    node itself by default). Raises ``StateLimit`` when a node beyond ``max_nodes`` is met;
    an exception raised by ``expand`` ends the search the same way (the caller's own stop).
    ``search``, when given, is filled in place, so ``expand`` can read depths as it goes."""
    if search is None:
        search = Search()
    keyf: Callable[[N], Hashable] = key if key is not None else (lambda n: n)

    def add_from(par: int) -> Callable[[N], int]:
        def add(node: N) -> int:
            k = keyf(node)
            found = search.index.get(k)
            if found is not None:
                return found
            if max_nodes is not None and len(search.nodes) >= max_nodes:
                raise StateLimit(max_nodes)
            i = search.index[k] = len(search.nodes)
            search.nodes.append(node)
            search.parent.append(par)
            search.depth.append(search.depth[par] + 1 if par >= 0 else 0)
            return i
        return add

    add_start = add_from(-1)
    for node in start:
        add_start(node)
    i = 0
    while i < len(search.nodes):
        expand(i, search.nodes[i], add_from(i))
        i += 1
    return search


@attrs.define
class Reachable:
    """Every reachable state of a model and the transitions between them."""

    search: Search[State]
    edges: list[tuple[int, Action, int]]  # (from, action, to); actions that err are left out

    @property
    def states(self) -> list[State]:
        return self.search.nodes


def reachable(sem: Semantics, key: Callable[[State], Hashable] | None = None,
              max_states: int | None = None) -> Reachable:
    """The states reachable from ``sem``'s initial states (up to ``key``: a canonical form
    gives the symmetry-reduced graph), with the successor edges of ``Semantics.enabled``."""
    edges: list[tuple[int, Action, int]] = []

    def expand(i: int, state: State, add: Callable[[State], int]) -> None:
        outcomes, _problems = sem.enabled(state)
        for out in outcomes:
            if out.state is not None:
                edges.append((i, out.action, add(out.state)))

    search = bfs(sem.initial_states(), expand, key, max_states)
    return Reachable(search, edges)
