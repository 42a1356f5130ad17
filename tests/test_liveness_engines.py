"""The liveness graph of the compiled engine against the reference engine's (issue 16).

Both feed ``coherence.liveness.check`` one representation (``liveness.built.Built``); here the
graphs themselves are compared, edge for edge with their fairness tasks, then the verdicts,
and every lasso is replayed through the reference semantics and checked to be one: the cycle
closes, the goal never holds on it, and each weakly fair task enabled all along it is taken.
"""

from __future__ import annotations

import time
from array import array
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coherence import ir, load_spec_text
from coherence.engines import check
from coherence.engines.compiled import CompiledEngine
from coherence.layout import Layout
from coherence.liveness import check_liveness
from coherence.liveness import reference as ref_graph
from coherence.liveness.built import Built, instances
from coherence.liveness.check import representatives
from coherence.liveness.graph import UNFAIR, Graph, PythonAlgorithms
from coherence.liveness.tasks import TaskKeys
from coherence.mutants import find_mutants, parse_header
from coherence.results import CheckOptions, Failure
from coherence.semantics import Semantics, State
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties
from coherence.trace import action_from_json

pytestmark = pytest.mark.skipif(
    CompiledEngine().available() is not None, reason="no C compiler")

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ["german.coh", "msi_directory.coh", "mesi_directory.coh",
           "broadcast_invalidate_acked.coh"]
LIVELOCKS = [p for p in find_mutants(ROOT / "specs" / "mutants")
             if any(e in {lp.name for lp in load_spec(p, {"agents": 2}).liveness}
                    for e in parse_header(p).expect)]


def compiled_builder():  # type: ignore[no-untyped-def]
    from coherence.engines.compiled.graph import build
    return build


def bundled(name: str, agents: int) -> ir.Model:
    return drop_properties(load_spec(ROOT / "specs" / name, {"agents": agents}), ["coherent"])


def mutant(path: Path, agents: int | None = None) -> ir.Model:
    m = parse_header(path)
    return drop_properties(load_spec(path, {"agents": agents or m.agents}), list(m.skip))


def edges_by_state(built: Built, layout: Layout) -> tuple[Counter, list[bytes]]:
    """The multiset of (source, target, task key, strong) over packed states, and each
    state's packed code in id order."""
    g = built.graph
    packed = [built.state(i) for i in range(g.n)]
    out: Counter = Counter()
    for s in range(g.n):
        for e in range(g.first[s], g.first[s + 1]):
            t = g.task[e]
            key = None if t < 0 else (built.task_keys[t], t in g.strong)
            out[packed[s], packed[g.dst[e]], key] += 1
    return out, packed


def assert_same_graph(model: ir.Model) -> None:
    layout = Layout(model)
    ri, ci = instances(model), instances(model)
    opts = CheckOptions(symmetry=False)
    with ref_graph.build(model, layout, ri, opts, time.perf_counter()) as ref, \
            compiled_builder()(model, layout, ci, opts, time.perf_counter()) as comp:
        assert comp.engine == "compiled" and ref.stopped is None is comp.stopped
        assert comp.graph.n == ref.graph.n and len(comp.graph.dst) == len(ref.graph.dst)
        ref_edges, ref_packed = edges_by_state(ref, layout)
        comp_edges, comp_packed = edges_by_state(comp, layout)
        assert comp_edges == ref_edges
        # the same truth of every premise and goal in every state
        where = {code: i for i, code in enumerate(comp_packed)}
        for c in ci:  # the compiled engine makes an instance's flags when it is checked
            if comp.evaluate is not None:
                comp.evaluate(c)
        for r, c in zip(ri, ci, strict=True):
            for i, code in enumerate(ref_packed):
                j = where[code]
                assert (r.goal[i], r.premise[i]) == (c.goal[j], c.premise[j]), r.prop.name
        assert set(ref.errors) == set(comp.errors)
        # breadth-first ids: a parent is one level up, so stems are shortest in both
        assert Counter(_depths(ref)) == Counter(_depths(comp))


