"""Every ```coh example in docs/language.md is a complete spec that loads and checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coherence import load_spec_text
from coherence.engines import check
from coherence.results import CheckOptions

DOC = Path(__file__).parent.parent / "docs" / "language.md"
BLOCKS = re.findall(r"```coh\n(.*?)```", DOC.read_text(), flags=re.S)


# Each example's verdict and reachable-state count, pinned: most are declarations whose only
# state is the initial one; a change to an example or to the semantics shows here.
EXPECTED = [("holds", 1), ("holds", 18), ("holds", 1), ("holds", 1), ("holds", 1),
            ("holds", 1), ("holds", 14), ("holds", 17), ("holds", 28), ("holds", 18),
            ("holds", 1), ("holds", 10), ("holds", 10), ("holds", 3), ("holds", 1),
            ("holds", 1), ("holds", 10), ("holds", 6), ("fails", 119)]


def test_doc_has_the_pinned_examples() -> None:
    assert len(BLOCKS) == len(EXPECTED)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_loads_and_explores(index: int) -> None:
    model = load_spec_text(BLOCKS[index], f"language.md#example{index + 1}")
    result = check(model, CheckOptions(max_states=2000))
    assert result.stopped is None
    assert (result.verdict, result.states) == EXPECTED[index], [f.message for f in result.failures]
