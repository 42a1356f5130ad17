"""Liveness properties checked on the explicit state graph (``liveness`` declarations).

The graph is built by a breadth-first search of the reference semantics that keeps every
edge (``coherence.liveness.graph``: flat int arrays) and evaluates each property's P and Q
in every state. Then, for each property and each instance (every line, every value of the
leads-to's ``forall`` variables):

* AG EF Q (``liveness NAME: Q``): the states that can reach a Q-state, by backward
  reachability over the predecessor edges; any other reachable state is a violation. Its
  counterexample is the shortest path to such a state, then the path into a bottom strongly
  connected component it cannot leave and a cycle through it (the trap).
* P ~> Q under weak (and, where marked, strong) fairness: the sets of not-Q states a fair path
  can stay in forever (``graph.fair_sets``: strongly connected components, refined for strong
  fairness); a violation is a reachable P-and-not-Q state from which one of them is reachable
  without passing Q. Its counterexample
  is a lasso: the stem to that state and on into the component, then a cycle that repeats.

NOTE(liveness-symmetry): the graph is built without symmetry reduction. AG EF of a symmetric
predicate would survive the quotient (it is a bisimulation), but weak fairness does not: a
task's identity names agents, and along a path of canonical states the names are permuted at
every step, so "the same task enabled forever" cannot be read off the quotient graph.
"""

from __future__ import annotations

import itertools
import time
from array import array
from collections.abc import Callable

import attrs

from coherence import ir
from coherence.engines.stopping import (
    StopOnSignals,
    StopRequest,
    memory_limit_reached,
    time_limit_reached,
)
from coherence.layout import Layout
from coherence.liveness.graph import (
    Graph,
    Reverse,
    backward_reachable,
    fair_cycle,
    fair_sets,
    path_within,
    reverse,
    sccs,
    source,
)
from coherence.liveness.tasks import Tasks
from coherence.memory import peak_rss_bytes, rss_bytes
from coherence.results import CheckOptions, Failure, Progress
from coherence.semantics import ModelError, Outcome, Semantics, State
from coherence.trace import Step, TraceReplayError, describe

SYMMETRY_NOTE = ("liveness properties were checked on the state graph without symmetry "
                 "reduction (weak fairness names agents: docs/language.md, 'Liveness')")


@attrs.define
class Instance:
    """One property on one line with its ``forall`` variables bound."""

    prop: ir.Liveness
    line: int
    values: tuple[int, ...]
    premise: bytearray = attrs.Factory(bytearray)  # 1 where P holds (leads-to only)
    goal: bytearray = attrs.Factory(bytearray)  # 1 where Q holds

    def label(self) -> str:
        parts = [f"{b.name}={v}" for b, v in zip(self.prop.binders, self.values, strict=True)]
        return ", ".join(parts)


@attrs.define
class LivenessResult:
    failures: list[Failure]
    states: int
    edges: int
    seconds: float
    peak_memory_bytes: int
    graph_bytes: int
    stopped: str | None
    checked: list[str]


@attrs.define
class _Built:
    graph: Graph
    packed: list[int]
    parent: array
    errors: dict[str, tuple[int, str]]  # property -> (state, message) of a model error in P/Q
    stopped: str | None


def instances(model: ir.Model) -> list[Instance]:
    out = []
    for prop in model.liveness:
        domains = [list(ir.domain(b.type)) for b in prop.binders]
        for line in range(model.lines):
            for values in itertools.product(*domains):
                out.append(Instance(prop, line, tuple(values)))
    return out


