"""`coherence check` end to end: exit codes, JSON against its schema, progress, trace files."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from coherence.cli import main

SCHEMA = json.loads(files("coherence.schemas").joinpath("check.json").read_text())


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc = main(["check", *argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    return rc, doc


def test_literal_fails_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(["specs/broadcast_invalidate.coh", "--agents", "2", "--skip", "coherent"],
                       capsys)
    assert rc == 1 and doc["verdict"] == "fails" and doc["exit_code"] == 1
    assert doc["stats"]["states"] == 322
    assert doc["properties"]["data_value"] == "fails"
    assert doc["properties"]["deadlock"] == "holds"
    assert [f["length"] for f in doc["failures"]] == [4, 5]
    assert doc["failures"][1]["trace"][3]["event"] == "receives Inv from Home"


def test_acked_holds_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(["specs/broadcast_invalidate_acked.coh", "-n", "2"], capsys)
    assert rc == 0 and doc["verdict"] == "holds"
    assert doc["stats"]["states"] == 2804 and doc["symmetry"] == "exact"
    assert set(doc["properties"].values()) == {"holds"}


def test_no_symmetry_flag(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json(["specs/broadcast_invalidate_acked.coh", "-n", "2", "--no-symmetry"],
                      capsys)
    assert doc["symmetry"] == "off" and doc["stats"]["states"] == 5596


def test_incomplete_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json(["specs/broadcast_invalidate_acked.coh", "-n", "3", "--max-states", "50"],
                       capsys)
    assert rc == 3 and doc["verdict"] == "incomplete"
    assert doc["stopped"] == "--max-states 50 reached"
    assert set(doc["properties"].values()) == {"unknown"}


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check", "specs/broadcast_invalidate.coh", "-n", "2", "--skip", "coherent"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL stale_copy_is_doomed (invariant)" in out
    assert "shortest counterexample: 5 steps" in out
    assert "  4. GPU[0]: receives Inv from Home" in out
    assert "verdict: FAILS" in out
    assert "322 states" in out and "bytes/state" in out and "peak memory" in out


def test_progress_line_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    # --progress always forces the live line even when stderr is not a terminal
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.spec.load import load_spec

    seen = []
    check(load_spec("specs/broadcast_invalidate_acked.coh", {"agents": 2}),
          CheckOptions(progress=seen.append, progress_every=0.0))
    assert seen and seen[-1].states > 0 and seen[-1].depth >= 0
    assert main(["check", "specs/broadcast_invalidate_acked.coh", "-n", "2",
                 "--progress", "always"]) == 0


def test_trace_out_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from coherence.traces_io import load_traces
    path = tmp_path / "traces.json"
    main(["check", "specs/broadcast_invalidate.coh", "-n", "2", "--skip", "coherent",
          "--trace-out", str(path)])
    doc = load_traces(path)
    assert [t["property"] for t in doc["traces"]] == ["data_value", "stale_copy_is_doomed"]
    assert doc["traces"][1]["steps"][4].received is not None


def test_console_script_runs() -> None:
    proc = subprocess.run([sys.executable, "-m", "coherence.cli", "check",
                           "specs/broadcast_invalidate_acked.coh", "--agents", "2"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: HOLDS" in proc.stdout
