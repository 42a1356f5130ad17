"""``coherence bench prove`` runs and reports its figures (no timing is asserted, only that
each was measured and that the ratios are computed from them)."""

from __future__ import annotations

import json

import pytest
from helpers import PROOF_RLIMIT, SPECS

from coherence.cli import main

LITERAL = str(SPECS / "broadcast_invalidate.coh")


def test_bench_prove_reports_depths_and_proofs(capsys: pytest.CaptureFixture[str]) -> None:
    # the depth bounds BMC (not the budget, which is only a safety net), so the rows are fixed
    code = main(["bench", "prove", LITERAL, "--agents-list", "2", "--bmc-depth", "5",
                 "--budget", "600", "--proofs", LITERAL, "--rlimit", str(PROOF_RLIMIT),
                 "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    (run,) = doc["bmc"]
    assert run["agents"] == 2 and run["depth_reached"] == 5 and run["verdict"] == "fails"
    assert run["failures"] == {"invariant:data_value": 4, "invariant:stale_copy_is_doomed": 5}
    rows = run["depths"]
    assert [r["depth"] for r in rows] == [0, 1, 2, 3, 4, 5]
    for r in rows:  # each figure was measured, and the ratio is made of them
        assert r["bmc_seconds"] > 0 and r["checker_bfs_seconds"] > 0
        ratio = r["bmc_cumulative"] / r["checker_bfs_seconds"]  # of the rounded figures
        assert r["ratio_bmc_over_checker"] == pytest.approx(ratio, rel=0.01, abs=0.01)
    cumulative = [r["bmc_cumulative"] for r in rows]
    assert cumulative == sorted(cumulative)
    (proof,) = doc["proofs"]
    assert proof["spec"] == LITERAL and proof["seconds"] > 0
    assert proof["verdict"] == "fails" and proof["detail"] == "refuted at 2 agents"
