"""NOTE(message-count): ``count(m: Msg :: body)`` in the Z3 step at a fixed number of agents
(``Exec.msg_count``) agrees with the reference checker: BMC finds each failure first at the
checker's shortest length and nothing on a spec that holds, up to the checker's depth;
k-induction's counterexamples replay through the reference semantics; and a model error in the
body makes the count an error as in ``semantics._counter`` (NOTE(quantifier-errors)).

Every Z3 check runs under a deterministic resource limit (``rlimit``), never a wall clock.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import PROOF_RLIMIT, checker_groups

from coherence.cli import main
from coherence.engines import check
from coherence.ir import Model
from coherence.results import CheckOptions
from coherence.smt.bmc import bmc
from coherence.smt.induction import induction
from coherence.spec.load import load_spec, load_spec_text
from coherence.spec.select import drop_properties

COUNT = Path(__file__).resolve().parent / "specs" / "count"
GOOD = COUNT / "message_count.coh"
BAD = COUNT / "message_count_bad.coh"


def agree(model: Model, depth: int) -> dict[str, int]:
    """BMC (all failures, up to ``depth``) finds each failure group first at the reference
    checker's shortest length, and its replayed traces say what the checker's say."""
    expected = checker_groups(model, depth)
    result = bmc(model, depth, all_failures=True, rlimit=PROOF_RLIMIT)
    assert result.verdict != "unknown", result.reason
    assert result.groups == expected
    reference = {(f.kind, f.name): f for f in check(model).failures}
    for f in result.failures:  # replayed through the reference semantics
        ref = reference[(f.kind, f.name)]
        assert (f.length, f.message) == (ref.length, ref.message)
    return expected


# ---------------------------------------------------------------- the two specs


def test_bmc_finds_one_ping_at_the_reference_depth_and_not_before() -> None:
    model = load_spec(BAD, {"agents": 2})
    reference = check(model)
    assert [(f.name, f.length) for f in reference.failures] == [("one_ping", 2)]
    shallow = bmc(model, 1, rlimit=PROOF_RLIMIT)
    assert (shallow.verdict, shallow.depth, shallow.groups) == ("bounded", 1, {})
    result = bmc(model, 2, rlimit=PROOF_RLIMIT)
    assert (result.verdict, result.groups) == ("fails", {"invariant:one_ping": 2})
    [failure] = result.failures
    assert failure.length == 2 and failure.message == reference.failures[0].message
    assert [s.message for s in failure.trace[-1].sends] == ["Ping(val=0)", "Ping(val=1)"]


def test_bmc_agrees_with_the_checker_on_message_count_bad_up_to_depth_4() -> None:
    assert agree(load_spec(BAD, {"agents": 2}), 4) == {"invariant:one_ping": 2}


def test_prove_bmc_cli_exit_code_on_message_count_bad(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", str(BAD), "--agents", "2", "--bmc", "3",
                 "--rlimit", str(PROOF_RLIMIT)]) == 1
    assert "FAIL one_ping" in capsys.readouterr().out


@pytest.mark.parametrize("agents", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_bmc_finds_nothing_on_message_count_up_to_its_diameter(agents: int) -> None:
    """Up to the reference checker's depth (the longest shortest path to a reachable state:
    6 at 2 agents, 9 at 3), every reachable state is within the bound."""
    model = load_spec(GOOD, {"agents": agents})
    reference = check(model)
    assert reference.verdict == "holds"
    assert reference.depth == {2: 6, 3: 9}[agents]
    result = bmc(model, reference.depth, rlimit=PROOF_RLIMIT)
    assert (result.verdict, result.depth, result.groups) == ("bounded", reference.depth, {})


# ---------------------------------------------------------------- exact values

PROTOCOL = """
param agents = 2;
network req: unordered, capacity = agents;
network fwd: fifo, capacity = 2;
message Req on req;
message Ping(val: value) on fwd;
event Go;
home machine Dir {
  stable state I;
  init I;
  on Req in I { send Ping(0) to msg.src; send Ping(1) to msg.src; }
}
cache machine Cache {
  stable state I, W;
  init I;
  var got: int[0..2] = 0;
  on Go in I { send Req to home; goto W; }
  on Ping in W when got == 0 { got := 1; }
  on Ping in W when got == 1 { got := 0; goto I; }
}
"""


def test_every_value_of_a_count_is_reached_when_the_checker_reaches_it() -> None:
    """``count != k`` fails first when the count is first k: on the fifo network (pings in
    both caches' queues: 0..4) and on the unordered one (requests: 0..2), with a body."""
    pings = [f"invariant pings_{k}: count(m: Ping :: true) != {k};" for k in range(5)]
    reqs = [f"invariant reqs_{k}: count(m: Req :: true) != {k};" for k in range(3)]
    zeros = [f"invariant zeros_{k}: forall i: agent :: "
             f"count(m: Ping :: m.val == 0 && m.dst == i) != {k};" for k in range(2)]
    model = load_spec_text(PROTOCOL + "\n".join(pings + reqs + zeros), "values.coh")
    assert agree(model, 5) == {
        "invariant:pings_0": 0, "invariant:pings_1": 3, "invariant:pings_2": 2,
        "invariant:pings_3": 5, "invariant:pings_4": 4,
        "invariant:reqs_0": 0, "invariant:reqs_1": 1, "invariant:reqs_2": 2,
        "invariant:zeros_0": 0, "invariant:zeros_1": 2}


DUPLICATES = """
param agents = 2;
message Req(v: int[0..3]);
network net: unordered, capacity = 2;
home machine H { stable state R; init R; on Req { } }
cache machine C {
  stable state I, A;
  init I;
  rule Twice in I { send Req(1) to home; send Req(1) to home; goto A; }
}
invariant not_two: count(m: Req :: m.v == 1) != 2;
"""


def test_a_count_counts_duplicates() -> None:
    assert agree(load_spec_text(DUPLICATES, "dup.coh"), 2) == {"invariant:not_two": 1}


# ---------------------------------------------------------------- errors in the body

ERRORS = """
param agents = 2;
message Req(v: int[0..3]);
network net: unordered, capacity = 2;
home machine H { stable state R; init R; on Req { } }
cache machine C {
  stable state I, B, A;
  init I;
  rule Blank in I { send Req(undefined) to home; goto B; }
  rule Ask in B { send Req(2) to home; goto A; }
}
invariant no_two: count(m: Req :: m.v == 2) == 0;
"""


@pytest.mark.parametrize("symmetry", [False, True])
def test_an_error_in_the_body_is_the_counts_error(symmetry: bool) -> None:
    """A Req(undefined) in flight makes the count an error (1 step), even beside a Req(2)
    that would decide a forall or an exists (2 steps: no violation there); the violation
    needs a Req(2) with no Req(undefined) in flight (3 steps)."""
    model = load_spec_text(ERRORS, "errors.coh")
    reference = check(model, CheckOptions(symmetry=symmetry))
    assert {f.key[:2]: f.length for f in reference.failures} == {
        ("error", "no_two"): 1, ("invariant", "no_two"): 3}
    assert agree(model, 4) == {"error:no_two": 1, "invariant:no_two": 3}


STALE = """
param agents = 1;
network net: NET, capacity = 2;
network resp: unordered, capacity = 2;
message Req(v: int[0..3]) on net;
message Ack on resp;
home machine H { stable state R; init R; on Req { send Ack to msg.src; } }
cache machine C {
  stable state I, B, A, D;
  init I;
  var acks: int[0..1] = 0;
  rule Blank in I { send Req(1) to home; send Req(undefined) to home; goto B; }
  on Ack in B when acks == 0 { acks := 1; }
  on Ack in B when acks == 1 { goto A; }
  rule Ask in A { send Req(2) to home; goto D; }
}
invariant no_two: count(m: Req :: m.v == 2) == 0;
"""


@pytest.mark.parametrize("net", ["unordered", "fifo"])
def test_a_place_a_message_has_left_raises_nothing(net: str) -> None:
    """Ask comes after both Reqs were received, so its Req(2) lands in the first slot (or
    the queue's head) and the Req(undefined)'s old contents stay in the second: the Z3
    state keeps them, and the body must not be an error there (6 steps, a violation)."""
    model = load_spec_text(STALE.replace("NET", net), "stale.coh")
    assert agree(model, 6) == {"error:no_two": 1, "invariant:no_two": 6}


# ---------------------------------------------------------------- k-induction

AUX = """
invariant aux idle_asks_nothing:
  forall i: agent :: Cache[i].state == I -> count(m: Req :: m.src == i) == 0 && Cache[i].got == 0;
"""


def test_message_count_is_not_1_inductive_and_the_cti_replays() -> None:
    model = load_spec(GOOD, {"agents": 2})
    result = induction(model, 1, rlimit=PROOF_RLIMIT)
    assert (result.verdict, result.exit_code) == ("unknown", 3)  # never a pass
    assert result.cti is not None  # replayed through the reference semantics
    # which invariants the CTI breaks is Z3's choice (second_last, or idle from a state with
    # a Req in flight from an idle cache, ...); it replayed, and no reachable state is bad.
    # An invariant's error group too: a fresh clone's CI run (f4c5801, xdist) got
    # ['error:owed', 'invariant:one_request'], the two runs before it did not
    names = {f"{kind}:{inv.name}" for inv in model.invariants for kind in ("invariant", "error")}
    assert result.cti.groups and set(result.cti.groups) <= names | {"no-transition:*"}
    assert check(model).verdict == "holds"


def test_second_last_is_not_k_inductive_whatever_the_aux_invariants() -> None:
    """``second_last`` is about the order of a fifo queue, which no invariant can say (counts
    and message quantifiers see a queue's contents, not their order): a queue holding
    Ping(1) before Ping(0) stays for as many steps as the other cache takes, so no K proves
    it; without it, the aux line makes the rest 1-inductive."""
    model = load_spec_text(GOOD.read_text() + AUX, "message_count+aux.coh", {"agents": 2})
    result = induction(model, 3, rlimit=PROOF_RLIMIT)
    assert result.verdict == "unknown" and result.cti is not None
    assert result.cti.groups == ["invariant:second_last"]
    [fwd] = [line for line in result.cti.pre if "network fwd:" in line]
    assert re.search(r"Ping\(val=1\) Dir→(Cache\[\d\]).*Ping\(val=0\) Dir→\1", fwd), fwd
    proved = induction(drop_properties(model, ["second_last"]), 1, rlimit=PROOF_RLIMIT)
    assert proved.verdict == "holds", proved.reason


def test_prove_induction_cli_on_message_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", str(GOOD), "--agents", "2", "--induction", "1",
                 "--rlimit", str(PROOF_RLIMIT)]) == 3
    assert "not inductive" in capsys.readouterr().out
