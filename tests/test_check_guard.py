"""NOTE(check-guard): a guarded check gives the answer the check gives in this process, and one
that hangs past its cap (Z3 ignoring both its timeout and the interrupt) is killed and is an
unknown; its process dies with the one that asked."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import z3

from coherence.smt import forked, guarded, interrupt

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="fork is used on Linux only")


class _Hangs:
    """A solver whose check never returns (as Z3's did), recording its process id."""

    def __init__(self, wall: float, pid_file: Path | None = None) -> None:
        setattr(self, interrupt.WALL, wall)
        self.pid_file = pid_file

    def check(self, *_assumptions: Any) -> Any:
        if self.pid_file is not None:
            self.pid_file.write_text(str(os.getpid()))
        while True:
            time.sleep(1)

    def reason_unknown(self) -> str:
        return ""


def _capped(*formulas: Any, seconds: float = 5.0) -> Any:
    solver = z3.Solver()
    solver.add(*formulas)
    interrupt.cap(solver, seconds)
    return solver


def test_a_guarded_check_answers_as_the_check_here() -> None:
    x = z3.Int("guard_x")
    assert guarded.check(_capped(x > 1, x < 3)) == (z3.sat, "")
    assert guarded.check(_capped(x > 1, x < 1)) == (z3.unsat, "")
    f = z3.Function("guard_f", z3.IntSort(), z3.IntSort())
    y = z3.Int("guard_y")
    # a quantified query Z3 gives up on at its cap: its reason comes back from the child
    hard = [z3.ForAll([y], f(y) > f(y + 1)), f(0) == 1]
    assert guarded.check(_capped(*hard, seconds=0.3)) == (z3.unknown, "timeout")
    assert not forked.LIVE


def test_a_check_that_hangs_is_killed_and_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guarded, "GRACE_SECONDS", 0.0)
    answer, why = guarded.check(_Hangs(0.05))
    assert (answer, why) == (z3.unknown, guarded.KILLED)
    assert not forked.LIVE  # killed and reaped


def test_without_a_cap_the_check_is_asked_here() -> None:
    solver = z3.Solver()
    solver.add(z3.Bool("guard_b"))
    forks: list[int] = []
    real = os.fork

    def fork() -> int:
        forks.append(1)
        return real()
    try:
        os.fork = fork  # type: ignore[assignment]
        assert guarded.check(solver) == (z3.sat, "")
    finally:
        os.fork = real  # type: ignore[assignment]
    assert not forks


def test_the_checks_process_dies_with_the_process_that_asked(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    asker = os.fork()
    if asker == 0:  # asks a check that hangs, with a cap far away; killed below
        try:
            guarded.check(_Hangs(600.0, pid_file))
        finally:
            os._exit(0)
    for _ in range(200):  # the check's process has started
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    child = int(pid_file.read_text())
    os.kill(asker, signal.SIGKILL)
    os.waitpid(asker, 0)
    for _ in range(200):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child), "the guarded check outlived the process that asked for it"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, reaped by init once orphaned, counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
