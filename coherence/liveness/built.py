"""What an engine hands the liveness checks: the state graph and the truth of each property's
premise and goal in every state, in one representation whichever engine built it.

An engine that can store the graph provides a ``GraphBuilder``: the reference one is
``coherence.liveness.reference.build`` (the semantics, in Python), the compiled engine's
``coherence.engines.compiled.graph.build`` (generated C). The checks
(``coherence.liveness.check``) read only this, so their meaning is defined once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from contextlib import AbstractContextManager

import attrs

from coherence import ir
from coherence.layout import Layout
from coherence.liveness.graph import Algorithms, Graph, Ints
from coherence.liveness.tasks import TaskKey
from coherence.results import CheckOptions


@attrs.define
class Instance:
    """One property on one line with its ``forall`` variables bound."""

    prop: ir.Liveness
    line: int
    values: tuple[int, ...]
    index: int = 0  # position in ``instances(model)``
    premise: bytearray = attrs.Factory(bytearray)  # 1 where P holds and Q does not
    goal: bytearray = attrs.Factory(bytearray)  # 1 where Q holds

    def label(self) -> str:
        parts = [f"{b.name}={v}" for b, v in zip(self.prop.binders, self.values, strict=True)]
        return ", ".join(parts)


def instances(model: ir.Model) -> list[Instance]:
    """Every property on every line for every value of its binders, in this order (the
    compiled engine's generated predicates follow it)."""
    out: list[Instance] = []
    for prop in model.liveness:
        domains = [list(ir.domain(b.type)) for b in prop.binders]
        for line in range(model.lines):
            for values in itertools.product(*domains):
                out.append(Instance(prop, line, tuple(values), len(out)))
    return out


@attrs.define
class Built:
    """The state graph of every reachable state (ids in breadth-first order of levels, so
    ``parent`` gives shortest paths), with each instance's ``goal``/``premise`` filled in.

    NOTE(premise-where-goal): ``premise[s]`` is 1 only where P holds and Q does not (a
    violation starts at such a state); where Q holds P is not evaluated.
    """

    graph: Graph
    parent: Ints  # 'i': the breadth-first tree, -1 at initial states
    state: Callable[[int], int]  # the packed state (``Layout.pack``) of an id
    errors: dict[str, int]  # property -> a state where its P or Q raises a model error
    stopped: str | None
    task_keys: list[TaskKey]  # the key of each task id (NOTE(task-keys))
    engine: str
    states: int = -1  # states found, where a stopped search has fewer rows (-1: graph.n)
    algorithms: Algorithms | None = None  # faster whole-graph algorithms (None: graph.py's)
    # fills an instance's goal and premise when they are made on demand (the compiled engine:
    # NOTE(graph-memory) in coherence.engines.compiled.graph); None: filled already
    evaluate: Callable[[Instance], None] | None = None


# (model, layout, the instances to evaluate (a subset of ``instances(model)``), options, start)
GraphBuilder = Callable[[ir.Model, Layout, list[Instance], CheckOptions, float],
                        AbstractContextManager[Built]]