def check_liveness(model: ir.Model, options: CheckOptions) -> LivenessResult:
    start = time.perf_counter()
    sem = Semantics(model)
    layout = Layout(model)
    insts = instances(model)
    tasks = Tasks(model)
    built = _build(sem, layout, insts, tasks, options, start)
    g = built.graph
    failures: list[Failure] = []
    replay = _Replay(sem, layout, built, tasks)
    if built.stopped is None:
        rev = reverse(g)
        done: set[str] = set(built.errors)
        for name, (state, message) in built.errors.items():
            steps = replay.steps(_stem(built.parent, state), [])
            failures.append(Failure("error", name, message, steps, None, ("error", name)))
        for inst in insts:
            if inst.prop.name in done:
                continue
            if inst.prop.kind is ir.LivenessKind.REACHABLE:
                f = _check_reachable(g, rev, built, inst, replay)
            else:
                f = _check_leads_to(g, rev, built, inst, replay)
            if f is not None:
                done.add(inst.prop.name)
                failures.append(f)
    graph_bytes = sum(a.itemsize * len(a) for a in (g.first, g.dst, g.task, built.parent))
    return LivenessResult(failures, g.n, len(g.dst), time.perf_counter() - start,
                          peak_rss_bytes(), graph_bytes, built.stopped,
                          [p.name for p in model.liveness])


def _build(sem: Semantics, layout: Layout, insts: list[Instance], tasks: Tasks,
           options: CheckOptions, start: float) -> _Built:
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
    errors: dict[str, tuple[int, str]] = {}

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
    return _Built(Graph(first, dst, task, tasks.strong), packed, parent, errors, stopped)


def _search(sem: Semantics, layout: Layout, tests: list, tasks: Tasks, options: CheckOptions,
            start: float, request: StopRequest, packed: list[int], add: Callable,
            first: array, dst: array, task: array,
            errors: dict[str, tuple[int, str]]) -> str | None:
    """The breadth-first loop of ``_build``: every state's predicates and edges, in order,
    until done or stopped (limits, SIGINT/SIGTERM), with progress reports."""
    stopped: str | None = None
    last_report = start
    i = 0
    while i < len(packed):
        state = layout.unpack(packed[i])
        for inst, premise, goal in tests:
            name = inst.prop.name
            try:
                reached = goal(state, inst.line, inst.values)
                inst.goal.append(reached)
                # P matters only where Q does not hold (a violation starts at P and not Q)
                inst.premise.append(premise(state, inst.line, inst.values)
                                    if premise is not None and not reached else 0)
            except ModelError as err:
                inst.goal.append(0)
                inst.premise.append(0)
                errors.setdefault(name, (i, f"liveness {name}: {err.message}"))
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


def _stem(parent: array, state: int) -> list[int]:
    """States from an initial state to ``state`` along the breadth-first tree (shortest)."""
    path = []
    while state >= 0:
        path.append(state)
        state = parent[state]
    return path[::-1]


def _where(model: ir.Model, inst: Instance) -> str:
    parts = []
    if inst.values:
        parts.append(inst.label())
    if model.lines > 1:
        parts.append(f"line {inst.line}")
    return f" ({'; '.join(parts)})" if parts else ""


def _check_reachable(g: Graph, rev: Reverse, built: _Built, inst: Instance,
                     replay: _Replay) -> Failure | None:
    can = backward_reachable(rev, inst.goal)
    bad = can.find(0)
    if bad < 0:
        return None
    # trapped: the first component Tarjan completes from ``bad`` is a bottom one
    comp, _ = sccs(g, roots=[bad], first_only=True)
    into = path_within(g, bad, None, bytearray(1 if c == 0 else 0 for c in comp))
    assert into is not None
    entry = g.dst[into[-1]] if into else bad
    cycle = _trap_cycle(g, comp, entry)
    name = inst.prop.name
    stem = _stem(built.parent, bad)
    steps = replay.steps(stem, into + cycle)
    k = len(stem) - 1 + len(into) + 1  # the first step of the cycle
    where = _where(replay.sem.model, inst)
    message = (f"liveness {name}{where}: after step {len(stem) - 1} its goal can never hold "
               "again, whatever happens next")
    details = [f"steps {len(stem)}..{k - 1} lead into a set of states it cannot leave"
               if into else "", ]
    details = [d for d in details if d]
    if cycle:
        details.append(f"trapped: steps {k}..{len(steps)} form a cycle that repeats from "
                       f"step {k} forever, and the goal holds in none of these states")
    else:
        details.append("trapped: nothing can happen in the last state")
    return Failure("liveness", name, message, steps, str(inst.prop.span),
                   ("liveness", name), details, loop_start=k)