def _depths(built: Built) -> list[int]:
    depth = [0] * built.graph.n
    for i in range(built.graph.n):
        p = built.parent[i]
        depth[i] = 0 if p < 0 else depth[p] + 1
        assert p < i
    return depth


def replayed_states(sem: Semantics, f: Failure) -> list[State]:
    state = sem.initial_states()[0]
    states = [state]
    for step in f.trace:
        out = sem.execute(state, action_from_json(step.action))
        assert out is not None and out.state is not None, f"step {step.index} does not replay"
        state = out.state
        states.append(state)
    return states


def assert_valid_lasso(model: ir.Model, f: Failure) -> None:
    """Some instance of the property is broken by this run: from the start of its loop on,
    the goal never holds; the loop closes (or nothing fair can happen at its end); and every
    weakly fair task enabled in every state of the loop is taken in it."""
    sem = Semantics(model)
    keys = TaskKeys(model, Layout(model))
    states = replayed_states(sem, f)
    assert f.loop_start is not None
    k = f.loop_start - 1  # index in ``states`` of the loop's first state
    loop = states[k:]
    prop = next(p for p in model.liveness if p.name == f.name)
    names = [b.name for b in prop.binders]
    goal = sem.predicate(prop.goal, names)

    def enabled(s: State) -> set:
        outs, _ = sem.enabled(s)
        return {keys.key(o.action) for o in outs if o.state is not None} - {None}

    taken = {keys.key(action_from_json(step.action)) for step in f.trace[k:]} - {None}
    closes = len(loop) > 1 and loop[0] == loop[-1]
    if not closes:  # the run stays in its last state: nothing fair is enabled there
        assert len(loop) == 1 or prop.kind is ir.LivenessKind.REACHABLE
        if prop.kind is ir.LivenessKind.LEADS_TO:
            assert not enabled(loop[-1])
    elif prop.kind is ir.LivenessKind.LEADS_TO:
        always = set.intersection(*(enabled(s) for s in loop[:-1]))
        strong = {keys.key(o.action) for s in loop[:-1] for o in sem.enabled(s)[0]
                  if o.state is not None and keys.strong(o.action)}
        assert always - strong <= taken, "a weakly fair task is neglected on the cycle"
    for inst in instances(model):
        if inst.prop.name == f.name and not any(goal(s, inst.line, inst.values) for s in loop):
            return
    raise AssertionError(f"{f.name}: the goal holds somewhere on the loop for every instance")


def assert_same_verdicts(model: ir.Model) -> None:
    opts = CheckOptions(symmetry=False)
    ref = check_liveness(model, opts)
    comp = check_liveness(model, opts, compiled_builder())
    assert comp.engine == "compiled"
    assert (comp.states, comp.edges) == (ref.states, ref.edges)
    assert {f.name for f in comp.failures} == {f.name for f in ref.failures}
    for f in [*ref.failures, *comp.failures]:
        if f.kind == "liveness":
            assert_valid_lasso(model, f)


@pytest.mark.parametrize("path", LIVELOCKS, ids=[p.stem for p in LIVELOCKS])
def test_livelock_mutants_same_graph_and_verdict(path: Path) -> None:
    model = mutant(path)
    assert_same_graph(model)
    assert_same_verdicts(model)


@pytest.mark.parametrize("spec", ["broadcast_invalidate_acked.coh", "msi_directory.coh"])
def test_bundled_same_graph_at_2_agents(spec: str) -> None:
    assert_same_graph(bundled(spec, 2))


@pytest.mark.parametrize("spec", BUNDLED)
def test_bundled_same_verdict_at_2_agents(spec: str) -> None:
    assert_same_verdicts(bundled(spec, 2))


