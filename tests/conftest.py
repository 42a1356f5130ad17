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

import pytest

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


def pytest_configure(config: pytest.Config) -> None:
    global _is_worker
    _is_worker = hasattr(config, "workerinput")


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
