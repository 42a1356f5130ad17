"""From a Z3 model back to the reference semantics: states, actions, replayed traces.

NOTE(z3-exactness): nothing Z3 says is shown before it is replayed through ``semantics``: the
actions of a counterexample are executed by ``replay_actions``, each replayed state is compared
with the state Z3 claims, and the failure at the end is re-detected by the reference semantics.
Any mismatch raises ``TraceReplayError`` (a bug in the encoder, never a user error).
"""

from __future__ import annotations

from typing import Any

import z3

from coherence import ir
from coherence.results import Failure
from coherence.semantics import DEADLOCK_MESSAGE, Action, CoherenceViolation, Semantics, State
from coherence.smt.state import ArrV, SetV, SymState, as_int
from coherence.smt.system import ActionSpec, Encoder, Group
from coherence.trace import Step, TraceReplayError, describe, replay_actions


def int_value(m: z3.ModelRef, t: Any) -> int:
    return as_int(m.eval(t, model_completion=True))


def _bool(m: z3.ModelRef, t: Any) -> bool:
    return z3.is_true(m.eval(t, model_completion=True))


def value_of(m: z3.ModelRef, x: Any) -> Any:
    if isinstance(x, SetV):
        return sum(1 << a for a, b in enumerate(x.bits) if _bool(m, b))
    if isinstance(x, ArrV):
        return tuple(value_of(m, e) for e in x.elems)
    return int_value(m, x)


def state_of(enc: Encoder, m: z3.ModelRef, s: SymState) -> State:
    """The semantics' tuple for the symbolic state ``s`` under model ``m``."""
    model = enc.model
    lines = tuple((tuple(value_of(m, x) for x in g), tuple(value_of(m, x) for x in h),
                   tuple(tuple(value_of(m, x) for x in c) for c in cs))
                  for g, h, cs in s.lines)
    nets: list[tuple] = []
    for net, contents in zip(model.networks, s.nets, strict=True):
        if net.ordering is ir.Ordering.UNORDERED:
            msgs = []
            for slot in contents:
                if _bool(m, slot.valid):
                    t = int_value(m, slot.type)
                    nf = len(model.messages[t].fields)
                    msgs.append((int_value(m, slot.line), int_value(m, slot.src),
                                 int_value(m, slot.dst), t,
                                 tuple(int_value(m, f) for f in slot.fields[:nf])))
            nets.append(tuple(sorted(msgs)))
        elif net.ordering is ir.Ordering.FIFO:
            queues = []
            for key in sorted(contents):
                q = contents[key]
                count = int_value(m, q.count)
                if count > 0:
                    items = []
                    for k in range(count):
                        t = int_value(m, q.types[k])
                        nf = len(model.messages[t].fields)
                        items.append((t, tuple(int_value(m, f) for f in q.fields[k][:nf])))
                    queues.append((key, tuple(items)))
            nets.append(tuple(queues))
        else:
            nets.append(())
    monitor: tuple = ()
    if s.monitor:
        nv = model.values
        monitor = tuple(
            tuple((int_value(m, ma.view), tuple(
                sum(1 << u for u in range(nv) if _bool(m, ma.after[v][u]))
                if _bool(m, ma.written[v]) else -1 for v in range(nv)))
                for ma in line)
            for line in s.monitor)
    return (lines, tuple(nets), monitor)


def action_of(enc: Encoder, spec: ActionSpec, state: State) -> Action:
    """The semantics' Action for ``spec`` taken in the concrete ``state``."""
    msg = None
    if spec.kind == ir.TransitionKind.MESSAGE:
        machine = enc.model.machine(spec.machine)
        t = enc.msg_index[machine.transitions[spec.transition].name]
        dst = enc.n if spec.agent is None else spec.agent
        contents = state[1][spec.net]
        if isinstance(spec.where, tuple):
            src, _, line = spec.where
            queue = dict(contents).get(spec.where, ())
            if not queue:
                raise TraceReplayError(f"Z3 chose an empty queue {spec.where}")
            msg = (line, src, dst, queue[0][0], queue[0][1])
        else:
            cands = [x for x in contents if x[0] == spec.line and x[2] == dst and x[3] == t]
            if not cands:
                raise TraceReplayError("Z3 chose a message that is not in the network")
            msg = cands[0]
    return Action(spec.kind, spec.machine, spec.agent, spec.line, spec.transition, spec.params,
                  spec.net, msg)


def slot_message(enc: Encoder, m: z3.ModelRef, s: SymState, spec: ActionSpec) -> Any:
    slot = s.nets[spec.net][spec.where]
    t = int_value(m, slot.type)
    nf = len(enc.model.messages[t].fields)
    return (int_value(m, slot.line), int_value(m, slot.src), int_value(m, slot.dst), t,
            tuple(int_value(m, f) for f in slot.fields[:nf]))