def test_check_uses_the_compiled_graph_by_default_and_the_reference_on_request() -> None:
    model = bundled("broadcast_invalidate_acked.coh", 2)
    auto = check(model, CheckOptions(liveness=True), engine="auto")
    ref = check(model, CheckOptions(liveness=True), engine="reference")
    assert any(n.startswith("liveness: ") and n.endswith("engine compiled") for n in auto.notes)
    assert any(n.startswith("liveness: ") and n.endswith("engine reference") for n in ref.notes)
    assert auto.verdict == ref.verdict == "holds"


ERRING = """
param agents = 2;
param values = 1;
network net: unordered, capacity = 2;
message Req;
message Ack;
event Go;
home machine H {
  stable state R;
  var x: value = undefined;
  init R;
  on Req { x := 0; send Ack to msg.src; }
}
cache machine C {
  stable state I, D;
  transient state W;
  init I;
  on Go in I { send Req to home; goto W; }
  on Ack in W { goto D; }
  rule Done in D { goto I; }
}
liveness bad: forall a: agent :: C[a].state == W ~> H.x == 0;
"""


def test_a_model_error_in_a_predicate_is_found_by_both() -> None:
    model = load_spec_text(ERRING, "e.coh")
    ref = check_liveness(model, CheckOptions(symmetry=False))
    comp = check_liveness(model, CheckOptions(symmetry=False), compiled_builder())
    for r in (ref, comp):
        assert [(f.kind, f.name) for f in r.failures] == [("error", "bad")]
        assert "undefined" in r.failures[0].message


@pytest.mark.slow
@pytest.mark.parametrize("path", LIVELOCKS, ids=[p.stem for p in LIVELOCKS])
def test_livelock_mutants_same_verdict_at_3_agents(path: Path) -> None:
    # without the coherence monitor, which no liveness property reads and which multiplies
    # the states the reference engine must store at 3 agents
    model = mutant(path, 3)
    if any(p.name == "coherent" for p in model.properties):
        model = drop_properties(model, ["coherent"])
    assert_same_verdicts(model)


@pytest.mark.slow
@pytest.mark.parametrize("spec", BUNDLED)
def test_bundled_same_graph_and_verdict_at_3_agents(spec: str) -> None:
    model = bundled(spec, 3)
    assert_same_graph(model)
    assert_same_verdicts(model)


# ---------------------------------------------------------------- the C algorithms vs graph.py

C_GRAPHS = st.integers(1, 14).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                       st.sampled_from([UNFAIR, 0, 1, 2, 3])), max_size=45),
    st.sets(st.sampled_from([0, 1, 2, 3])),
    st.lists(st.booleans(), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n)))


@pytest.fixture(scope="module")
def c_library():  # type: ignore[no-untyped-def]
    from coherence.engines.cgen.codegen import generate
    from coherence.engines.compiled.build import build
    from coherence.engines.compiled.engine import Library
    model = load_spec_text(ERRING, "a.coh")
    path, _ = build(generate(model, Layout(model), liveness=True).source)
    return Library.load(path)


def partition(label: array) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for s, c in enumerate(label):
        if c >= 0:
            groups.setdefault(c, set()).add(s)
    return {frozenset(g) for g in groups.values()}


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=C_GRAPHS)
def test_c_algorithms_equal_the_python_definitions(c_library, case) -> None:  # type: ignore[no-untyped-def]
    from coherence.engines.compiled.graph import CAlgorithms
    n, edges, strong, allowed_bits, source_bits = case
    rows: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, d, t in edges:  # duplicates kept: parallel edges happen in real graphs
        rows[s].append((d, t))
    first, dst, task = array("q", [0]), array("i"), array("i")
    for row in rows:
        for d, t in row:
            dst.append(d)
            task.append(t)
        first.append(len(dst))
    g = Graph(first, dst, task, set(strong))
    py, c = PythonAlgorithms(), CAlgorithms(c_library, bytearray(
        1 if t in strong else 0 for t in range(4)))
    allowed = bytearray(allowed_bits)
    sources = bytearray(source_bits)
    # the C side reaches backwards by components, without predecessor rows
    rp, rc = py.reverse(g), c.reverse(g)
    assert rc.graph is g and len(rc.src) == 0
    for region in (None, allowed):
        assert py.backward_reachable(rp, sources, region) == c.backward_reachable(
            rc, sources, region)
        assert py.forward_reachable(g, sources, region) == c.forward_reachable(
            g, sources, region)
        lp, np_, fp = py.fair_sets(g, region)
        lc, nc, fc = c.fair_sets(g, region)
        assert partition(lp) == partition(lc) and np_ == nc and fp == fc
        assert c.fair_region(g, region) == fp == py.fair_region(g, region)


