"""SIGINT and SIGTERM end a search with its partial result (text and --json, exit 3), and
time and memory limits stop it the same way (issue 14, item 3)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coherence.cli import main

ROOT = Path(__file__).resolve().parent.parent
GERMAN = str(ROOT / "specs" / "german.coh")
ENGINES = ["reference", pytest.param("compiled", marks=pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler"))]


def _interrupt(engine: str, sig: int, json_out: bool) -> subprocess.CompletedProcess[str]:
    agents = "3" if engine == "reference" else "6"
    cmd = [sys.executable, "-m", "coherence.cli", "check", GERMAN, "--agents", agents,
           "--skip", "coherent", "--no-symmetry", "--engine", engine,
           "--progress", "jsonl", "--progress-every", "0.1"]
    if json_out:
        cmd.append("--json")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    # wait until the search has started (its first count of states on stderr), however long
    # start-up and the C build take on a loaded machine, then let it run a little
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("{") and '"states":' in line:
            break
    time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize("engine", ENGINES)
def test_sigint_gives_the_partial_result(engine: str) -> None:
    done = _interrupt(engine, signal.SIGINT, json_out=False)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "verdict: INCOMPLETE (partial: interrupted" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_sigterm_gives_the_partial_result_as_json(engine: str) -> None:
    done = _interrupt(engine, signal.SIGTERM, json_out=True)
    assert done.returncode == 3, (done.stdout, done.stderr)
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "incomplete" and doc["exit_code"] == 3
    assert doc["stopped"].startswith("interrupted")
    assert doc["stats"]["states"] > 1
    assert set(doc["properties"].values()) == {"unknown"}


@pytest.mark.parametrize("engine", ENGINES)
def test_time_limit_stops_cleanly(engine: str, capsys: pytest.CaptureFixture[str]) -> None:
    agents, everything = ("3", 58077) if engine == "reference" else ("6", 10**8)
    assert main(["check", GERMAN, "--agents", agents, "--skip", "coherent", "--no-symmetry",
                 "--time-limit", "0.5", "--engine", engine, "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["stopped"] == "--time-limit 0.5 s reached"
    assert 1 < doc["stats"]["states"] < everything


def test_memory_limit_stops_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    # this process already uses more than 1 MiB: the search stops at its first check
    assert main(["check", GERMAN, "--agents", "3", "--skip", "coherent", "--no-symmetry",
                 "--memory-limit", "1M", "--engine", "reference", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["stopped"].startswith("--memory-limit")


@pytest.mark.parametrize("bad", ["0", "-1", "lots", "1.5.2G"])
def test_limits_are_range_checked(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", GERMAN, "--memory-limit", bad]) == 2
    assert main(["check", GERMAN, "--time-limit", bad.replace("G", "")]) == 2
