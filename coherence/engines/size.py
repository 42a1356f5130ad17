"""How big a configuration is, computed before anything is built, so that absurd ones are
refused with a clear message instead of filling the machine's memory (issue 14, item 2).

Three figures, each with a limit far above any protocol a checker can finish: values per
state (what the layout will pack), action instances tried per state (each event, rule and
parameter value), and quantifier steps per state (nested ``forall``/``exists`` multiply).
"""

from __future__ import annotations

import math
from collections import Counter

import attrs

from coherence import ir
from coherence.errors import NO_SPAN, SpecError

MAX_VALUES_PER_STATE = 100_000
MAX_ACTION_INSTANCES = 100_000
MAX_QUANTIFIER_STEPS = 10_000_000


class ConfigurationTooLarge(SpecError):
    """The configuration would not fit any engine; exit code 2 like every bad input."""


@attrs.frozen
class ConfigurationSize:
    values_per_state: int
    action_instances: int
    quantifier_steps: int


def _elements(t: ir.Type) -> int:
    if isinstance(t, ir.ArrayT):
        return len(ir.domain(t.index)) * _elements(t.elem)
    return 1


def _domain_size(t: ir.Type) -> int:
    return t.size() if not isinstance(t, ir.ArrayT) else 1


def expression_steps(e: ir.Expr) -> int:
    """Evaluation steps of ``e`` in one state: quantifiers multiply their body by their
    domain (computed without recursion, so any nesting depth is fine)."""
    # post-order over an explicit stack: (node, children done?)
    stack: list[tuple[ir.Expr, bool]] = [(e, False)]
    cost: dict[int, int] = {}
    while stack:
        node, done = stack.pop()
        kids = _children(node)
        if not done:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
            continue
        total = 1 + sum(cost[id(k)] for k in kids)
        if isinstance(node, ir.Quant | ir.Count):
            total = 1 + _domain_size(node.var_type) * cost[id(node.body)]
        elif isinstance(node, ir.MsgQuant):
            total = 1 + 64 * cost[id(node.body)]  # messages in flight: a network's capacity
        cost[id(node)] = min(total, 1 << 62)
    return cost[id(e)]


def _children(e: ir.Expr) -> tuple[ir.Expr, ...]:
    match e:
        case ir.MVar() | ir.MState():
            return (e.agent,) if e.agent is not None else ()
        case ir.Index():
            return (e.base, e.index)
        case ir.Unary():
            return (e.arg,)
        case ir.Binary():
            return (e.left, e.right)
        case ir.SetLit():
            return e.elems
        case ir.Call():
            return e.args
        case ir.Quant() | ir.Count() | ir.MsgQuant():
            return (e.body,)
        case ir.InFlight():
            return (e.dst,) if e.dst is not None else ()
        case ir.Cond():
            return (e.cond, e.then, e.orelse)
        case _:
            return ()


def _stmt_exprs(stmts: tuple[ir.Stmt, ...]) -> list[tuple[ir.Expr, int]]:
    """(expression, times evaluated per firing) in a body; ``for`` multiplies."""
    out: list[tuple[ir.Expr, int]] = []
    stack: list[tuple[ir.Stmt, int]] = [(s, 1) for s in stmts]
    while stack:
        s, times = stack.pop()
        match s:
            case ir.Assign():
                out.append((s.value, times))
            case ir.If():
                out.append((s.cond, times))
                stack.extend((x, times) for x in (*s.then, *s.orelse))
            case ir.For():
                stack.extend((x, times * _domain_size(s.var_type)) for x in s.body)
            case ir.Let():
                out.append((s.value, times))
            case ir.Send():
                out.extend((a, times) for a in (*s.args, s.dst))
            case ir.Broadcast():
                out.extend((a, times) for a in s.args)
            case ir.Perform():
                out.extend(((s.value, times), (s.agent, times)))
            case ir.Assert():
                out.append((s.cond, times))
            case _:
                pass
    return out


def estimate(model: ir.Model) -> ConfigurationSize:
    n, lines = model.agents, model.lines
    # instances of each machine per line (a hierarchical spec's: one per index tuple)
    counts = Counter(i.machine for i in ir.instances(model))
    nodes = sum(counts.values()) if model.is_hierarchical else n + 1

    def copies_of(m: ir.Machine) -> int:
        if m.kind == "machine":
            return counts[m.name]
        return n if m.kind == "cache" else 1

    per_line = sum(_elements(v.type) for v in model.globals)
    for m in model.machines:
        per_line += copies_of(m) * (1 + sum(_elements(v.type) for v in m.vars))
    values = lines * per_line
    for net in model.networks:
        if net.ordering == "unordered":
            values += net.capacity
        elif net.ordering == "fifo":
            values += lines * nodes ** 2 * net.capacity
    if any(p.kind == "coherence" for p in model.properties):
        values += lines * n * (1 + model.values)
    instances = 0
    steps = 0
    for m in model.machines:
        copies = copies_of(m) * lines
        for t in m.transitions:
            fired = copies * math.prod(_domain_size(p.type) for p in t.params)
            if t.kind != "message":
                instances += fired
            per_firing = expression_steps(t.guard) if t.guard is not None else 0
            per_firing += sum(expression_steps(e) * k for e, k in _stmt_exprs(t.body))
            steps += fired * per_firing
    steps += lines * sum(expression_steps(inv.expr) for inv in model.invariants)
    steps += lines * sum(expression_steps(a.expr) for a in model.assumptions)
    return ConfigurationSize(values, instances, steps)


def refuse_absurd(model: ir.Model) -> ConfigurationSize:
    """The configuration's size; ConfigurationTooLarge when it is beyond every engine."""
    size = estimate(model)
    params = ", ".join(f"{p.name}={p.value}" for p in model.params)
    if size.values_per_state > MAX_VALUES_PER_STATE:
        raise ConfigurationTooLarge(
            f"configuration too large: {size.values_per_state:,} values in each state (at "
            f"most {MAX_VALUES_PER_STATE:,}) with {params}; lower the parameters", NO_SPAN)
    if size.action_instances > MAX_ACTION_INSTANCES:
        raise ConfigurationTooLarge(
            f"configuration too large: {size.action_instances:,} actions to try in each state "
            f"(at most {MAX_ACTION_INSTANCES:,}) with {params}; lower the parameters that "
            "events and rules range over", NO_SPAN)
    if size.quantifier_steps > MAX_QUANTIFIER_STEPS:
        raise ConfigurationTooLarge(
            f"configuration too large: about {size.quantifier_steps:,} steps of nested "
            f"quantifiers in each state (at most {MAX_QUANTIFIER_STEPS:,}) with {params}; "
            "nest fewer forall/exists or lower the number of agents", NO_SPAN)
    return size
