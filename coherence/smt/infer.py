"""``coherence prove SPEC --agents any --infer``: auxiliary invariants found, not written.

1. Mining (``infer_mine``): candidate clauses that hold in every explored state at 2 and 3
   agents (a breadth-first prefix where a size is too large for the time allowed). A failure
   the search meets refutes the spec at once (``_refute_early``).
2. Houdini (``infer_finite``, by default): a small set of candidates that, with the spec's own
   invariants, error freedom and "no message without a transition", is inductive at 4 agents,
   chosen counterexample by counterexample and minimised (``infer_qf`` is the other choice:
   quantifier-free weakenings of the parameterised obligations).
3. The support is printed as ``invariant aux`` lines, and the spec with those lines appended
   is proved again from scratch by ``param.prove_all``: the verdict is that proof's, so an
   inferred set can never make a false proof (and a spec the prover refutes stays refuted).
   Concrete counterexamples to induction of that proof put back candidates Houdini kept and
   minimisation left out, and the proof runs again (``infer_repair``, NOTE(infer-repair)).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import z3

from coherence import ir
from coherence.smt import interrupt
from coherence.smt.param import ParamResult, _check_agents_free, prove_all
from coherence.smt.state import Unsupported
from coherence.smt.z3_owner import owns_z3

if TYPE_CHECKING:
    from coherence.smt.infer_finite import FiniteResult
    from coherence.smt.infer_mine import StateSource
    from coherence.smt.infer_qf import QFResult


@attrs.define
class InferOptions:
    sizes: tuple[int, ...] = (2, 3)
    max_states: int = 50_000  # per size, for the breadth-first prefix
    explore_seconds: float = 120.0  # all sizes together
    literals: dict[str, int] = attrs.Factory(
        lambda: {"global": 2, "agent": 4, "pair": 3, "msg": 3})
    rlimit: int = 2_000_000_000  # per Houdini query (quantifier-free: deterministic units)
    houdini: str = "finite"  # "finite" (infer_finite, at ``cutoff`` agents) or "qf"
    cutoff: int = 4  # agents of the finite Houdini's instance
    # NOTE(cycle-clauses): offer the clauses that rule out a cycle of one relation (off: lines
    # chosen beside them broke at 5 agents on MSI; without them MSI's, msi_home_acks' and the
    # token chain's hold there)
    cycle_clauses: bool = False
    select_at: int | None = 3
    timeout: float | None = None  # Houdini's and the final proof's, each (prove --timeout)
    final_rlimit: int | None = None  # the final proof's (prove --rlimit)
    # processes (prove --jobs, NOTE(forked-shares)): with 2 or more, a worker filters the
    # candidates while Houdini's instance is encoded, and the final proof is dealt to ``jobs``
    jobs: int = 1
    cache: str | None = None  # the final proof's (NOTE(proof-cache)); Houdini keeps none
    keep_global: bool = False  # NOTE(minimize-keeps-global)


@attrs.define
class InferResult:
    proof: ParamResult  # the final proof, from scratch, of the spec with ``lines`` appended
    lines: list[str]  # the inferred ``invariant aux`` lines
    stats: dict[str, Any]  # counts and seconds per phase (bench prove --infer)
    missing: str | None = None  # why the candidates did not suffice, when they did not
    model: ir.Model | None = None  # the spec with the inferred lines (what was proved)


PREFIX = "inferred"


@owns_z3
def infer(model: ir.Model, options: InferOptions | None = None,
          progress: Callable[[str], None] | None = None,
          source: StateSource | None = None) -> InferResult:
    """Mine, select and prove (see the module docstring). Raises ``Unsupported`` (exit 2) for a
    spec outside the fragment of ``--agents any``, before any exploration. ``source``: how
    mining gets reachable states (``infer_mine.StateSource``; default the reference search),
    e.g. the compiled engine's, which only the command layer may import. A SIGINT ends it
    with an unknown verdict (NOTE(prove-interrupt))."""
    t0 = time.perf_counter()
    with interrupt.noting_sigint():
        try:
            return _infer(model, options, progress, source)
        except (interrupt.Interrupted, z3.Z3Exception) as e:
            if not interrupt.stopped(e):
                raise
            from coherence.smt.param import NOTE_DEADLOCK, interrupted_result
            proof = interrupted_result([NOTE_DEADLOCK], time.perf_counter() - t0)
            return InferResult(proof, [], {"seconds": {"total": round(proof.seconds, 3)}},
                               f"no inference: {interrupt.REASON}", model)


def _infer(model: ir.Model, options: InferOptions | None,
           progress: Callable[[str], None] | None,
           source: StateSource | None) -> InferResult:
    from coherence.smt.infer_finite import (
        Instance,
        encode_instance,
        houdini_finite,
        smaller_instance,
    )
    from coherence.smt.infer_mine import Templates, explore, mine
    from coherence.smt.infer_qf import houdini_qf
    from coherence.smt.infer_repair import (
        ROUNDS,
        SpecGoal,
        action_atoms,
        fields_into,
        for_spec_goals,
        invariant_atoms,
        localized,
        related,
        repairs,
    )
    from coherence.smt.param import ParamEncoder
    from coherence.spec.load import extend
    opts = options or InferOptions()
    say = progress or (lambda _s: None)
    t0 = time.perf_counter()
    try:
        _check_agents_free(model)
        ParamEncoder(model)  # unsupported constructs: before any exploration
    except Unsupported as unsupported:
        # as prove does: a concrete counterexample if there is one, else the error (exit 2)
        proof = prove_all(model, timeout=opts.timeout, rlimit=opts.final_rlimit,
                          jobs=opts.jobs)
        return InferResult(proof, [], {}, f"no inference: {unsupported.message}", model)
    say("exploring small instances")
    instance: list[Instance | Unsupported] = []
    smaller: dict[int, Instance | None] = {}

    def encode(tpl: Templates) -> None:  # beside the filter (NOTE(forked-shares))
        try:
            instance.append(encode_instance(model, tpl, opts.cutoff))
        except Unsupported as e:  # raised where Houdini runs, as it was
            instance.append(e)
            return
        for m in range(1, opts.cutoff):
            smaller[m] = smaller_instance(model, tpl, m)
    finite = opts.houdini != "qf"
    cands, mstats, templates = mine(model, opts.sizes, opts.max_states, opts.explore_seconds,
                                    opts.literals, source=source or explore,
                                    beside=encode if finite else None, fork=opts.jobs > 1)
    t1 = time.perf_counter()
    if mstats.broken is not None:
        refuted = _refute_early(model, mstats.broken, opts, t0, say)
        if refuted is not None:
            return refuted
    left_out = 0
    if not opts.cycle_clauses:  # NOTE(cycle-clauses)
        from coherence.smt.infer_mine import closes_cycle
        kept = [c for c in cands if not closes_cycle(c)]
        left_out, cands = len(cands) - len(kept), kept
    say(f"{len(cands)} candidates hold in every explored state; Houdini")
    h: QFResult | FiniteResult
    if opts.houdini == "qf":
        # its grounding binds at most two agents: three-agent candidates are not offered
        offered = [k for k, c in enumerate(cands) if c.kind != "triple"]
        h = houdini_qf(model, [cands[k] for k in offered], progress=say, rlimit=opts.rlimit)
        h.alive = [offered[k] for k in h.alive]
        h.support = [offered[k] for k in h.support]
    else:
        try:
            h = houdini_finite(model, cands, templates, opts.cutoff, progress=say,
                               rlimit=opts.rlimit, seconds=opts.timeout,
                               instance=instance[0] if instance else None,
                               select_at=opts.select_at, smaller_instances=smaller,
                               keep_global=opts.keep_global)
        except Unsupported as e:  # out of units: no inferred line, the proof says the rest
            from coherence.smt.infer_finite import FiniteResult
            h = FiniteResult([], [], [e.message], {"queries": 0, "unknown": 1})
    t2 = time.perf_counter()
    taken = {inv.name for inv in model.invariants}
    names = _names(taken, len(h.support))
    lines = [f"invariant aux {n}: {cands[k].text};" for n, k in zip(names, h.support,
                                                                      strict=True)]
    missing = None
    if h.failed:  # a Houdini that gave up (no units, no time left) says so, not "no candidate"
        missing = (f"{h.failed[0]}: no line inferred" if h.stats.get("unknown")
                   else _missing(h.failed, opts))
    # in the progress stream too: an hour's proof may be stopped or killed (a SIGINT in it
    # ends ``prove_all`` with a partial result, which keeps the lines)
    for line in lines:
        say(f"inferred: {line}")
    say(f"proving the spec with {len(lines)} inferred invariants from scratch")
    proved_model = extend(model, _block(lines)) if lines else model
    proof = prove_all(proved_model, timeout=opts.timeout, rlimit=opts.final_rlimit,
                      jobs=opts.jobs, cache=opts.cache,
                      progress=lambda d, t, what: say(f"final proof: {what} ({d} of {t})"))
    # NOTE(infer-repair): counterexamples to induction put back what minimisation left out
    chosen = list(h.support)
    repaired: list[dict[str, Any]] = []
    while (proof.verdict == "unknown" and (proof.cti_details or proof.unknown_goals)
           and len(repaired) < ROUNDS and proof.reason != interrupt.REASON):
        left = None if opts.timeout is None else opts.timeout - (time.perf_counter() - t2)
        ctis = len(proof.cti_details)
        added = repairs(cands, h.alive, chosen, templates, proof.cti_details)
        # NOTE(infer-repair-unknown): an inferred line left unknown puts back kept
        # candidates that share its atoms and its action's source state
        line_of = {f"invariant:{n}": k
                   for n, k in zip(_names(taken, len(chosen)), chosen, strict=True)}
        unknown = [(line_of[u.goal], action_atoms(u.machine, u.cache, u.states))
                   for u in proof.unknown_goals if u.goal in line_of]
        # NOTE(infer-repair-localized): first its form about this agent's own messages
        added += localized(cands, h.alive, [*chosen, *added], [k for k, _at in unknown])
        added += related(cands, h.alive, [*chosen, *added], unknown)
        # NOTE(infer-repair-spec-goal): and one of the spec's own invariants, those that
        # test what it tests where the action starts or what it takes
        own = {f"invariant:{inv.name}": inv.expr for inv in model.invariants}
        spec_unknown = []
        for u in proof.unknown_goals:
            if u.goal in own:
                # NOTE(infer-repair-spec-goal-fields): and what its message's fields set
                states, compares = invariant_atoms(own[u.goal])
                spec_unknown.append(SpecGoal(
                    states, compares, action_atoms(u.machine, u.cache, u.states), u.message,
                    *fields_into(model, u.machine, u.states, u.message, compares)))
        added += for_spec_goals(cands, h.alive, [*chosen, *added], spec_unknown)
        if not added or (left is not None and left <= 0):
            break
        chosen += added
        lines = [f"invariant aux {n}: {cands[k].text};"
                 for n, k in zip(_names(taken, len(chosen)), chosen, strict=True)]
        say(f"{ctis} counterexamples to induction, {len(unknown)} inferred lines and "
            f"{len(spec_unknown)} of the spec's invariants unknown: "
            f"{len(added)} kept candidates put back; proving {len(lines)} lines again")
        t_round = time.perf_counter()
        proved_model = extend(model, _block(lines))
        # the lines only grow: what the last proof settled stays proved
        reused = len(proof.settled)
        proof = prove_all(proved_model, timeout=left, rlimit=opts.final_rlimit,
                          jobs=opts.jobs, cache=opts.cache,
                          progress=lambda d, t, what: say(f"final proof: {what} ({d} of {t})"),
                          reuse=proof.settled)
        repaired.append({"ctis": ctis, "unknown": len(unknown),
                         "spec_unknown": len(spec_unknown), "added": len(added),
                         "reused": reused,
                         "seconds": round(time.perf_counter() - t_round, 3)})
    t3 = time.perf_counter()
    stats = {
        "explored": [{"agents": n, "states": s, "complete": c, "seconds": round(sec, 3),
                      "engine": engine, **({"note": note} if note else {})}
                     for (n, s, c, sec), (engine, note) in zip(mstats.sizes, mstats.engines,
                                                               strict=True)],
        "conjunctions_tested": mstats.generated,
        "candidates": len(cands),
        "cycle_clauses_left_out": left_out,
        "after_houdini": len(h.alive),
        "support": len(h.support),
        "final": len(lines),
        "houdini_queries": h.stats["queries"],
        "unknown_checks": h.stats["unknown"],
        "houdini": {"kind": opts.houdini, **h.stats},
        "repairs": repaired,
        **({"notes": mstats.notes} if mstats.notes else {}),
        "seconds": {"explore": round(mstats.seconds_explore, 3),
                    "filter": round(mstats.seconds_filter, 3),
                    "houdini": round(t2 - t1, 3), "final_proof": round(t3 - t2, 3),
                    "total": round(t3 - t0, 3)},
    }
    return InferResult(proof, lines, stats, missing, proved_model)


def _refute_early(model: ir.Model, broken: tuple[int, str, int], opts: InferOptions,
                  t0: float, say: Callable[[str], None]) -> InferResult | None:
    """A failure met while mining: the spec is refuted by BMC at 2 and 3 agents to the
    failing state's depth, with a replayed trace, before any Houdini query (a buggy spec's
    inference would only end in the same refutation, minutes later). None if BMC does not
    find it within its units (then the inference goes on, and its final proof decides)."""
    from coherence.smt.param import NOTE_DEADLOCK, Budget, _refute
    agents, name, depth = broken
    say(f"{name} fails in a reachable state at {agents} agents (depth {depth}): refuting")
    budget = Budget(opts.timeout, opts.final_rlimit, time.perf_counter())
    proof = _refute(model, depth + 1, budget)
    if proof is None:
        return None
    proof.notes = [NOTE_DEADLOCK]
    stats = {"broken": {"agents": agents, "failure": name, "depth": depth},
             "seconds": {"total": round(time.perf_counter() - t0, 3)}}
    return InferResult(proof, [], stats, f"no inference: {name} fails at {agents} agents "
                       "(a reachable state of the mining search)", model)


def _names(taken: set[str], n: int) -> list[str]:
    out: list[str] = []
    k = 1
    while len(out) < n:
        name = f"{PREFIX}_{k}"
        if name not in taken:
            out.append(name)
        k += 1
    return out


MARKER = "// ---- invariants inferred by `coherence prove --agents any --infer`"


def _block(lines: list[str]) -> str:
    return "\n" + MARKER + "\n" + "\n".join(lines) + "\n"


def appended_text(lines: list[str]) -> str:
    """What ``--write`` appends to the spec: a marker comment, then the lines."""
    return _block(lines)


def _missing(failed: list[str], opts: InferOptions) -> str:
    lits = ", ".join(f"{k} {v}" for k, v in opts.literals.items())
    return (f"{failed[0]}, and no candidate rules out the counterexample to induction: the "
            f"invariant it needs is outside the templates (clauses of at most {lits} literals "
            "over control states, variables, set membership, the home's variables and the "
            "messages in flight and the relations between agents through them, about at most two "
            "agents, three related ones, or one message), or the property "
            "does not hold (see the proof below)")
