"""The finite coherence monitor against its definition, by brute force over histories.

Definition (docs/language.md): the coherence order of a line is the order in which its stores
are performed; an agent's loads may return a store performed earlier that is not older than
the last store the agent observed (its own store, or the store it last read from). Per agent,
choosing the earliest admissible store for each load is optimal, so the definition is decided
exactly by a greedy pass that knows store identities. The monitor only sees values: it must
never report a violation the definition does not have, and must find every one when stores
write distinct values.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from coherence import load_spec_text
from coherence.semantics import CoherenceViolation, Perform, Semantics

SPEC = """
cache machine C { state I; init I; }
property coh: coherence;
"""


def violates_definition(history: list[Perform]) -> bool:
    views: dict[int, int] = {}  # agent -> index of the store it last observed (-1: initial)
    for i, op in enumerate(history):
        view = views.get(op.agent, -1)
        if op.kind == "store":
            views[op.agent] = i
            continue
        candidates = [j for j in range(max(view, 0), i)
                      if history[j].kind == "store" and history[j].value == op.value]
        if view == -1 and op.value == 0:
            continue  # still reading the initial value
        if view >= 0 and history[view].value == op.value:
            continue  # reading the observed store again
        if not candidates:
            return True
        views[op.agent] = candidates[0]
    return False


def monitor_reports(history: list[Perform], agents: int, values: int) -> bool:
    sem = Semantics(load_spec_text(SPEC, "m.coh", {"agents": agents, "values": values}))
    monitor = sem.initial_states()[0][2]
    try:
        for op in history:
            monitor = sem._observe(monitor, [op])
    except CoherenceViolation:
        return True
    return False


def histories(distinct: bool) -> st.SearchStrategy[tuple[list[Perform], int]]:
    @st.composite
    def build(draw: st.DrawFn) -> tuple[list[Perform], int]:
        agents = draw(st.integers(1, 3))
        n = draw(st.integers(0, 9))
        ops: list[Perform] = []
        next_value = 1
        for _ in range(n):
            agent = draw(st.integers(0, agents - 1))
            if draw(st.booleans()):
                if distinct:
                    value, next_value = next_value, next_value + 1
                else:
                    value = draw(st.integers(0, 2))
                ops.append(Perform(agent, 0, "store", value))
            else:
                written = [0] + [o.value for o in ops if o.kind == "store"]
                value = draw(st.sampled_from(written)) if distinct else draw(st.integers(0, 2))
                ops.append(Perform(agent, 0, "load", value))
        return ops, agents
    return build()


@settings(max_examples=400, deadline=None)
@given(histories(distinct=True))
def test_exact_when_stores_write_distinct_values(case: tuple[list[Perform], int]) -> None:
    history, agents = case
    assert monitor_reports(history, agents, values=12) == violates_definition(history)


@settings(max_examples=400, deadline=None)
@given(histories(distinct=False))
def test_never_a_false_alarm(case: tuple[list[Perform], int]) -> None:
    history, agents = case
    # With repeated values a load may have read any store of its value; the greedy pass
    # takes the earliest, the most permissive choice, so it fails only on real violations.
    if monitor_reports(history, agents, values=3):
        assert violates_definition(history)


def test_corr_is_caught() -> None:
    # B stores 1; A reads 1, then reads the initial 0: CoRR.
    h = [Perform(1, 0, "store", 1), Perform(0, 0, "load", 1), Perform(0, 0, "load", 0)]
    assert monitor_reports(h, 2, 2) and violates_definition(h)


def test_cowr_is_caught() -> None:
    # A stores 1 then reads 0 although nobody wrote 0 since: CoWR.
    h = [Perform(0, 0, "store", 1), Perform(0, 0, "load", 0)]
    assert monitor_reports(h, 1, 2)


def test_stale_but_coherent_read_is_allowed() -> None:
    # A keeps reading the old value after B's store: coherent (A's reads come "before" it).
    h = [Perform(1, 0, "store", 1), Perform(0, 0, "load", 0), Perform(0, 0, "load", 0)]
    assert not monitor_reports(h, 2, 2) and not violates_definition(h)
