"""The reachable state graph of a small configuration, symmetry-reduced.

Explored here breadth-first with the reference semantics and exact symmetry (the checker's own
canonical forms), so node counts equal ``coherence check``'s state counts for the same model.
Each node is drawn as the first concrete state of its symmetry class that the search meets
(not the canonical form, which is an implementation detail): names stay consistent along
the search tree, so the highlighted path reads like a trace. An edge is labelled with the
action in its source node's names; an edge into an already-seen class may rename agents.
The initial state has a double border and an entry arrow; states that break an invariant,
or that deadlock, are red; an action that raises a model error goes to a red error node;
the shortest path to the first failure found is drawn thick and red.

History properties (``property P: coherence``) are not drawn: their monitor is not part of a
protocol state and would duplicate every node. ``coherence check`` checks them.

Beyond ``max_nodes`` states the graph is not drawn at all (``TooLarge``): an unreadable
picture helps nobody, and the message says how to make the configuration smaller.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import graphviz

from coherence import ir
from coherence.diagrams.fsm import params_note
from coherence.diagrams.render import html, new_graph
from coherence.encode import encode
from coherence.engines.driver import symmetry_is_sound
from coherence.explore import Search, StateLimit, bfs
from coherence.semantics import UNDEF, Outcome, Semantics, State
from coherence.symmetry import AnySymmetry, has_symmetry, make_symmetry
from coherence.trace import Formatter

BAD_FILL = "#ffcdd2"
PATH_COLOUR = "#c62828"
DEFAULT_MAX_NODES = 60


class TooLarge(Exception):
    """The reachable state graph has more nodes than the diagram allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} reachable states")
        self.limit = limit


@attrs.define
class StateGraph:
    states: list[State]
    edges: dict[tuple[int, int], list[str]]  # (from, to) -> action labels; to = -k: error k
    errors: list[str]
    bad: dict[int, list[str]]  # state -> what it violates
    path: list[int]  # shortest path from the initial state to the first failure, or []
    error_path_end: int | None  # the error node the path ends in, if any

    @property
    def failure_steps(self) -> int | None:
        """Steps of the shortest failure (an action that errs is a step), None if none."""
        if not self.path:
            return None
        return len(self.path) - 1 + (self.error_path_end is not None)


def without_monitors(model: ir.Model) -> ir.Model:
    return attrs.evolve(model, properties=())


def explore(model: ir.Model, max_nodes: int = DEFAULT_MAX_NODES,
            symmetry: bool = True) -> StateGraph:
    """Breadth-first exploration of every reachable (canonical) state; raises TooLarge."""
    sem = Semantics(without_monitors(model))
    sym = reduction(sem) if symmetry else None

    def canon(s: State) -> bytes:
        return sym.canonical(s)[0] if sym is not None else encode(s)

    edges: dict[tuple[int, int], list[str]] = {}
    errors: list[str] = []
    bad: dict[int, list[str]] = {}
    # the shortest failure: (steps, state, error node or None); an error costs one step more
    first_bad: tuple[int, int, int | None] | None = None
    fmt = Formatter(sem)
    search: Search[State] = Search()
    depth = search.depth

    def expand(i: int, state: State, add: Callable[[State], int]) -> None:
        nonlocal first_bad
        for v in sem.invariant_violations(state):
            bad.setdefault(i, []).append(v.name)
        outcomes, problems = sem.enabled(state)
        for out in outcomes:
            label = action_label(sem, fmt, out)
            if out.error is not None or out.state is None:
                text = out.error.message if out.error is not None else "error"
                if text not in errors:
                    errors.append(text)
                k = errors.index(text)
                edges.setdefault((i, -1 - k), []).append(label)
                if first_bad is None or depth[i] + 1 < first_bad[0]:
                    first_bad = (depth[i] + 1, i, k)
                continue
            j = add(out.state)
            labels = edges.setdefault((i, j), [])
            if label not in labels:
                labels.append(label)
        for p in problems:
            bad.setdefault(i, []).append(p.message)
        if sem.is_deadlock(state, outcomes, problems):
            bad.setdefault(i, []).append("deadlock")
        if i in bad and (first_bad is None or depth[i] < first_bad[0]):
            first_bad = (depth[i], i, None)

    try:  # each node is the first concrete state of its orbit that the search meets
        bfs(sem.initial_states(), expand, canon, max_nodes, search)
    except StateLimit as err:
        raise TooLarge(err.limit) from None
    path: list[int] = []
    end_error = None
    if first_bad is not None:
        _, node, end_error = first_bad
        path = search.path_to(node)
    return StateGraph(search.nodes, edges, errors, bad, path, end_error)


