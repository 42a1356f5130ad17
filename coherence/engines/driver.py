"""One way to run any engine: symmetry audit, fallback, replayed traces, verdicts.

Engines only explore (``Engine.explore``); everything that gives their raw results meaning is
here, once, so that every engine's report means the same: the symmetry audit and the search
again without symmetry for a model that is not symmetric, each counterexample rebuilt by
replaying its path of packed states through the reference semantics (Stateright's
``checker/path.rs``; a path that does not replay is an engine bug, never shown as a trace),
and the verdict.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import attrs

from coherence import ir
from coherence.engines.api import Engine, NotSymmetric, RawFailure, RawResult
from coherence.engines.size import refuse_absurd
from coherence.failures import DEADLOCK, key_name, outcome_keys, violation_key
from coherence.layout import Layout
from coherence.results import CheckOptions, CheckResult, Coverage, Failure, FailureKey
from coherence.semantics import Semantics, State
from coherence.symmetry import AnySymmetry, has_symmetry, make_symmetry
from coherence.trace import Step, TraceReplayError, describe, describe_state
from coherence.vacuity import Premise, is_witness, vacuous_message, with_witnesses

if TYPE_CHECKING:
    from coherence.liveness.built import GraphBuilder

AUDITED_STATES = 512  # states whose successors are compared with a renamed copy's

NOT_SYMMETRIC = ("symmetry reduction was turned off: this model is not symmetric in its agents "
                 "(renaming the agents of a state does not rename its successors, e.g. a bus "
                 "broadcast whose receivers' order decides the outcome), so the search was "
                 "run again over every state")

DEADLOCK_MESSAGE = "deadlock: nothing can move, but a request or message is pending"


def property_names(model: ir.Model) -> list[str]:
    names = [inv.name for inv in model.invariants]
    names += [p.name for p in model.properties]
    return [*names, "deadlock", "no-transition", "errors"]


def run(engine: Engine, model: ir.Model, options: CheckOptions | None = None) -> CheckResult:
    options = options or CheckOptions()
    refuse_absurd(model)
    sem = Semantics(model)
    layout = Layout(model)
    notes: list[str] = []
    symmetric = options.symmetry and has_symmetry(model)
    if symmetric and not symmetry_is_sound(sem, make_symmetry(sem)):
        symmetric = False
        notes.append(NOT_SYMMETRIC)
    # NOTE(vacuity): witnesses are invariants like any other, so every engine checks them;
    # they would end a --stop-at-first search at once, so that mode goes without.
    explored: ir.Model = model
    witnesses: dict[FailureKey, Premise] = {}
    if options.vacuity and not options.stop_at_first:
        explored, witnesses = with_witnesses(model)
    opts = attrs.evolve(options, symmetry=symmetric)
    try:
        result = _finish(engine, sem, layout, opts, engine.explore(explored, layout, opts),
                         notes, witnesses)
    except (TraceReplayError, NotSymmetric):
        if not symmetric:
            raise
        # NOTE(symmetry-soundness): symmetry reduction is exact only for models whose
        # behaviour does not depend on agent ids; a reduced path that cannot be replayed
        # concretely proves this one's does, and its reduced answer cannot be trusted.
        opts = attrs.evolve(options, symmetry=False)
        result = _finish(engine, sem, layout, opts, engine.explore(explored, layout, opts),
                         [*notes, NOT_SYMMETRIC], witnesses)
    return with_liveness(model, options, result, getattr(engine, "liveness_graph", None),
                         opts.symmetry)


def with_liveness(model: ir.Model, options: CheckOptions, result: CheckResult,
                  builder: GraphBuilder | None = None,
                  symmetric: bool | None = None) -> CheckResult:
    """The safety result with the spec's liveness properties checked on the state graph (by
    ``coherence.liveness``, on the graph ``builder`` builds: the engine's own where it can
    store one, else the reference engine's), when asked; ``symmetric``: whether the model
    passed the symmetry audit (NOTE(liveness-symmetry))."""
    if not model.liveness or not options.liveness:
        return result  # the command line says they were not checked (commands.report)
    names = [p.name for p in model.liveness]
    if result.stopped or (options.stop_at_first and result.failures):
        result.notes.append(f"liveness not checked: {', '.join(names)} (the safety search "
                            "did not finish)")
        return result
    from coherence.liveness import SYMMETRY_NOTE, check_liveness
    live = check_liveness(model, options, builder, symmetric)
    result.properties = [*result.properties, *names]
    result.failures = [*result.failures, *live.failures]
    notes = [f"liveness: {live.states:,} states and {live.edges:,} edges stored in "
             f"{live.seconds:.2f} s ({live.graph_bytes / 2**20:.1f} MiB of graph); engine "
             f"{live.engine}"]
    if options.symmetry and model.agents > 1:
        notes.append(SYMMETRY_NOTE)
    if live.skipped:
        notes.append(f"liveness: {live.skipped} instances of properties with binders decided "
                     "by a renamed one (the model is symmetric: docs/language.md, 'Liveness')")
    result.notes += notes
    if live.failures:
        result.verdict = "fails"
    elif live.stopped:
        result.stopped = f"liveness search: {live.stopped}"
        result.verdict = "incomplete"
    return result


def vacuous(raw: RawResult, witnesses: dict[FailureKey, Premise]) -> list[str]:
    """What holds only because nothing happens: nothing at all, or an invariant's premise."""
    if raw.stopped is not None:
        return []  # a partial search proves nothing unreachable
    out = []
    if raw.rules_fired == 0:
        out.append("no action ever fired: only the initial state was explored, so every "
                   "property holds trivially")
    seen = {f.key[1] for f in raw.failures if is_witness(f.key)}
    for key, premise in witnesses.items():
        if key[1] not in seen:
            out.append(vacuous_message(premise))
    return out


