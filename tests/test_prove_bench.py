"""``coherence bench prove`` runs and reports its figures (no timing is asserted)."""

from __future__ import annotations

import json

import pytest

from coherence.cli import main


def test_bench_prove_reports_depths_and_proofs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "prove", "specs/broadcast_invalidate.coh", "--agents-list", "2",
                 "--budget", "3", "--proofs", "specs/broadcast_invalidate.coh", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    (run,) = doc["bmc"]
    assert run["agents"] == 2 and run["depths"][0]["depth"] == 0
    assert all(r["checker_bfs_seconds"] >= 0 for r in run["depths"])
    if run["depth_reached"] >= 5:  # found within the budget: the checker's depths
        assert run["failures"] == {"invariant:data_value": 4,
                                   "invariant:stale_copy_is_doomed": 5}
    (proof,) = doc["proofs"]
    assert proof["verdict"] == "fails" and "refuted at 2 agents" in proof["detail"]
