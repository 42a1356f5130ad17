"""NOTE(hard-stop): a proof whose Z3 checks ignore every limit still ends soon after
``--timeout``, reported unknown (exit 3) with the reason, and leaves no forked worker behind.
Every check is made to hang (as one of MSI's did, in a fresh solver capped at 2 s), in a
separate Python so that the stop's ``os._exit`` ends only that one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import AUX, MUTEX, ROOT

from coherence.smt import forked

HANGS = """
import sys, time
from coherence.commands import hard_stop
from coherence.smt import interrupt
hard_stop.GRACE_SECONDS = 1.0
def hang(solver, *assumptions):
    time.sleep(600)
interrupt.check = hang
from coherence.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _run(tmp_path: Path, *args: str) -> tuple[int, str, str, float, int]:
    """(exit code, stdout, stderr, seconds, process group) of the hanging proof."""
    spec = tmp_path / "mutex.coh"
    spec.write_text(MUTEX + AUX)
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", HANGS, "prove", str(spec), "--agents",
                             "any", "--timeout", "1", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    return proc.returncode, out, err, time.perf_counter() - began, proc.pid


@pytest.mark.parametrize("jobs", [
    "1", pytest.param("2", marks=pytest.mark.skipif(not forked.can_fork(),
                                                    reason="fork is used on Linux only"))])
def test_a_proof_whose_checks_hang_is_stopped_and_reported(tmp_path: Path, jobs: str) -> None:
    code, out, err, seconds, group = _run(tmp_path, "--json", "--jobs", jobs)
    assert code == 3, err[-2000:]
    assert seconds < 60  # the checks sleep 600 s
    result = json.loads(out)
    assert result["verdict"] == "unknown"
    assert "did not stop within 1 s of --timeout 1 s" in result["reason"]
    assert not result["proved"]
    assert "Traceback" not in err
    # the session the run started has no process left: its worker was killed and reaped
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)


@pytest.mark.skipif(not forked.can_fork() or forked.STACK_SIGNAL is None,
                    reason="workers are forked on Linux only")
def test_the_stop_says_where_each_process_was(tmp_path: Path) -> None:
    """NOTE(hard-stop-stacks): this process's stack and its worker's, both inside the check
    that hangs, before the worker is killed."""
    code, out, err, _seconds, _group = _run(tmp_path, "--json", "--jobs", "2")
    assert code == 3, err[-2000:]
    assert "did not stop within 1 s of --timeout 1 s" in json.loads(out)["reason"]
    head, _, stacks = err.partition("where each process was:")
    assert "did not stop within 1 s" in head
    here, worker_line, worker = stacks.partition("\nworker ")
    assert worker_line, stacks[-2000:]
    for stack in (here, worker):
        assert "(most recent call first)" in stack
        assert 'line 7 in hang' in stack, stack[-2000:]
        assert "in _settle" in stack or "in _share" in stack or "in prove_all" in stack


def test_the_text_report_says_why(tmp_path: Path) -> None:
    code, out, err, _seconds, _group = _run(tmp_path)
    assert code == 3
    assert "did not stop within 1 s of --timeout 1 s" in out + err
