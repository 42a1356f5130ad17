"""Seeded livelocks (issue 16): mutants that no safety property catches and a liveness
property does; and the bundled protocols' liveness properties, which hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from coherence.engines import check
from coherence.mutants import find_mutants, parse_header, run_mutant
from coherence.results import CheckOptions
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

ROOT = Path(__file__).resolve().parent.parent
LIVELOCKS = [p for p in find_mutants(ROOT / "specs" / "mutants")
             if any(e in {lp.name for lp in load_spec(p, {"agents": 2}).liveness}
                    for e in parse_header(p).expect)]


def test_there_are_at_least_6_livelock_mutants_of_4_protocols() -> None:
    assert len(LIVELOCKS) >= 6
    assert len({parse_header(p).base for p in LIVELOCKS}) >= 4


@pytest.mark.parametrize("path", LIVELOCKS, ids=[p.stem for p in LIVELOCKS])
def test_only_liveness_catches_the_livelock(path: Path) -> None:
    mutant = parse_header(path)
    model = drop_properties(load_spec(path, {"agents": mutant.agents}), list(mutant.skip))
    safety = check(model, CheckOptions(), engine="reference")
    assert safety.verdict == "holds", [f.name for f in safety.failures]
    result = run_mutant(mutant)
    assert result.caught and result.expected_caught, result.failed
    assert set(result.failed) <= {p.name for p in model.liveness} | {"liveness"}


BUNDLED = ["german.coh", "msi_directory.coh", "mesi_directory.coh",
           "broadcast_invalidate_acked.coh"]


@pytest.mark.parametrize("spec", BUNDLED)
def test_bundled_liveness_holds_at_2_agents(spec: str) -> None:
    model = drop_properties(load_spec(ROOT / "specs" / spec, {"agents": 2}), ["coherent"])
    assert len(model.liveness) >= 2
    result = check(model, CheckOptions(liveness=True), engine="reference")
    assert result.verdict == "holds", [f.message for f in result.failures]
    assert {p.name for p in model.liveness} <= set(result.properties)


@pytest.mark.slow
@pytest.mark.parametrize("spec", BUNDLED)
def test_bundled_liveness_holds_at_3_agents(spec: str) -> None:
    model = drop_properties(load_spec(ROOT / "specs" / spec, {"agents": 3}), ["coherent"])
    result = check(model, CheckOptions(liveness=True), engine="reference")
    assert result.verdict == "holds", [f.message for f in result.failures]


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "starved"), [
    ("german.coh", {"shared_granted", "exclusive_granted"}),
    ("msi_directory.coh", {"request_completes"}),
])
def test_weak_fairness_alone_starves_a_request_at_3_caches(spec: str, starved: set[str]) -> None:
    text = (ROOT / "specs" / spec).read_text().replace("strong fair on", "on")
    from coherence import load_spec_text
    model = drop_properties(load_spec_text(text, f"weak_{spec}", {"agents": 3}),
                            ["coherent", "can_rest"])
    result = check(model, CheckOptions(liveness=True), engine="reference")
    assert {f.name for f in result.failures} & starved
    lasso = result.failures[0]
    assert lasso.loop_start is not None and lasso.loop_start <= lasso.length


def test_strong_fairness_marks_change_no_state_count() -> None:
    text = (ROOT / "specs" / "german.coh").read_text()
    from coherence import load_spec_text
    strong = load_spec_text(text, "a.coh", {"agents": 2})
    weak = load_spec_text(text.replace("strong fair on", "on"), "b.coh", {"agents": 2})
    assert check(drop_properties(strong, ["coherent"])).states == check(
        drop_properties(weak, ["coherent"])).states == 1698
