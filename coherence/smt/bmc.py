"""Incremental bounded model checking: one solver, one more step asserted per depth.

At depth k the solver holds the initial state s0 and the steps s0 → … → sk; each failure group
still unseen is checked under an assumption literal (``Solver.check(lit)``), so nothing is ever
retracted and Z3 keeps what it learnt. A group found at depth k has a shortest counterexample of
exactly k steps, the length the reference checker's BFS reports (the cross-check tests pin it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.results import Failure
from coherence.smt import interrupt
from coherence.smt.extract import replay_model
from coherence.smt.state import ivar
from coherence.smt.system import Encoder, Group, System
from coherence.smt.z3_owner import owns_z3


@attrs.define
class DepthStat:
    depth: int
    seconds: float  # time for this depth (asserting the step and every check)
    cumulative: float


@attrs.define
class BmcResult:
    verdict: str  # fails | bounded (no failure up to the depth) | unknown
    depth: int  # the deepest depth fully checked
    depths: list[DepthStat]
    failures: list[Failure]
    groups: dict[str, int]  # "kind:name" -> first failing depth
    reason: str | None = None  # why unknown
    seconds: float = 0.0
    resources: int = 0  # Z3's resource units (rlimit) used by the checks

    @property
    def first_failing_depth(self) -> int | None:
        return min(self.groups.values()) if self.groups else None

    @property
    def exit_code(self) -> int:
        return {"fails": 1, "bounded": 3, "unknown": 3}[self.verdict]


def group_key(g: Group) -> str:
    return f"{g[0]}:{g[1]}"


@owns_z3
def bmc(model: ir.Model, max_depth: int, *, deadlock: bool = True, all_failures: bool = False,
        timeout: float | None = None, rlimit: int | None = None,
        rlimit_total: int | None = None,
        progress: Callable[[DepthStat], None] | None = None) -> BmcResult:
    """Check every failure group at depths 0..max_depth. ``timeout`` caps the run in seconds;
    ``rlimit`` bounds each check, ``rlimit_total`` all of them together, by Z3's deterministic
    resource count (the same answer on a loaded machine: tests use it). Any of them running
    out is an unknown, never a pass."""
    start = time.perf_counter()
    enc = Encoder(model)
    enc.sem.initial_states()  # NOTE(assume): a SpecError if the assumptions discard it
    system = System(enc, deadlock)
    lay = enc.layout
    solver = z3.SolverFor("QF_BV")
    if rlimit is not None:
        solver.set("rlimit", rlimit)
    states = [lay.fresh("s0")]
    solver.add(system.equal(states[0], enc.initial_state()))
    solver.add(system.at(system.assumed, states[0]))  # NOTE(assume): every state on a path
    sels: list[Any] = []
    found: dict[Group, int] = {}
    failures: list[Failure] = []
    depths: list[DepthStat] = []
    verdict, reason = "bounded", None
    used = 0
    # NOTE(partial-results): a SIGINT stops the run with what it found (NOTE(prove-interrupt):
    # noted between checks, the running check interrupted)

    def check(group: Group, bad: Any, at: int, depth: int) -> bool:
        """Is ``group``'s ``bad`` possible at ``states[at]``, a failure of ``depth`` steps?
        False when the run must stop (a budget ran out, or SIGINT)."""
        nonlocal verdict, reason, used
        lit = z3.Bool(f"bad|{group_key(group)}|{depth}")
        solver.add(z3.Implies(lit, system.at(bad, states[at])))
        if timeout is not None:
            left = timeout - (time.perf_counter() - start)
            if left <= 0:
                verdict, reason = "unknown", f"--timeout {timeout:g} s reached"
                return False
            solver.set("timeout", max(1, int(left * 1000)))
        if rlimit_total is not None:
            if used >= rlimit_total:
                verdict, reason = "unknown", f"resource budget of {rlimit_total} reached"
                return False
            solver.set("rlimit", min(rlimit or rlimit_total, rlimit_total - used))
        before = _resources(solver)
        try:
            answer = interrupt.check(solver, lit)
        except interrupt.Interrupted:
            verdict, reason = "unknown", interrupt.REASON
            return False
        used += max(0, _resources(solver) - before)
        if answer == z3.unknown:
            verdict, reason = "unknown", f"Z3 answered unknown ({solver.reason_unknown()})"
            return False
        if answer == z3.sat:
            found[group] = depth
            failures.append(replay_model(enc, solver.model(), states, sels, depth, group,
                                         depth - at))
        return True

    with interrupt.noting_sigint():
        try:
            for k in range(max_depth + 1):
                t0 = time.perf_counter()
                pending = [(g, bad, extra) for g, (bad, extra) in system.groups.items()
                           if g not in found and k - extra >= 0 and not z3.is_false(bad)]
                # NOTE(bmc-last-step): a failing step (a model error, a coherence violation) of
                # depth k is a property of s(k-1) alone: it is checked before the step to s(k)
                # is asserted, since that step must succeed and a state whose only moves fail
                # has none (checked after it, such failures went unseen).
                go = all(check(g, bad, k - 1, k) for g, bad, extra in pending if extra == 1)
                if go and k > 0:
                    sels.append(ivar(f"sel{k - 1}"))
                    states.append(lay.fresh(f"s{k}"))
                    solver.add(system.at(system.trans, states[k - 1], states[k], sels[k - 1]))
                    solver.add(system.at(system.assumed, states[k]))
                go = go and all(check(g, bad, k, k) for g, bad, extra in pending if extra == 0)
                t1 = time.perf_counter()
                if not go:
                    break
                stat = DepthStat(k, t1 - t0, t1 - start)
                depths.append(stat)
                if progress is not None:
                    progress(stat)
                if found and not all_failures:
                    break
                if interrupt.pending():
                    verdict, reason = "unknown", interrupt.REASON
                    break
        except z3.Z3Exception as e:  # a Z3 call the interrupt cancelled, not a check
            if not interrupt.stopped(e):
                raise
            verdict, reason = "unknown", interrupt.REASON
    if found and verdict != "unknown":
        verdict = "fails"
    elif found:
        verdict = "fails"  # a replayed counterexample stands even if a later check timed out
    failures.sort(key=lambda f: f.length)
    return BmcResult(verdict, depths[-1].depth if depths else -1, depths, failures,
                     {group_key(g): d for g, d in found.items()}, reason,
                     time.perf_counter() - start, used)


def _resources(solver: Any) -> int:
    """Z3's resource count so far (its context's: it grows by what each check uses)."""
    try:
        return int(solver.statistics().get_key_value("rlimit count"))
    except z3.Z3Exception:  # no check has run yet
        return 0


_ = System

