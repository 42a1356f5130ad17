"""BMC against the reference checker: same verdict, same first failing depth per property.

The checker's BFS gives each failure's shortest counterexample; BMC at depth k asks Z3 for a
path of exactly k steps, so the first depth at which BMC finds a property failing must equal
the checker's shortest length, property by property (NOTE(z3-exactness)).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SPECS, assert_agree
from quantifier_specs import LEAST, ORDERS

from coherence.spec.load import load_spec, load_spec_text

# (spec, agents, depth): depths keep the default suite fast; the slow tier goes deeper
# (the acked spec holds: each step deeper is about 3 times the Z3 time).
CASES = [
    ("broadcast_invalidate.coh", 2, 5),
    ("broadcast_invalidate.coh", 3, 4),
    ("broadcast_invalidate_acked.coh", 2, 4),
    pytest.param("broadcast_invalidate_acked.coh", 2, 5, marks=pytest.mark.slow),
    pytest.param("broadcast_invalidate_acked.coh", 3, 3, marks=pytest.mark.slow),
    ("german.coh", 2, 5),
    ("german.coh", 3, 4),
]


@pytest.mark.parametrize(("spec", "agents", "depth"), CASES)
def test_bmc_agrees_with_checker(spec: str, agents: int, depth: int) -> None:
    assert_agree(load_spec(SPECS / spec, {"agents": agents}), depth)


def test_literal_scheme_fails_at_the_checkers_depth() -> None:
    groups = assert_agree(load_spec(SPECS / "broadcast_invalidate.coh", {"agents": 2}), 5)
    assert groups == {"invariant:data_value": 4, "invariant:stale_copy_is_doomed": 5}


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(SPECS.glob("*.coh")) + sorted(
    (SPECS / "mutants").glob("*.coh")), ids=lambda p: p.name)
@pytest.mark.parametrize("agents", [2, 3])
def test_every_spec_and_mutant_agrees(path: Path, agents: int) -> None:
    model = load_spec(path)
    if any(p.name == "agents" for p in model.params):
        model = load_spec(path, {"agents": agents})
    elif agents != 2:
        pytest.skip("a hierarchical spec is sized by its index types: run once, as written")
    assert_agree(model, depth=6 if agents == 2 else 5)


ERRORS = """
param agents = 2; param values = 2;
message Req on net; message Ack(v: value) on net;
network net: unordered, capacity = 2;
event Go;
home machine H {
  stable state Idle; init Idle;
  var x: value = 1;
  var k: int[0..1] = 0;
  on Req in Idle { k := k + 1; send Ack(x) to msg.src; }
}
cache machine C {
  stable state A; transient state W; init A;
  var d: value = undefined;
  on Go in A { send Req to home; goto W; }
  on Go in W { goto A; }
  on Ack in W { d := msg.v; goto A; }
}
invariant fine: forall a: agent :: C[a].state == W -> isundefined(C[a].d);
"""


def test_errors_and_no_transition_agree() -> None:
    """Model errors (range overflow), no-transition and invariant failures: same depths."""
    model = load_spec_text(ERRORS, "errors.coh")
    groups = assert_agree(model, 6)
    assert set(groups) == {"error:error", "invariant:fine", "no-transition:*"}


def test_a_failing_step_with_no_successor_is_found() -> None:
    """NOTE(bmc-last-step): the error of a step is checked on the state before it, not after
    asserting a successful step from there (which a state whose only move errs lacks).
    Look errs once one cache is in P and the other in Q, where nothing else can move."""
    last_step = LEAST.replace("BRANCHES", ORDERS["u-first"])
    assert assert_agree(load_spec_text(last_step, "last.coh"), 4) == {"error:error": 3}


FIELD_RANGE = """param agents = 2;
network net: unordered, capacity = 2;
message D(k: int[0..agents]) on net;
cache machine C { stable state S; init S; }
home machine H {
  stable state R, Z;
  init R;
  var s: set<agent> = {};
  rule Go in R { send D(size(s) - 1) to home; goto Z; }
  on D { }
}
"""


def test_a_message_field_out_of_range_is_an_error() -> None:
    """``Semantics.deliver`` checks every field's range, flat specs too: BMC missed the
    first step's error of ``D(size(s) - 1)``."""
    assert assert_agree(load_spec_text(FIELD_RANGE, "field.coh"), 2) == {"error:error": 1}


def test_sigint_between_checks_stops_with_what_was_found() -> None:
    """Z3 turns a SIGINT during a check into an unknown; one between checks raised
    KeyboardInterrupt wherever Python was (often a Z3 finaliser, which swallowed it and went
    on). Sent from the progress callback, after depth 0, it must stop the run there."""
    import os
    import signal

    from coherence.smt.bmc import bmc

    def callers_handler(_signum: int, _frame: object) -> None:
        raise AssertionError("the run's own handler should have taken the SIGINT")

    model = load_spec(SPECS / "broadcast_invalidate_acked.coh", {"agents": 2})
    # A handler of the caller's own, not Python's default: a run launched in the background
    # starts with SIGINT ignored, and what must come back is whatever was there before.
    before = signal.signal(signal.SIGINT, callers_handler)
    try:
        result = bmc(model, 4, progress=lambda stat: os.kill(os.getpid(), signal.SIGINT))
        assert signal.getsignal(signal.SIGINT) is callers_handler  # restored
    finally:
        signal.signal(signal.SIGINT, before)
    assert result.verdict == "unknown" and result.reason == "interrupted (SIGINT)"
    assert [d.depth for d in result.depths] == [0]
