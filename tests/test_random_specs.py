"""Random well-formed specs (``strategies.specs``) through the layout and every engine
(issue 13's random-spec tests; STYLE.md item 14).

(a) the packed layout round-trips every reachable state (the first few hundred);
(b) the reference engine with symmetry reduction agrees with itself without it: no more
    states, the same failure keys with the same shortest counterexample lengths (unless the
    driver fell back to the unreduced search, in which case both runs are unreduced);
(c) the compiled engine agrees with the reference at 2 agents, with and without symmetry:
    the same state count, failure keys and shortest counterexample length per key.

Searches are capped (``CAP`` states); a random spec whose reference search does not finish
under the cap is rejected with ``assume`` (the strategy keeps most specs well under it), since
two engines stopped by a state limit stop at different places. The default tier draws few
examples; ``-m slow`` runs the same properties on many more.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from strategies import loaded_specs

from coherence.engines import check
from coherence.engines.compiled.build import CompilerNotFound, find_compiler
from coherence.engines.driver import NOT_SYMMETRIC
from coherence.ir import Model
from coherence.layout import Layout
from coherence.results import CheckOptions, CheckResult
from coherence.semantics import Semantics, State

ROUND_TRIP_STATES = 300
CAP = 1500  # states of one reference search

FAST = settings(max_examples=30, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
SLOW = settings(FAST, max_examples=400)
# each random spec is a fresh C build (about 0.7 s at -O0): fewer of them in the default tier
FAST_COMPILED = settings(FAST, max_examples=15)


def compiler_missing() -> str | None:
    try:
        find_compiler()
    except CompilerNotFound as err:
        return err.message
    return None


def reachable(sem: Semantics, cap: int) -> list[State]:
    seen: set[State] = set()
    order: list[State] = []
    frontier = list(sem.initial_states())
    while frontier and len(order) < cap:
        s = frontier.pop(0)
        if s in seen:
            continue
        seen.add(s)
        order.append(s)
        outcomes, _ = sem.enabled(s)
        frontier.extend(o.state for o in outcomes if o.state is not None)
    return order


def lengths(result: CheckResult) -> dict[tuple[str, ...], int]:
    """Failure key -> shortest counterexample length (one failure per key, by design)."""
    out = {f.key: f.length for f in result.failures}
    assert len(out) == len(result.failures), "two failures with one key"
    return out


def reference(model: Model, symmetry: bool) -> CheckResult:
    result = check(model, CheckOptions(symmetry=symmetry, max_states=CAP), engine="reference")
    assume(result.stopped is None)
    return result


# ---------------------------------------------------------------- (a) layout round trip

def round_trip(model: Model) -> None:
    layout = Layout(model)
    states = reachable(Semantics(model), ROUND_TRIP_STATES)
    assert states
    for s in states:
        code = layout.pack(s)
        assert 0 <= code < 1 << max(layout.bits, 1)
        assert layout.unpack(code) == s
        assert layout.from_bytes(layout.to_bytes(code)) == code


@FAST
@given(loaded_specs())
def test_layout_round_trips_random_specs(spec: tuple[str, Model]) -> None:
    round_trip(spec[1])


@pytest.mark.slow
@SLOW
@given(loaded_specs())
def test_layout_round_trips_random_specs_many(spec: tuple[str, Model]) -> None:
    round_trip(spec[1])


# ---------------------------------------------------------------- (b) symmetry on vs off

def symmetry_agrees(model: Model) -> None:
    full = reference(model, symmetry=False)
    reduced = reference(model, symmetry=True)
    assert full.symmetry == "off"
    if NOT_SYMMETRIC in reduced.notes:  # the driver fell back: an unreduced search again
        assert reduced.symmetry == "off" and reduced.states == full.states
    else:
        assert reduced.symmetry == "exact"
        assert reduced.states <= full.states
    assert lengths(reduced) == lengths(full)
    assert reduced.verdict == full.verdict


@FAST
@given(loaded_specs())
def test_symmetry_agrees_with_the_full_search(spec: tuple[str, Model]) -> None:
    note(spec[0])
    symmetry_agrees(spec[1])


@pytest.mark.slow
@SLOW
@given(loaded_specs())
def test_symmetry_agrees_with_the_full_search_many(spec: tuple[str, Model]) -> None:
    note(spec[0])
    symmetry_agrees(spec[1])


# ---------------------------------------------------------------- (c) reference vs compiled

needs_cc = pytest.mark.skipif(compiler_missing() is not None,
                              reason=f"the compiled engine needs a C compiler: "
                                     f"{compiler_missing()}")


def engines_agree(model: Model) -> None:
    for symmetry in (False, True):
        ref = reference(model, symmetry)
        comp = check(model, CheckOptions(symmetry=symmetry), engine="compiled")
        assert comp.engine == "compiled"
        assert comp.stopped is None
        assert comp.symmetry == ref.symmetry
        assert comp.states == ref.states
        assert lengths(comp) == lengths(ref)
        assert comp.verdict == ref.verdict


@needs_cc
@FAST_COMPILED
@given(loaded_specs())
def test_compiled_agrees_with_reference(spec: tuple[str, Model]) -> None:
    note(spec[0])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COHERENCE_CFLAGS", "-O0")  # each random spec is a new build: keep it quick
        engines_agree(spec[1])


@pytest.mark.slow
@needs_cc
@SLOW
@given(loaded_specs())
def test_compiled_agrees_with_reference_many(spec: tuple[str, Model]) -> None:
    note(spec[0])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COHERENCE_CFLAGS", "-O0")
        engines_agree(spec[1])
