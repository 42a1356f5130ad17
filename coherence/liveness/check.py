"""Liveness properties checked on the explicit state graph (``liveness`` declarations).

The graph is built by an engine's breadth-first search that keeps every edge
(``coherence.liveness.graph``: flat int arrays) and evaluates each property's P and Q in every
state: the reference engine's (``liveness.reference``) or the compiled engine's generated C
(``engines.compiled.graph``), both handing over ``liveness.built.Built``. Then, for each
property and each instance (every line, every value of the leads-to's ``forall`` variables):

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
Symmetry is used in one sound way (``representatives``): when the model is symmetric, the
instances of a property whose agent binders are renamings of each other have one verdict, so
one of each orbit is checked. Agents are a scalarset (no agent literals, order or arithmetic),
so P and Q are invariant under renaming every agent, binder values included; in a symmetric
model each renaming maps the graph onto itself, initial states to initial states, and each
fairness task to a task (of the renamed agent or message, as weak or strong as before), so it
maps a fair run breaking instance v to a fair run breaking the renamed instance.

In a hierarchy (issue 20) the tasks name nodes (machine instances) and messages, and the
renamings used are those that permute each index type's ids by ONE permutation in every
enclosing id (gpus by one, and the sm ids of every gpu by one more: the direct product of one
symmetric group per index type, a subgroup of the nested group the safety search reduces by
and audits). Under such a renaming a bare ``sm`` binder value is renamed the same way
whichever gpu a predicate pairs it with, so P and Q are invariant under renaming the state
and the binder values of each index type; each renaming of the subgroup maps the graph onto
itself because every element of the nested group does, and tasks to tasks as above. So the
orbits are those of first-use order per index type, and ``forall g: gpu :: forall s: sm``
is checked for (0, 0) alone. (The larger nested group would relate more binder tuples only
when a predicate pairs an ``sm`` binder with a particular gpu, which a predicate may not
promise: ``L1[h, s]`` with another gpu ``h`` is allowed.)
"""

from __future__ import annotations

import os
import time
from array import array
from concurrent.futures import ThreadPoolExecutor

import attrs

from coherence import ir
from coherence.layout import Layout
from coherence.liveness import reference
from coherence.liveness.built import Built, GraphBuilder, Instance, instances
from coherence.liveness.graph import (
    UNFAIR,
    Algorithms,
    Graph,
    Ints,
    PythonAlgorithms,
    Reverse,
    fair_cycle,
    first_common,
    path_within,
    sccs,
    source,
)
from coherence.liveness.tasks import TaskKeys
from coherence.memory import peak_rss_bytes
from coherence.results import CheckOptions, Failure
from coherence.semantics import ModelError, Outcome, Semantics, State
from coherence.symmetry import has_symmetry, make_symmetry
from coherence.trace import Step, TraceReplayError, describe

PARALLEL_STATES = 1 << 18  # larger graphs check their instances one at a time

SYMMETRY_NOTE = ("liveness properties were checked on the state graph without symmetry "
                 "reduction (weak fairness names agents and machine instances: docs/language.md, "
                 "'Liveness')")


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
    engine: str = "reference"  # the engine that built the graph
    skipped: int = 0  # instances decided by a renamed one (NOTE(liveness-symmetry))


