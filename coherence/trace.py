"""Counterexample traces: rebuilt by replay, shown as numbered steps of what changed.

Stored states are symmetry-reduced, so their agent names are arbitrary. A trace is rebuilt by
replaying the semantics from the real initial state, at each step choosing an action whose
successor has the stored canonical form: the agents keep the names the user would see without
reduction (cf. Rumur's --scalarset-schedules), and only what changed is printed (Rumur's
--counterexample-trace diff).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs

from coherence import ir
from coherence.semantics import UNDEF, Action, Outcome, Semantics, State


@attrs.define
class Send:
    src: str
    dst: str
    message: str


@attrs.define
class Step:
    """One step of a trace. ``error`` is set on a final step that raised a model error."""

    index: int
    actor: str
    event: str
    changes: list[str]
    action: dict[str, Any]
    sends: list[Send] = attrs.Factory(list)
    received: Send | None = None
    state_changes: list[tuple[str, str, str]] = attrs.Factory(list)
    performs: list[str] = attrs.Factory(list)
    error: str | None = None

    def render(self) -> str:
        head = f"{self.index:>3}. {self.actor}: {self.event}"
        if not self.changes and not self.error:
            return head
        parts = list(self.changes)
        if self.error:
            parts.append(f"ERROR: {self.error}")
        return head + "\n" + "\n".join(f"       {p}" for p in parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index, "actor": self.actor, "event": self.event,
            "changes": self.changes, "action": self.action,
            "sends": [attrs.asdict(s) for s in self.sends],
            "received": attrs.asdict(self.received) if self.received else None,
            "state_changes": [list(s) for s in self.state_changes],
            "performs": self.performs, "error": self.error,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Step:
        return Step(
            index=d["index"], actor=d["actor"], event=d["event"], changes=list(d["changes"]),
            action=dict(d["action"]), sends=[Send(**s) for s in d.get("sends", [])],
            received=Send(**d["received"]) if d.get("received") else None,
            state_changes=[tuple(s) for s in d.get("state_changes", [])],
            performs=list(d.get("performs", [])), error=d.get("error"),
        )


class TraceReplayError(RuntimeError):
    """A stored path could not be replayed: a bug in an engine, never a user error."""


Canon = Callable[[State], tuple[bytes, State]]


def replay_path(sem: Semantics, canon: Canon, keys: list[bytes],
                final: Outcome | None = None) -> list[Step]:
    """Rebuild the concrete trace through the canonical states ``keys``."""
    concrete = None
    for s in sem.initial_states():
        if canon(s)[0] == keys[0]:
            concrete = s
            break
    if concrete is None:
        raise TraceReplayError("no initial state matches the trace's first state")
    steps: list[Step] = []
    for key in keys[1:]:
        outcomes, _ = sem.enabled(concrete)
        for out in outcomes:
            if out.state is not None and canon(out.state)[0] == key:
                steps.append(describe(sem, len(steps) + 1, concrete, out))
                concrete = out.state
                break
        else:
            raise TraceReplayError(f"step {len(steps) + 1} of a stored trace does not replay")
    if final is not None:
        outcomes, _ = sem.enabled(concrete)
        match = _matching_error(outcomes, final)
        if match is None:
            raise TraceReplayError("the failing step of a stored trace does not replay")
        steps.append(describe(sem, len(steps) + 1, concrete, match))
    return steps


def _matching_error(outcomes: list[Outcome], final: Outcome) -> Outcome | None:
    want = final.action
    assert final.error is not None
    for out in outcomes:
        if out.error is None or type(out.error) is not type(final.error):
            continue
        a = out.action
        if (a.kind, a.machine, a.transition,
                a.params if a.kind != ir.TransitionKind.EVENT else ()) == (
                want.kind, want.machine, want.transition,
                want.params if want.kind != ir.TransitionKind.EVENT else ()) and (
                out.error.span == final.error.span):
            return out
    for out in outcomes:  # permuted parameters: any error of the same kind and place
        if out.error is not None and type(out.error) is type(final.error) and (
                out.error.span == final.error.span):
            return out
    return None


def replay_actions(sem: Semantics, actions: list[Action]) -> list[Step]:
    """Replay concrete actions (from Z3, Hypothesis, a saved trace); fail loudly if one is
    not enabled."""
    state = sem.initial_states()[0]
    steps: list[Step] = []
    for act in actions:
        out = sem.execute(state, act)
        if out is None:
            raise TraceReplayError(f"step {len(steps) + 1} ({act}) is not enabled")
        steps.append(describe(sem, len(steps) + 1, state, out))
        if out.state is None:
            break
        state = out.state
    return steps


# ---------------------------------------------------------------- describing a step


class Formatter:
    """Renders run-time values with the spec's names."""

    def __init__(self, sem: Semantics) -> None:
        self.sem = sem

    def node(self, v: int) -> str:
        return self.sem.node_name(v)

    def value(self, t: ir.Type, v: Any) -> str:
        if v == UNDEF:
            return "undefined"
        if isinstance(t, ir.BoolT):
            return "true" if v else "false"
        if isinstance(t, (ir.AgentT, ir.NodeT, ir.HNodeT)):
            return self.node(v)
        if isinstance(t, (ir.EnumT, ir.StateT)):
            return t.members[v]
        if isinstance(t, ir.SetT):
            name = self.node if isinstance(t.elem, ir.AgentT) else str
            return "{" + ", ".join(name(a) for a in range(t.elem.n) if (v >> a) & 1) + "}"
        if isinstance(t, ir.ArrayT):
            off = ir.index_offset(t.index)
            items = [f"{self.value(t.index, i + off)}: {self.value(t.elem, x)}"
                     for i, x in enumerate(v)]
            return "[" + ", ".join(items) + "]"
        return str(v)

    def message(self, t: int, fields: tuple) -> str:
        msg = self.sem.model.messages[t]
        if not msg.fields:
            return msg.name
        inner = ", ".join(f"{f.name}={self.value(f.type, x)}"
                          for f, x in zip(msg.fields, fields, strict=True))
        return f"{msg.name}({inner})"


