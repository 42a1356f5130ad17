"""tests/xdist_recovery.py: a worker that segfaults under ``--dist loadgroup`` fails its test
and the run goes on to the end (pytest-xdist 3.8 alone hangs there; CI did, in session 18),
and the worker's faulthandler dump reaches the controller's output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

CRASH = """
import os, signal, time
import pytest

@pytest.mark.parametrize("i", range(6))
def test_before(i):
    time.sleep(0.2)

def test_crash():
    time.sleep(0.3)
    mark = os.path.join(os.path.dirname(__file__), "crashed-once")
    if {always} or not os.path.exists(mark):
        open(mark, "w").close()
        os.kill(os.getpid(), signal.SIGSEGV)

@pytest.mark.parametrize("i", range(6))
def test_after(i):
    time.sleep(0.2)
"""

CONFTEST = """
from pathlib import Path
import pytest
import xdist_recovery

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    global _faults
    if hasattr(config, "workerinput"):
        _faults = xdist_recovery.worker_faults(config.workerinput["workerid"],
                                               Path(config.workerinput["faults"]))
    elif {patched}:
        xdist_recovery.install()

def pytest_configure_node(node):
    node.workerinput["faults"] = {faults!r}

def pytest_handlecrashitem(crashitem, report, sched):
    if {patched}:
        xdist_recovery.rerun_crash(crashitem, report, sched)

def pytest_report_teststatus(report):
    if report.outcome == "rerun":
        return "rerun", "R", "RERUN"

def pytest_testnodedown(node, error):
    if error:
        print("DUMP:" + xdist_recovery.report_dead_worker(node.gateway.id, Path({faults!r})))
"""


def _run(tmp_path: Path, patched: bool, timeout: float,
         always: bool = True) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_crash.py").write_text(CRASH.replace("{always}", str(always)))
    (tmp_path / "conftest.py").write_text(
        CONFTEST.format(patched=patched, faults=str(tmp_path / "faults")))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"),
                                                        os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:benchmark", "-n", "2", "--dist", "loadgroup",
                           "test_crash.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_a_dead_worker_fails_its_test_and_the_run_ends(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    run = _run(tmp_path, patched=True, timeout=120)
    assert "1 failed, 12 passed, 1 rerun" in run.stdout, run.stdout[-3000:]
    assert run.returncode == 1
    assert "worker 'gw" in run.stdout and "crashed while running 'test_crash.py::test_crash'" \
        in run.stdout
    dump = run.stdout.split("DUMP:", 1)[1]
    assert "Fatal Python error: Segmentation fault" in dump
    assert "test_crash" in dump  # the Python stack, down to the test


def test_a_test_that_crashes_once_passes_when_run_again(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    run = _run(tmp_path, patched=True, timeout=120, always=False)
    assert "13 passed, 1 rerun" in run.stdout, run.stdout[-3000:]
    assert run.returncode == 0


@pytest.mark.slow
def test_without_the_patch_the_run_hangs(tmp_path: Path) -> None:
    """What the patch is for; slow tier: it waits out its 60 s timeout (xdist 3.8)."""
    pytest.importorskip("xdist")
    with pytest.raises(subprocess.TimeoutExpired):
        _run(tmp_path, patched=False, timeout=60)
