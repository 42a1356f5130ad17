"""``check_performed``: coherence with each line's stores in perform order, the definition of
``coherence check``'s ``property NAME: coherence`` (docs/language.md), for ``fuzz --oracle
performed``. Checked against the checker's own finite monitor (``Semantics._observe``), an
independent implementation, on random histories of several lines, and against
``check_coherence``, which it must be stronger than.
"""

from __future__ import annotations

import functools

from hypothesis import given, settings
from hypothesis import strategies as st

from coherence import load_spec_text
from coherence.semantics import CoherenceViolation, Perform, Semantics
from coherence.testing import check_coherence, check_performed

SPEC = """
cache machine C { state I; init I; }
property coh: coherence;
"""


@functools.cache
def semantics(agents: int, lines: int, values: int) -> Semantics:
    return Semantics(load_spec_text(SPEC, "m.coh", {"agents": agents, "values": values,
                                                    "lines": lines}))


def monitor_reports(history: list[Perform], agents: int, lines: int, values: int) -> bool:
    sem = semantics(agents, lines, values)
    monitor = sem.initial_states()[0][2]
    try:
        for op in history:
            monitor = sem._observe(monitor, [op])
    except CoherenceViolation:
        return True
    return False


@st.composite
def histories(draw: st.DrawFn, distinct: bool) -> tuple[list[Perform], int, int]:
    agents, lines = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    ops: list[Perform] = []
    next_value = 1
    for _ in range(draw(st.integers(0, 10))):
        agent, line = draw(st.integers(0, agents - 1)), draw(st.integers(0, lines - 1))
        if draw(st.booleans()):
            if distinct:
                value, next_value = next_value, next_value + 1
            else:
                value = draw(st.integers(0, 2))
            ops.append(Perform(agent, line, "store", value))
        else:
            written = [0] + [o.value for o in ops if o.kind == "store" and o.line == line]
            value = draw(st.sampled_from(written)) if distinct else draw(st.integers(0, 2))
            ops.append(Perform(agent, line, "load", value))
    return ops, agents, lines


@settings(max_examples=150, deadline=None)
@given(histories(distinct=True))
def test_equals_the_monitor_when_stores_write_distinct_values(
        case: tuple[list[Perform], int, int]) -> None:
    history, agents, lines = case
    assert monitor_reports(history, agents, lines, 12) == (
        check_performed(history).holds is False)


@settings(max_examples=150, deadline=None)
@given(histories(distinct=False))
def test_the_monitor_never_fails_a_history_it_accepts(
        case: tuple[list[Perform], int, int]) -> None:
    """With repeated values the monitor keeps supersets (never a false alarm) and this
    decides exactly: whatever the monitor rejects, this rejects."""
    history, agents, lines = case
    if monitor_reports(history, agents, lines, 3):
        assert check_performed(history).holds is False


@settings(max_examples=150, deadline=None)
@given(histories(distinct=False))
def test_stronger_than_per_location_coherence(case: tuple[list[Perform], int, int]) -> None:
    history, _agents, _lines = case
    if check_coherence(history).holds is False:
        assert check_performed(history).holds is False


def test_stores_seen_in_the_other_order() -> None:
    """GPU 0's SM stores 0, GPU 1's stores 1, each performed at its own L2; GPU 1's SM then
    reads 0 from memory (hmg.coh, 2 GPUs). Some order of the stores explains it (1 before
    0), so per-location coherence holds; in perform order 0 came first, so it fails."""
    h = [Perform(0, 0, "store", 0), Perform(1, 0, "store", 1), Perform(1, 0, "load", 0)]
    assert check_coherence(h).holds is True
    v = check_performed(h)
    assert v.holds is False and v.first_bad == 2 and v.line == 0
    assert "agent 1 load returning 0 (operation 2)" in v.message


def test_stale_reads_and_lines_apart() -> None:
    h = [Perform(1, 0, "store", 1), Perform(0, 0, "load", 0), Perform(0, 1, "store", 2),
         Perform(0, 0, "load", 1), Perform(0, 1, "load", 2)]
    assert check_performed(h).holds is True  # a stale 0 first, then the new 1: allowed
    h.append(Perform(0, 0, "load", 0))  # ... and back to 0: CoRR
    assert check_performed(h).holds is False