def _trap_cycle(g: Graph, comp: array, entry: int) -> list[int]:
    """A shortest cycle through ``entry`` inside its component (empty for a lone state)."""
    goal = bytearray(g.n)
    goal[entry] = 1
    c = comp[entry]
    inside = bytearray(1 if x == c else 0 for x in comp)
    best: list[int] | None = None
    for e in g.edges(entry):
        w = g.dst[e]
        if not inside[w]:
            continue
        rest = path_within(g, w, inside, goal)
        if rest is not None and (best is None or len(rest) + 1 < len(best)):
            best = [e, *rest]
    return best or []


def _check_leads_to(g: Graph, rev: Reverse, built: _Built, inst: Instance,
                    replay: _Replay) -> Failure | None:
    region = bytearray(1 - q for q in inst.goal)
    comp, _count = fair_sets(g, region)
    in_fair = bytearray(1 if c >= 0 else 0 for c in comp)
    doomed = backward_reachable(rev, in_fair, region)
    start = None
    for s in range(g.n):
        if inst.premise[s] and doomed[s]:
            start = s
            break
    if start is None:
        return None
    into = path_within(g, start, region, in_fair)
    assert into is not None
    entry = g.dst[into[-1]] if into else start
    cycle = fair_cycle(g, comp, entry)
    stem = _stem(built.parent, start)
    steps = replay.steps(stem, into + cycle)
    k = len(stem) - 1 + len(into) + 1
    name = inst.prop.name
    where = _where(replay.sem.model, inst)
    message = (f"liveness {name}{where}: its premise holds after step {len(stem) - 1}, and "
               "on this weakly fair path its goal never follows")
    details = []
    if cycle:
        details.append(f"lasso: steps {k}..{len(steps)} repeat from step {k} forever; the cycle "
                       "takes every fair transition enabled all along it (and every strongly "
                       "fair one enabled anywhere in it)")
    else:
        details.append(f"from step {k - 1} the system may stay in its last state forever: "
                       "no fair transition is enabled there (only unfair ones, or none)")
    return Failure("liveness", name, message, steps, str(inst.prop.span),
                   ("liveness", name), details, loop_start=k)


class _Replay:
    """Numbered steps for a path of stored states and edges, choosing at each edge the action
    that performs that edge's task (so the cycle shown is the fair one)."""

    def __init__(self, sem: Semantics, layout: Layout, built: _Built, tasks: Tasks) -> None:
        self.sem = sem
        self.layout = layout
        self.built = built
        self.tasks = tasks

    def steps(self, stem: list[int], edges: list[int]) -> list[Step]:
        g, packed = self.built.graph, self.built.packed
        pairs: list[tuple[int, int, int | None]] = [
            (stem[i], stem[i + 1], None) for i in range(len(stem) - 1)]
        pairs += [(source(g, e), g.dst[e], g.task[e]) for e in edges]
        out: list[Step] = []
        for u, w, want in pairs:
            before = self.layout.unpack(packed[u])
            chosen = self._outcome(before, packed[w], want)
            out.append(describe(self.sem, len(out) + 1, before, chosen))
        return out

    def _outcome(self, before: State, target: int, want: int | None) -> Outcome:
        outcomes, _ = self.sem.enabled(before)
        for out in outcomes:
            if out.state is None or self.layout.pack(out.state) != target:
                continue
            if want is None or self.tasks.of(out.action) == want:
                return out
        raise TraceReplayError("a liveness counterexample's edge does not replay")


__all__ = ["SYMMETRY_NOTE", "LivenessResult", "check_liveness"]
