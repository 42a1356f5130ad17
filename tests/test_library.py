"""The protocol library in specs/: verdicts and reachable-state counts, pinned.

Counts are pinned Stateright-style for 2, 3 and 4 agents, with exact symmetry and without.
Rows marked ``nomon`` skip the coherence monitor (``--skip coherent``), whose state multiplies
the space; those are the rows comparable with Murphi/Rumur (docs/rumur.md). ``mon`` rows keep
it, where it finishes in reasonable time. A row measured at more than ~1 s on the 2-core
reference machine is in the slow tier (``python -m pytest -m slow``; the compiled engine pins
the same 2- and 3-agent rows in the default tier); docs/library.md has the times. The two
seed specs (broadcast_invalidate*.coh) are pinned in tests/test_seed_specs.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# spec paths relative to the repository (ROOT), also the keys of the tables below
from helpers import (
    GERMAN,
    GPU_WT,
    HIER_COUNTS,
    MESI_DIR,
    MESI_SNOOP,
    MSI_DIR,
    MSI_SNOOP,
    ROOT,
    SEED_COUNTS,
    flat_specs,
)
from helpers import LIBRARY_COUNTS as COUNTS
from helpers import LIBRARY_VERDICTS as VERDICTS

from coherence import load_spec, load_spec_text
from coherence.engines import check
from coherence.results import CheckOptions, CheckResult
from coherence.spec.select import drop_properties

# The reference engine's rows over ~1 s (docs/library.md's times) are in the slow tier; the
# compiled engine checks every 2- and 3-agent row by default (tests/test_compiled_engine.py).
SLOW_SYM: set[tuple[str, int, bool]] = {
    (GPU_WT, 4, False), (MSI_DIR, 4, False), (MESI_DIR, 4, False), (GERMAN, 4, False),
    (GPU_WT, 3, False), (MSI_DIR, 3, False), (MESI_DIR, 3, False), (GERMAN, 3, False),
    (MSI_SNOOP, 4, True), (MESI_SNOOP, 4, True),
    (GPU_WT, 2, True), (MSI_DIR, 2, True), (MESI_DIR, 2, True), (GERMAN, 2, True),
}
SLOW_NOSYM: set[tuple[str, int, bool]] = SLOW_SYM | {(MSI_SNOOP, 3, True), (MESI_SNOOP, 3, True)}


def run(spec: str | Path, agents: int, monitor: bool, symmetry: bool,
        text: str | None = None) -> CheckResult:
    if text is None:
        model = load_spec(ROOT / spec, {"agents": agents})
    else:
        model = load_spec_text(text, str(spec), {"agents": agents})
    if not monitor:
        names = [p.name for p in model.properties if p.kind == "coherence"]
        model = drop_properties(model, names)
    return check(model, CheckOptions(symmetry=symmetry))


def _cases(slow: set, symmetry: bool) -> list:
    out = []
    for key in COUNTS:
        if COUNTS[key][0 if symmetry else 1] == 0:
            continue  # not pinned
        marks = [pytest.mark.slow] if key in slow else []
        name = f"{Path(key[0]).stem}-{key[1]}-{'mon' if key[2] else 'nomon'}"
        out.append(pytest.param(*key, marks=marks, id=name))
    return out


def _check_verdict(spec: str, result: CheckResult) -> None:
    expected = VERDICTS[spec]
    if expected is None:
        assert result.verdict == "holds", [f.message for f in result.failures]
        return
    assert result.verdict == "fails"
    assert {f.name: f.length for f in result.failures} == expected


@pytest.mark.parametrize(("spec", "agents", "monitor"), _cases(SLOW_SYM, symmetry=True))
def test_counts_with_symmetry(spec: str, agents: int, monitor: bool) -> None:
    result = run(spec, agents, monitor, symmetry=True)
    assert result.states == COUNTS[(spec, agents, monitor)][0]
    _check_verdict(spec, result)


@pytest.mark.parametrize(("spec", "agents", "monitor"), _cases(SLOW_NOSYM, symmetry=False))
def test_counts_without_symmetry(spec: str, agents: int, monitor: bool) -> None:
    result = run(spec, agents, monitor, symmetry=False)
    assert result.states == COUNTS[(spec, agents, monitor)][1]
    _check_verdict(spec, result)


def test_every_spec_is_pinned_at_2_3_4_agents() -> None:
    """A spec added to specs/ must get its rows here or in test_seed_specs.py."""
    pinned = {(k[0], k[1]) for k in COUNTS if not k[2] and all(COUNTS[k])}
    pinned |= {(k[0], k[1]) for k in SEED_COUNTS if k[2] and all(SEED_COUNTS[k])}
    paths = flat_specs(ROOT / "specs")
    assert len(paths) >= 8  # found wherever pytest runs from: never vacuous
    for path in paths:
        for agents in (2, 3, 4):
            assert (f"specs/{path.name}", agents) in pinned, (path, agents)
    # hierarchical specs (no agents): pinned at 1 GPU x 2 SMs and 2 GPUs x 1 SM in
    # tests/test_hier_specs.py
    hier = sorted(set((ROOT / "specs").glob("*.coh")) - set(paths))
    assert len(hier) >= 4
    for path in hier:
        for gpus, sms in ((1, 2), (2, 1)):
            assert (path.stem, gpus, sms, False) in HIER_COUNTS, path


def test_mesi_directory_reaches_every_e_state() -> None:
    """E is granted (3 steps) and evicted with PutE (4): claims that neither happens fail."""
    text = (ROOT / MESI_DIR).read_text(encoding="utf-8") + (
        "invariant never_e: forall a: agent :: Cache[a].state != E;\n"
        "invariant never_ei_a: forall a: agent :: Cache[a].state != EI_A;\n")
    result = run("mesi_e.coh", 2, False, symmetry=True, text=text)
    assert {f.name: f.length for f in result.failures} == {"never_e": 3, "never_ei_a": 4}


def _german_without_undefine() -> str:
    text = (ROOT / GERMAN).read_text(encoding="utf-8")
    out = text.replace("undefine data;", "").replace("undefine CurPtr;", "")
    assert out != text and not re.search(r"^[^/]*\bundefine \w+;", out, re.MULTILINE)
    return out


# German without `undefine` (same verdict), by text substitution: the cleared fields are the
# cache's copy after invalidation and CurPtr after a grant. Messages leave the network when
# received in our fifo networks, so Murphi's `undefine ChanN[i].Data` has no counterpart here;
# that is why the ratio is ~3x/~6x rather than german.m's ~13x/~81x (docs/library.md).
GERMAN_NO_UNDEFINE = {2: (4983, 9963), 3: (60661, 0)}


@pytest.mark.parametrize("agents", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_german_undefine_shrinks_the_space(agents: int) -> None:
    text = _german_without_undefine()
    sym = run("german_no_undefine.coh", agents, False, symmetry=True, text=text)
    assert sym.verdict == "holds"
    assert sym.states == GERMAN_NO_UNDEFINE[agents][0]
    ratio = sym.states / COUNTS[(GERMAN, agents, False)][0]
    assert ratio > {2: 2.9, 3: 5.7}[agents]
    if agents == 2:
        off = run("german_no_undefine.coh", agents, False, symmetry=False, text=text)
        assert off.states == GERMAN_NO_UNDEFINE[2][1]
        assert off.states / COUNTS[(GERMAN, 2, False)][1] > 2.9
