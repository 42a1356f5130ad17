"""Liveness (issue 16): the language, AG EF and leads-to under weak fairness, lassos.

Tiny specs in the default tier; the graph algorithms against brute force on random graphs.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coherence import load_spec_text
from coherence.engines import check
from coherence.errors import SpecError
from coherence.liveness.graph import (
    UNFAIR,
    Graph,
    backward_reachable,
    fair_cycle,
    fair_sets,
    reverse,
    sccs,
    source,
)
from coherence.results import CheckOptions, CheckResult

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "language.md"

SERVED = """
param agents = 2;
param values = 1;
network net: unordered, capacity = 2;
message Req;
message Ack;
event Go;
home machine H {
  stable state R;
  init R;
  on Req { send Ack to msg.src; }
}
cache machine C {
  stable state I, D;
  transient state W;
  init I;
  on Go in I { send Req to home; goto W; }
  ACK_HANDLER
  rule Done in D { goto I; }
}
liveness can_settle: forall a: agent :: C[a].state != W;
liveness served: forall a: agent :: C[a].state == W ~> C[a].state == D;
"""


def spec(ack: str = "on Ack in W { goto D; }", extra: str = "") -> str:
    return SERVED.replace("ACK_HANDLER", ack) + extra


def live(text: str, **kw: object) -> CheckResult:
    model = load_spec_text(text, "live.coh")
    return check(model, CheckOptions(liveness=True, **kw), engine="reference")  # type: ignore[arg-type]


def failed(result: CheckResult) -> set[str]:
    return {f.name for f in result.failures}


# ---------------------------------------------------------------- language


def test_both_forms_lower_with_binders_and_fairness() -> None:
    model = load_spec_text(spec(), "x.coh")
    reach, leads = model.liveness
    assert (reach.kind, reach.binders, reach.premise) == ("reachable", (), None)
    assert leads.kind == "leads-to" and [b.name for b in leads.binders] == ["a"]
    fair = {t.name: t.weakly_fair for m in model.machines for t in m.transitions}
    assert fair == {"Req": True, "Go": False, "Ack": True, "Done": True}


def test_fair_and_unfair_annotations() -> None:
    model = load_spec_text(spec("unfair on Ack in W { goto D; }").replace(
        "on Go in I", "fair on Go in I"), "x.coh")
    fair = {t.name: t.weakly_fair for m in model.machines for t in m.transitions}
    assert fair["Ack"] is False and fair["Go"] is True


@pytest.mark.parametrize(("extra", "message"), [
    ("liveness bad: forall m: Ack :: m.src == 0 ~> true;\n", "not over messages in flight"),
    ("liveness bad: forall a: agent :: C[a].state ~> true;\n", "bool"),
    ("liveness bad: forall a: agent :: true ~> C[b].state == D;\n", "b"),
    ("liveness can_settle: true;\n", "duplicate name 'can_settle'"),
])
def test_misuse_is_a_located_error(extra: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        load_spec_text(spec(extra=extra), "x.coh")
    assert message in str(err.value)
    assert err.value.span is not None and err.value.span.line >= 22


def test_unfair_stall_is_refused() -> None:
    with pytest.raises(SpecError, match="no meaning on a stall"):
        load_spec_text(spec("on Ack in W { goto D; }\n  unfair on Ack in D stall;"), "x.coh")


# ---------------------------------------------------------------- verdicts


def test_holds_when_requests_are_served() -> None:
    result = live(spec())
    assert result.verdict == "holds"
    assert {"can_settle", "served"} <= set(result.properties)


def test_not_checked_without_the_flag_and_said_so(tmp_path: Path) -> None:
    result = check(load_spec_text(spec("on Ack in W { send Req to home; }"), "x.coh"),
                   CheckOptions(), engine="reference")
    assert result.verdict == "holds" and "served" not in result.properties
    path = tmp_path / "retry.coh"
    path.write_text(spec("on Ack in W { send Req to home; }"))
    out = subprocess.run([sys.executable, "-m", "coherence.cli", "check", str(path), "--engine",
                          "reference"], capture_output=True, text=True, check=False,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout
    assert "liveness not checked: can_settle, served (--liveness checks them)" in out


def test_retry_forever_fails_both_with_a_lasso() -> None:
    result = live(spec("on Ack in W { send Req to home; }"))
    assert failed(result) == {"can_settle", "served"}
    served = next(f for f in result.failures if f.name == "served")
    assert served.loop_start is not None and 1 <= served.loop_start <= served.length
    cycle = served.trace[served.loop_start - 1:]
    assert [s.event for s in cycle] == ["receives Req from C[0]", "receives Ack from H"]


def test_weak_fairness_of_delivery_is_what_makes_it_hold() -> None:
    # an unfair Ack may be ignored forever: the waiting cache stutters
    result = live(spec("unfair on Ack in W { goto D; }"), symmetry=False)
    served = next(f for f in result.failures if f.name == "served")
    assert "can_settle" not in failed(result)  # AG EF needs no fairness: D is reachable
    assert served.loop_start is not None
    cycle = served.trace[served.loop_start - 1:]
    assert not any(s.actor == "C[0]" and "Ack" in s.event for s in cycle)


def test_stutter_when_only_unfair_moves_remain() -> None:
    text = spec("unfair on Ack in W { goto D; }").replace("param agents = 2", "param agents = 1")
    served = next(f for f in live(text).failures if f.name == "served")
    assert served.loop_start == served.length + 1  # stays in its last state
    assert "no fair transition is enabled" in served.details[0]


def test_unfair_processor_may_stop_but_a_fair_one_may_not() -> None:
    goal = "liveness goes: forall a: agent :: C[a].state == I ~> C[a].state == W;\n"
    assert "goes" in failed(live(spec(extra=goal)))
    assert "goes" not in failed(live(spec(extra=goal).replace("on Go in I", "fair on Go in I")))


def test_skip_drops_a_liveness_property() -> None:
    from coherence.spec.select import drop_properties
    model = drop_properties(load_spec_text(spec("on Ack in W { send Req to home; }"), "x.coh"),
                            ["served"])
    result = check(model, CheckOptions(liveness=True), engine="reference")
    assert failed(result) == {"can_settle"}


def test_model_error_in_a_predicate_is_reported() -> None:
    text = spec().replace("home machine H {", "home machine H {\n  var x: value = undefined;")
    result = live(text + "liveness bad: H.x == 0;\n")
    bad = next(f for f in result.failures if f.name == "bad")
    assert bad.kind == "error" and "undefined" in bad.message


def test_doc_example_holds_and_its_broken_twin_fails() -> None:
    blocks = re.findall(r"```coh\n(.*?)```", DOC.read_text(), flags=re.S)
    example = next(b for b in blocks if "~>" in b)
    assert live(example).verdict == "holds"
    broken = example.replace("on Ack in W { goto D; }", "unfair on Ack in W { goto D; }")
    assert failed(live(broken)) == {"served"}


def test_cli_json_and_text_mark_the_cycle(tmp_path: Path) -> None:
    path = tmp_path / "retry.coh"
    path.write_text(spec("on Ack in W { send Req to home; }"))
    cmd = [sys.executable, "-m", "coherence.cli", "check", str(path), "--liveness",
           "--engine", "reference"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    text = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert text.returncode == 1, text.stderr
    assert "-- repeats from step 2 --" in text.stdout
    doc = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env,
                                    check=False).stdout)
    loops = {f["property"]: f["loop_start"] for f in doc["failures"]}
    assert loops["served"] == 2 and doc["properties"]["served"] == "fails"


# ---------------------------------------------------------------- graph algorithms vs brute force


def graph_from(n: int, edges: list[tuple[int, int, int]]) -> Graph:
    rows: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, d, t in edges:
        rows[s].append((d, t))
    first, dst, task = array("q", [0]), array("i"), array("i")
    for row in rows:
        for d, t in row:
            dst.append(d)
            task.append(t)
        first.append(len(dst))
    return Graph(first, dst, task)


def reach_sets(n: int, edges: list[tuple[int, int, int]]) -> list[set[int]]:
    out = []
    for s in range(n):
        seen, todo = {s}, [s]
        while todo:
            u = todo.pop()
            for a, b, _ in edges:
                if a == u and b not in seen:
                    seen.add(b)
                    todo.append(b)
        out.append(seen)
    return out


graphs = st.integers(1, 6).flatmap(lambda n: st.tuples(st.just(n), st.lists(
    st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from([UNFAIR, 0, 1, 2])),
    max_size=14), st.sets(st.sampled_from([0, 1, 2]))))


def fair_by_definition(n: int, edges: list[tuple[int, int, int]], strong: set[int]) -> set[int]:
    """States in some set that a fair path can stay in forever: every subset tried."""
    out: set[int] = set()
    for mask in range(1, 1 << n):
        members = [u for u in range(n) if mask >> u & 1]
        inner = [(a, b, t) for a, b, t in edges if mask >> a & 1 and mask >> b & 1]
        if len(members) > 1:
            reach = reach_sets(n, inner)
            if not all(v in reach[u] for u in members for v in members):
                continue
        enabled = [{t for a, _, t in edges if a == u and t != UNFAIR} for u in members]
        taken = {t for _, _, t in inner if t != UNFAIR}
        weak_always = set.intersection(*enabled) - strong
        strong_any = set.union(*enabled) & strong
        if weak_always <= taken and strong_any <= taken:
            out.update(members)
    return out


@settings(max_examples=80, deadline=None)
@given(graphs)
def test_graph_algorithms_match_brute_force(case: tuple[int, list, set[int]]) -> None:
    n, edges, strong = case
    edges = sorted(set(edges))
    g = graph_from(n, edges)
    g.strong = set(strong)
    reach = reach_sets(n, edges)
    comp, ncomp = sccs(g)
    for u in range(n):
        for v in range(n):
            assert (comp[u] == comp[v]) == (v in reach[u] and u in reach[v])
    assert ncomp == len(set(comp))
    # backward reachability to state 0
    targets = bytearray(n)
    targets[0] = 1
    back = backward_reachable(reverse(g), targets)
    assert [bool(b) for b in back] == [0 in reach[u] for u in range(n)]
    # weak and strong fairness, from their definition
    label, count = fair_sets(g)
    assert {u for u in range(n) if label[u] >= 0} == fair_by_definition(n, edges, strong)
    for c in range(count):
        members = [u for u in range(n) if label[u] == c]
        cycle = fair_cycle(g, label, members[0])
        if not cycle:
            assert len(members) == 1 and not g.fair_tasks(members[0])
            continue
        assert source(g, cycle[0]) == members[0] and g.dst[cycle[-1]] == members[0]
        for e1, e2 in itertools.pairwise(cycle):
            assert g.dst[e1] == source(g, e2) and label[g.dst[e1]] == c
        states = [source(g, e) for e in cycle]
        taken = {g.task[e] for e in cycle}
        assert set.intersection(*[g.fair_tasks(s) for s in states]) - g.strong <= taken
        assert set.union(*[g.fair_tasks(s) for s in states]) & g.strong <= taken


def test_bench_measures_liveness_beside_safety_in_fresh_processes() -> None:
    from coherence.liveness.bench import measure_case
    row = measure_case("acked:2", 120)
    runs = row["runs"]
    assert runs["liveness"]["states"] == runs["safety-no-symmetry"]["states"] == 262
    assert runs["safety-symmetry"]["states"] == 138
    assert runs["liveness"]["edges"] > runs["liveness"]["states"]
    assert all(m["peak_rss_bytes"] > 0 and m["verdict"] == "holds" for m in runs.values())
    assert row["time_ratio_vs_symmetry"] is not None and row["check_time_ratio"] is not None
    assert runs["check-liveness"]["states"] == 138  # the safety search's, with symmetry


def test_the_compiled_engine_builds_its_own_liveness_graph() -> None:
    from coherence.engines import get_engine
    if get_engine("compiled").available() is not None:
        pytest.skip("no C compiler")
    model = load_spec_text(spec("on Ack in W { send Req to home; }"), "x.coh")
    ref = check(model, CheckOptions(liveness=True), engine="reference")
    comp = check(model, CheckOptions(liveness=True), engine="compiled")
    assert comp.engine == "compiled"
    assert [(f.name, f.length, f.loop_start) for f in comp.failures] == [
        (f.name, f.length, f.loop_start) for f in ref.failures]
    assert any(n.startswith("liveness: ") and n.endswith("engine compiled") for n in comp.notes)
    assert any(n.startswith("liveness: ") and n.endswith("engine reference") for n in ref.notes)


def test_message_sequence_chart_marks_the_cycle() -> None:
    from coherence.diagrams.msc import as_failure, chart
    model = load_spec_text(spec("on Ack in W { send Req to home; }"), "x.coh")
    served = next(f for f in live(spec("on Ack in W { send Req to home; }")).failures
                  if f.name == "served")
    source = chart(model, as_failure(served), "check").source
    assert "steps 2..3 repeat forever" in source and "the cycle starts here" in source


def test_a_bounded_liveness_search_is_incomplete_not_a_verdict() -> None:
    model = load_spec_text(spec(), "x.coh")
    from coherence.liveness import check_liveness
    live = check_liveness(model, CheckOptions(max_states=5))
    assert live.stopped == "--max-states 5 reached" and live.failures == []