def check_liveness(model: ir.Model, options: CheckOptions,
                   builder: GraphBuilder | None = None,
                   symmetric: bool | None = None) -> LivenessResult:
    """Every liveness property of ``model`` on the state graph that ``builder`` (default: the
    reference engine's) builds. With ``options.symmetry``, instances that are renamings of
    one another are checked once if the model is ``symmetric`` (None: audited here, as the
    safety search audits it; NOTE(liveness-symmetry))."""
    start = time.perf_counter()
    layout = Layout(model)
    insts = instances(model)
    if symmetric is None:
        symmetric = options.symmetry and has_symmetry(model) and _audit(model)
    checked = representatives(insts) if options.symmetry and symmetric else insts
    with (builder or reference.build)(model, layout, checked, options, start) as built:
        g = built.graph
        failures: list[Failure] = []
        replay = _Replay(Semantics(model), layout, built)
        if built.stopped is None:
            alg: Algorithms = built.algorithms or PythonAlgorithms()
            rev = alg.reverse(g)
            done: set[str] = set(built.errors)
            for name, state in sorted(built.errors.items(), key=lambda x: x[1]):
                steps = replay.steps(_stem(built.parent, state), [])
                failures.append(Failure("error", name, _error_message(replay.sem, checked, name,
                                                                      built.state(state),
                                                                      layout),
                                        steps, None, ("error", name)))
            todo = [inst for inst in checked if inst.prop.name not in done]

            def verdict(inst: Instance) -> _Verdict | None:
                if built.evaluate is not None:  # flags made for this instance only
                    built.evaluate(inst)
                try:
                    if inst.prop.kind is ir.LivenessKind.REACHABLE:
                        return _reachable_verdict(rev, inst, alg)
                    return _leads_to_verdict(g, rev, inst, alg)
                finally:
                    if built.evaluate is not None:  # the verdict keeps what a report needs
                        inst.goal, inst.premise = bytearray(), bytearray()

            # NOTE(parallel-instances): C algorithms release the GIL, so instances are checked
            # on every core; each counterexample is then built in order, one per property. Each
            # running instance holds its own work arrays (about 20 bytes a state), so a large
            # graph's instances run one at a time (NOTE(graph-memory) in
            # coherence.engines.compiled.graph: liveness memory within 3x of safety's)
            workers = 1
            if alg.parallel and g.n <= PARALLEL_STATES:
                workers = options.threads or os.cpu_count() or 1
            with ThreadPoolExecutor(max_workers=workers) as pool:
                verdicts = list(pool.map(verdict, todo))
            for inst, v in zip(todo, verdicts, strict=True):
                if v is None or inst.prop.name in done:
                    continue
                done.add(inst.prop.name)
                if inst.prop.kind is ir.LivenessKind.REACHABLE:
                    failures.append(_report_reachable(g, built, inst, replay, v))
                else:
                    failures.append(_report_leads_to(g, built, inst, replay, v, alg))
        graph_bytes = sum(a.itemsize * len(a) for a in (g.first, g.dst, g.task, built.parent))
        states = built.states if built.states >= 0 else g.n
        return LivenessResult(failures, states, len(g.dst),
                              time.perf_counter() - start, peak_rss_bytes(), graph_bytes,
                              built.stopped, [p.name for p in model.liveness], built.engine,
                              len(insts) - len(checked))


def _audit(model: ir.Model) -> bool:
    from coherence.engines.driver import symmetry_is_sound

    sem = Semantics(model)
    return symmetry_is_sound(sem, make_symmetry(sem))


def _renamed_kind(t: ir.Type, v: int) -> str | None:
    """The scalarset a binder value of type ``t`` belongs to, renamed as a whole
    (NOTE(liveness-symmetry)); None for a value kept as it is (a hierarchy's ``node``, the
    home, anything else)."""
    if isinstance(t, ir.AgentT) or (isinstance(t, ir.NodeT) and v < t.n):
        return "agent"
    if isinstance(t, ir.IndexT):
        return t.name
    return None


def representatives(insts: list[Instance]) -> list[Instance]:
    """One instance per orbit of its binder values under the renamings of
    NOTE(liveness-symmetry): those whose values of each scalarset (agents: of ``agent``
    binders and of ``node`` binders other than the home; each index type of a hierarchy on
    its own) appear in first-use order 0, 1, 2, ...; every other binder value is kept."""
    out = []
    for inst in insts:
        seen: dict[str, dict[int, int]] = {}
        canonical = True
        for b, v in zip(inst.prop.binders, inst.values, strict=True):
            kind = _renamed_kind(b.type, v)
            if kind is None:
                continue
            ids = seen.setdefault(kind, {})
            if v not in ids:
                ids[v] = len(ids)
            if ids[v] != v:
                canonical = False
        if canonical:
            out.append(inst)
    return out


