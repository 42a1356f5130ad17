"""The seed's protocol, twice: the literal broadcast-invalidate scheme and the acked repair.

Counts are pinned (Stateright-style) for 2-4 GPUs with and without symmetry. The coherence
monitor (``property coherent``) multiplies the state space about 200 times, so the 4-GPU rows
run with it skipped and its 3-GPU rows are in the slow tier (more than ~20 s each; the times
are in docs/library.md). tests/test_library.py requires every spec in specs/ to be pinned.
"""

from __future__ import annotations

import pytest
from helpers import ACKED, LITERAL, ROOT, SEED_COUNTS

from coherence import load_spec
from coherence.engines import check
from coherence.results import CheckOptions
from coherence.spec.select import drop_properties

# (spec, agents, skip coherent?) -> (states with exact symmetry, states without): in helpers
# (tests/test_library.py also needs them)
COUNTS = SEED_COUNTS
# Rows over ~1 s (docs/library.md's times) are in the slow tier: the monitor's 3-agent rows
# and the larger 4-agent ones; the literal scheme's reduced 4-agent row stays in the default.
SLOW_SYM = {(LITERAL, 3, False), (ACKED, 3, False), (ACKED, 4, True)}
SLOW_NOSYM = SLOW_SYM | {(LITERAL, 4, True)}


def _run(spec: str, agents: int, skip: bool, symmetry: bool):
    model = load_spec(ROOT / spec, {"agents": agents})
    if skip:
        model = drop_properties(model, ["coherent"])
    return check(model, CheckOptions(symmetry=symmetry))


def _cases(symmetry: bool) -> list:
    out = []
    for key in COUNTS:
        marks = [pytest.mark.slow] if key in (SLOW_SYM if symmetry else SLOW_NOSYM) else []
        out.append(pytest.param(*key, marks=marks, id=f"{key[0].split('/')[-1]}-{key[1]}-"
                                f"{'nomon' if key[2] else 'mon'}"))
    return out


@pytest.mark.parametrize(("spec", "agents", "skip"), _cases(symmetry=True))
def test_counts_with_symmetry(spec: str, agents: int, skip: bool) -> None:
    result = _run(spec, agents, skip, symmetry=True)
    assert result.states == COUNTS[(spec, agents, skip)][0]
    _check_verdict(spec, result)


@pytest.mark.parametrize(("spec", "agents", "skip"), _cases(symmetry=False))
def test_counts_without_symmetry(spec: str, agents: int, skip: bool) -> None:
    result = _run(spec, agents, skip, symmetry=False)
    assert result.states == COUNTS[(spec, agents, skip)][1]
    _check_verdict(spec, result)
    if result.states > 10**6:
        # README: packed visited states; over a million of them in well under 1 GiB
        assert result.bytes_per_state < 250
        assert result.peak_memory_bytes < 2**30


def _check_verdict(spec: str, result) -> None:
    if spec == ACKED:
        assert result.verdict == "holds", [f.message for f in result.failures]
        return
    assert result.verdict == "fails"
    lengths = {f.name: f.length for f in result.failures}
    # data_value breaks by design; the stale copy that is never invalidated is the real bug.
    # Per-location coherence itself holds: see the spec's header.
    assert lengths == {"data_value": 4, "stale_copy_is_doomed": 5}


def test_literal_counterexample_is_the_overtaken_invalidation() -> None:
    result = _run(LITERAL, 3, True, symmetry=True)
    failure = next(f for f in result.failures if f.name == "stale_copy_is_doomed")
    events = [(s.actor, s.event) for s in failure.trace]
    assert events == [
        ("GPU[0]", "Load"),
        ("Home", "receives GetS from GPU[0]"),
        ("GPU[1]", "Store(v=1)"),
        ("GPU[0]", "receives Inv from Home"),
        ("GPU[0]", "receives Data(val=0) from Home"),
    ]


def test_trace_agent_names_are_stable_under_symmetry() -> None:
    # The trace is replayed from the real initial state: the agent that loads is the one whose
    # copy goes stale, whatever name the reduced state space gave it.
    result = _run(LITERAL, 4, True, symmetry=True)
    failure = next(f for f in result.failures if f.name == "stale_copy_is_doomed")
    loader = failure.trace[0].actor
    assert failure.trace[3].actor == loader and failure.trace[4].actor == loader
    assert failure.trace[2].actor != loader
