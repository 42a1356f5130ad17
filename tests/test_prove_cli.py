"""``coherence prove`` on the command line: exit codes, --json, --trace-out, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import AUX, MUTEX, PROOF_RLIMIT, SPECS

from coherence.cli import main
from coherence.smt.forked import can_fork
from coherence.traces_io import load_traces

LITERAL = str(SPECS / "broadcast_invalidate.coh")
ACKED = str(SPECS / "broadcast_invalidate_acked.coh")


def test_bmc_prints_the_replayed_trace_like_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", LITERAL, "--agents", "2", "--bmc", "5"]) == 1
    out = capsys.readouterr().out
    assert "FAIL data_value (invariant)" in out
    # which of the shortest traces Z3 picks varies; its format and length do not
    steps = re.findall(r"^ +(\d+)\. (GPU\[\d\]|Home): ", out, re.M)
    assert [int(n) for n, _ in steps] == [1, 2, 3, 4]
    assert "shortest counterexample (replayed): 4 steps" in out
    assert "FAILS at depth 4" in out


def test_bmc_json_and_trace_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "t.json"
    code = main(["prove", LITERAL, "--agents", "2", "--bmc", "5", "--all-failures", "--json",
                 "--trace-out", str(traces)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["exit_code"] == 1 and doc["verdict"] == "fails"
    assert doc["first_failing_depth_by_property"] == {
        "invariant:data_value": 4, "invariant:stale_copy_is_doomed": 5}
    assert [d["depth"] for d in doc["seconds_per_depth"]] == [0, 1, 2, 3, 4, 5]
    saved = load_traces(traces)
    assert saved["source"] == "prove --bmc"
    assert [len(t["steps"]) for t in saved["traces"]] == [4, 5]


def test_bounded_pass_is_not_a_proof(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", ACKED, "--agents", "2", "--bmc", "3"]) == 3
    assert "nothing is proved beyond" in capsys.readouterr().out


def test_timeout_is_unknown_not_a_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", ACKED, "--agents", "3", "--bmc", "40", "--timeout", "0.5", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["verdict"] == "unknown" and "timeout" in doc["reason"]


def test_running_out_of_rlimit_is_unknown_not_a_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", ACKED, "--agents", "2", "--bmc", "3", "--rlimit", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["verdict"] == "unknown"
    assert "resource limit" in doc["reason"] or "canceled" in doc["reason"], doc["reason"]


@pytest.mark.slow  # the acked proof again (50 s on the shared machine); rebind: test_rebind.py
def test_any_n_keeps_the_command_lines_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (issue 12): the proof for every N bound the spec to other agent counts by
    re-reading the file with only ``agents``, so ``capacity=5`` became the file's 6 and the
    comparison reported "this depends on the number of agents as a number" (exit 2)."""
    code = main(["prove", ACKED, "--agents", "any", "--param", "capacity=5",
                 "--skip", "coherent", "--rlimit", str(PROOF_RLIMIT)])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert "verdict: PROVED for every number of agents" in captured.out
    assert "depends on the number of agents" not in captured.out + captured.err
    assert captured.err == ""


@pytest.mark.parametrize("argv", [
    ["--agents", "two", "--bmc", "2"],
    ["--agents", "2", "--bmc", "-1"],
    ["--agents", "2"],
    ["--agents", "2", "--induction", "0"],
    ["--agents", "any", "--bmc", "3"],
    ["--agents", "2", "--bmc", "2", "--skip", "nosuch"],
    ["--agents", "2", "--bmc", "2", "--rlimit", "0"],
    ["--agents", "any", "--jobs", "0"],
    ["--agents", "any", "--jobs", "two"],
])
def test_bad_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", LITERAL, *argv]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_missing_spec_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "no/such.coh", "--agents", "2", "--bmc", "1"]) == 2
    assert "no/such.coh: error: no such file" in capsys.readouterr().err


def test_unsupported_construct_is_a_located_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "u.coh"
    spec.write_text("param agents = 2;\nevent Go;\ncache machine C {\n  stable state A;\n"
                    "  init A;\n  var s: set<agent> = {};\n"
                    "  on Go in A { undefine s; }\n}\n")
    assert main(["prove", str(spec), "--bmc", "2"]) == 2
    err = capsys.readouterr().err
    assert "u.coh:7:" in err and "undefined set" in err


def test_a_capacity_from_the_number_of_agents_is_located(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A network capacity computed from ``agents`` (``const CAP = agents + 2``) differs between
    agent counts in a plain int field: the refusal was reported at ``<command line>``. (A fifo
    network's: an unordered network's capacity is not encoded, so it may depend on them.)"""
    spec = tmp_path / "cap.coh"
    spec.write_text("param agents = 2;\nconst CAP = agents + 2;\n"
                    "network net: fifo, capacity = CAP;\nmessage Req;\n"
                    "home machine H { state R; init R; on Req in R { } }\n"
                    "cache machine C { state I; init I; rule Ask in I { send Req to home; } }\n",
                    encoding="utf-8")
    assert main(["prove", str(spec), "--agents", "any"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert f"{spec}:3:9: error: this depends on the number of agents as a number, which a " \
        "proof for every N cannot encode" in err, err
    # the line and its caret, as the parser's own errors show them
    at = err.index(f"{spec}:3:9: error: this depends on the number of agents as a number, "
                   "which a proof for every N cannot encode")
    assert err[at + 1:at + 3] == ["  network net: fifo, capacity = CAP;", "          ^"], err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_jobs_settle_a_proof_for_every_n(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         jobs: str) -> None:
    spec = tmp_path / "mutex.coh"
    spec.write_text(MUTEX + AUX)
    code = main(["prove", str(spec), "--agents", "any", "--jobs", jobs, "--json",
                 "--rlimit", str(PROOF_RLIMIT)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["verdict"] == "holds"
    assert doc["jobs"] == (int(jobs) if can_fork() else 1)
    assert "invariant:mutex" in doc["proved"]
