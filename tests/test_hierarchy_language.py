"""Hierarchical specs (issue 20): the language, its located errors, and the reference
semantics on a small two-level write-through hierarchy (tests/specs/hierarchy/)."""

from __future__ import annotations

import pytest
from helpers import ROOT

from coherence import ir
from coherence.engines import check
from coherence.errors import SpecError
from coherence.results import CheckOptions
from coherence.semantics import Semantics
from coherence.spec.load import load_spec, load_spec_text

TWO_LEVEL = str(ROOT / "tests/specs/hierarchy/two_level_wt.coh")

# (gpus, sms, values) -> reachable states without symmetry (reference engine)
COUNTS = {(1, 1, 2): 30, (1, 2, 1): 304, (2, 1, 1): 995, (1, 2, 2): 1062}

SMALL = """
param gpus = 2;
param sms = 2;
index gpu: gpus;
index sm: sms within gpu;
network net: unordered, capacity = 2;
message Hello;
event Go;
machine L1[g: gpu, s: sm] {
  state I, D;
  init I;
  on Go in I { send Hello to L2[g]; goto D; }
}
machine L2[g: gpu] {
  state R;
  init R;
  var seen: set<sm> = {};
  on Hello { seen.add(msg.src.sm); }
}
invariant nobody_done: forall g: gpu :: forall s: sm :: L1[g, s].state == I;
invariant tracked: forall g: gpu :: forall s: sm :: s in L2[g].seen -> L1[g, s].state == D;
"""


def test_nodes_are_numbered_flat_in_declaration_order() -> None:
    m = load_spec_text(SMALL)
    assert m.is_hierarchical and m.agents == 4  # the processors: L1's instances
    assert [(i.node, i.machine, i.values) for i in ir.instances(m)] == [
        (0, "L1", (0, 0)), (1, "L1", (0, 1)), (2, "L1", (1, 0)), (3, "L1", (1, 1)),
        (4, "L2", (0,)), (5, "L2", (1,))]
    assert m.index_type("sm") == ir.IndexT("sm", 2, "gpu")


def test_trace_names_instances_by_their_indices() -> None:
    m = load_spec_text(SMALL)
    result = check(m, CheckOptions(symmetry=False), engine="reference")
    assert result.verdict == "fails"
    failure = next(f for f in result.failures if f.name == "nobody_done")
    assert [s.actor for s in failure.trace] == ["L1[0, 0]"]
    assert failure.trace[0].changes == ["L1[0, 0]: state I → D", "L1[0, 0] sends Hello to L2[0]"]
    assert "tracked" not in {f.name for f in result.failures}
    # each L1 goes once, each L2 records exactly its own SMs; the network holds 2 messages
    assert result.states == 72


@pytest.mark.parametrize(("gpus", "sms", "values"), sorted(COUNTS))
def test_two_level_write_through_holds(gpus: int, sms: int, values: int) -> None:
    m = load_spec(TWO_LEVEL, {"gpus": gpus, "sms": sms, "values": values})
    result = check(m, CheckOptions(symmetry=False), engine="reference")
    assert result.verdict == "holds", [f.message for f in result.failures]
    assert result.states == COUNTS[(gpus, sms, values)]


PING = "on Hello { }\n  rule Ping(t: sm) in R { broadcast Hello to L1[g] except L1[g, t]; }"


def test_multicast_goes_to_the_prefix_and_skips_the_excluded_node() -> None:
    m = load_spec_text(SMALL.replace(
        "on Go in I { send Hello to L2[g]; goto D; }",
        "on Go in I { goto D; }").replace(
        "on Hello { seen.add(msg.src.sm); }", PING).replace(
        "machine L1[g: gpu, s: sm] {\n  state I, D;",
        "machine L1[g: gpu, s: sm] {\n  state I, D;\n  on Hello { }"))
    sem = Semantics(m)
    state = sem.initial_states()[0]
    rule = next(a for a in sem.action_instances(state)
                if a.machine == "L2" and a.agent == 5 and a.params == (0,))
    out = sem.execute(state, rule)
    assert out is not None and out.state is not None
    sent = [(src, dst) for _line, src, dst, _t, _f in out.state[1][0]]
    assert sent == [(5, 3)]  # L2[1] to L1[1, 1] only


ERRORS = [
    ("index core: 2 within cpu;", "unknown index type 'cpu'"),
    ("index core: 0;", "index type 'core' has 0 ids"),
    ("invariant bad: L1[0, 1].state == I;", "ids of 'gpu' are symmetric"),
    ("machine L3[s: sm] { state I; init I; }", "'sm' is nested within 'gpu'"),
    ("machine L3[g: gpu, h: gpu] { state I; init I; }", "replicated over 'gpu' twice"),
    ("machine L3[g: bool] { state I; init I; }", "not over 'bool'"),
    ("cache machine C { state I; init I; }", "declares every machine as `machine NAME[...]`"),
    ("var last: sm = undefined;", "only a machine indexed by 'gpu' can hold one"),
    ("message Bad(s: sm) on net;", "only a machine indexed by 'gpu' can hold one"),
    ("invariant bad: L1[0].state == I;", "machine L1 has 2 indices (g, s), got 1"),
    ("invariant bad: L2.state == R;", "'L2' is replicated over gpu: write L2[g]"),
    ("invariant bad: forall a: agent :: true;", "has no 'agent' type"),
    ("machine M { state R; init R; rule Go in R { send Hello to home; } }",
     "has no 'home'"),
    ("machine M { state R; init R; on Go in R { } }",
     "processor events belong to one machine, and L1 handles them"),
    ("machine M { state R; init R; rule Go in R { broadcast Hello; } }",
     "say which machines receive it"),
    ("invariant bad: forall g: gpu :: forall s: sm :: L2[g].seen == L1[g, s];",
     "cannot compare"),
]


@pytest.mark.parametrize(("extra", "message"), ERRORS)
def test_errors_are_located(extra: str, message: str) -> None:
    text = SMALL + extra + "\n"
    with pytest.raises(SpecError) as info:
        load_spec_text(text, "h.coh")
    err = info.value
    assert message in err.message
    line = text.count("\n", 0, text.index(extra)) + 1
    assert err.span.file == "h.coh" and err.span.line == line and err.span.col > 0


def test_indices_need_index_types_in_a_two_kind_spec() -> None:
    with pytest.raises(SpecError, match="declares no index types") as info:
        load_spec_text("cache machine C[a: agent] { state I; init I; }\n", "c.coh")
    assert (info.value.span.line, info.value.span.col) == (1, 16)