# ---------------------------------------------------------------- binder orbits (symmetry)


def test_representatives_keep_one_binder_tuple_per_orbit() -> None:
    text = ERRING.replace("liveness bad: forall a: agent :: C[a].state == W ~> H.x == 0;",
                          "liveness two: forall a: agent, b: agent :: C[a].state == W ~> "
                          "C[b].state != W;\nliveness one: forall a: agent :: "
                          "C[a].state == W ~> C[a].state == D;").replace(
        "param agents = 2;", "param agents = 3;")
    model = load_spec_text(text, "r.coh")
    kept = {(i.prop.name, i.values) for i in representatives(instances(model))}
    assert kept == {("two", (0, 0)), ("two", (0, 1)), ("one", (0,))}


SYMMETRIC_CASES = [*[(p, None) for p in LIVELOCKS],
                   *[(ROOT / "specs" / s, 2) for s in BUNDLED]]


@pytest.mark.parametrize(("path", "agents"), SYMMETRIC_CASES,
                         ids=[p.stem for p, _ in SYMMETRIC_CASES])
def test_checking_one_instance_per_orbit_gives_every_verdict(path: Path,
                                                             agents: int | None) -> None:
    model = mutant(path) if agents is None else bundled(path.name, agents)
    every = check_liveness(model, CheckOptions(symmetry=False), compiled_builder())
    orbits = check_liveness(model, CheckOptions(symmetry=True), compiled_builder())
    assert {f.name for f in orbits.failures} == {f.name for f in every.failures}
    assert every.skipped == 0
    binders = any(p.binders for p in model.liveness)
    assert (orbits.skipped > 0) == (binders and model.agents > 1)


def test_a_bounded_compiled_graph_is_incomplete_not_a_verdict() -> None:
    model = load_spec_text(ERRING.replace("liveness bad: forall a: agent :: C[a].state == W ~> "
                                          "H.x == 0;", "liveness ok: true;"), "b.coh")
    live = check_liveness(model, CheckOptions(max_states=3), compiled_builder())
    assert live.engine == "compiled" and live.failures == []
    assert live.stopped == "--max-states 3 reached" and live.states >= 3
    done = check_liveness(model, CheckOptions(), compiled_builder())
    assert done.stopped is None and done.states > live.states


def test_the_edge_logs_count_against_the_memory_limit() -> None:
    # one thread: each thread that logs edges takes a block of its own, so with two the bytes
    # depended on whether the second thread got work (CI failed once on a loaded machine)
    model = bundled("broadcast_invalidate_acked.coh", 2)
    limit = 1 << 20
    safety = check(model, CheckOptions(memory_limit=limit, threads=1), engine="compiled")
    assert safety.stopped is None  # the states alone fit ...
    live = check_liveness(model, CheckOptions(memory_limit=limit, threads=1), compiled_builder())
    assert live.stopped is not None and "memory" in live.stopped and live.failures == []
    assert check_liveness(model, CheckOptions(memory_limit=64 << 20, threads=1),
                          compiled_builder()).stopped is None  # ... and the edges in 64 MiB
