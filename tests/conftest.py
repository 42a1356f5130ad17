"""Test-session rules shared by every test file.

Tests that need an external program (Graphviz's ``dot``, ``rumur``, ``spin``, a C compiler)
skip with the reason where it is missing, so the README's test command passes on a machine
with only Python. CI installs them all and sets ``COHERENCE_REQUIRE_TOOLS=1``: there, such a
skip fails the run, so a missing install step cannot hide behind a green CI. Under
pytest-xdist (``-n``) the controller collects the skips from the workers' reports and fails
the run; the workers themselves only run tests.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import xdist_recovery

from coherence.smt.z3_owner import owning_z3

TOOL_SKIP = re.compile(r"\b(dot|graphviz|rumur|spin|cc|gcc|g\+\+|c\+\+? compiler|compiler)\b",
                       re.IGNORECASE)
_tool_skips: list[str] = []
_is_worker = False  # an xdist worker: its reports reach the controller, which judges them


def _required() -> bool:
    return os.environ.get("COHERENCE_REQUIRE_TOOLS") == "1"


@pytest.fixture(autouse=True)
def _z3_owned() -> Iterator[None]:
    """Tests make Z3 terms outside the back end's entry points too, and pytest-xdist's
    receiver thread allocates: no collection may free a Z3 object from there mid-call
    (coherence/smt/z3_owner.py)."""
    with owning_z3():
        yield


_faults: Any = None  # this worker's faulthandler file, kept open (xdist_recovery)


@pytest.hookimpl(trylast=True)  # after pytest's faulthandler plugin enables its own
def pytest_configure(config: pytest.Config) -> None:
    global _is_worker, _faults
    _is_worker = hasattr(config, "workerinput")
    if _is_worker:
        root = config.workerinput.get("coherence_faults")  # type: ignore[attr-defined]
        if root:
            _faults = xdist_recovery.worker_faults(
                config.workerinput["workerid"], Path(root))  # type: ignore[attr-defined]
    else:
        xdist_recovery.install()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["coherence_faults"] = str(xdist_recovery.FAULTS)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: Any, sched: Any) -> None:
    xdist_recovery.rerun_crash(crashitem, report, sched)


def pytest_report_teststatus(report: pytest.TestReport) -> Any:
    if report.outcome == "rerun":  # a crashed test run again (xdist_recovery.rerun_crash)
        return "rerun", "R", ("RERUN", {"yellow": True})
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """A worker that died: print what its faulthandler wrote (a segfault's Python stack)."""
    if not error:
        return
    text = xdist_recovery.report_dead_worker(node.gateway.id, xdist_recovery.FAULTS)
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if text and reporter is not None:
        reporter.write_sep("-", f"worker {node.gateway.id} died: its faulthandler wrote")
        for line in text.splitlines():
            reporter.write_line(line)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _is_worker or not (report.skipped and _required()):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    if TOOL_SKIP.search(reason):
        _tool_skips.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _tool_skips:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _tool_skips:
        terminalreporter.section("skipped for a missing tool (COHERENCE_REQUIRE_TOOLS=1)")
        for line in _tool_skips:
            terminalreporter.write_line(line)
