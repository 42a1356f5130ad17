"""The compiled engine's state counts equal Rumur's on our Murphi export of German's protocol
at 4 and 5 caches (issue 13), symmetry off and the coherence monitor skipped, as
docs/rumur.md explains. Slow tier: Rumur takes minutes at 4 caches and about half an hour at
5 on a 2-core machine."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coherence.engines import check
from coherence.export.murphi import to_murphi
from coherence.export.rumur import rumur_available, run_rumur
from coherence.results import CheckOptions
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

GERMAN = Path(__file__).resolve().parent.parent / "specs" / "german.coh"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not rumur_available(), reason="rumur and cc are needed"),
    pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler"),
]


@pytest.mark.parametrize(("agents", "states"), [(4, 1_105_353), (5, 22_030_785)])
def test_german_counts_equal_rumurs(agents: int, states: int) -> None:
    model = drop_properties(load_spec(GERMAN, {"agents": agents}), ["coherent"])
    ours = check(model, CheckOptions(symmetry=False), engine="compiled")
    assert (ours.verdict, ours.states) == ("holds", states)
    theirs = run_rumur(to_murphi(model), symmetry="off", threads=2, timeout=3600,
                       optimize=True)
    assert (theirs.verdict, theirs.states) == ("holds", states)
