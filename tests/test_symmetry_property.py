"""Random small protocols: symmetry reduction never changes a verdict, only the count.

Also checks that the fast canonical form (permutations narrowed by per-agent signatures) is
exact: it partitions states into the same orbits as brute force over all n! permutations.
"""

from __future__ import annotations

from math import factorial

from hypothesis import HealthCheck, Phase, assume, find, given, settings
from hypothesis import strategies as st

from coherence import load_spec_text
from coherence.engines import check
from coherence.results import CheckOptions, CheckResult
from coherence.symmetry import Symmetry


@st.composite
def random_protocols(draw: st.DrawFn) -> str:
    k = draw(st.integers(2, 3))
    states = [f"S{i}" for i in range(k)]
    state = st.sampled_from(states)

    def cache_action() -> st.SearchStrategy[str]:
        return st.one_of(
            state.map(lambda s: f"goto {s};"),
            st.just("d := v;"),
            st.just("undefine d;"),
            st.just("send Req(self) to home;"),
            st.just("perform load(v);"),
        )

    lines = [
        "param capacity = 2;",
        "network net: unordered, capacity = capacity;",
        "message Req(req: agent);",
        "message Ack;",
        "message Inv;",
        "event E0(v: value);",
        "event E1(v: value);",
        "home machine H {",
        "  state R;",
        "  init R;",
        "  var owner: agent = undefined;",
        "  var sharers: set<agent> = {};",
    ]
    home_actions = draw(st.lists(st.sampled_from([
        "owner := msg.req;", "sharers.add(msg.src);", "send Ack to msg.req;",
        "broadcast Inv except msg.req;", "sharers.clear();", "undefine owner;",
    ]), min_size=1, max_size=3))
    lines.append(f"  on Req in R {{ {' '.join(home_actions)} }}")
    lines += ["}", "cache machine C {", f"  state {', '.join(states)};", "  init S0;",
              "  var d: value = undefined;"]
    for event in ("E0", "E1"):
        sources = draw(st.lists(state, min_size=1, max_size=k, unique=True))
        body = draw(st.lists(cache_action(), min_size=1, max_size=3))
        # one goto per transition (a second is an error): the last, which was the one that won
        body = [x for i, x in enumerate(body)
                if not x.startswith("goto") or not any(y.startswith("goto") for y in body[i + 1:])]
        lines.append(f"  on {event}(v) in {', '.join(sources)} {{ {' '.join(body)} }}")
    for msg in ("Ack", "Inv"):
        lines.append(f"  on {msg} {{ {draw(cache_action().filter(lambda a: 'v' not in a))} }}")
    lines.append("}")
    invariant = draw(st.sampled_from([
        "forall a: agent :: C[a].state != S1",
        "size(H.sharers) <= 1",
        "forall a: agent :: isundefined(H.owner) || H.owner == a || C[a].state == S0",
        "exists a: agent :: C[a].state == S0",
        "forall a: agent, b: agent :: a == b || C[a].state != C[b].state || "
        "C[a].state == S0",
    ]))
    lines.append(f"invariant inv: {invariant};")
    return "\n".join(lines)


settings_ = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


# Most of these protocols have under 100 states; a few thousand is the largest seen. A search
# that stops at the bound cannot be compared: the example is rejected (``assume``, counted by
# Hypothesis, which fails the test if too many are), never passed.
MAX_STATES = 20_000


def _both(spec: str, params: dict[str, int]) -> tuple[CheckResult, CheckResult]:
    """The search without and with symmetry, both complete."""
    model = load_spec_text(spec, "random.coh", params)
    full = check(model, CheckOptions(symmetry=False, max_states=MAX_STATES))
    reduced = check(model, CheckOptions(symmetry=True, max_states=MAX_STATES))
    assume(full.stopped is None and reduced.stopped is None)
    assert reduced.symmetry == "exact" and full.symmetry == "off"
    return full, reduced


@settings_
@given(spec=random_protocols(), agents=st.integers(2, 3), capacity=st.integers(1, 2),
       values=st.integers(1, 2))
def test_symmetry_keeps_verdicts(spec: str, agents: int, capacity: int, values: int) -> None:
    # at least 2 agents: with one there is nothing to permute and symmetry is off
    full, reduced = _both(spec, {"agents": agents, "capacity": capacity, "values": values})
    assert full.verdict == reduced.verdict
    assert {f.name for f in full.failures} == {f.name for f in reduced.failures}
    assert reduced.states <= full.states <= reduced.states * factorial(agents)
    # shortest counterexamples are equally short: reduction keeps BFS depths
    assert {(f.name, f.length) for f in full.failures if f.kind != "error"} == {
        (f.name, f.length) for f in reduced.failures if f.kind != "error"}


@settings_
@given(spec=random_protocols(), agents=st.integers(2, 3))
def test_signature_narrowing_is_exact(spec: str, agents: int) -> None:
    model = load_spec_text(spec, "random.coh", {"agents": agents})
    fast = check(model, CheckOptions(symmetry=True, max_states=MAX_STATES))
    original = Symmetry.canonical
    try:
        Symmetry.canonical = Symmetry.canonical_full  # type: ignore[method-assign]
        brute = check(model, CheckOptions(symmetry=True, max_states=MAX_STATES))
    finally:
        Symmetry.canonical = original  # type: ignore[method-assign]
    assume(fast.stopped is None and brute.stopped is None)
    assert fast.states == brute.states
    assert fast.verdict == brute.verdict


def test_the_generator_reaches_protocols_where_symmetry_matters() -> None:
    """The properties above can fail: some generated protocols have states that symmetry
    merges (3 agents), and some break their invariant."""
    quick = settings(max_examples=300, deadline=None, database=None, phases=[Phase.generate],
                     suppress_health_check=[HealthCheck.too_slow])  # no shrinking: any will do

    def merges(spec: str) -> bool:
        full, reduced = _both(spec, {"agents": 3})
        return reduced.states < full.states

    def fails(spec: str) -> bool:
        full, reduced = _both(spec, {"agents": 2})
        return full.verdict == "fails" and reduced.states < full.states

    find(random_protocols(), merges, settings=quick)
    find(random_protocols(), fails, settings=quick)