def _finish(engine: Engine, sem: Semantics, layout: Layout, options: CheckOptions,
            raw: RawResult, notes: list[str],
            witnesses: dict[FailureKey, Premise]) -> CheckResult:
    sym = make_symmetry(sem) if options.symmetry else None
    failures = [rebuild(sem, layout, sym, f) for f in raw.failures if not is_witness(f.key)]
    failures.sort(key=lambda f: (f.length, f.name, f.key))
    if failures:
        verdict = "fails"
    elif raw.stopped:
        verdict = "incomplete"
    else:
        verdict = "holds"
    model = sem.model
    return CheckResult(
        spec=model.file, params={p.name: p.value for p in model.params},
        symmetry="exact" if options.symmetry else "off", verdict=verdict, states=raw.states,
        rules_fired=raw.rules_fired, depth=raw.depth, seconds=raw.seconds,
        peak_memory_bytes=raw.peak_memory_bytes, bytes_per_state=raw.bytes_per_state,
        failures=failures, stopped=raw.stopped, properties=property_names(model),
        notes=[*notes, *raw.notes], vacuous=vacuous(raw, witnesses), engine=engine.name,
        threads=raw.threads, coverage=coverage(model, raw))


def transition_label(t: ir.Transition) -> str:
    states = f" in {', '.join(t.states)}" if t.states else ""
    if t.kind == "rule":
        return f"rule {t.name}{states}"
    return f"on {t.name}{states}"


def coverage(model: ir.Model, raw: RawResult) -> list[Coverage] | None:
    if raw.coverage is None:
        return None
    # a transition taking an atomic-bus message runs inside its sender's step: not counted
    bus = {msg.name for msg in model.messages
           if model.network(msg.network).ordering == "bus"}
    return [Coverage(m.name, transition_label(t), str(t.span),
                     raw.coverage.get((m.name, t.index), 0))
            for m in model.machines for t in m.transitions
            if not t.stall and not (t.kind == "message" and t.name in bus)]


