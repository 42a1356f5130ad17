"""``check --diagram DIR`` where Graphviz's ``dot`` is missing: the verdict and its
counterexamples still come out (exit 1), with DOT files and a note; it was exit 2 with a hint
to use ``--format dot``, an option ``check`` does not have, and no counterexample printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SPECS

from coherence.cli import main


def test_check_draws_dot_files_only_without_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("coherence.diagrams.render.dot_available", lambda: False)
    spec = str(SPECS / "broadcast_invalidate.coh")
    assert main(["check", spec, "--skip", "coherent", "--engine", "reference",
                 "--diagram", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "FAIL data_value (invariant)" in out
    assert "--diagram wrote DOT files only" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "broadcast_invalidate.check.data_value.dot",
        "broadcast_invalidate.check.stale_copy_is_doomed.dot"]