def _error_message(sem: Semantics, insts: list[Instance], name: str, packed: int,
                   layout: Layout) -> str:
    """The model error that property ``name``'s P or Q raises in the state."""
    state = layout.unpack(packed)
    for inst in insts:
        if inst.prop.name != name:
            continue
        names = [b.name for b in inst.prop.binders]
        for e in (inst.prop.goal, inst.prop.premise):
            if e is None:
                continue
            try:
                sem.predicate(e, names)(state, inst.line, inst.values)
            except ModelError as err:
                return f"liveness {name}: {err.message}"
    raise TraceReplayError(f"liveness {name}: the engine reported a model error that the "
                           "semantics does not raise")


def _stem(parent: Ints, state: int) -> list[int]:
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


_NOT = bytes([1, 0]) + bytes(254)  # 0/1 flags negated by bytes.translate


@attrs.define
class _Verdict:
    """Where an instance fails: its first bad state, and for leads-to the not-Q region and
    its fair sets (what the counterexample is built from)."""

    start: int
    region: bytearray | None = None
    in_fair: bytearray | None = None


def _reachable_verdict(rev: Reverse, inst: Instance, alg: Algorithms) -> _Verdict | None:
    can = alg.backward_reachable(rev, inst.goal)
    bad = can.find(0)
    return None if bad < 0 else _Verdict(bad)


def _report_reachable(g: Graph, built: Built, inst: Instance, replay: _Replay,
                      v: _Verdict) -> Failure:
    bad = v.start
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


def _leads_to_verdict(g: Graph, rev: Reverse, inst: Instance,
                      alg: Algorithms) -> _Verdict | None:
    region = inst.goal.translate(_NOT)
    # NOTE(premise-closure): only the not-Q states a P-state reaches through not-Q states
    # matter; that set is closed under not-Q successors, so every strongly connected set of
    # the not-Q states that meets it lies inside it, and its fair sets are exactly those of
    # the not-Q states that a violation can reach (the others are never decomposed)
    region = alg.forward_reachable(g, inst.premise, region)
    in_fair = alg.fair_region(g, region)  # the labels only for a counterexample (below)
    doomed = alg.backward_reachable(rev, in_fair, region)
    start = first_common(inst.premise, doomed)
    return None if start < 0 else _Verdict(start, region, in_fair)


def _report_leads_to(g: Graph, built: Built, inst: Instance, replay: _Replay,
                     v: _Verdict, alg: Algorithms) -> Failure:
    start, region, in_fair = v.start, v.region, v.in_fair
    assert region is not None and in_fair is not None
    comp, _count, again = alg.fair_sets(g, region)  # the same sets, now labelled
    assert again == in_fair
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

    def __init__(self, sem: Semantics, layout: Layout, built: Built) -> None:
        self.sem = sem
        self.layout = layout
        self.built = built
        self.keys = TaskKeys(sem.model, layout)

    def steps(self, stem: list[int], edges: list[int]) -> list[Step]:
        g, state = self.built.graph, self.built.state
        pairs: list[tuple[int, int, int | None]] = [
            (stem[i], stem[i + 1], None) for i in range(len(stem) - 1)]
        pairs += [(source(g, e), g.dst[e], g.task[e]) for e in edges]
        out: list[Step] = []
        for u, w, want in pairs:
            before = self.layout.unpack(state(u))
            chosen = self._outcome(before, state(w), want)
            out.append(describe(self.sem, len(out) + 1, before, chosen))
        return out

    def _outcome(self, before: State, target: int, want: int | None) -> Outcome:
        outcomes, _ = self.sem.enabled(before)
        wanted = None if want is None or want == UNFAIR else self.built.task_keys[want]
        for out in outcomes:
            if out.state is None or self.layout.pack(out.state) != target:
                continue
            if want is None or self.keys.key(out.action) == wanted:
                return out
        raise TraceReplayError("a liveness counterexample's edge does not replay")


__all__ = ["SYMMETRY_NOTE", "LivenessResult", "check_liveness"]