def reduction(sem: Semantics) -> AnySymmetry | None:
    """The symmetry ``coherence check`` reduces by: none when no renaming relates two states,
    none is implemented, or the model fails the audit (NOTE(symmetry-soundness)), so that
    node counts stay the checker's state counts."""
    if not has_symmetry(sem.model):
        return None
    sym = make_symmetry(sem)
    if sym is None or not symmetry_is_sound(sem, sym):
        return None
    return sym


def action_label(sem: Semantics, fmt: Formatter, out: Outcome) -> str:
    act = out.action
    machine = sem.model.machine(act.machine)
    tr = machine.transitions[act.transition]
    who = machine.name if act.agent is None else (
        sem.node_name(act.agent) if sem.hier else f"{act.agent}")
    line = f"@{act.line}" if sem.model.lines > 1 else ""
    if act.kind == ir.TransitionKind.MESSAGE:
        _line, _src, _dst, t, fields = act.msg
        return f"{who}{line} ?{fmt.message(t, fields)}"
    args = ",".join(fmt.value(p.type, v) for p, v in zip(tr.params, act.params, strict=True))
    return f"{who}{line} {tr.name}{f'({args})' if args else ''}"


def state_label(sem: Semantics, fmt: Formatter, state: State) -> list[str]:
    """A compact text of a state: home, each cache, messages in flight (undefined omitted)."""
    model = sem.model
    lines_ = state[0]
    out: list[str] = []
    for li, (g, h, caches) in enumerate(lines_):
        prefix = f"line {li}: " if model.lines > 1 else ""
        parts = [f"{v.name}={fmt.value(v.type, x)}" for v, x in zip(model.globals, g,
                                                                       strict=True) if x != UNDEF]
        if parts:
            out.append(prefix + " ".join(parts))
        if sem.hier:  # every instance by its name, in node order (NOTE(hierarchy-nodes))
            for node, c in enumerate(caches):
                out.append(prefix + _machine_text(sem.node_machine[node], sem.node_name(node),
                                                  c, fmt))
            continue
        if sem.home is not None and h:
            out.append(prefix + _machine_text(sem.home, sem.home.name, h, fmt))
        if sem.cache is not None:
            for a, c in enumerate(caches):
                out.append(prefix + _machine_text(sem.cache, str(a), c, fmt))
    msgs = [_msg_text(sem, fmt, line, src, dst, t, f)
            for _net_i, (line, src, dst, t, f) in sem.messages_in_flight(state)]
    if msgs:
        out.append("net: " + ", ".join(msgs))
    return out


def _node(sem: Semantics, v: int) -> str:
    if sem.hier:
        return sem.node_name(v)
    return sem.home.name if sem.home is not None and v == sem.home_id else str(v)


def _msg_text(sem: Semantics, fmt: Formatter, line: int, src: int, dst: int, t: int,
              f: tuple) -> str:
    at = f"@{line}" if sem.model.lines > 1 else ""
    return f"{fmt.message(t, f)} {_node(sem, src)}→{_node(sem, dst)}{at}"


