"""Golden mining output: every candidate the reachable-state filter keeps (its template and
its text), for three specs without their hand-written aux lines. The filter's
enumeration is tuned for speed (bit sets of clashing literals and of two-literal clauses,
``infer_mine._enumerate``); a change in what it keeps, or in which order, shows up here as a
diff to review. Regenerate after a deliberate change with COHERENCE_UPDATE_GOLDEN=1."""

from __future__ import annotations

import os

import pytest
from helpers import ROOT

from coherence.commands.infer_states import state_source
from coherence.smt.infer import InferOptions
from coherence.smt.infer_mine import mine
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

GOLDEN = ROOT / "tests" / "golden" / "infer_candidates"
SPECS = ["german", "broadcast_invalidate_acked", "sharer_counter"]


@pytest.mark.parametrize("name", SPECS)
def test_mined_candidates_match_golden(name: str) -> None:
    model = load_spec(ROOT / "tests" / "specs" / "infer" / f"{name}.coh")
    model = drop_properties(model, [p.name for p in model.properties])
    opts = InferOptions()
    source = state_source("auto")
    assert source is not None
    cands, stats, _tpl = mine(model, opts.sizes, opts.max_states, float("inf"), opts.literals,
                              source=source)
    assert all(complete for _n, _s, complete, _t in stats.sizes)
    text = "".join(f"{c.kind} | {c.text}\n" for c in cands)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("COHERENCE_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
