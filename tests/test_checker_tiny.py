"""Tiny protocols whose reachable-state counts are worked out by hand, checked exactly."""

from __future__ import annotations

from math import comb

import pytest

from coherence import load_spec_text
from coherence.engines import check
from coherence.results import CheckOptions

TOGGLE = """
event Flip;
cache machine C {
  stable state A, B;
  init A;
  on Flip in A { goto B; }
  on Flip in B { goto A; }
}
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_toggle_counts(n: int) -> None:
    # Each agent is A or B: 2^n states; up to renaming only the number in B matters: n + 1.
    model = load_spec_text(TOGGLE, "toggle.coh", {"agents": n})
    full = check(model, CheckOptions(symmetry=False))
    reduced = check(model, CheckOptions(symmetry=True))
    assert (full.states, reduced.states) == (2 ** n, n + 1)
    assert full.verdict == reduced.verdict == "holds"
    # every state has n enabled flips
    assert full.rules_fired == n * 2 ** n
    assert full.depth == n


PING = """
param capacity = 2;
network net: unordered, capacity = capacity;
message Ping;
event Go;
home machine H { state R; init R; on Ping in R { } }
cache machine C {
  state I;
  init I;
  on Go in I { send Ping to home; }
}
"""


@pytest.mark.parametrize(("n", "cap"), [(1, 1), (1, 3), (2, 2), (3, 2), (3, 3), (4, 2)])
def test_unordered_network_is_a_bounded_multiset(n: int, cap: int) -> None:
    # In flight: a multiset of senders of size <= cap: sum_k C(n+k-1, k).
    model = load_spec_text(PING, "ping.coh", {"agents": n, "capacity": cap})
    full = check(model, CheckOptions(symmetry=False))
    assert full.states == sum(comb(n + k - 1, k) for k in range(cap + 1))
    # Up to renaming, a multiset of k senders is a partition of k into at most n parts.
    reduced = check(model, CheckOptions(symmetry=True))
    assert reduced.states == sum(_partitions(k, n) for k in range(cap + 1))


def _partitions(k: int, parts: int) -> int:
    if k == 0:
        return 1
    if parts == 0:
        return 0
    # partitions of k into at most `parts` parts = p(k, parts - 1) + p(k - parts, parts)
    return _partitions(k, parts - 1) + (_partitions(k - parts, parts) if k >= parts else 0)


FIFO = """
param capacity = 2;
network net: fifo, capacity = capacity;
message A;
message B;
event SendA;
event SendB;
home machine H { state R; init R; on A in R { } on B in R { } }
cache machine C {
  state I;
  init I;
  on SendA in I { send A to home; }
  on SendB in I { send B to home; }
}
"""


@pytest.mark.parametrize(("n", "cap", "expected"), [(1, 1, 3), (1, 2, 7), (1, 3, 15), (2, 1, 9)])
def test_fifo_queues_are_sequences(n: int, cap: int, expected: int) -> None:
    # One queue per sender: words over {A, B} of length <= cap (2^(cap+1) - 1), per agent.
    model = load_spec_text(FIFO, "fifo.coh", {"agents": n, "capacity": cap})
    assert check(model, CheckOptions(symmetry=False)).states == expected


UNDEF = """
param values = 2;
event Set(v: value);
event Clear;
cache machine C {
  state I;
  init I;
  var x: value = undefined;
  on Set(v) in I { x := v; }
  on Clear in I { undefine x; }
}
"""


@pytest.mark.parametrize(("n", "values"), [(1, 2), (2, 2), (3, 2), (2, 3)])
def test_undefined_is_one_more_value(n: int, values: int) -> None:
    model = load_spec_text(UNDEF, "undef.coh", {"agents": n, "values": values})
    k = values + 1
    assert check(model, CheckOptions(symmetry=False)).states == k ** n
    assert check(model, CheckOptions(symmetry=True)).states == comb(n + k - 1, n)


COUNTER = """
param limit = 3;
home machine H {
  state R;
  init R;
  var c: int[0..5] = 0;
  rule Inc in R when c < limit { c := c + 1; }
}
invariant below_limit: H.c < limit;
"""


def test_invariant_failure_has_the_shortest_trace() -> None:
    result = check(load_spec_text(COUNTER, "counter.coh"))
    assert result.verdict == "fails" and result.exit_code == 1
    (failure,) = result.failures
    assert (failure.kind, failure.name, failure.length) == ("invariant", "below_limit", 3)
    assert [s.event for s in failure.trace] == ["rule Inc"] * 3
    assert failure.trace[-1].changes == ["H.c: 2 → 3"]


def test_range_overflow_is_a_model_error() -> None:
    spec = COUNTER.replace("when c < limit ", "").replace("invariant below_limit: H.c < limit;",
                                                          "")
    result = check(load_spec_text(spec, "counter.coh"))
    (failure,) = result.failures
    assert failure.kind == "error"
    assert failure.message == "value 6 is out of range int[0..5]"
    assert failure.length == 6 and failure.trace[-1].error == failure.message
    assert failure.span == "counter.coh:7:19"  # the assignment


STUCK = """
network net: unordered, capacity = 2;
message Req;
event Go;
home machine H { state R; init R; on Req in R stall; }
cache machine C {
  stable state I;
  transient state W;
  init I;
  on Go in I { send Req to home; goto W; }
}
"""


def test_deadlock_is_reported_with_trace() -> None:
    result = check(load_spec_text(STUCK, "stuck.coh", {"agents": 1}))
    (failure,) = result.failures
    assert failure.kind == "deadlock" and failure.length == 1
    assert failure.trace[0].changes == ["C[0]: state I → W", "C[0] sends Req to H"]
    assert check(load_spec_text(STUCK, "stuck.coh", {"agents": 1}),
                 CheckOptions(deadlock=False)).verdict == "holds"


def test_terminal_quiescent_state_is_not_a_deadlock() -> None:
    spec = STUCK.replace("on Req in R stall;", "on Req in R { send Ack to msg.src; }").replace(
        "message Req;", "message Req;\nmessage Ack;").replace(
        "on Go in I { send Req to home; goto W; }",
        "on Go in I { send Req to home; goto W; }\n  on Ack in W { goto Done; }").replace(
        "stable state I;", "stable state I, Done;")
    result = check(load_spec_text(spec, "done.coh", {"agents": 2}))
    assert result.verdict == "holds"


NO_RULE = """
network net: unordered, capacity = 2;
message Req;
message Nack;
event Go;
home machine H { state R; init R; on Req in R { send Nack to msg.src; } }
cache machine C {
  stable state I, S;
  transient state W;
  init I;
  on Go in I { send Req to home; goto W; }
  on Go in W { goto S; }
  on Nack in W { goto I; }
}
"""


def test_message_in_a_state_without_transition() -> None:
    result = check(load_spec_text(NO_RULE, "norule.coh", {"agents": 1}))
    (failure,) = result.failures
    assert failure.kind == "no-transition"
    assert failure.message == ("no transition for Nack (from H) in state S of C[0]")
    # Go, H receives Req (sends Nack), Go again (W -> S): Nack now arrives in S.
    assert failure.length == 3


def test_max_states_stops_cleanly() -> None:
    model = load_spec_text(TOGGLE, "toggle.coh", {"agents": 5})
    result = check(model, CheckOptions(symmetry=False, max_states=10))
    assert result.verdict == "incomplete" and result.exit_code == 3
    assert result.stopped == "--max-states 10 reached"
    assert 10 <= result.states < 32


def test_max_depth_stops_cleanly() -> None:
    model = load_spec_text(TOGGLE, "toggle.coh", {"agents": 4})
    result = check(model, CheckOptions(symmetry=False, max_depth=2))
    assert result.verdict == "incomplete"
    assert result.states == 1 + 4 + 6  # depths 0, 1 and 2
    assert result.depth == 2


ATOMIC = """
network bus: bus;
message Set(v: value);
event Write(v: value);
home machine M { state R; init R; var mem: value = 0; on Set in R { mem := msg.v; } }
cache machine C {
  state I;
  init I;
  on Write(v) in I { send Set(v) to home; }
}
"""


def test_bus_delivers_within_the_step() -> None:
    result = check(load_spec_text(ATOMIC, "bus.coh", {"agents": 2, "values": 3}))
    assert result.states == 3  # only mem varies; nothing is ever in flight
    assert result.depth == 1


TWO_STATES = """
network net: unordered, capacity = 2;
message Ping;
event Go;
home machine H { state R; init R; on Ping in R { } }
cache machine C {
  stable state I, S;
  init I;
  on Go in I { send Ping to home; goto S; }
}
"""


def test_an_action_from_outside_is_checked_like_an_enabled_one() -> None:
    """A replayed action (from Z3 or a saved trace) in the wrong state, for an agent that
    does not exist, or receiving a message that is not there, is not enabled: ``execute``
    says None instead of running it."""
    from coherence.semantics import Semantics
    sem = Semantics(load_spec_text(TWO_STATES, "two.coh", {"agents": 2}))
    start = sem.initial_states()[0]
    go = next(o for o in sem.enabled(start)[0] if o.action.agent == 0)
    after = go.state
    assert after is not None
    assert sem.execute(after, go.action) is None  # C[0] is in S now: Go is only taken in I
    assert sem.execute(start, go.action._replace(agent=7)) is None
    receive = next(o for o in sem.enabled(after)[0] if o.action.kind == "message")
    assert sem.execute(after, receive.action) is not None
    assert sem.execute(start, receive.action) is None  # no Ping in flight yet