def _messages(sem: Semantics, state: State) -> Counter:
    return Counter(m for _net_i, m in sem.messages_in_flight(state))


def describe(sem: Semantics, index: int, before: State, out: Outcome) -> Step:
    fmt = Formatter(sem)
    model = sem.model
    act = out.action
    machine = model.machine(act.machine)
    tr = machine.transitions[act.transition]
    actor = sem.label(machine, act.agent)
    line_note = f" (line {act.line})" if model.lines > 1 else ""
    received = None
    if act.kind == ir.TransitionKind.MESSAGE:
        _line, src, _dst, t, fields = act.msg
        text = fmt.message(t, fields)
        event = f"receives {text} from {fmt.node(src)}{line_note}"
        received = Send(fmt.node(src), actor, text)
    else:
        args = ", ".join(f"{p.name}={fmt.value(p.type, v)}"
                         for p, v in zip(tr.params, act.params, strict=True))
        prefix = "rule " if act.kind == ir.TransitionKind.RULE else ""
        event = f"{prefix}{tr.name}{f'({args})' if args else ''}{line_note}"
    changes: list[str] = []
    state_changes: list[tuple[str, str, str]] = []
    after = out.state
    if after is not None:
        changes, state_changes = _diff_lines(sem, fmt, before, after)
    sends: list[Send] = []
    if after is not None:
        new = _messages(sem, after) - _messages(sem, before)
        for (_line, src, dst, t, fields), count in sorted(new.items()):
            for _ in range(count):
                text = fmt.message(t, fields)
                sends.append(Send(fmt.node(src), fmt.node(dst), text))
                changes.append(f"{fmt.node(src)} sends {text} to {fmt.node(dst)}")
    performs = []
    for p in out.performs:
        word = "load returns" if p.kind == "load" else "store of"
        text = f"performs {p.kind}: {fmt.node(p.agent)} {word} {p.value}"
        performs.append(text)
        changes.append(text)
    action = {"kind": act.kind, "machine": act.machine, "agent": act.agent, "line": act.line,
              "transition": act.transition, "params": list(act.params), "net": act.net,
              "msg": _json_msg(act.msg)}
    return Step(index, actor, event, changes, action, sends, received, state_changes,
                performs, out.error.message if out.error is not None else None)


def _json_msg(msg: Any) -> Any:
    if msg is None:
        return None
    line, src, dst, t, fields = msg
    return [line, src, dst, t, list(fields)]


