"""NOTE(prove-interrupt): SIGINT stops a proof for every N (one process or several, and
``--infer``) with a partial result: unknown, exit 3, nothing claimed proved, no worker left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coherence.smt.forked import can_fork

ROOT = Path(__file__).resolve().parent.parent
NOAUX_GERMAN = str(ROOT / "tests" / "specs" / "infer" / "german.coh")  # minutes of CTI search


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                out.append(int(d))
    return out


def _interrupted(extra: list[str], wait_for: str, group: bool
                 ) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """Run ``prove NOAUX_GERMAN --agents any`` with ``extra``, send SIGINT once a progress
    line contains ``wait_for`` (to the process, or to its whole group as Ctrl-C does)."""
    cmd = [sys.executable, "-m", "coherence.cli", "prove", NOAUX_GERMAN, "--agents", "any",
           "--skip", "coherent", "--progress", "jsonl", "--progress-every", "0", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, start_new_session=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if wait_for in line:
            break
    else:
        raise AssertionError("the run ended before it was interrupted: " + "".join(seen[-5:]))
    time.sleep(0.2)
    kids = _children(proc.pid) if os.path.isdir("/proc") else []
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "".join(seen) + err), kids


@pytest.mark.parametrize(("jobs", "group"), [
    ("1", False),
    pytest.param("2", False, marks=pytest.mark.skipif(not can_fork(), reason="Linux only")),
    pytest.param("2", True, marks=pytest.mark.skipif(not can_fork(), reason="Linux only")),
])
def test_sigint_stops_the_proof_with_a_partial_result(jobs: str, group: bool) -> None:
    done, kids = _interrupted(["--jobs", jobs], '"obligation ', group)
    assert done.returncode == 3, (done.stdout, done.stderr[-2000:])
    assert "verdict: UNKNOWN: interrupted (SIGINT)" in done.stdout
    assert "counterexample to induction" not in done.stdout  # nothing after the signal
    assert "Traceback" not in done.stderr
    if jobs == "2":
        assert kids, "no worker was forked"
        time.sleep(0.2)
        assert not [k for k in kids if Path(f"/proc/{k}").exists()], "a worker was left"


def test_sigint_stops_the_proof_as_json() -> None:
    done, _kids = _interrupted(["--json"], '"obligation ', group=False)
    assert done.returncode == 3
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "unknown" and doc["reason"] == "interrupted (SIGINT)"
    assert doc["proved"] == [] and doc["exit_code"] == 3


def test_sigint_stops_the_inference() -> None:
    done, _kids = _interrupted(["--infer", "--json"], "Houdini", group=False)
    assert done.returncode == 3, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "unknown" and doc["reason"] == "interrupted (SIGINT)"
    assert doc["inferred"]["invariants"] == []
    assert "Traceback" not in done.stderr


def test_sigint_in_the_final_proof_keeps_the_inferred_lines() -> None:
    """An hour of Houdini is not lost to a stop in the final proof: the chosen lines are in
    the JSON (marked not proved) and, as they were chosen, in the progress stream."""
    done, _kids = _interrupted(["--infer", "--json"], "final proof: ", group=False)
    assert done.returncode == 3, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "unknown" and doc["reason"] == "interrupted (SIGINT)"
    assert doc["proved"] == []
    lines = doc["inferred"]["invariants"]
    assert lines and all(x.startswith("invariant aux inferred_") for x in lines)
    streamed = [json.loads(x)["message"].removeprefix("inferred: ")
                for x in done.stderr.splitlines()
                if x.startswith("{") and '"message": "inferred: ' in x]
    assert streamed == lines
