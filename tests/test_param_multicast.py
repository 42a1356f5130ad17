"""Agent-valued message fields and ``for`` over the agents (a multicast) in proofs for every N
(NOTE(param-for-multicast)): encoded, refused where the encoding would not be the loop's
meaning, and its counterexamples to induction replay in the reference semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from coherence.smt.param import ParamEncoder, obligations, prove_all
from coherence.smt.state import Unsupported
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

SPECS = Path(__file__).resolve().parent / "specs" / "infer"
MSI_HOME_ACKS = SPECS / "msi_home_acks.coh"

SHARERS = """
param agents = 3;
network req: unordered, capacity = agents;
network fwd: fifo, capacity = 2;
message Go on req;
message Inv(req: agent) on fwd;
home machine H {
  stable state R; init R;
  var sharers: set<agent> = {};
  on Go { BODY sharers.add(msg.src); }
}
cache machine C {
  stable state I, G; init I;
  rule Start in I { send Go to home; goto G; }
  on Inv { }
}
invariant to_sharers: forall m: Inv :: m.dst in H.sharers && m.req != m.dst;
invariant aux go_from_g: forall m: Go :: C[m.src].state == G;
"""
MULTICAST = "for a: agent { if TEST { send Inv(msg.src) to a; } }"


def _write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "m.coh"
    p.write_text(SHARERS.replace("BODY", body))
    return p


def test_msi_home_acks_is_inside_the_fragment() -> None:
    model = drop_properties(load_spec(MSI_HOME_ACKS), ["coherent"])
    enc = ParamEncoder(model)
    # FwdGetS, FwdGetM and Inv carry an agent first: the fwd queue's field 0 is a node
    assert [str(s) for s in enc.queue_sorts["fwd"]] == ["Node"]
    _enc, _s, queries = obligations(model)
    assert any("GetM" in q.what for q in queries)


@pytest.mark.parametrize(("body", "line", "what"), [
    ("for a: agent { sharers.add(a); }", 10, "may only test and send"),
    ("for a: agent { send Inv(a) to msg.src; }", 10, "may only test and send"),
    ("for a: agent { if inflight(Inv, a) { send Inv(a) to a; } }", 10, "not read the networks"),
])
def test_a_for_that_is_not_a_multicast_is_refused_where_it_is(
        tmp_path: Path, body: str, line: int, what: str) -> None:
    model = load_spec(_write(tmp_path, body))
    with pytest.raises(Unsupported) as err:
        obligations(model)
    assert err.value.span.line == line and what in err.value.message


@pytest.mark.parametrize(("test", "proved"), [
    ("a in sharers && a != msg.src", True),
    ("a in sharers || a == msg.src", False),  # an Inv to the requestor itself
    ("!(a in sharers)", False),       # to the others
    ("a != msg.src", False),          # to every agent but the requestor
])
def test_the_multicast_goes_to_exactly_the_agents_its_test_selects(
        tmp_path: Path, test: str, proved: bool) -> None:
    p = tmp_path / "m.coh"
    p.write_text(SHARERS.replace("BODY", MULTICAST.replace("TEST", test)))
    result = prove_all(load_spec(p), rlimit=50_000_000)
    assert (result.verdict == "holds") == proved, result
    if not proved:  # refuted by a concrete counterexample, not merely unknown
        assert result.verdict == "fails", result


def test_a_cti_blocked_only_by_an_unordered_capacity_still_replays() -> None:
    import subprocess
    import sys
    spec = SPECS / "join_then_go.coh"
    r = subprocess.run([sys.executable, "-m", "coherence.cli", "prove", str(spec), "--agents",
                        "any", "--rlimit", "50000000"], capture_output=True, text=True,
                       check=False, cwd=SPECS.parent.parent.parent)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert ("join_from_j can break with 1 agent(s) (with the unordered networks' capacities "
            "not enforced") in r.stdout, r.stdout


# A field out of its range in a multicast's send is an error, as in the semantics, which
# checks each delivery. Both specs are proved for every N without that check (a false proof:
# the checker finds the error at 4 and 5 agents, beyond the concrete search at 2 and 3).
OUT_OF_RANGE_COMMON = """
param agents = 2;
network req: unordered, capacity = agents;
network out: unordered, capacity = agents;
message Go on req;
message Val(v: int[0..3]) on out;
cache machine C {
  stable state I, G; init I;
  rule Start in I { send Go to home; goto G; }
  on Val { }
}
invariant bounded: H.level <= 5;
"""
FOR_OUT_OF_RANGE = OUT_OF_RANGE_COMMON + """
home machine H {
  stable state R; init R;
  var sharers: set<agent> = {};
  var level: int[0..5] = 0;
  on Go {
    if level < 5 { level := level + 1; }
    for a: agent { if a in sharers { send Val(level) to a; } }
    sharers.clear();
    sharers.add(msg.src);
  }
}
invariant aux val_not_sharer: forall m: Val :: !(m.dst in H.sharers);
invariant aux go_not_sharer: forall m: Go :: !(m.src in H.sharers) && C[m.src].state == G;
invariant aux go_no_val: forall m: Go :: !(exists k: Val :: k.dst == m.src);
invariant aux sharer_g: forall a: agent :: a in H.sharers -> C[a].state == G;
invariant aux val_to_g: forall m: Val :: C[m.dst].state == G;
"""
BROADCAST_OUT_OF_RANGE = OUT_OF_RANGE_COMMON + """
home machine H {
  stable state R; init R;
  var level: int[0..5] = 0;
  on Go {
    if level < 5 { level := level + 1; }
    if level == 4 { broadcast Val(level) except msg.src; }
  }
}
invariant aux val_late: forall m: Val :: H.level >= 4;
invariant aux go_from_g: forall m: Go :: C[m.src].state == G;
"""


@pytest.mark.parametrize(("text", "agents"), [(FOR_OUT_OF_RANGE, 5),
                                              (BROADCAST_OUT_OF_RANGE, 4)],
                         ids=["for", "broadcast"])
def test_a_multicast_field_out_of_range_is_never_proved(tmp_path: Path, text: str,
                                                         agents: int) -> None:
    from coherence.engines import check
    from coherence.results import CheckOptions
    p = tmp_path / "m.coh"
    p.write_text(text)
    found = check(load_spec(p, {"agents": agents}), CheckOptions())
    assert found.verdict == "fails"
    assert "value 4 of Val.v is out of range" in found.failures[0].message
    result = prove_all(load_spec(p), rlimit=50_000_000)
    assert result.verdict != "holds", result
    assert any("Val.v is out of range" in c.summary for c in result.cti_details), result.ctis


def test_a_multicast_field_whose_range_moves_with_n_is_encoded(tmp_path: Path) -> None:
    # NOTE(param-count): an ``int[0..agents]`` field is an integer; a multicast's send of it
    # was a Z3 sort error (a traceback). Here the value sent is the number of Gos handled,
    # within range in every reachable state, but not by these invariants alone: a
    # counterexample to induction whose range is that of its 2 agents
    p = tmp_path / "m.coh"
    p.write_text(FOR_OUT_OF_RANGE.replace("Val(v: int[0..3])", "Val(v: int[0..agents])")
                 .replace("level < 5", "level < 3"))
    result = prove_all(load_spec(p), rlimit=50_000_000)
    assert result.verdict == "unknown", result
    assert any("out of range int[0..2]" in c.summary for c in result.cti_details), result.ctis
