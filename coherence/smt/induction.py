"""k-induction at a fixed number of agents (Sheeran, Singh & Stålmarck, FMCAD 2000).

The property P(s) is "no failure group is bad in s": every invariant true, no message without a
transition, no enabled action raising a model error or a coherence violation, and (unless
``--no-deadlock``) no deadlock. Base case: BMC to depth K. Inductive step: from *any* states
s0..s(K-1) within the types' domains, each satisfying P and linked by steps, every successor
s(K) satisfies P. When the step fails, the counterexample to induction (the last pre-state and
the step that breaks P) is replayed through the reference semantics and shown, so the user can
add an ``invariant aux`` that excludes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import z3

from coherence import ir
from coherence.results import Failure
from coherence.smt.bmc import DepthStat, bmc, group_key
from coherence.smt.execute import any_of
from coherence.smt.extract import (
    action_of,
    describe_state,
    final_failure,
    int_value,
    slot_message,
    state_of,
)
from coherence.smt.state import ivar
from coherence.smt.system import Encoder, System
from coherence.smt.z3_owner import owns_z3, safe_point
from coherence.trace import Step, TraceReplayError, describe


@attrs.define
class Cti:
    """A counterexample to induction: a pre-state satisfying P and a step that breaks it."""

    summary: str
    groups: list[str]
    pre: list[str]
    step: Step
    # the pre-state in the reference semantics of ``instance`` (the spec at the CTI's size),
    # where known: ``--infer`` reads its candidates on it (NOTE(infer-repair))
    state: Any = None
    instance: Any = None


@attrs.define
class InductionResult:
    k: int
    verdict: str  # holds | fails | unknown
    failures: list[Failure]
    cti: Cti | None
    reason: str | None
    seconds: float

    @property
    def exit_code(self) -> int:
        return {"holds": 0, "fails": 1, "unknown": 3}[self.verdict]


@owns_z3
def induction(model: ir.Model, k: int, *, deadlock: bool = True,
              timeout: float | None = None, rlimit: int | None = None,
              progress: Callable[[int, int, str], None] | None = None) -> InductionResult:
    """k-induction: BMC to depth k (the base case), then the inductive step. ``rlimit`` bounds
    each Z3 check by its deterministic resource count (see ``bmc``). ``progress(done, total,
    what)`` is told of each base-case depth checked and of the step starting (k + 2 parts)."""
    start = time.perf_counter()

    def depth_done(d: DepthStat) -> None:
        if progress is not None:
            progress(d.depth + 1, k + 2, f"base case: depth {d.depth} of {k} checked")

    base = bmc(model, k, deadlock=deadlock, timeout=timeout, rlimit=rlimit,
               progress=depth_done)
    if base.verdict == "fails":
        return InductionResult(k, "fails", base.failures, None, None,
                               time.perf_counter() - start)
    if base.verdict == "unknown":
        return InductionResult(k, "unknown", [], None, f"base case: {base.reason}",
                               time.perf_counter() - start)
    enc = Encoder(model)
    system = System(enc, deadlock)
    solver = z3.SolverFor("QF_BV")
    if rlimit is not None:
        solver.set("rlimit", rlimit)
    if timeout is not None:
        left = timeout - (time.perf_counter() - start)
        if left <= 0:
            return InductionResult(k, "unknown", [], None, f"--timeout {timeout:g} s reached",
                                   time.perf_counter() - start)
        solver.set("timeout", max(1, int(left * 1000)))
    if progress is not None:
        progress(k + 1, k + 2, f"inductive step ({k} steps)")
    states = [enc.layout.fresh(f"i{j}") for j in range(k + 1)]
    sels = [ivar(f"isel{j}") for j in range(k)]
    bads = {g: b for g, (b, _extra) in system.groups.items()}
    for j, s in enumerate(states):
        solver.add(system.at(system.domain, s))
        solver.add(system.at(system.assumed, s))  # NOTE(assume)
        if j < k:
            solver.add(system.at(system.trans, s, states[j + 1], sels[j]))
            solver.add(z3.Not(any_of([system.at(b, s) for b in bads.values()])))
    last = {g: system.at(b, states[k]) for g, b in bads.items()}
    solver.add(any_of(list(last.values())))
    safe_point()
    answer = solver.check()
    seconds = time.perf_counter() - start
    if answer == z3.unsat:
        return InductionResult(k, "holds", [], None, None, seconds)
    if answer == z3.unknown:
        return InductionResult(k, "unknown", [], None,
                               f"Z3 answered unknown ({solver.reason_unknown()})", seconds)
    m = solver.model()
    broken = [g for g, b in last.items() if z3.is_true(m.eval(b, model_completion=True))]
    cti = _cti(enc, m, states, sels, broken)
    return InductionResult(k, "unknown", [], cti,
                           f"not {k}-inductive (see the counterexample to induction)",
                           time.perf_counter() - start)


def _cti(enc: Encoder, m: z3.ModelRef, states: list[Any], sels: list[Any],
         broken: list[tuple[str, str]]) -> Cti:
    sem = enc.sem
    k = len(sels)
    pre = state_of(enc, m, states[k - 1])
    spec = enc.actions[int_value(m, sels[k - 1])]
    act = action_of(enc, spec, pre)
    if spec.kind == ir.TransitionKind.MESSAGE and isinstance(spec.where, int):
        act = act._replace(msg=slot_message(enc, m, states[k - 1], spec))
    out = sem.execute(pre, act)
    if out is None or out.state is None:
        raise TraceReplayError("the step of a counterexample to induction does not replay")
    if out.state != state_of(enc, m, states[k]):
        raise TraceReplayError("the successor of a counterexample to induction differs from "
                               "Z3's")
    step = describe(sem, 1, pre, out)
    # re-detect the broken property with the reference semantics
    group = broken[0]
    extra = 1 if group[0] == "coherence" or group == ("error", "error") else 0
    final = final_failure(enc, sem, out.state, [step], group)
    if extra:
        step = final.trace[-1]
    names = [group_key(g) for g in broken]
    summary = f"{', '.join(names)} can break: {final.message}"
    return Cti(summary, names, describe_state(enc, pre if not extra else out.state), step)
