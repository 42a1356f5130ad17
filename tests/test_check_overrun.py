"""NOTE(check-overrun): a check that runs past its wall-clock cap is interrupted, whether or
not Z3 honours the timeout it was given."""

from __future__ import annotations

import z3

from coherence.smt import interrupt


def _pigeons(n: int) -> list[z3.BoolRef]:
    """n + 1 pigeons in n holes: unsatisfiable, and far beyond a second of Z3 for n = 11."""
    at = [[z3.Bool(f"overrun_p{i}_{h}") for h in range(n)] for i in range(n + 1)]
    some = [z3.Or(row) for row in at]
    apart = [z3.Not(z3.And(at[i][h], at[j][h]))
             for h in range(n) for i in range(n + 1) for j in range(i)]
    return [*some, *apart]


def test_a_check_past_its_cap_is_interrupted() -> None:
    solver = z3.Solver()
    solver.set("timeout", 120_000)  # Z3's own limit, far later: only the watchdog stops it
    solver.add(*_pigeons(11))
    setattr(solver, interrupt.WALL, 0.05)
    assert interrupt.check(solver) == z3.unknown
    assert solver.reason_unknown() == "interrupted"  # not "timeout": Z3_interrupt stopped it


def test_a_check_within_its_cap_is_answered_and_the_next_is_not_interrupted() -> None:
    import time
    x = z3.Int("overrun_x")
    solver = z3.Solver()
    solver.add(x > 1, x < 3)
    setattr(solver, interrupt.WALL, 0.01)
    assert interrupt.check(solver) == z3.sat
    time.sleep(1.2)  # past the cancelled timer's time
    hard = z3.Solver()
    hard.add(*_pigeons(7))  # a second or so of search, uncapped
    assert interrupt.check(hard) == z3.unsat