def symmetry_is_sound(sem: Semantics, sym: AnySymmetry, limit: int = AUDITED_STATES) -> bool:
    """NOTE(symmetry-soundness): the reduction is exact only if renaming the agents of a
    state renames its successors; the first ``limit`` states (breadth-first) are checked,
    cycling through generators of the symmetry group (for agents a transposition and a
    rotation, which together generate every renaming; for a hierarchy those of every index
    type, and of each nested one within each enclosing id)."""
    perms: list[Any] = list(sym.generators())
    seen: set[bytes] = set()
    queue: deque[State] = deque()
    for s in sem.initial_states():
        key, canon = sym.canonical(s)
        if key not in seen:
            seen.add(key)
            queue.append(canon)
    audited = 0
    while queue and audited < limit:
        state = queue.popleft()
        outcomes, _ = sem.enabled(state)
        renamed = sem.enabled(sym.permute(state, perms[audited % len(perms)]))[0]
        audited += 1
        mine = sorted(sym.canonical(o.state)[0] for o in outcomes if o.state is not None)
        theirs = sorted(sym.canonical(o.state)[0] for o in renamed if o.state is not None)
        if mine != theirs or sum(o.error is not None for o in outcomes) != sum(
                o.error is not None for o in renamed):
            return False
        for o in outcomes:
            if o.state is not None:
                key, canon = sym.canonical(o.state)
                if key not in seen:
                    seen.add(key)
                    queue.append(canon)
    return True


def rebuild(sem: Semantics, layout: Layout, sym: AnySymmetry | None,
            raw: RawFailure) -> Failure:
    """The failure's numbered trace, replayed concretely from a real initial state, in the
    agent names a user would see without symmetry reduction."""
    def orbit(state: State) -> object:
        return sym.canonical(state)[0] if sym is not None else state

    stored = [layout.unpack(code) for code in raw.path]
    if not stored:
        raise TraceReplayError(f"the engine gave no path for {raw.key}")
    concrete: State | None = None
    for s in sem.initial_states():
        if orbit(s) == orbit(stored[0]):
            concrete = s
            break
    if concrete is None:
        raise TraceReplayError("no initial state matches the trace's first state")
    steps: list[Step] = []
    for target in stored[1:]:
        want = orbit(target)
        outcomes, _ = sem.enabled(concrete)
        for out in outcomes:
            if out.state is not None and orbit(out.state) == want:
                steps.append(describe(sem, len(steps) + 1, concrete, out))
                concrete = out.state
                break
        else:
            raise TraceReplayError(f"step {len(steps) + 1} of a stored trace does not replay")
    key = raw.key
    kind = key[0]
    message: str | None = None
    span: str | None = None
    details: list[str] = []
    if kind in ("invariant",) or (kind == "error" and len(key) == 2):
        message = next((v.message for v in sem.invariant_violations(concrete)
                        if violation_key(v) == key), None)
    elif kind == "no-transition":
        message = next((v.message for v in sem.no_transitions(concrete)
                        if violation_key(v) == key), None)
    elif key == DEADLOCK:
        outcomes, problems = sem.enabled(concrete)
        if sem.is_deadlock(concrete, outcomes, problems):
            message = DEADLOCK_MESSAGE
            details = ["stuck state:", *describe_state(sem, concrete)]
    else:  # an action's error or a coherence violation: the failing step ends the trace
        outcomes, _ = sem.enabled(concrete)
        for out in outcomes:
            if key in outcome_keys(out):
                assert out.error is not None
                steps.append(describe(sem, len(steps) + 1, concrete, out))
                message = steps[-1].error or out.error.message
                if kind == "error":
                    span = key[2] or None
                break
    if message is None:
        raise TraceReplayError(f"the last state of the trace for {key} does not show it")
    return Failure(kind, key_name(key), message, steps, span, key, details)
