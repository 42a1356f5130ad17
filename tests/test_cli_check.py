"""`coherence check` end to end: exit codes, JSON against its schema, progress, trace files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from coherence.cli import main
from coherence.results import Progress

SPECS = Path(__file__).resolve().parent.parent / "specs"
LITERAL = str(SPECS / "broadcast_invalidate.coh")
ACKED = str(SPECS / "broadcast_invalidate_acked.coh")
SCHEMA = json.loads(files("coherence.schemas").joinpath("check.json").read_text())


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc = main(["check", *argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    return rc, doc


def test_literal_fails_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json([LITERAL, "--agents", "2", "--skip", "coherent"],
                       capsys)
    assert rc == 1 and doc["verdict"] == "fails" and doc["exit_code"] == 1
    assert doc["stats"]["states"] == 322
    assert doc["properties"]["data_value"] == "fails"
    assert doc["properties"]["deadlock"] == "holds"
    assert [f["length"] for f in doc["failures"]] == [4, 5]
    assert doc["failures"][1]["trace"][3]["event"] == "receives Inv from Home"


def test_acked_holds_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json([ACKED, "-n", "2"], capsys)
    assert rc == 0 and doc["verdict"] == "holds"
    assert doc["stats"]["states"] == 2804 and doc["symmetry"] == "exact"
    assert set(doc["properties"].values()) == {"holds"}


def test_no_symmetry_flag(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = run_json([ACKED, "-n", "2", "--no-symmetry"],
                      capsys)
    assert doc["symmetry"] == "off" and doc["stats"]["states"] == 5596


def test_incomplete_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = run_json([ACKED, "-n", "3", "--max-states", "50"],
                       capsys)
    assert rc == 3 and doc["verdict"] == "incomplete"
    assert doc["stopped"] == "--max-states 50 reached"
    assert set(doc["properties"].values()) == {"unknown"}


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check", LITERAL, "-n", "2", "--skip", "coherent"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL stale_copy_is_doomed (invariant)" in out
    assert "shortest counterexample: 5 steps" in out
    assert "  4. GPU[0]: receives Inv from Home" in out
    assert "verdict: FAILS" in out
    assert "322 states" in out and "bytes/state" in out and "peak memory" in out


def test_progress_reports_reach_the_callback() -> None:
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.spec.load import load_spec

    seen: list[Progress] = []
    result = check(load_spec(ACKED, {"agents": 2}),
                   CheckOptions(progress=seen.append, progress_every=0.0))
    assert len(seen) > 100  # one per expanded state with progress_every=0
    assert [p.states for p in seen] == sorted(p.states for p in seen)
    assert [p.depth for p in seen] == sorted(p.depth for p in seen)
    assert seen[-1].states == result.states == 2804 and seen[-1].depth == result.depth


# a plain progress line (coherence/progress.py; its formats: tests/test_progress.py)
PROGRESS_LINE = re.compile(r"\[\d+[smh0-9]*\] coherence check: .*  rss [\d,]+ MiB")


def test_progress_flag_keeps_stdout_clean(capsys: pytest.CaptureFixture[str]) -> None:
    # --progress always writes plain lines when stderr is not a terminal (here: captured)
    assert main(["check", ACKED, "-n", "2", "--progress", "always"]) == 0
    captured = capsys.readouterr()
    assert "verdict: HOLDS" in captured.out and "rss" not in captured.out
    header, *lines, done = captured.err.splitlines()
    assert header.startswith(f"coherence check {ACKED} (agents=2 ")
    assert lines and all(PROGRESS_LINE.fullmatch(line) for line in lines)
    assert "coherence check: finished, holds (exit 0)" in done
    assert main(["check", ACKED, "-n", "2",
                 "--progress", "never"]) == 0
    assert capsys.readouterr().err == ""


def test_trace_out_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from coherence.traces_io import load_traces
    path = tmp_path / "traces.json"
    main(["check", LITERAL, "-n", "2", "--skip", "coherent",
          "--trace-out", str(path)])
    doc = load_traces(path)
    assert [t["property"] for t in doc["traces"]] == ["data_value", "stale_copy_is_doomed"]
    assert doc["traces"][1]["steps"][4].received is not None


def test_console_script_runs() -> None:
    proc = subprocess.run([sys.executable, "-m", "coherence.cli", "check",
                           ACKED, "--agents", "2"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: HOLDS" in proc.stdout


def test_every_verb_and_option_has_help_text() -> None:
    import argparse

    from coherence.cli import build_parser

    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if not sub.description:
                        missing.append(f"{path} {name}")
                    walk(sub, f"{path} {name}")
            elif action.help is None:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "coherence")
    assert missing == []