def replay_model(enc: Encoder, m: z3.ModelRef, states: list[SymState], sels: list[Any],
                 length: int, group: Group, extra: int) -> Failure:
    """Replay the first ``length`` steps Z3 chose and re-detect ``group``'s failure."""
    sem = enc.sem
    concrete = [state_of(enc, m, s) for s in states[:length - extra + 1]]
    if concrete[0] not in sem.initial_states():
        raise TraceReplayError("Z3's first state is not the initial state")
    actions = []
    for k in range(length - extra):
        spec = enc.actions[int_value(m, sels[k])]
        act = action_of(enc, spec, concrete[k])
        if spec.kind == ir.TransitionKind.MESSAGE and isinstance(spec.where, int):
            act = act._replace(msg=slot_message(enc, m, states[k], spec))
        actions.append(act)
    steps = replay_actions(sem, actions) if actions else []
    state = sem.initial_states()[0]
    for k, act in enumerate(actions):
        out = sem.execute(state, act)
        assert out is not None and out.state is not None
        state = out.state
        if state != concrete[k + 1]:
            raise TraceReplayError(f"after step {k + 1} the replayed state differs from Z3's")
    return final_failure(enc, sem, state, steps, group)


def final_failure(enc: Encoder, sem: Semantics, state: State, steps: list[Step],
           group: Group) -> Failure:
    kind, name = group
    if kind in ("error", "coherence") and name in ("error", *enc.coherence_names):
        outcomes, _ = sem.enabled(state)
        for out in outcomes:
            if out.error is None:
                continue
            if (kind == "coherence") == isinstance(out.error, CoherenceViolation):
                steps = [*steps, describe(sem, len(steps) + 1, state, out)]
                span = str(out.error.span) if out.error.span is not None else None
                label = name if kind == "coherence" else "error"
                return Failure(kind, label, out.error.message, steps,
                               span if kind == "error" else None)
        raise TraceReplayError(f"the final {kind} step of a Z3 trace does not replay")
    if kind in ("invariant", "error"):
        for v in sem.invariant_violations(state):
            if v.kind == kind and v.name == name:
                return Failure(kind, name, v.message, steps)
        raise TraceReplayError(f"Z3's trace ends in a state where {kind} {name} is fine")
    outcomes, problems = sem.enabled(state)
    if kind == "no-transition":
        if problems:
            return Failure(kind, problems[0].name, problems[0].message, steps)
        raise TraceReplayError("Z3's trace ends without a message lacking a transition")
    if kind == "deadlock":
        if sem.is_deadlock(state, outcomes, problems):
            return Failure("deadlock", "deadlock", DEADLOCK_MESSAGE, steps)
        raise TraceReplayError("Z3's trace does not end in a deadlock")
    raise TraceReplayError(f"unknown failure group {group}")  # pragma: no cover


def describe_state(enc: Encoder, state: State) -> list[str]:
    """Every variable of a concrete state, one per line, for counterexamples to induction."""
    from coherence.trace import Formatter
    sem, model = enc.sem, enc.model
    fmt = Formatter(sem)
    out = []
    for line, (g, h, cs) in enumerate(state[0]):
        sfx = f" (line {line})" if model.lines > 1 else ""
        for v, x in zip(model.globals, g, strict=True):
            out.append(f"{v.name}{sfx} = {fmt.value(v.type, x)}")
        if sem.home is not None:
            parts = [f"state {sem.home.state_type.members[h[0]]}"]
            parts += [f"{v.name}={fmt.value(v.type, x)}"
                      for v, x in zip(sem.home.vars, h[1:], strict=True)]
            out.append(f"{sem.home.name}{sfx}: " + ", ".join(parts))
        if sem.hier:  # NOTE(z3-hierarchy): a row per node, named by its indices
            for node, c in enumerate(cs):
                mach = sem.node_machine[node]
                parts = [f"state {mach.state_type.members[c[0]]}"]
                parts += [f"{v.name}={fmt.value(v.type, x)}"
                          for v, x in zip(mach.vars, c[1:], strict=True)]
                out.append(f"{sem.node_name(node)}{sfx}: " + ", ".join(parts))
        elif sem.cache is not None:
            for a, c in enumerate(cs):
                parts = [f"state {sem.cache.state_type.members[c[0]]}"]
                parts += [f"{v.name}={fmt.value(v.type, x)}"
                          for v, x in zip(sem.cache.vars, c[1:], strict=True)]
                out.append(f"{sem.cache.name}[{a}]{sfx}: " + ", ".join(parts))
    in_flight = sem.messages_in_flight(state)
    for net_i, net in enumerate(model.networks):
        msgs = [f"{fmt.message(t, f)} {fmt.node(src)}→{fmt.node(dst)}"
                for k, (_line, src, dst, t, f) in in_flight if k == net_i]
        if net.ordering is not ir.Ordering.BUS:
            out.append(f"network {net.name}: " + (", ".join(msgs) if msgs else "empty"))
    if state[2]:
        node_of = {k: node for node, k in sem.proc_of.items()}  # hierarchy: processor -> node
        for line, agents in enumerate(state[2]):
            for a, (view, _fa) in enumerate(agents):
                out.append(f"monitor{' line ' + str(line) if model.lines > 1 else ''}: "
                           f"{fmt.node(node_of.get(a, a))} last observed the write of {view}")
    return out

