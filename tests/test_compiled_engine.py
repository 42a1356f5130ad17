"""The compiled engine against the reference engine, through the one driver.

Every bundled spec at 2 and 3 agents (4 in the slow tier), with and without symmetry: the
state count pinned from the reference engine (tests/test_library.py, tests/test_seed_specs.py),
the verdict and shortest counterexample length per property pinned there, and, where the
reference finishes in well under a second, a live comparison of everything the two report.
Every mutant in specs/mutants at 2 and 3 agents, with and without symmetry (3 agents: slow
tier), live against the reference with ``stop_at_first`` (the mutants verb's own setting):
both stop after the same level, so states, rules, depth and the failures (key and length)
must all be equal. The seeded livelocks hold here (a safety search cannot see them; their
liveness failures are tests/test_liveness_mutants.py's).

Models are built with ``COHERENCE_CFLAGS=-O1`` (mutants ``-O0``): here the C compiler's time
is nearly all the time, and the search code is the same at every optimisation level.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ACKED, LIBRARY_COUNTS, LIBRARY_VERDICTS, LITERAL, ROOT, SEED_COUNTS

from coherence import ir, load_spec
from coherence.engines import check
from coherence.engines.compiled import CompiledEngine
from coherence.mutants import find_mutants, parse_header
from coherence.results import CheckOptions, CheckResult
from coherence.spec.select import drop_properties

pytestmark = pytest.mark.skipif(
    CompiledEngine().available() is not None, reason="no C compiler")

MUTANTS = find_mutants(ROOT / "specs" / "mutants")
# Seeded livelocks: only a liveness property catches them, so a safety search finds them holding
LIVELOCKS = {p for p in MUTANTS if set(parse_header(p).expect)
             & {prop.name for prop in load_spec(p, {"agents": 2}).liveness}}
LIVE_LIMIT = 3000  # reference states compared live (the reference does ~6 k states/s)

# (spec, agents, monitor) -> (states with exact symmetry, without); 0: not pinned
PINNED: dict[tuple[str, int, bool], tuple[int, int]] = {
    **LIBRARY_COUNTS,
    **{(spec, n, not skip): counts for (spec, n, skip), counts in SEED_COUNTS.items()},
}
# {property: shortest counterexample length} of failing specs (tests/test_seed_specs.py)
VERDICTS: dict[str, dict[str, int] | None] = {
    **LIBRARY_VERDICTS, LITERAL: {"data_value": 4, "stale_copy_is_doomed": 5}, ACKED: None}


def spec_cases() -> list:
    out = []
    for (spec, agents, monitor), counts in PINNED.items():
        for symmetry in (True, False):
            if counts[0 if symmetry else 1] == 0:
                continue
            marks = [pytest.mark.slow] if agents >= 4 else []
            name = (f"{Path(spec).stem}-{agents}-{'mon' if monitor else 'nomon'}-"
                    f"{'sym' if symmetry else 'nosym'}")
            out.append(pytest.param(spec, agents, monitor, symmetry, marks=marks, id=name))
    return out


def summary(result: CheckResult) -> tuple:
    """Everything two engines must agree on."""
    return (result.states, result.rules_fired, result.depth, result.verdict, result.stopped,
            result.symmetry, sorted((f.key, f.length) for f in result.failures))


def load(spec: str | Path, agents: int, drop: list[str]) -> ir.Model:
    model = load_spec(ROOT / spec, {"agents": agents})  # spec: relative to the repository
    return drop_properties(model, drop) if drop else model


@pytest.mark.parametrize(("spec", "agents", "monitor", "symmetry"), spec_cases())
def test_spec_matches_the_reference(spec: str, agents: int, monitor: bool, symmetry: bool,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")
    model = load_spec(ROOT / spec, {"agents": agents})
    if not monitor:
        model = drop_properties(model, [p.name for p in model.properties
                                        if p.kind == "coherence"])
    options = CheckOptions(symmetry=symmetry, threads=2)
    result = check(model, options, engine="compiled")
    assert result.engine == "compiled"
    assert result.states == PINNED[(spec, agents, monitor)][0 if symmetry else 1]
    expected = VERDICTS[spec]
    if expected is None:
        assert result.verdict == "holds", [f.message for f in result.failures]
    else:
        assert result.verdict == "fails"
        assert {f.name: f.length for f in result.failures} == expected
    if result.states <= LIVE_LIMIT:
        assert summary(result) == summary(check(model, options, engine="reference"))


MUTANT_CASES = [
    pytest.param(path, agents, symmetry,
                 id=f"{path.stem}-{agents}-{'sym' if symmetry else 'nosym'}",
                 marks=[pytest.mark.slow] if agents == 3 else [])
    for path in MUTANTS for agents in (2, 3) for symmetry in (True, False)
]  # 3 agents: a second C build per mutant and the reference's time (~300 s in all on the
# shared machine); slow tier (the bundled specs are compared at 3 agents by default)


@pytest.mark.parametrize(("path", "agents", "symmetry"), MUTANT_CASES)
def test_mutant_matches_the_reference(path: Path, agents: int, symmetry: bool,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O0")
    model = load(path, agents, list(parse_header(path).skip))
    options = CheckOptions(symmetry=symmetry, stop_at_first=True, threads=2)
    result = check(model, options, engine="compiled")
    assert result.engine == "compiled"
    assert result.verdict == ("holds" if path in LIVELOCKS else "fails")
    assert summary(result) == summary(check(model, options, engine="reference"))


def test_bounded_search_matches_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    # --max-depth stops both engines at the same level with the same partial result.
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")
    model = load("specs/german.coh", 3, [])
    for symmetry in (True, False):
        options = CheckOptions(symmetry=symmetry, max_depth=6, threads=2)
        result = check(model, options, engine="compiled")
        assert result.verdict == "incomplete" and result.stopped == "--max-depth 6 reached"
        assert summary(result) == summary(check(model, options, engine="reference"))


def test_one_thread_and_two_threads_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O1")
    model = load("specs/broadcast_invalidate.coh", 2, [])
    one = check(model, CheckOptions(symmetry=False, threads=1), engine="compiled")
    two = check(model, CheckOptions(symmetry=False, threads=2), engine="compiled")
    assert (one.threads, two.threads) == (1, 2)
    assert summary(one) == summary(two)
    assert summary(one)[3] == "fails"
