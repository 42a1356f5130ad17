"""Golden parse-and-lower test: the IR of a spec using every construct, dumped as text.

Regenerate after a deliberate IR change with COHERENCE_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

from coherence import load_spec, load_spec_text
from coherence.spec.dump import dump

HERE = Path(__file__).parent
SPEC = HERE / "specs" / "golden" / "tiny_msi.coh"
GOLDEN = HERE / "golden" / "tiny_msi.ir.txt"


def test_lowered_ir_matches_golden() -> None:
    text = dump(load_spec(SPEC.relative_to(HERE.parent))) + "\n"
    if os.environ.get("COHERENCE_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


HIER_SPEC = HERE / "specs" / "hierarchy" / "two_level_wt.coh"
HIER_GOLDEN = HERE / "golden" / "two_level_wt.ir.txt"


def test_hierarchical_ir_matches_golden() -> None:
    """Index types, machine indices, nodes (NodeOf, NodeIndex), multicasts (issue 20)."""
    text = dump(load_spec(HIER_SPEC.relative_to(HERE.parent))) + "\n"
    if os.environ.get("COHERENCE_UPDATE_GOLDEN"):
        HIER_GOLDEN.write_text(text)
    assert text == HIER_GOLDEN.read_text()


def test_positions_do_not_affect_equality() -> None:
    source = SPEC.read_text()
    a = load_spec_text(source, "a.coh")
    b = load_spec_text("\n\n  " + source.replace("\n", "\n  "), "b.coh")
    assert a.machines == b.machines and a.invariants == b.invariants


def test_overrides_reach_the_ir() -> None:
    model = load_spec_text(SPEC.read_text(), "x.coh", {"agents": 4, "values": 3})
    assert (model.agents, model.values) == (4, 3)
    dir_ = model.machine("Dir")
    assert str(dir_.var("acks").type) == "array<agent, int[0..1]>"
    assert dir_.var("acks").type.index.n == 4
