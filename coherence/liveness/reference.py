"""The reference engine's liveness graph: a breadth-first search of the semantics in Python
that keeps every edge (target and task) and evaluates each instance's P and Q per state."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from coherence import ir
from coherence.engines.stopping import (
    StopOnSignals,
    StopRequest,
    memory_limit_reached,
    time_limit_reached,
)
from coherence.layout import Layout
from coherence.liveness.built import Built, Instance
from coherence.liveness.graph import Graph
from coherence.liveness.tasks import Tasks
from coherence.memory import rss_bytes
from coherence.results import CheckOptions, Progress
from coherence.semantics import ModelError, Semantics


@contextmanager
def build(model: ir.Model, layout: Layout, insts: list[Instance], options: CheckOptions,
          start: float) -> Iterator[Built]:
    sem = Semantics(model)
    tasks = Tasks(model, layout)
    tests: list[tuple[Instance, Callable | None, Callable]] = []
    for inst in insts:
        names = [b.name for b in inst.prop.binders]
        premise = (sem.predicate(inst.prop.premise, names)
                   if inst.prop.premise is not None else None)
        tests.append((inst, premise, sem.predicate(inst.prop.goal, names)))
    index: dict[int, int] = {}
    packed: list[int] = []
    parent = array("i")
    first = array("q", [0])
    dst = array("i")
    task = array("i")
    errors: dict[str, int] = {}

    def add(code: int, par: int) -> int:
        j = index.get(code)
        if j is None:
            j = index[code] = len(packed)
            packed.append(code)
            parent.append(par)
        return j

    for s in sem.initial_states():
        add(layout.pack(s), -1)
    request = StopRequest()
    with StopOnSignals(request):
        stopped = _search(sem, layout, tests, tasks, options, start, request, packed, add,
                          first, dst, task, errors)
    yield Built(Graph(first, dst, task, tasks.strong), parent, packed.__getitem__, errors,
                stopped, tasks.key_list(), "reference")


def _search(sem: Semantics, layout: Layout, tests: list, tasks: Tasks, options: CheckOptions,
            start: float, request: StopRequest, packed: list[int], add: Callable,
            first: array, dst: array, task: array, errors: dict[str, int]) -> str | None:
    """The breadth-first loop of ``build``: every state's predicates and edges, in order,
    until done or stopped (limits, SIGINT/SIGTERM), with progress reports."""
    stopped: str | None = None
    last_report = start
    i = 0
    while i < len(packed):
        state = layout.unpack(packed[i])
        for inst, premise, goal in tests:
            try:
                reached = goal(state, inst.line, inst.values)
                inst.goal.append(reached)
                # NOTE(premise-where-goal) in ``built``
                inst.premise.append(premise(state, inst.line, inst.values)
                                    if premise is not None and not reached else 0)
            except ModelError:
                inst.goal.append(0)
                inst.premise.append(0)
                errors.setdefault(inst.prop.name, i)
        outcomes, _problems = sem.enabled(state)
        for out in outcomes:
            if out.state is None:
                continue  # a model error: the safety search reports it
            dst.append(add(layout.pack(out.state), i))
            task.append(tasks.of(out.action))
        first.append(len(dst))
        i += 1
        if options.max_states is not None and len(packed) > options.max_states:
            stopped = f"--max-states {options.max_states} reached"
            break
        if request.reason is not None:
            stopped = request.reason
            break
        if i % 256 == 0:
            now = time.perf_counter()
            if options.time_limit is not None and now - start > options.time_limit:
                stopped = time_limit_reached(options.time_limit)
                break
            if options.memory_limit is not None and rss_bytes() > options.memory_limit:
                stopped = memory_limit_reached(options.memory_limit)
                break
            if options.progress is not None and now - last_report >= options.progress_every:
                last_report = now
                options.progress(Progress(len(packed), len(packed) - i, 0, len(dst),
                                          now - start, rss_bytes()))
    return stopped