def action_from_json(d: dict[str, Any]) -> Action:
    msg = d.get("msg")
    if msg is not None:
        line, src, dst, t, fields = msg
        msg = (line, src, dst, t, tuple(fields))
    return Action(ir.TransitionKind(d["kind"]), d["machine"], d["agent"], d["line"],
                  d["transition"], tuple(d["params"]), d.get("net", -1), msg)


def _diff_lines(sem: Semantics, fmt: Formatter, before: State,
                after: State) -> tuple[list[str], list[tuple[str, str, str]]]:
    model = sem.model
    changes: list[str] = []
    state_changes: list[tuple[str, str, str]] = []
    for line in range(model.lines):
        suffix = f" (line {line})" if model.lines > 1 else ""
        g0, h0, c0 = before[0][line]
        g1, h1, c1 = after[0][line]
        for v, x0, x1 in zip(model.globals, g0, g1, strict=True):
            if x0 != x1:
                changes.append(f"{v.name}{suffix}: {fmt.value(v.type, x0)} → "
                               f"{fmt.value(v.type, x1)}")
        if sem.hier:
            for node, (x0, x1) in enumerate(zip(c0, c1, strict=True)):
                _diff_machine(fmt, sem.node_machine[node], sem.node_name(node), x0, x1, suffix,
                              changes, state_changes)
            continue
        if sem.home is not None:
            _diff_machine(fmt, sem.home, sem.home.name, h0, h1, suffix, changes, state_changes)
        if sem.cache is not None:
            for a, (x0, x1) in enumerate(zip(c0, c1, strict=True)):
                _diff_machine(fmt, sem.cache, f"{sem.cache.name}[{a}]", x0, x1, suffix,
                              changes, state_changes)
    return changes, state_changes


def _diff_machine(fmt: Formatter, machine: ir.Machine, label: str, x0: tuple, x1: tuple,
                  suffix: str, changes: list[str],
                  state_changes: list[tuple[str, str, str]]) -> None:
    if x0 == x1:
        return
    if x0[0] != x1[0]:
        s0, s1 = machine.state_type.members[x0[0]], machine.state_type.members[x1[0]]
        changes.append(f"{label}{suffix}: state {s0} → {s1}")
        state_changes.append((label, s0, s1))
    for v, a, b in zip(machine.vars, x0[1:], x1[1:], strict=True):
        if a != b:
            changes.append(f"{label}.{v.name}{suffix}: {fmt.value(v.type, a)} → "
                           f"{fmt.value(v.type, b)}")


def describe_state(sem: Semantics, state: State) -> list[str]:
    """A whole state in the spec's names, for a deadlock report: each machine's control state
    and variables, and every message in flight, marked "stalled" where its receiver has only a
    stalling transition for it in its current state."""
    fmt = Formatter(sem)
    model = sem.model
    lines, _nets, _monitor = state
    out: list[str] = []
    for line, (g, h, caches) in enumerate(lines):
        where = f" (line {line})" if model.lines > 1 else ""
        machines: list[tuple[str, ir.Machine, tuple]] = []
        if model.home is not None and h:
            machines.append((model.home.name, model.home, h))
        if model.caches:
            machines += [(f"{model.caches[0].name}[{a}]", model.caches[0], c)
                         for a, c in enumerate(caches)]
        if sem.hier:
            machines += [(sem.node_name(k), sem.node_machine[k], c)
                         for k, c in enumerate(caches)]
        for name, machine, values in machines:
            parts = [machine.state_type.members[values[0]]]
            parts += [f"{v.name}={fmt.value(v.type, x)}"
                      for v, x in zip(machine.vars, values[1:], strict=True)]
            out.append(f"{name}{where}: {', '.join(parts)}")
        if model.globals:
            out.append(f"globals{where}: " + ", ".join(
                f"{v.name}={fmt.value(v.type, x)}" for v, x in zip(model.globals, g,
                                                                   strict=True)))
    deliverable = {m for _net, m in sem.deliverable(state)}
    for _net_i, msg in sem.messages_in_flight(state):
        line, src, dst, t, fields = msg
        handlers = sem.handlers_of(state, msg)
        if msg not in deliverable:
            status = "queued behind another message"
        elif handlers and all(tr.stall for tr in handlers):
            status = "stalled"
        else:
            status = "deliverable"
        where = f" (line {line})" if model.lines > 1 else ""
        out.append(f"in flight{where}: {fmt.message(t, fields)} from {fmt.node(src)} to "
                   f"{fmt.node(dst)}, {status}")
    return out
