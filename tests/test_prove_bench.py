"""``coherence bench prove`` runs and reports its figures (no timing is asserted, only that
each was measured and that the ratios are computed from them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import PROOF_RLIMIT, ROOT, SPECS

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


# ---------------------------------------------------------------- bench prove --infer

INFER = ROOT / "tests" / "specs" / "infer"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command in a fresh interpreter: what ran before in this test process must not
    decide what the bench's cases start from."""
    return subprocess.run([sys.executable, "-m", "coherence.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, check=False)


def _infer_rows(*specs: Path) -> list[dict[str, Any]]:
    done = _cli("bench", "prove", "--infer", "--json", "--progress", "jsonl",
                "--progress-every", "0", "--jobs", "2", "--proofs", *map(str, specs))
    assert done.returncode == 0, done.stderr[-3000:]
    rows: list[dict[str, Any]] = json.loads(done.stdout)["infer"]
    assert [r["spec"] for r in rows] == [str(s) for s in specs]
    # NOTE(bench-isolated): each case runs in a forked child, whose progress comes through
    messages = [json.loads(line).get("message", "") for line in done.stderr.splitlines()
                if line.startswith("{")]
    for k, spec in enumerate(specs):
        assert any(m.startswith(f"case {k + 1} of {len(specs)}: prove --infer {spec}: final "
                                "proof") for m in messages), (spec, messages[-5:])
    return rows


def test_bench_prove_infer_measures_each_case_in_its_own_process() -> None:
    rows = _infer_rows(INFER / "ack_gather.coh", INFER / "sharer_counter.coh")
    for r in rows:
        assert r["verdict"] == "holds", r["detail"]
        assert r["invariants"] and r["stats"]["final"] == len(r["invariants"])
        assert r["peak_rss_bytes"] > 0  # the case's process, not the bench's
        assert r["seconds"] >= r["stats"]["seconds"]["total"] > 0


@pytest.mark.slow
def test_a_bench_case_infers_what_prove_infers_alone_whatever_ran_before() -> None:
    """In one process the acked scheme came out with 27 lines after German and 28 alone (Z3's
    answers follow the ids of the terms made before); each case now starts afresh."""
    acked = INFER / "broadcast_invalidate_acked.coh"
    rows = _infer_rows(INFER / "german.coh", acked)
    alone = _cli("prove", str(acked), "--agents", "any", "--infer", "--skip", "coherent",
                 "--json", "--jobs", "2")
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert rows[1]["invariants"] == json.loads(alone.stdout)["inferred"]["invariants"]