def _machine_text(machine: ir.Machine, name: str, x: tuple, fmt: Formatter) -> str:
    parts = [f"{name}: {machine.state_type.members[x[0]]}"]
    for v, val in zip(machine.vars, x[1:], strict=True):
        if val != UNDEF:
            parts.append(f"{v.name}={fmt.value(v.type, val)}")
    return " ".join(parts)


def graph(model: ir.Model, sg: StateGraph, symmetry: bool = True) -> graphviz.Digraph:
    sem = Semantics(without_monitors(model))
    fmt = Formatter(sem)
    cache = model.caches[0].name if model.caches else "agent"
    names = f"caches are {cache} 0..{model.agents - 1}" if model.caches else ""
    reduced = symmetry and has_symmetry(model)
    if model.is_hierarchical:
        names = "instances " + ", ".join(_instances_text(m) for m in model.machines)
        reduced = reduced and reduction(sem) is not None
    sym = "symmetry-reduced" if reduced else "no symmetry reduction"
    dropped = [p.name for p in model.properties]
    note = f" · not drawn: {', '.join(dropped)} (history property)" if dropped else ""
    title = (f"<<b>Reachable states</b>: {html(Path(model.file).name)} "
             f"({html(params_note(model))})<br/>"
             f'<font point-size="10">{len(sg.states)} states, {sym}; {html(names)}; '
             f"undefined variables omitted{html(note)}<br/>"
             "red: breaks an invariant, deadlocks or errs · thick red: shortest path to "
             "the first failure</font>>")
    g = new_graph("states", title)
    g.attr(rankdir="TB", nodesep="0.25", ranksep="0.45")
    g.attr("node", shape="box", style="rounded,filled", fillcolor="white", fontsize="9")
    g.attr("edge", fontsize="8")
    on_path = set(sg.path)
    path_edges = set(zip(sg.path, sg.path[1:], strict=False))
    if sg.path and sg.error_path_end is not None:
        path_edges.add((sg.path[-1], -1 - sg.error_path_end))
    g.node("start", label="", shape="point", width="0.1", style="filled", fillcolor="black")
    for i, s in enumerate(sg.states):
        text = "\\l".join(html_free(x) for x in state_label(sem, fmt, s)) + "\\l"
        if i in sg.bad:
            text += "".join(f"✗ {html_free(b)}\\l" for b in sg.bad[i])
        attrs_: dict[str, str] = {}
        if i in sg.bad:
            attrs_["fillcolor"] = BAD_FILL
        if i in on_path:
            attrs_.update(color=PATH_COLOUR, penwidth="2.5")
        if i == 0:
            attrs_["peripheries"] = "2"
        g.node(f"s{i}", label=f"s{i}\\n{text}", **attrs_)
    g.edge("start", "s0", color=PATH_COLOUR if sg.path else "black",
           penwidth="2.5" if sg.path else "1")
    for k, text in enumerate(sg.errors):
        g.node(f"e{k}", label=f"error:\\n{html_free(text)}", shape="octagon",
               fillcolor=BAD_FILL, color=PATH_COLOUR)
    for (a, b), labels in sg.edges.items():
        dst = f"s{b}" if b >= 0 else f"e{-1 - b}"
        extra: dict[str, str] = {}
        if (a, b) in path_edges:
            extra = {"color": PATH_COLOUR, "penwidth": "2.5", "fontcolor": PATH_COLOUR}
        g.edge(f"s{a}", dst, label="\\n".join(html_free(x) for x in labels), **extra)
    return g


def _instances_text(machine: ir.Machine) -> str:
    """``L1[0..1, 0..1]``: the ids a hierarchy's machine is replicated over."""
    if not machine.indices:
        return machine.name
    return f"{machine.name}[{', '.join(f'0..{f.type.size() - 1}' for f in machine.indices)}]"


def html_free(text: str) -> str:
    """Text for a plain (non-HTML) DOT label: quotes and backslashes escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
